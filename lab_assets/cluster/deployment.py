"""`lab cluster up|down`: the Kubernetes deployment's parts on one machine, each its own process.

- PostgreSQL (Debian's server; `initdb` + `pg_ctl` in the cluster folder, password auth);
- an S3-compatible object store (moto's server) holding the bucket `lab-assets`, or a store
  already running (`--s3-endpoint URL`: a team's MinIO, or a test's proxy in front of moto);
- the code location over gRPC (`dagster api grpc`, as the user-code Deployment runs it);
- the webserver and the daemon (`dagster-webserver`, `dagster-daemon run`), loading a workspace
  that is k8s/base/workspace.yaml with the host and port of that code server (`instance.py`).

Every part is started through its public command, as the Kubernetes Deployments start it.
Credentials come from the environment (DAGSTER_PG_PASSWORD, AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY; generated when unset) and are written only to `<folder>/env.sh` (mode
0600), which a shell sources to use the cluster (`lab sweep run FILE --submit URL`).
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from lab_assets.cluster import ClusterError, free_port, port_open, wait_until
from lab_assets.cluster.instance import instance_config, workspace_config
from lab_assets.cluster.postgres import Postgres
from lab_assets.core.processes import alive
from lab_assets.core.settings import CLUSTER_FOLDER, DAGSTER_HOME_VAR, HOME_VAR, STORAGE_URL_VAR, lab_home

BUCKET = "lab-assets"
CURRENT_IMAGE = "lab-assets:local"
PG_TEMP_PREFIX = "lab-cluster-pg-"  # what the code server reports; the Jobs name it as their image


@dataclass
class State:
    folder: str
    pg_port: int
    s3_port: int
    grpc_port: int
    ui_port: int
    db_name: str = "dagster"
    pg_folder: str = ""
    s3_endpoint: str = ""  # the object store every part and run uses (moto's on s3_port unless given)
    pids: dict = field(default_factory=dict)  # component -> pid (each its own process group)

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    @property
    def path(self) -> Path:
        return Path(self.folder) / "state.json"

    def save(self) -> None:
        self.path.write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, folder: Path) -> State:
        return cls(**json.loads((folder / "state.json").read_text()))


def postgres_folder(folder: Path) -> str:
    """`<folder>/postgres`; as root, where the `postgres` user cannot reach that (a pytest
    folder under /tmp/pytest-of-root, 0700), a folder of its own under /tmp."""
    wanted = folder / "postgres"
    if os.geteuid() != 0:
        return str(wanted)
    check = subprocess.run(["test", "-x", str(folder)], user="postgres", group="postgres", extra_groups=[])
    return str(wanted) if check.returncode == 0 else tempfile.mkdtemp(prefix=PG_TEMP_PREFIX)


def credentials(folder: Path) -> dict[str, str]:
    """From the environment; generated (and kept in env.sh) where unset."""
    saved = {}
    env_file = folder / "env.sh"
    if env_file.is_file():
        for line in env_file.read_text().splitlines():
            if line.startswith("export "):
                key, _, value = line.removeprefix("export ").partition("=")
                saved[key] = shlex.split(value)[0] if value else ""
    out = {}
    for var in ("DAGSTER_PG_PASSWORD", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        out[var] = os.environ.get(var) or saved.get(var) or secrets.token_urlsafe(18)
    return out


def cluster_env(state: State, creds: dict[str, str]) -> dict[str, str]:
    """What the code server, webserver, daemon and a client (`lab sweep run --submit`) share."""
    folder = Path(state.folder)
    return {
        **creds,
        DAGSTER_HOME_VAR: str(folder / "dagster_home"),
        "AWS_ENDPOINT_URL": state.s3_endpoint,
        "AWS_DEFAULT_REGION": "us-east-1",
        STORAGE_URL_VAR: f"s3://{BUCKET}/lab",
    }


def _script(name: str, env: dict[str, str]) -> str:
    """An installed command (a console script of this interpreter's environment comes first on `env`'s PATH)."""
    found = shutil.which(name, path=env.get("PATH"))
    if found is None:
        raise ClusterError(f"`{name}` was not found on PATH ({env.get('PATH')}): install dagster's packages")
    return found


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def up(
    folder: Path,
    ui_port: int | None = None,
    db_name: str = "dagster",
    timeout: float = 120,
    s3_endpoint: str | None = None,
) -> State:
    """Start every part (each its own process group) and wait until the webserver answers with
    the code location loaded. Returns the state, also written to `<folder>/state.json`.
    With `s3_endpoint`, that store is used (its bucket created if missing) and no moto is started.

    The cluster is a throwaway: the S3 server keeps its objects in memory, so each `up` starts
    from an empty instance too (a new database; Postgres without fsync)."""
    state, creds = _fresh_state(folder.resolve(), ui_port, db_name, s3_endpoint)
    try:
        _start_postgres(state, creds)
        env = _write_instance(state, creds)
        s3 = _start_moto(state, env) if s3_endpoint is None else None
        grpc = _start_code_server(state, env)  # moto and the code server start side by side
        if s3 is not None:
            _wait_for_moto(state, env, s3)
        _wait_for_code_server(state, grpc, timeout)
        _start_webserver_and_daemon(state, env, timeout)
    except BaseException:
        down(Path(state.folder))
        raise
    return state


def _fresh_state(folder: Path, ui_port: int | None, db_name: str, s3_endpoint: str | None):
    """The cluster's folder emptied of an earlier cluster (refused while one runs), its ports and
    credentials; a given object store is checked before anything starts, so a wrong address
    leaves nothing behind."""
    if (folder / "state.json").is_file() and any(alive(p) for p in State.load(folder).pids.values()):
        raise ClusterError(f"a cluster is already running from {folder}: `lab cluster down` first")
    for part in ("postgres", "runs", "dagster_home", "logs", "state.json"):
        path = folder / part
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    state = State(str(folder), free_port(), free_port(), free_port(), ui_port or free_port(), db_name)
    state.s3_endpoint = s3_endpoint or f"http://127.0.0.1:{state.s3_port}"
    creds = credentials(folder)
    if s3_endpoint is not None:
        _create_bucket(cluster_env(state, creds))
    state.pg_folder = postgres_folder(folder)
    env_file = folder / "env.sh"
    env_file.touch(mode=0o600)
    os.chmod(env_file, 0o600)
    return state, creds


def _start_postgres(state: State, creds: dict[str, str]) -> None:
    pg = Postgres(state.pg_folder, state.pg_port, creds["DAGSTER_PG_PASSWORD"], fast=True)
    pg.init()
    pg.start()
    state.pids["postgres"] = int((pg.data / "postmaster.pid").read_text().split()[0])
    state.save()
    pg.create_database(state.db_name)


def _write_instance(state: State, creds: dict[str, str]) -> dict[str, str]:
    """The instance, the workspace and env.sh; returns the environment every part runs in."""
    folder = Path(state.folder)
    env = {**os.environ, **cluster_env(state, creds)}
    # The image's PATH has its Python's scripts (dagster, the run pods' command) first.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", os.defpath)])
    home = Path(env[DAGSTER_HOME_VAR])
    home.mkdir(exist_ok=True)
    runs_dir = folder / "runs"
    runs_dir.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump(instance_config(state.pg_port, state.db_name, str(runs_dir))))
    (folder / "workspace.yaml").write_text(yaml.safe_dump(workspace_config(state.grpc_port)))
    env_file = folder / "env.sh"
    env_file.write_text("".join(f"export {k}={shlex.quote(v)}\n" for k, v in cluster_env(state, creds).items()))
    return env


def _start_moto(state: State, env: dict[str, str]) -> subprocess.Popen:
    argv = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(state.s3_port)]
    return _start(state, "s3", argv, env)


def _start_code_server(state: State, env: dict[str, str]) -> subprocess.Popen:
    code_env = {**env, HOME_VAR: str(Path(state.folder) / "lab"), "DAGSTER_CURRENT_IMAGE": CURRENT_IMAGE}
    module = ["-m", "lab_assets.defs.definitions", "-h", "127.0.0.1", "-p", str(state.grpc_port)]
    return _start(state, "code-server", [sys.executable, "-m", "dagster", "api", "grpc", *module], code_env)


def _wait_for_moto(state: State, env: dict[str, str], s3: subprocess.Popen) -> None:
    _wait_for(state, "s3", s3, lambda: _http_ok(f"{state.s3_endpoint}/"), 60, "the S3 server (moto)")
    _create_bucket(env)


def _wait_for_code_server(state: State, grpc: subprocess.Popen, timeout: float) -> None:
    what = "the code server (dagster api grpc)"
    _wait_for(state, "code-server", grpc, lambda: port_open(state.grpc_port), timeout, what)


def _start_webserver_and_daemon(state: State, env: dict[str, str], timeout: float) -> None:
    workspace = ["-w", str(Path(state.folder) / "workspace.yaml")]
    web = _start(
        state,
        "webserver",
        [sys.executable, "-m", "dagster_webserver", "-h", "127.0.0.1", "-p", str(state.ui_port), *workspace],
        env,
    )
    daemon = _start(state, "daemon", [_script("dagster-daemon", env), "run", *workspace], env)
    what = "the webserver with the code location"
    _wait_for(state, "webserver", web, lambda: _location_loaded(state.ui_url), timeout, what)
    wait_until(lambda: daemon.poll() is None, 1, "the daemon", Path(state.folder) / "logs" / "daemon.log")


def _start(state: State, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
    """A part in its own process group, logging to `logs/<name>.log`, its pid saved at once (so
    `down` stops it whatever happens next)."""
    folder = Path(state.folder)
    with open(folder / "logs" / f"{name}.log", "ab") as log:
        process = subprocess.Popen(
            argv,
            env=env,
            cwd=folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    state.pids[name] = process.pid
    state.save()
    return process


def _wait_for(state: State, name: str, process: subprocess.Popen, check, timeout: float, what: str) -> None:
    """Until `check` holds; the part's log tail in the error if it exits first or time runs out."""
    wait_until(check, timeout, what, Path(state.folder) / "logs" / f"{name}.log", lambda: process.poll() is None)


