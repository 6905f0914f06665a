"""The team/cluster deployment run for real: a real PostgreSQL server (Debian's, installed where
absent), the instance built from the shipped Kubernetes files, the asset-row race replayed
against it, and the one-machine cluster (`lab cluster up`: Postgres, moto's S3 server, the gRPC
code server, webserver, daemon, one process per run from dagster-k8s's Job) running a sweep;
slow: the faults (a run process killed, Postgres stopped, the object store cut) and the UI's
GraphQL backfill. The slow tests share one cluster, started from a non-editable install (the
object store's cut needs one of its own, behind a proxy). Under `run.py`'s two xdist workers
these tests run on one, beside the tests that start processes (conftest.py, BESIDE)."""

import json
import math
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import tomllib
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
import yaml
from packaging.requirements import Requirement

from lab_assets.cluster import deployment as cluster
from lab_assets.cluster import free_port
from lab_assets.cluster.instance import K8S_INSTANCE, K8S_WORKSPACE, instance_config
from lab_assets.cluster.postgres import Postgres
from lab_assets.core.processes import alive
from lab_assets_tests.conftest import TINY_SWEEP, lab_cli

REPO = Path(__file__).resolve().parents[1]
ONE_CELL = """
name: one
data:
  swissroll: {n_samples: 120, noise: 0.05}
seeds: [0]
methods:
  pca: {}
metrics:
  trustworthiness: {k: [5]}
"""


@pytest.fixture(scope="session")
def postgres_server():
    """One private PostgreSQL server per test process (fsync off); each test gets a database."""
    folder = tempfile.mkdtemp(prefix="lab-test-pg-")  # reachable by the postgres user when root
    server = Postgres(folder, free_port(), secrets.token_urlsafe(12), fast=True)
    server.init()
    server.start()
    yield server
    server.stop("immediate")
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def database(postgres_server, monkeypatch) -> str:
    name = f"t_{uuid.uuid4().hex[:12]}"
    postgres_server.create_database(name)
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", postgres_server.password)
    return name


def write_instance(home: Path, config: dict) -> dg.DagsterInstance:
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    return dg.DagsterInstance.from_config(str(home))


# ---------------------------------------------------------------------------------------------
# The shipped instance files against a real Postgres


def test_k8s_instance_file_starts_on_postgres_and_materializes_a_cell(lab, postgres_server, database):
    from lab_assets.runtime.postgres_storage import ForwardOnlyPostgresEventLogStorage

    # k8s/base/dagster.yaml as shipped, only the host, port and database name overridden.
    config = instance_config(postgres_server.port, database)
    home = Path(os.environ["DAGSTER_HOME"])
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    (lab / "sweeps" / "one.yaml").write_text(ONE_CELL)

    out = lab_cli("sweep", "run", "sweeps/one.yaml", "--workers", "1", "--json", cwd=lab)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["materialized"] == {"datasets": 1, "cells": 1, "metric_table": 1, "report": 1}
    plan = json.loads(lab_cli("sweep", "plan", "sweeps/one.yaml", "--json", cwd=lab).stdout)
    assert {c["status"] for c in plan["cells"]} == {"fresh"}

    instance = dg.DagsterInstance.from_config(str(home))
    assert isinstance(instance.event_log_storage, ForwardOnlyPostgresEventLogStorage)
    assert instance.get_latest_materialization_event(dg.AssetKey("metrics")) is not None
    with postgres_server.connect(database) as conn, conn.cursor() as cur:  # really in Postgres
        cur.execute("SELECT count(*) FROM runs WHERE status = 'SUCCESS'")
        assert cur.fetchone()[0] == 3  # the cell with its dataset, the metric table, the report

    # What the issue saw with the file as it was: SQLAlchemy 2.1 reads postgresql:// as psycopg 3.
    del config["storage"]["custom"]["config"]["postgres_db"]["scheme"]
    with pytest.raises(ModuleNotFoundError, match="psycopg"):
        write_instance(lab / "plain_scheme", config).get_runs()


def helm_instance_config(port: int, db_name: str) -> dict:
    """The instance the Dagster chart renders from k8s/helm/values.yaml (its templates
    helpers/instance/_postgresql.tpl and configmap-instance.yaml), host, port and database
    overridden as the chart's Postgres service would give them."""
    values = yaml.safe_load((REPO / "k8s" / "helm" / "values.yaml").read_text())["postgresql"]
    postgres_db = {
        "username": values["postgresqlUsername"],
        "password": {"env": "DAGSTER_PG_PASSWORD"},
        "hostname": "127.0.0.1",
        "db_name": db_name,
        "port": port,
        "params": values.get("postgresqlParams") or {},
    }
    if values.get("postgresqlScheme"):
        postgres_db["scheme"] = values["postgresqlScheme"]
    storages = {
        "run_storage": ("dagster_postgres.run_storage", "PostgresRunStorage"),
        "event_log_storage": ("dagster_postgres.event_log", "PostgresEventLogStorage"),
        "schedule_storage": ("dagster_postgres.schedule_storage", "PostgresScheduleStorage"),
    }
    return {k: {"module": m, "class": c, "config": {"postgres_db": postgres_db}} for k, (m, c) in storages.items()}


def test_helm_values_instance_starts_on_postgres(tmp_path, postgres_server, database):
    instance = write_instance(tmp_path / "home", helm_instance_config(postgres_server.port, database))
    key = dg.AssetKey("probe")
    instance.report_runless_asset_event(dg.AssetMaterialization(key))
    assert instance.get_latest_materialization_event(key) is not None


