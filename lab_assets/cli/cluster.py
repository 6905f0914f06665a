"""`lab cluster up|down`: the Kubernetes deployment's parts on one machine, each its own process.

- PostgreSQL (Debian's server; `initdb` + `pg_ctl` in the cluster folder, password auth);
- an S3-compatible object store (moto's server) holding the bucket `lab-assets`, or a store
  already running (`--s3-endpoint URL`: a team's MinIO, or a test's proxy in front of moto);
- the code location over gRPC (`dagster api grpc`, as the user-code Deployment runs it);
- the webserver and the daemon (`dagster-webserver`, `dagster-daemon run`), loading a workspace
  that is k8s/base/workspace.yaml with the host and port of that code server.

Every part is started through its public command, as the Kubernetes Deployments start it. The two
files read from k8s/base/ ship inside the package (`cluster_files/`, links to them in the source
tree, copies in a wheel), so a plain `pip install .` runs `lab cluster up` too.

The instance is k8s/base/dagster.yaml with host names, ports and the database name overridden,
and two differences: the run launcher is `lab_assets.runtime.process_launcher.ProcessRunLauncher`
(dagster-k8s's K8sRunLauncher building each run's Job, a local process running its container),
and run monitoring fails a run that has not started within 3 minutes, not 20
(`LOCAL_RUN_MONITORING`).
Credentials come from the environment (DAGSTER_PG_PASSWORD, AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY; generated when unset) and are written only to `<folder>/env.sh` (mode
0600), which a shell sources to use the cluster (`lab sweep run FILE --submit URL`).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from lab_assets.core.processes import alive
from lab_assets.core.settings import DAGSTER_HOME_VAR, HOME_VAR, STORAGE_URL_VAR

# k8s/base/dagster.yaml and workspace.yaml, as package data (pyproject.toml).
K8S_INSTANCE = Path(__file__).with_name("cluster_files") / "dagster.yaml"
K8S_WORKSPACE = Path(__file__).with_name("cluster_files") / "workspace.yaml"
BUCKET = "lab-assets"
DB_USER = "dagster"
CURRENT_IMAGE = "lab-assets:local"
PG_TEMP_PREFIX = "lab-cluster-pg-"  # what the code server reports; the Jobs name it as their image


# A run's process starts in seconds (no node to add, no image to pull), so a run not started
# within 3 minutes is lost (its process died, or was never launched: the queue daemon leaves a
# run it marked STARTING unlaunched if it fails before the launch); run monitoring fails it and
# run retries start it again. The Kubernetes deployment's 20 minutes would stall a sweep that long.
LOCAL_RUN_MONITORING = {"start_timeout_seconds": 180, "poll_interval_seconds": 15}


class ClusterError(RuntimeError):
    """A part of the cluster did not start (the message names it and its log)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check, timeout: float, what: str, log: Path | None = None, alive=None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if alive is not None and not alive():
            break
        time.sleep(0.2)
    tail = ""
    if log is not None and log.is_file():
        tail = "\n" + "\n".join(log.read_text(errors="replace").splitlines()[-20:])
    raise ClusterError(f"{what} did not come up{f' (log: {log})' if log else ''}{tail}")


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


# ---------------------------------------------------------------------------------------------
# PostgreSQL