def _create_bucket(env: dict[str, str]) -> None:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        client = boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT_URL"],
            region_name=env["AWS_DEFAULT_REGION"],
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            config=Config(connect_timeout=5, retries={"total_max_attempts": 2}),
        )
        if BUCKET not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
            client.create_bucket(Bucket=BUCKET)
    except (BotoCoreError, ClientError, ValueError) as e:  # ValueError: not a URL ("Invalid endpoint")
        raise ClusterError(f"the object store {env['AWS_ENDPOINT_URL']}: cannot use its bucket {BUCKET}: {e}") from None


def _location_loaded(url: str) -> bool:
    query = "{ workspaceOrError { ... on Workspace { locationEntries { name locationOrLoadError { __typename } } } } }"
    body = json.dumps({"query": query}).encode()
    try:
        request = urllib.request.Request(f"{url}/graphql", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as r:
            entries = json.loads(r.read())["data"]["workspaceOrError"]["locationEntries"]
    except (OSError, KeyError, TypeError, ValueError):
        return False
    return any(
        e["locationOrLoadError"] and e["locationOrLoadError"]["__typename"] == "RepositoryLocation" for e in entries
    )


def _stop_groups(pids: list[int], timeout: float = 20) -> None:
    """SIGTERM to each process group, at once; SIGKILL to those still there after `timeout`."""
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    left = list(pids)
    while left and time.monotonic() < deadline:
        for pid in list(left):
            try:  # reap it if it is our child (the cluster started in this process)
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            if not alive(pid):  # the group's leader (its children are in the group too)
                left.remove(pid)
        time.sleep(0.1)
    for pid in left:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def down(folder: Path) -> list[str]:
    """Stop the run processes, the daemon, webserver, code server, S3 server and Postgres (in
    that order). Returns the names of what was running."""
    folder = folder.resolve()
    if not (folder / "state.json").is_file():
        return []
    state = State.load(folder)
    runs = [
        int(p.read_text()) for p in sorted((folder / "runs").glob("*/pid")) if not (p.parent / "exit_code").is_file()
    ]
    _stop_groups([pid for pid in runs if alive(pid)], timeout=10)
    parts = {name: state.pids.pop(name, None) for name in ("daemon", "webserver", "code-server", "s3")}
    stopped = [name for name, pid in parts.items() if pid and alive(pid)]
    _stop_groups([parts[name] for name in stopped])
    if state.pids.pop("postgres", None):
        pg = Postgres(state.pg_folder, state.pg_port)
        if pg.running():
            stopped.append("postgres")
        pg.stop()
        if Path(state.pg_folder).name.startswith(PG_TEMP_PREFIX):
            shutil.rmtree(state.pg_folder, ignore_errors=True)
    state.save()
    return stopped


def default_folder() -> Path:
    return lab_home() / CLUSTER_FOLDER