def test_image_installs_the_driver_the_scheme_names():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "import psycopg2, sqlalchemy, lab_assets.runtime.postgres_storage" in dockerfile
    assert "create_engine('postgresql+psycopg2://" in dockerfile
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert {"dagster-postgres", "psycopg2-binary"} <= {Requirement(d).name for d in dependencies}
    assert "psycopg2-binary==2.9.13" in (REPO / "constraints.txt").read_text().splitlines()


# ---------------------------------------------------------------------------------------------
# The asset-row race, replayed deterministically (docs/postgres-asset-row-race.md)


def replay_late_asset_row_update(instance: dg.DagsterInstance) -> tuple[int, int, int]:
    """Two writers materialize the same asset. Writer A inserts its event first (smaller id) and
    is held between its two transactions; writer B stores its event completely; then A's
    asset-row upsert runs. Returns (A's id, B's id, the id the asset row names)."""
    key = dg.AssetKey("embedding_like")
    storage = instance.event_log_storage
    a_inserted, b_done = threading.Event(), threading.Event()
    original = storage._store_asset_event_tags  # the first step of the second transaction
    held = []

    def hold_writer_a(conn, events, event_ids):
        if not held:  # writer A: its event row is committed, its asset-row upsert not yet run
            held.append(event_ids[0])
            a_inserted.set()
            assert b_done.wait(30)
        return original(conn, events, event_ids)

    storage._store_asset_event_tags = hold_writer_a
    try:

        def materialize(partition: str) -> None:  # NaN metadata: a metric that was undefined
            instance.report_runless_asset_event(
                dg.AssetMaterialization(key, partition=partition, metadata={"m": math.nan})
            )

        writer_a = threading.Thread(target=materialize, args=("a",))
        writer_a.start()
        assert a_inserted.wait(30)
        materialize("b")  # writer B, start to end
        b_done.set()
        writer_a.join(30)
    finally:
        del storage._store_asset_event_tags
    ids = sorted(r.storage_id for r in instance.fetch_materializations(key, limit=10).records)
    row = instance.get_asset_records([key])[0].asset_entry.last_materialization_record.storage_id
    assert held == ids[:1], "writer A must hold the smaller event id"
    return ids[0], ids[1], row


def test_the_one_machine_clusters_instance_is_the_k8s_file_but_for_hosts_launcher_and_start_timeout(tmp_path):
    """`lab cluster up`'s instance: a run not started within 3 minutes is failed (and retried), not
    after the 20 minutes a GPU pod may need; nothing else differs from the k8s file but the
    Postgres address and the launcher."""
    shipped = yaml.safe_load(K8S_INSTANCE.read_text())
    config = instance_config(5433, "lab", str(tmp_path / "runs"))
    assert config["run_monitoring"] == {
        **shipped["run_monitoring"],
        "start_timeout_seconds": 180,
        "poll_interval_seconds": 15,
    }
    assert shipped["run_monitoring"]["start_timeout_seconds"] == 1200  # the deployment's own stays
    assert config["run_launcher"]["class"] == "LocalK8sRunLauncher"
    assert config["run_launcher"]["config"]["local"]["runs_dir"] == str(tmp_path / "runs")
    differs = {key for key in shipped if config[key] != shipped[key]}
    assert differs == {"storage", "run_launcher", "run_monitoring"}
    assert instance_config(5433, "lab")["run_monitoring"] == shipped["run_monitoring"]  # no launcher swapped


def test_the_k8s_files_the_cluster_reads_are_its_packages_data_and_link_to_k8s_base():
    """What a non-editable install ships (the slow test installs one): the files `up` reads are
    matched by the package data declared for their package, and are k8s/base's own."""
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    package = K8S_INSTANCE.parent.parent
    shipped = {p for pattern in declared[cluster.__package__] for p in package.glob(pattern)}
    assert {K8S_INSTANCE, K8S_WORKSPACE} <= shipped
    for file in (K8S_INSTANCE, K8S_WORKSPACE):
        assert file.resolve() == REPO / "k8s" / "base" / file.name


def test_postgres_asset_row_race_is_replayed_and_fixed(tmp_path, postgres_server, database):
    config = instance_config(postgres_server.port, database)
    ours = write_instance(tmp_path / "ours", {"storage": config["storage"]})
    older, newer, row = replay_late_asset_row_update(ours)
    assert row == newer  # the row keeps the newest materialization

    # A genuinely newer materialization still moves it forward.
    ours.report_runless_asset_event(dg.AssetMaterialization(dg.AssetKey("embedding_like"), partition="a"))
    latest = ours.fetch_materializations(dg.AssetKey("embedding_like"), limit=1).records[0].storage_id
    assert (
        ours.get_asset_records([dg.AssetKey("embedding_like")])[0].asset_entry.last_materialization_record.storage_id
        == latest
    )

    # Upstream (dagster-postgres 0.29.27, `storage: postgres:`): the same interleaving leaves the
    # row at the older event. If this starts failing after an upgrade, the bug is fixed upstream.
    postgres_server.create_database(database + "_up")
    upstream = {"postgres": {**config["storage"]["custom"]["config"]}}
    upstream["postgres"]["postgres_db"] = {**upstream["postgres"]["postgres_db"], "db_name": database + "_up"}
    older, newer, row = replay_late_asset_row_update(write_instance(tmp_path / "upstream", {"storage": upstream}))
    assert row == older