def postgres_bindir() -> Path | None:
    """Debian's server binaries (`apt-get install postgresql`), newest version first."""
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: p.parent.name, reverse=True):
        if (candidate / "initdb").is_file():
            return candidate
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def install_postgres() -> Path:
    """Debian's postgresql package (needs root), for the test fixture and `lab cluster up`."""
    if postgres_bindir() is None:
        if os.geteuid() != 0:
            raise ClusterError("PostgreSQL is not installed: run `apt-get install -y postgresql` (as root)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "postgresql"], check=True, env=env)
    bindir = postgres_bindir()
    if bindir is None:
        raise ClusterError("PostgreSQL's initdb was not found after installing the postgresql package")
    return bindir


@dataclass
class Postgres:
    """A private PostgreSQL server: its own data folder, port and socket folder, password auth
    for the user `dagster`. As root, the server runs as the `postgres` user (initdb refuses
    root), in a folder that user can reach."""

    folder: str
    port: int
    password: str = field(repr=False, default="")
    fast: bool = False  # fsync off: for tests and the throwaway cluster (a crash may lose the database)

    @property
    def data(self) -> Path:
        return Path(self.folder) / "data"

    @property
    def log(self) -> Path:
        return Path(self.folder) / "postgres.log"

    def _user(self) -> dict:
        return {"user": "postgres", "group": "postgres", "extra_groups": []} if os.geteuid() == 0 else {}

    def _run(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(argv, capture_output=True, text=True, **self._user())

    def init(self) -> None:
        bindir = install_postgres()
        Path(self.folder).mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        os.chmod(self.folder, 0o700)
        if (self.data / "PG_VERSION").is_file():
            return
        fd, pwfile = tempfile.mkstemp(dir=self.folder)
        with os.fdopen(fd, "w") as f:
            f.write(self.password)
        if os.geteuid() == 0:
            shutil.chown(pwfile, "postgres", "postgres")
        try:
            out = self._run(
                str(bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                DB_USER,
                f"--pwfile={pwfile}",
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            )
        finally:
            os.unlink(pwfile)
        if out.returncode:
            raise ClusterError(f"initdb failed in {self.data}:\n{out.stderr}")

    def start(self) -> None:
        bindir = install_postgres()
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c max_connections=200"
        if self.fast:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        out = self._run(
            str(bindir / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(self.data), "-l", str(self.log), "-o", options
        )
        if out.returncode:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.is_file() else ""
            raise ClusterError(f"PostgreSQL did not start (log: {self.log}):\n{out.stderr}{log}")

    def stop(self, mode: str = "fast") -> None:
        bindir = postgres_bindir()
        if bindir is not None and (self.data / "postmaster.pid").is_file():
            self._run(str(bindir / "pg_ctl"), "stop", "-w", "-m", mode, "-D", str(self.data))

    def running(self) -> bool:
        return (self.data / "postmaster.pid").is_file() and _port_open(self.port)

    def connect(self, db: str = "postgres"):
        import psycopg2

        return psycopg2.connect(host="127.0.0.1", port=self.port, user=DB_USER, password=self.password, dbname=db)

    def create_database(self, name: str) -> None:
        conn = self.connect()
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
                if cur.fetchone() is None:
                    cur.execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()

    def url(self, db: str) -> str:
        """For tests; the instance files take the password from DAGSTER_PG_PASSWORD instead."""
        return f"postgresql+psycopg2://{DB_USER}:{self.password}@127.0.0.1:{self.port}/{db}"


# ---------------------------------------------------------------------------------------------
# The instance and the workspace, from the Kubernetes files


def instance_config(
    pg_port: int,
    db_name: str,
    runs_dir: str | None = None,
    instance_file: Path = K8S_INSTANCE,
    pg_host: str = "127.0.0.1",
) -> dict:
    """k8s/base/dagster.yaml with the Postgres host, port and database overridden; with
    `runs_dir`, its K8sRunLauncher swapped for the per-process launcher (same config + `local`)
    and run monitoring's timings for processes (`LOCAL_RUN_MONITORING`)."""
    config = yaml.safe_load(instance_file.read_text())
    storage = config["storage"]
    block = storage["custom"]["config"] if "custom" in storage else storage["postgres"]
    block["postgres_db"].update(hostname=pg_host, port=pg_port, db_name=db_name)
    if runs_dir is not None:
        launcher = config["run_launcher"]
        assert (launcher["module"], launcher["class"]) == ("dagster_k8s", "K8sRunLauncher"), launcher
        launcher["module"], launcher["class"] = "lab_assets.runtime.process_launcher", "ProcessRunLauncher"
        secret_names = launcher["config"].get("env_secrets", [])
        launcher["config"]["local"] = {
            "runs_dir": runs_dir,
            # secret -> {key: environment variable of the daemon (the launching process)}
            "secrets": {
                launcher["config"]["postgres_password_secret"]: {"postgresql-password": "DAGSTER_PG_PASSWORD"},
                **{name: {var: var for var in SECRET_VARS.get(name, [])} for name in secret_names},
            },
        }
        config["run_monitoring"].update(LOCAL_RUN_MONITORING)
    return config


# What each Secret of the deployment holds (k8s/README.md, step 4), here from the environment.
# AWS_ENDPOINT_URL: the S3-compatible server's address (botocore and s3fs read it).
SECRET_VARS = {
    "lab-assets-s3": ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION"],
    "lab-assets-wandb": ["WANDB_API_KEY"],
}


def workspace_config(grpc_port: int) -> dict:
    config = yaml.safe_load(K8S_WORKSPACE.read_text())
    (entry,) = config["load_from"]
    entry["grpc_server"].update(host="127.0.0.1", port=grpc_port)
    return config


# ---------------------------------------------------------------------------------------------
# The whole cluster


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


def _spawn(name: str, argv: list[str], env: dict[str, str], folder: Path) -> subprocess.Popen:
    log = open(folder / "logs" / f"{name}.log", "ab")
    try:
        return subprocess.Popen(
            argv,
            env=env,
            cwd=folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    finally:
        log.close()


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
    folder = folder.resolve()
    if (folder / "state.json").is_file() and any(alive(p) for p in State.load(folder).pids.values()):
        raise ClusterError(f"a cluster is already running from {folder}: `lab cluster down` first")
    for part in ("postgres", "runs", "dagster_home", "logs", "state.json"):
        path = folder / part
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    state = State(str(folder), free_port(), free_port(), free_port(), ui_port or free_port(), db_name)
    state.s3_endpoint = s3_endpoint or f"http://127.0.0.1:{state.s3_port}"
    creds = credentials(folder)
    if s3_endpoint is not None:  # checked before anything starts: a wrong address leaves nothing behind
        _create_bucket(cluster_env(state, creds))
    state.pg_folder = postgres_folder(folder)
    env_file = folder / "env.sh"
    env_file.touch(mode=0o600)
    os.chmod(env_file, 0o600)
    try:
        pg = Postgres(state.pg_folder, state.pg_port, creds["DAGSTER_PG_PASSWORD"], fast=True)
        pg.init()
        pg.start()
        state.pids["postgres"] = int((pg.data / "postmaster.pid").read_text().split()[0])
        state.save()
        pg.create_database(db_name)

        env = {**os.environ, **cluster_env(state, creds)}
        # The image's PATH has its Python's scripts (dagster, the run pods' command) first.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", os.defpath)])
        home = Path(env[DAGSTER_HOME_VAR])
        home.mkdir(exist_ok=True)
        runs_dir = folder / "runs"
        runs_dir.mkdir(exist_ok=True)
        (home / "dagster.yaml").write_text(yaml.safe_dump(instance_config(state.pg_port, db_name, str(runs_dir))))
        (folder / "workspace.yaml").write_text(yaml.safe_dump(workspace_config(state.grpc_port)))
        env_file.write_text("".join(f"export {k}={shlex.quote(v)}\n" for k, v in cluster_env(state, creds).items()))

        py = sys.executable
        s3 = None
        if s3_endpoint is None:
            s3 = _spawn("s3", [py, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(state.s3_port)], env, folder)
            state.pids["s3"] = s3.pid
        code_env = {**env, HOME_VAR: str(folder / "lab"), "DAGSTER_CURRENT_IMAGE": CURRENT_IMAGE}
        grpc = _spawn(
            "code-server",
            [
                py,
                "-m",
                "dagster",
                "api",
                "grpc",
                "-m",
                "lab_assets.defs.definitions",
                "-h",
                "127.0.0.1",
                "-p",
                str(state.grpc_port),
            ],
            code_env,
            folder,
        )
        state.pids["code-server"] = grpc.pid
        state.save()
        if s3 is not None:
            wait_until(
                lambda: _http_ok(f"{state.s3_endpoint}/"),
                60,
                "the S3 server (moto)",
                folder / "logs" / "s3.log",
                lambda: s3.poll() is None,
            )
            _create_bucket(env)
        wait_until(
            lambda: _port_open(state.grpc_port),
            timeout,
            "the code server (dagster api grpc)",
            folder / "logs" / "code-server.log",
            lambda: grpc.poll() is None,
        )
        workspace = ["-w", str(folder / "workspace.yaml")]
        web = _spawn(
            "webserver",
            [py, "-m", "dagster_webserver", "-h", "127.0.0.1", "-p", str(state.ui_port), *workspace],
            env,
            folder,
        )
        daemon = _spawn("daemon", [_script("dagster-daemon", env), "run", *workspace], env, folder)
        state.pids.update(webserver=web.pid, daemon=daemon.pid)
        state.save()
        wait_until(
            lambda: _location_loaded(state.ui_url),
            timeout,
            "the webserver with the code location",
            folder / "logs" / "webserver.log",
            lambda: web.poll() is None,
        )
        wait_until(lambda: daemon.poll() is None, 1, "the daemon", folder / "logs" / "daemon.log")
    except BaseException:
        down(folder)
        raise
    return state


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


# ---------------------------------------------------------------------------------------------
# The command


def default_folder() -> Path:
    from lab_assets.core.settings import lab_home

    return lab_home() / "cluster"


def cmd_cluster(args: argparse.Namespace) -> int:
    folder = Path(args.dir) if args.dir else default_folder()
    if args.action == "down":
        stopped = down(folder)
        print(f"lab cluster: stopped {', '.join(stopped) or 'nothing (no cluster running)'} ({folder})")
        return 0
    try:
        state = up(folder, ui_port=args.port, s3_endpoint=args.s3_endpoint)
    except ClusterError as e:
        print(f"lab cluster: {e}", file=sys.stderr)
        return 1
    print(f"lab cluster: Dagster UI on {state.ui_url}")
    print(
        f"  Postgres 127.0.0.1:{state.pg_port} (database {state.db_name}), S3 {state.s3_endpoint} "
        f"(bucket {BUCKET}), code server 127.0.0.1:{state.grpc_port}; logs in {folder}/logs, runs in {folder}/runs"
    )
    print(f"  use it from a shell: source {folder}/env.sh && lab sweep run sweeps/demo.yaml --submit {state.ui_url}")
    print(
        f"  stop it: lab cluster down{f' --dir {args.dir}' if args.dir else ''} "
        "(a throwaway: objects and runs go with it)"
    )
    return 0


def add_parser(sub) -> None:
    cluster = sub.add_parser(
        "cluster",
        help="the Kubernetes deployment's parts on this machine (Postgres, S3, "
        "code server, webserver, daemon, one process per run)",
    )
    cluster.add_argument(
        "action",
        choices=["up", "down"],
        help="up: start every part, print the UI address; down: stop them (a throwaway: runs and objects go with it)",
    )
    cluster.add_argument("--dir", help="the cluster's folder (default: <lab home>/cluster)")
    cluster.add_argument("--port", type=int, default=None, help="the UI's port (default: a free one)")
    cluster.add_argument(
        "--s3-endpoint",
        default=None,
        help="an S3-compatible store already running "
        "(http://host:port; credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) "
        "instead of starting moto's server",
    )
    cluster.set_defaults(fn=cmd_cluster)