def test_a_process_rides_out_a_20_s_postgres_outage(tmp_path, postgres_server, database):
    """A query and a new instance's storage both wait for Postgres to come back; with
    dagster-postgres's own retry (~11 s) both fail. (A run worker starting during a restart used
    to exit, its run left STARTING until run monitoring's 20-minute start timeout.)"""
    import time

    config = {"storage": instance_config(postgres_server.port, database)["storage"]}
    existing = write_instance(tmp_path / "existing", config)
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "dagster.yaml").write_text(yaml.safe_dump(config))
    outcomes: dict[str, object] = {}

    def attempt(name, fn):
        try:
            outcomes[name] = fn()
        except Exception as exc:  # noqa: BLE001 - the test reports which one failed, and how
            outcomes[name] = exc

    postgres_server.stop()
    down = time.monotonic()
    try:
        callers = [
            threading.Thread(target=attempt, args=("query", existing.get_runs)),
            threading.Thread(
                target=attempt,
                args=("new instance", lambda: dg.DagsterInstance.from_config(str(tmp_path / "new")).get_runs()),
            ),
        ]
        for caller in callers:
            caller.start()
        time.sleep(20)
    finally:
        postgres_server.start()
    outage = time.monotonic() - down
    for caller in callers:
        caller.join(150)
    assert outcomes == {"query": [], "new instance": []}, (outage, outcomes)


@pytest.mark.parametrize(
    "statement",
    [
        "runs.run_body",  # the run's record
        "pg_catalog.pg_attribute",  # the runs table's columns, which get_run_records checks first
    ],
)
def test_a_run_read_whose_connection_postgres_drops_is_read_again(tmp_path, postgres_server, database, statement):
    """Postgres terminates the connection of a run-storage query (as a restart does to a query in
    flight); the read is made again and answers. (The queue daemon's read-back of a run it had
    just marked STARTING failed this way, at either query, and left the run never launched.)"""
    import sqlalchemy

    instance = write_instance(tmp_path, {"storage": instance_config(postgres_server.port, database)["storage"]})
    run = instance.create_run_for_job(dg.GraphDefinition("noop").to_job())  # any run
    terminated = []

    def terminate_own_backend(conn, cursor, sql, *_):
        if not terminated and statement in sql:
            terminated.append(conn.connection.dbapi_connection.get_backend_pid())
            with postgres_server.connect() as admin, admin.cursor() as cur:
                cur.execute("SELECT pg_terminate_backend(%s)", (terminated[0],))

    engine = instance.run_storage._engine
    sqlalchemy.event.listen(engine, "before_cursor_execute", terminate_own_backend)
    try:
        assert instance.get_run_by_id(run.run_id).run_id == run.run_id
    finally:
        sqlalchemy.event.remove(engine, "before_cursor_execute", terminate_own_backend)
    assert terminated  # the first attempt's connection was really dropped


def test_a_wrong_postgres_password_fails_at_once_naming_it(tmp_path, postgres_server, database, monkeypatch):
    import time

    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "not-the-password")
    (tmp_path / "dagster.yaml").write_text(
        yaml.safe_dump({"storage": instance_config(postgres_server.port, database)["storage"]})
    )
    start = time.monotonic()
    with pytest.raises(Exception, match="password authentication failed"):
        dg.DagsterInstance.from_config(str(tmp_path))
    assert time.monotonic() - start < 5  # not waited out as an outage (dagster-postgres alone: ~11 s)


# ---------------------------------------------------------------------------------------------
# The one-machine cluster


@contextmanager
def running_cluster(lab: Path, *options: str, run=lab_cli):
    """`lab cluster up` in the folder (fresh database, bucket and instance), as a person starts
    it; `lab cluster down` after, which must find every part it started still running. `run`:
    how `lab` is run (default: this interpreter's package, `lab_cli`)."""
    folder = lab / "cluster"
    out = run("cluster", "up", "--dir", str(folder), *options, cwd=lab, timeout=180)
    state = cluster.State.load(folder) if (folder / "state.json").is_file() else None
    try:
        assert out.returncode == 0, out.stdout + out.stderr
        assert re.search(r"Dagster UI on (\S+)", out.stdout)[1] == state.ui_url
        yield state
    finally:
        down = run("cluster", "down", "--dir", str(folder), cwd=lab)
        parts = ["daemon", "webserver", "code-server", *([] if "--s3-endpoint" in options else ["s3"]), "postgres"]
        assert f"stopped {', '.join(parts)} (" in down.stdout, down.stdout + down.stderr
        assert not [p for p in state.pids.values() if alive(p)] if state else True


@dataclass
class Installed:
    """The package installed without -e, in a folder of its own (`site`), and how to run it."""

    site: Path
    env: dict[str, str]

    def lab(self, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.site / "bin" / "lab"), *args],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    """A plain (non-editable) install of a copy of the source tree: `pip install --no-deps
    --target`, offline (no build isolation: this venv's setuptools; dependencies: this venv's
    pinned ones). Its folder comes first on PYTHONPATH, before this venv's editable finder, and
    every part and run of a cluster inherits it; the commands run outside the source tree."""
    root = tmp_path_factory.mktemp("installed")
    source = root / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "lab_assets", source / "lab_assets", symlinks=True, ignore=ignore)  # links to k8s/base
    shutil.copytree(REPO / "k8s" / "base", source / "k8s" / "base")
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(REPO / name, source / name)
    site = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {k: v for k, v in os.environ.items() if not (k.startswith("LAB_") or k == "DAGSTER_HOME")}
    env.update(PYTHONPATH=str(site), LAB_SERVICE="0")
    (root / "project").mkdir()
    return Installed(site, env)


@pytest.fixture(scope="module")
def lab_cluster(installed):
    """One `lab cluster up` for the slow tests that take the cluster as it comes, started from the
    non-editable install: an up and a down cost ~1 min on the 2-core VM. Each test runs a sweep of
    its own (its own cells, report and runs), and the tests after the Postgres stop also show the
    cluster working after it."""
    with running_cluster(installed.site.parent / "project", run=installed.lab) as state:
        yield state


def own_sweep(lab: Path, name: str, seed: int) -> str:
    """The tiny sweep under another name and seed (cells no other test on the shared cluster has);
    its file under sweeps/."""
    text = TINY_SWEEP.replace("name: tiny", f"name: {name}").replace("seeds: [0]", f"seeds: [{seed}]")
    (lab / "sweeps" / f"{name}.yaml").write_text(text)
    return f"sweeps/{name}.yaml"


@pytest.mark.slow
def test_lab_cluster_up_runs_from_a_non_editable_install(installed, lab_cluster):
    """`pip install .` (no source tree): the k8s files ship as package data, and every part starts
    through its public command (`dagster-daemon run`, not a private module) and imports the
    installed copy (`up` waited for the code location: the definitions loaded). The runs of the
    other tests on this cluster import it too."""
    packaged = installed.site / "lab_assets" / "cluster" / "k8s_base"
    for name in ("dagster.yaml", "workspace.yaml"):
        assert not (packaged / name).is_symlink()
        assert (packaged / name).read_bytes() == (REPO / "k8s" / "base" / name).read_bytes()
    where = subprocess.run(
        [sys.executable, "-c", "import lab_assets; print(lab_assets.__file__)"],
        env=installed.env,
        cwd=installed.site.parent / "project",
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).parent == installed.site / "lab_assets"
    for part in ("code-server", "webserver", "daemon"):
        pid = lab_cluster.pids[part]
        environ = dict(v.split("=", 1) for v in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in v)
        assert environ["PYTHONPATH"] == str(installed.site), part
    daemon = Path(f"/proc/{lab_cluster.pids['daemon']}/cmdline").read_text().split("\0")
    assert Path(daemon[1]).name == "dagster-daemon" and daemon[2] == "run", daemon
    assert not any(
        "dagster._" in arg
        for part in lab_cluster.pids.values()
        for arg in Path(f"/proc/{part}/cmdline").read_text().split("\0")
    ), "a private module started"


@pytest.mark.parametrize(
    "endpoint, why",
    [
        ("http://127.0.0.1:{port}", 'Could not connect to the endpoint URL: "http://127.0.0.1:{port}/"'),
        ("minio:9000", "Invalid endpoint: minio:9000"),
    ],
)
def test_an_unusable_s3_endpoint_is_refused_before_anything_starts(lab, endpoint, why):
    port = free_port()  # nothing listens there
    endpoint, why = endpoint.format(port=port), why.format(port=port)
    out = lab_cli("cluster", "up", "--dir", str(lab / "cluster"), "--s3-endpoint", endpoint, cwd=lab)
    assert out.returncode == 1
    assert out.stderr == f"lab cluster: the object store {endpoint}: cannot use its bucket {cluster.BUCKET}: {why}\n"
    assert not (lab / "cluster" / "state.json").exists() and not (lab / "cluster" / "postgres").exists()


def cluster_environment(state) -> dict[str, str]:
    env = {}
    for line in (Path(state.folder) / "env.sh").read_text().splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = shlex.split(value)[0]
    return env


def use_cluster(state, lab: Path, monkeypatch) -> None:
    """This process as a cluster client: the cluster's instance and object store, and a lab home
    of its own (nothing shared with the embedded default's files).

    fsspec caches filesystem instances by their arguments, not by the environment: an
    `s3fs.S3FileSystem()` made in an earlier test keeps that test's AWS_ENDPOINT_URL, a moto
    server stopped with its cluster (connection refused). So the caches are emptied here."""
    import s3fs

    from lab_assets.core import storage

    for key, value in cluster_environment(state).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LAB_HOME", str(lab / "client"))
    s3fs.S3FileSystem.clear_instance_cache()
    storage._filesystem.cache_clear()


def read_metric_table(path: str, like: pd.DataFrame | None = None) -> pd.DataFrame:
    """The metric table without provenance; with `like`, only its rows and columns (a shared
    cluster's table holds every test's cells)."""
    table = pd.read_parquet(path)
    if like is not None:
        table = table[table["partition"].isin(like["partition"])][list(like.columns)]
    # Provenance differs by design between two executions (run ids, timings, hosts).
    keep = [c for c in table.columns if c == "partition" or "@" in c or c in ("dataset_label", "method", "seed", "n")]
    return table[keep].sort_values("partition").reset_index(drop=True)


def storage_key(asset: str, partition: str) -> str:
    """The object key (under the bucket) of an asset's partition on the cluster (core/storage.py).
    A dataset partition is a cell; its file is its data key's, shared by the cells that read it."""
    from lab_assets.defs.integrity import DATA_ASSETS

    *dirs, last = partition.split("|")[:1] if asset in DATA_ASSETS else partition.split("|")
    return "/".join(["lab/assets", asset, *dirs, last + ".parquet"])


@pytest.mark.slow
def test_sweep_on_the_cluster_equals_the_embedded_default(lab, lab_cluster, monkeypatch):
    # The embedded default (SQLite, local files), as the reference.
    embedded = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--quiet", cwd=lab)
    assert embedded.returncode == 0, embedded.stderr
    reference = read_metric_table(str(lab / ".lab" / "assets" / "metric_table.parquet"))

    # The same sweep submitted to the cluster: its instance (Postgres), its object store.
    use_cluster(lab_cluster, lab, monkeypatch)
    earlier = set((Path(lab_cluster.folder) / "runs").glob("dagster-run-*"))  # other tests' runs
    submitted = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--quiet", "--submit", lab_cluster.ui_url, cwd=lab)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    plan = json.loads(lab_cli("sweep", "plan", "sweeps/tiny.yaml", "--json", cwd=lab).stdout)
    assert [c["status"] for c in plan["cells"]] == ["fresh"] * 4  # 0 stale, 0 missing

    result = read_metric_table("s3://lab-assets/lab/assets/metric_table.parquet", reference)
    pd.testing.assert_frame_equal(result, reference, check_exact=True)

    # Every run was its own process, from the Job dagster-k8s built, in a private folder, and the
    # four cells ran at once. 6 runs: each cell (with its dataset partition), table, report.
    runs = sorted(set((Path(lab_cluster.folder) / "runs").glob("dagster-run-*")) - earlier)
    assert len(runs) == 6 and all((r / "exit_code").read_text() == "0" for r in runs)
    jobs = [json.loads((r / "job.json").read_text()) for r in runs]
    containers = [j["spec"]["template"]["spec"]["containers"][0] for j in jobs]
    assert all(c["args"][:3] == ["dagster", "api", "execute_run"] for c in containers)
    password = {"secretKeyRef": {"name": "lab-assets-postgres", "key": "postgresql-password"}}
    assert all({"name": "DAGSTER_PG_PASSWORD", "valueFrom": password} in c["env"] for c in containers)
    cells = [
        r
        for r, c in zip(runs, containers)
        if {"name": "DAGSTER_RUN_JOB_NAME", "value": "materialize_cells_with_data"} in c["env"]
    ]
    spans = [((r / "job.json").stat().st_mtime, (r / "exit_code").stat().st_mtime) for r in cells]
    assert max(start for start, _ in spans) < min(end for _, end in spans), "the 4 cells' runs did not overlap"

    # No credential in the logs of any part or run, nor in the Jobs.
    secrets_ = [cluster_environment(lab_cluster)[k] for k in ("DAGSTER_PG_PASSWORD", "AWS_SECRET_ACCESS_KEY")]
    texts = [p.read_text(errors="replace") for p in Path(lab_cluster.folder).glob("logs/*.log")]
    texts += [(r / "output.log").read_text(errors="replace") + (r / "job.json").read_text() for r in runs]
    # ... nor in what the UI shows: the instance's configuration, the runs' tags and run config.
    body = json.dumps(
        {"query": "{ instance { info } runsOrError { ... on Runs { results { runConfigYaml tags { key value } } } } }"}
    )
    request = __import__("urllib.request").request.Request(
        f"{lab_cluster.ui_url}/graphql", body.encode(), {"Content-Type": "application/json"}
    )
    with __import__("urllib.request").request.urlopen(request, timeout=60) as response:
        ui = response.read().decode()
    assert "runConfigYaml" in ui and "lab-assets-postgres" in ui  # the instance info holds the launcher config
    texts.append(ui)
    assert not [s for s in secrets_ for t in texts if s in t]


ORIGIN_QUERY = """query($key: AssetKeyInput!, $cells: [String!]) { assetOrError(assetKey: $key) { ... on Asset {
  assetMaterializations(partitions: $cells) { partition metadataEntries { label ... on JsonMetadataEntry { jsonString } } }
} } }"""


def _ui_origins(url: str, asset: str, cells: list[str]) -> dict[str, dict]:
    """{cell: the `results_cache` metadata of its materializations} as the UI's GraphQL serves them."""
    import urllib.request

    body = json.dumps({"query": ORIGIN_QUERY, "variables": {"key": {"path": [asset]}, "cells": cells}}).encode()
    request = urllib.request.Request(f"{url}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        found = json.loads(response.read())["data"]["assetOrError"]["assetMaterializations"]
    return {
        m["partition"]: json.loads(e["jsonString"])
        for m in found
        for e in m["metadataEntries"]
        if e["label"] == "results_cache"
    }


@pytest.mark.slow
def test_a_laptop_sweep_pushed_to_the_team_store_is_recorded_on_the_cluster_not_computed(lab, lab_cluster, monkeypatch):
    """Portable results (issue #34): a sweep computed on a laptop lab home, its results cache
    pushed to the cluster's object store, then submitted to the cluster: every embedding and
    metrics row is recorded from the cache (0 computations), the metric table is the laptop's bit
    for bit, and the UI shows where each value was first computed."""
    from lab_assets.runtime.instance import get_instance

    sweep = own_sweep(lab, "pushed", 34)
    laptop = lab_cli("sweep", "run", sweep, "--quiet", cwd=lab)
    assert laptop.returncode == 0, laptop.stderr
    reference = read_metric_table(str(lab / ".lab" / "assets" / "metric_table.parquet"))
    laptop_runs = {r.dagster_run.run_id for r in get_instance().get_run_records()}

    env = cluster_environment(lab_cluster)
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"):
        if var in env:
            monkeypatch.setenv(var, env[var])
    options = json.dumps({"endpoint_url": env["AWS_ENDPOINT_URL"]})
    pushed = lab_cli("push", "--to", "s3://lab-assets/lab/results_cache", "--options", options, cwd=lab)
    assert pushed.returncode == 0 and "8 entries copied" in pushed.stdout, pushed.stdout + pushed.stderr

    use_cluster(lab_cluster, lab, monkeypatch)  # the cluster's default cache: results_cache/ under its store
    submitted = lab_cli("sweep", "run", sweep, "--quiet", "--submit", lab_cluster.ui_url, cwd=lab)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    result = read_metric_table("s3://lab-assets/lab/assets/metric_table.parquet", reference)
    pd.testing.assert_frame_equal(result, reference, check_exact=True)

    cells = sorted(reference["partition"])
    for asset in ("embedding", "metrics"):  # counted per computation, not per run
        origins = _ui_origins(lab_cluster.ui_url, asset, cells)
        assert sorted(origins) == cells, (asset, origins)
        assert all(o["computed"] is False and o["origin"]["run_id"] in laptop_runs for o in origins.values()), origins


# ---------------------------------------------------------------------------------------------
# Faults (slow: run monitoring polls every 60 s, as configured for the cluster)

SLOW_CELL = """
name: slow
data:
  swissroll: {n_samples: 1500, noise: 0.05}
seeds: [0]
methods:
  isomap: {n_neighbors: 12}
metrics:
  trustworthiness: {k: [5]}
"""


@pytest.mark.slow
def test_a_killed_run_process_is_failed_by_run_monitoring_and_retried(lab, lab_cluster, monkeypatch):
    import signal

    from lab_assets_tests.conftest import wait_for

    use_cluster(lab_cluster, lab, monkeypatch)
    (lab / "sweeps" / "slow.yaml").write_text(SLOW_CELL)
    earlier = set((Path(lab_cluster.folder) / "runs").glob("dagster-run-*"))  # other tests' runs
    submit = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lab_assets.cli.main",
            "sweep",
            "run",
            "sweeps/slow.yaml",
            "--quiet",
            "--submit",
            lab_cluster.ui_url,
        ],
        cwd=lab,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    runs = Path(lab_cluster.folder) / "runs"

    def cell_mid_run():
        for job in runs.glob("dagster-run-*/job.json"):
            log = job.parent / "output.log"
            if job.parent in earlier or (job.parent / "exit_code").exists():
                continue
            if (
                "materialize_cells" in job.read_text()
                and log.is_file()
                and "STEP_START" in log.read_text(errors="replace")
            ):
                return job.parent
        return None

    victim = wait_for(cell_mid_run, 180, "a cell's run process mid-cell")
    os.killpg(int((victim / "pid").read_text()), signal.SIGKILL)
    killed_id = victim.name.removeprefix("dagster-run-")
    out, err = submit.communicate(timeout=400)
    assert submit.returncode == 1 and killed_id in err, out + err  # the sweep reports the killed run

    instance = dg.DagsterInstance.from_config(os.environ["DAGSTER_HOME"])
    assert instance.get_run_by_id(killed_id).status == dg.DagsterRunStatus.FAILURE
    failure = [e for e in instance.all_logs(killed_id) if e.dagster_event and e.dagster_event.is_run_failure]
    # Run monitoring, from the process's exit (K8sRunLauncher.check_run_worker_health's own words).
    assert failure and "Detected run worker status FAILED" in failure[-1].message
    assert "no active pods" in failure[-1].message

    def retried():
        children = instance.get_runs(dg.RunsFilter(tags={"dagster/parent_run_id": killed_id}))
        return [r for r in children if r.status == dg.DagsterRunStatus.SUCCESS]

    wait_for(retried, 240, "the retry of the killed run to succeed")
    plan = json.loads(lab_cli("sweep", "plan", "sweeps/slow.yaml", "--json", cwd=lab).stdout)
    assert [c["status"] for c in plan["cells"]] == ["fresh"]


def unfinished_runs(instance: dg.DagsterInstance, runs_dir: Path) -> str:
    """For a test that timed out waiting on the cluster: every run's state, and for each unfinished
    one what its process did. A process still running is sent SIGABRT first, so that its output
    ends with every thread's stack (the image sets PYTHONFAULTHANDLER): where it hangs."""
    import signal
    import time

    all_runs = instance.get_runs()
    lines = [
        "runs: " + repr(sorted((r.job_name, r.tags.get("dagster/partition", ""), r.status.value) for r in all_runs))
    ]
    for run in (r for r in all_runs if not r.is_finished):
        folder = runs_dir / f"dagster-run-{run.run_id}"
        if not (folder / "pid").is_file():
            lines.append(f"{run.run_id} ({run.status.value}): no process was launched")
            continue
        pid = int((folder / "pid").read_text())
        if (folder / "exit_code").is_file():
            state = f"exit code {(folder / 'exit_code').read_text()}"
        elif alive(pid):
            os.kill(pid, signal.SIGABRT)
            time.sleep(3)
            state = "still running: sent SIGABRT"
        else:
            state = "gone without an exit code"
        output = (folder / "output.log").read_text(errors="replace")
        lines.append(f"{run.run_id} ({run.status.value}): process {pid}, {state}; its output's end:\n{output[-6000:]}")
    return "\n".join(lines)


@contextmanager
def unfinished_runs_said(instance: dg.DagsterInstance, runs_dir: Path):
    """A `wait_for` on the cluster's runs that times out says what `unfinished_runs` finds."""
    try:
        yield
    except AssertionError as timeout:
        raise AssertionError(f"{timeout}\n{unfinished_runs(instance, runs_dir)}") from None


@pytest.mark.slow
def test_postgres_stopped_for_10_s_during_a_sweep_then_a_rerun_completes(lab, lab_cluster, monkeypatch):
    import time

    import s3fs

    from lab_assets_tests.conftest import wait_for

    use_cluster(lab_cluster, lab, monkeypatch)
    runs = Path(lab_cluster.folder) / "runs"
    sweep_file = own_sweep(lab, "restart", seed=1)
    earlier = set(runs.glob("dagster-run-*"))  # other tests' runs
    submit = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lab_assets.cli.main",
            "sweep",
            "run",
            sweep_file,
            "--quiet",
            "--submit",
            lab_cluster.ui_url,
        ],
        cwd=lab,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def cells_running():
        return any(
            "materialize_cells" in j.read_text() and not (j.parent / "exit_code").exists()
            for j in runs.glob("dagster-run-*/job.json")
            if j.parent not in earlier
        )

    wait_for(cells_running, 180, "the cells' runs")
    pg = Postgres(lab_cluster.pg_folder, lab_cluster.pg_port)
    pg.stop()
    time.sleep(10)
    pg.start()
    instance = dg.DagsterInstance.from_config(os.environ["DAGSTER_HOME"])
    try:
        submit.communicate(timeout=400)  # fails or not: what counts is what is recorded, and the re-run
    except subprocess.TimeoutExpired:
        submit.kill()
        _, err = submit.communicate()
        pytest.fail(
            f"`lab sweep run --submit` still running 400 s after Postgres came back.\n"
            f"{unfinished_runs(instance, runs)}\nits stderr: {err[-2000:]}"
        )

    with unfinished_runs_said(instance, runs):  # a lost run is failed after 180 s, then retried
        wait_for(lambda: all(r.is_finished for r in instance.get_runs()), 400, "every run to finish or fail")

    # Nothing recorded that was not written: every recorded materialization's file exists.
    fs = s3fs.S3FileSystem()
    for asset in ("dataset", "embedding", "metrics"):
        for partition in instance.get_materialized_partitions(dg.AssetKey(asset)):
            assert fs.exists(f"{cluster.BUCKET}/{storage_key(asset, partition)}"), (asset, partition)

    rerun = lab_cli("sweep", "run", sweep_file, "--quiet", "--submit", lab_cluster.ui_url, cwd=lab)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    plan = json.loads(lab_cli("sweep", "plan", sweep_file, "--json", cwd=lab).stdout)
    assert [c["status"] for c in plan["cells"]] == ["fresh"] * 4
    assert plan["report"]["status"] == "fresh"


@pytest.mark.slow
def test_sweep_backfilled_through_graphql_on_the_cluster_equals_the_embedded_default(lab, lab_cluster, monkeypatch):
    """The UI's path: one `launchPartitionBackfill` over the sweep's partitions of every asset,
    through the cluster's webserver; the daemon orders and launches the runs."""
    from benchmarks.ui_backfill import backfill
    from lab_assets.defs.register import register
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.runtime import instance

    sweep_file = own_sweep(lab, "backfilled", seed=2)
    embedded = lab_cli("sweep", "run", sweep_file, "--quiet", cwd=lab)
    assert embedded.returncode == 0, embedded.stderr
    reference = read_metric_table(str(lab / ".lab" / "assets" / "metric_table.parquet"))

    use_cluster(lab_cluster, lab, monkeypatch)
    instance.get_instance.cache_clear()
    sweep = load_sweep(lab / sweep_file)
    register(instance.get_instance(), sweep)  # partition keys exist before the UI can ask for them
    backfill(int(lab_cluster.ui_url.rsplit(":", 1)[1]), sweep, timeout=400)

    plan = json.loads(lab_cli("sweep", "plan", sweep_file, "--json", cwd=lab).stdout)
    assert [c["status"] for c in plan["cells"]] == ["fresh"] * 4
    result = read_metric_table("s3://lab-assets/lab/assets/metric_table.parquet", reference)
    pd.testing.assert_frame_equal(result, reference, check_exact=True)
    instance.get_instance.cache_clear()


@pytest.fixture
def s3_behind_a_proxy():
    """Moto's S3 server and a TcpProxy in front of it: the cluster is given the proxy's address,
    the test keeps the server's (to look at the objects whatever the proxy does)."""
    import signal

    import boto3

    from lab_assets_tests.conftest import free_port, wait_for
    from lab_assets_tests.tcp_proxy import TcpProxy

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    proxy = TcpProxy(port)
    try:
        direct = boto3.client(
            "s3",
            endpoint_url=f"http://127.0.0.1:{port}",
            region_name="us-east-1",
            aws_access_key_id="direct",
            aws_secret_access_key="direct",
        )
        wait_for(lambda: cluster._http_ok(f"http://127.0.0.1:{port}/"), 60, "moto's S3 server")
        yield proxy, direct
    finally:
        proxy.close()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


@pytest.mark.slow
def test_object_store_unreachable_mid_cell_fails_it_naming_the_url_and_a_rerun_completes(
    lab, s3_behind_a_proxy, monkeypatch
):
    """The store goes away in the middle of a cell's upload (its first embedding PUT is torn) and
    stays away while the cells and their retries run; then it comes back."""
    import io

    import pyarrow.parquet as pq

    from lab_assets.cli.logs import failure_traces
    from lab_assets_tests.conftest import wait_for

    proxy, direct = s3_behind_a_proxy
    with running_cluster(lab, "--s3-endpoint", proxy.url) as state:
        use_cluster(state, lab, monkeypatch)
        proxy.trip = f"PUT /{cluster.BUCKET}/lab/assets/embedding/".encode()
        failed = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--quiet", "--submit", state.ui_url, cwd=lab)
        assert failed.returncode == 1, failed.stdout + failed.stderr
        assert proxy.tripped.is_set(), "no embedding was written: the fault did not happen"
        torn_key = proxy.tripped_request.split()[1].decode().removeprefix(f"/{cluster.BUCKET}/")

        # Every cell's run failed, and so did its retries (dagster/max_retries), with the
        # object store's URL in the error; nothing else is running.
        instance = dg.DagsterInstance.from_config(os.environ["DAGSTER_HOME"])

        def retries_exhausted():
            runs = instance.get_runs(dg.RunsFilter(job_name="materialize_cells_with_data"))
            return (
                all(r.is_finished for r in runs) and sum(r.tags.get("dagster/retry_number") == "2" for r in runs) == 4
            )

        with unfinished_runs_said(instance, Path(state.folder) / "runs"):
            wait_for(retries_exhausted, 400, "the failed cells' runs to be retried twice")
        cells = instance.get_runs(dg.RunsFilter(job_name="materialize_cells_with_data"))
        assert len(cells) == 12 and {r.status for r in cells} == {dg.DagsterRunStatus.FAILURE}
        for run in cells:
            assert any(proxy.url in trace for trace in failure_traces(instance, run.run_id)), run.run_id

        # No partial object: the torn upload left nothing at its key, every object there is whole,
        # and every recorded materialization has its object.
        keys = [
            o["Key"] for o in direct.list_objects_v2(Bucket=cluster.BUCKET, Prefix="lab/assets/").get("Contents", [])
        ]
        assert torn_key.startswith("lab/assets/embedding/") and torn_key not in keys
        for key in keys:
            pq.read_table(io.BytesIO(direct.get_object(Bucket=cluster.BUCKET, Key=key)["Body"].read()))
        for asset in ("dataset", "embedding", "metrics"):
            for partition in instance.get_materialized_partitions(dg.AssetKey(asset)):
                assert storage_key(asset, partition) in keys, (asset, partition)
        assert not instance.get_materialized_partitions(dg.AssetKey("embedding"))

        proxy.restore()
        rerun = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--quiet", "--submit", state.ui_url, cwd=lab)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        plan = json.loads(lab_cli("sweep", "plan", "sweeps/tiny.yaml", "--json", cwd=lab).stdout)
        assert [c["status"] for c in plan["cells"]] == ["fresh"] * 4 and plan["report"]["status"] == "fresh"


# ---------------------------------------------------------------------------------------------
# The per-process launcher's kubelet part, alone (no cluster)


def job_body(name: str, command: list[str], env: list[dict], env_from: list[dict] | None = None) -> dict:
    return {
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "lab-assets-data"}}],
                    "containers": [
                        {
                            "name": "c",
                            "image": "x",
                            "args": command,
                            "env": env,
                            "envFrom": env_from or [],
                            "volumeMounts": [{"name": "data", "mountPath": "/data/lab"}],
                        }
                    ],
                }
            }
        },
    }


def test_local_jobs_run_a_container_in_a_private_folder(tmp_path, monkeypatch):
    import time

    from lab_assets.runtime.local_k8s_launcher import LaunchError, LocalJobs

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    monkeypatch.setenv("MY_PG_PASSWORD", "pw-from-the-environment")
    jobs = LocalJobs(str(tmp_path / "runs"), {"lab-assets-postgres": {"postgresql-password": "MY_PG_PASSWORD"}})
    script = "import os, pathlib; print(os.environ['LAB_HOME'], len(os.environ['DAGSTER_PG_PASSWORD']) == 23, pathlib.Path(os.environ['LAB_HOME']).is_dir(), os.getcwd())"
    password = {
        "name": "DAGSTER_PG_PASSWORD",
        "valueFrom": {"secretKeyRef": {"name": "lab-assets-postgres", "key": "postgresql-password"}},
    }
    jobs.create_namespaced_job_with_retries(
        job_body("ok", ["python", "-c", script], [{"name": "LAB_HOME", "value": "/data/lab"}, password]), "ns"
    )
    deadline = time.monotonic() + 30
    while not jobs.get_job_status("ns", "ok").succeeded:
        assert not jobs.get_job_status("ns", "ok").failed and time.monotonic() < deadline
        time.sleep(0.1)
    root = tmp_path / "runs" / "ok" / "root"
    assert (tmp_path / "runs" / "ok" / "output.log").read_text().split() == [
        str(root / "data/lab"),
        "True",
        "True",
        str(root),
    ]
    assert "pw-from-the-environment" not in (tmp_path / "runs" / "ok" / "job.json").read_text()

    # A run that is terminated (the UI's Terminate: delete the Job) ends failed.
    jobs.create_namespaced_job_with_retries(job_body("long", ["python", "-c", "import time; time.sleep(60)"], []), "ns")
    assert jobs.get_job_status("ns", "long").active and jobs.delete_job("long", "ns")
    while not jobs.get_job_status("ns", "long").failed:
        assert time.monotonic() < deadline + 30
        time.sleep(0.1)

    # What a pod could not start with fails the launch, naming what is missing.
    with pytest.raises(LaunchError, match="secret lab-assets-s3 is not defined"):
        jobs.create_namespaced_job_with_retries(
            job_body("s3", ["python"], [], [{"secretRef": {"name": "lab-assets-s3"}}]), "ns"
        )
    monkeypatch.delenv("MY_PG_PASSWORD")
    with pytest.raises(LaunchError, match="secret lab-assets-postgres has no key postgresql-password"):
        jobs.create_namespaced_job_with_retries(job_body("pw", ["python"], [password]), "ns")
    with pytest.raises(LaunchError, match="not on the image's PATH"):
        jobs.create_namespaced_job_with_retries(job_body("cmd", ["no-such-command"], []), "ns")
