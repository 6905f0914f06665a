"""Every test gets its own project folder, lab home and Dagster instance (a real SQLite one)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from lab_assets.core import side_process
from lab_assets.runtime import instance

REPO = Path(__file__).resolve().parents[1]
# Held exclusively by a test that edits a package source (`edits_package`), which ends every warm
# service on the machine; shared by the tests whose service must not end mid-test (test_service.py).
PACKAGE_EDIT_LOCK = Path(tempfile.gettempdir()) / "lab-assets-tests-package-edit.lock"


def in_ci() -> bool:
    """CI=true (or 1/yes): a missing tool, browser or service is a failure, not a skip."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def missing(reason: str):
    """Skip with the reason on a developer's machine; fail under CI=true, so a green CI means
    every environment-dependent test ran."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: a missing tool fails instead of skipping)", pytrace=False)
    pytest.skip(reason)


# The only skips a CI run may show, as (test file, words of the reason): the GPU tests on a host
# without CUDA (or a GPU without bf16), and the CPU-only checks of a CUDA request on a host that
# has CUDA. Under CI=true any other skip (a `pytest.skip` or `skipif` that bypassed `missing`, a
# module skipped at import) fails the session at its end: a test that did not run is not a pass.
# (An xfail that passes fails by itself: `xfail_strict` in pyproject.toml.)
EXPECTED_SKIPS = (
    ("lab_assets_tests/test_gpu.py", "needs a CUDA device"),
    ("lab_assets_tests/test_gpu.py", "this GPU has no bf16"),
    ("lab_assets_tests/test_autoencoder.py", "this machine has CUDA"),
    ("lab_assets_tests/test_torchdr.py", "this machine has CUDA"),
)
_skips: list[tuple[str, str]] = []


def _skipped(report) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skips.append((report.nodeid, reason))


def pytest_runtest_logreport(report):
    _skipped(report)


def pytest_collectreport(report):
    """A module skipped as it is collected (`pytest.skip(allow_module_level=True)`, a module-level
    `importorskip`): none of its tests ran. Under xdist the controller gets these too."""
    _skipped(report)


def unexpected_skips(skips: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(t, r) for t, r in skips if not any(t.startswith(f) and words in r for f, words in EXPECTED_SKIPS)]


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: the controller sees every report and decides
    bad = unexpected_skips(_skips)
    if in_ci() and bad:
        lines = [f"CI=true: {len(bad)} test(s) skipped that must run here (conftest.EXPECTED_SKIPS):"]
        lines += [f"  {test}: {reason}" for test, reason in bad]
        session.config.get_terminal_writer().line("\n" + "\n".join(lines), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def require_tool(name: str, why: str) -> str:
    """The path of the executable `name` (a name on PATH or an absolute path), else `missing(why)`."""
    path = shutil.which(name)
    if path is None:
        missing(f"{name} not found: {why}")
    return path


def require_module(name: str, why: str):
    """`pytest.importorskip` that fails under CI=true."""
    try:
        return __import__(name)
    except ImportError as e:
        missing(f"cannot import {name} ({e}): {why}")


TINY_SWEEP = """
name: tiny
data:
  swissroll: {n_samples: 150, noise: 0.05}
  gaussian_blobs: {n_samples: 150, n_features: 5, centers: 3}
seeds: [0]
methods:
  pca: {}
  isomap: {n_neighbors: 12}
metrics:
  trustworthiness: {k: [5, 10]}
  lid: {k: [10]}
"""


# The files whose tests run on one xdist worker, beside the others' on the other. Single-core
# ones (computations in the test's own process, kubectl, collection), the cluster's (mostly
# waiting: on Postgres, a cluster's processes, polls and outages), and, to balance CI's two cores,
# files that time nothing tight, start no warm service and edit no package source (a copied package
# is edited in test_lab_impact.py, test_staleness_real_edits.py, test_versions_by_meaning.py).
# The two sides' summed durations (`--durations=0`, 2-core VM) before and after the files below
# the comment came: slow target 685 / 1,877 s -> 1,195 / 1,272 s (wall 32 -> 22 min), default
# 176 / 724 s -> 316 / 471 s (wall 12.5 -> 8 min).
BESIDE = {
    f"lab_assets_tests/{name}.py"
    for name in (
        "test_cluster",
        "test_fast_exit",
        "test_keys",
        "test_knn_metrics",
        "test_structure_metrics",
        "test_methods",
        "test_methods_against_references",
        "test_datasets",
        "test_cron",
        "test_sweep",
        "test_k8s",
        "test_training_model",
        "test_figures",
        "test_random_projection",
        "test_conventions",
        "test_docs",
        "test_property",
        "test_targets",
        "test_skip_guard",
        "test_measures",
        "test_settings",
        "test_spec_versions",
        "test_partitions",
        "test_snapshot",
        "test_mutation_reach",
        # Here to balance the two workers (most run cells; test_architecture runs ruff and import-linter).
        "test_slow_sweeps",
        "test_staleness_real_edits",
        "test_lab_impact",
        "test_architecture",
        "test_cluster_config",
        "test_definitions",
        "test_dagster_guards",
        "test_h5ad",
        "test_autoencoder",
        "test_sensors",
        "test_summary",
        "test_versions_by_meaning",
        "test_study_cli",
        "test_lab_check",
    )
}


@pytest.hookimpl(tryfirst=True)  # before xdist's own scheduler
def pytest_xdist_make_scheduler(config, log):
    """`run.py test` and `test-slow` run two xdist workers, `--dist loadscope`, with two scopes:
    the BESIDE files' tests on one worker, beside all the others, which start processes (sweeps
    with two workers, `lab ui`, the warm service, package edits) and so run one at a time, in their
    usual order, on the other. (xdist's `loadgroup` marks do nothing under pytest 9: xdist renames
    `item._nodeid`, which pytest 9 no longer reads.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class BesideTheProcesses(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "beside" if nodeid.split("::")[0] in BESIDE else "processes"

    return BesideTheProcesses(config, log)


@pytest.fixture(scope="module")
def single_threaded():
    """As in the sweep runner (threads.SINGLE_THREADED): OpenMP spinning on a shared 2-core
    machine can make a 200-point t-SNE take seconds instead of a fraction of one.
    threadpoolctl only limits libraries already loaded, so scikit-learn (its OpenMP runtime) and
    SciPy (its BLAS) are imported first: the method modules import them only when a method runs."""
    import sklearn.manifold  # noqa: F401
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


def swissroll_points(n: int):
    from lab_assets.defs.assets.datasets import GENERATE_STREAM, rng
    from lab_assets.dr.datasets import DATASETS

    return DATASETS["swissroll"](rng(0, GENERATE_STREAM), n_samples=n, noise=0.0).X


def lab_project(folder: Path, monkeypatch) -> Path:
    """An empty lab project in `folder`: LAB_PROJECT_DIR, LAB_HOME and DAGSTER_HOME inside it (also
    one per example of a property test, `test_property.py`)."""
    monkeypatch.setenv("LAB_PROJECT_DIR", str(folder))
    monkeypatch.setenv("LAB_SERVICE", "0")  # commands run as the test starts them (test_service.py: the service)
    # Runs in the test's process log W&B and draw reports here: one pytest process serves a lab home
    # per test, and a side process for each costs ~2 CPU-s. `lab` commands start theirs; test_side_process.py
    # and test_results.py's `logged_from` start one in the test's process.
    monkeypatch.setattr(side_process, "worth_it", lambda modules: False)
    for var in ("LAB_STORAGE_URL", "LAB_STORAGE_OPTIONS", "LAB_EXECUTOR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LAB_HOME", str(folder / ".lab"))
    monkeypatch.setenv("DAGSTER_HOME", str(folder / ".lab" / "dagster"))
    home = folder / ".lab" / "dagster"
    home.mkdir(parents=True)
    # The storages and compute logs `lab` adds (instance.INSTANCE_ADDITIONS), no run queue: tests
    # run on what users run on, and launch runs without a daemon.
    (home / "dagster.yaml").write_text(instance.instance_yaml("telemetry:\n  enabled: false\n", home))
    (folder / "sweeps").mkdir()
    (folder / "sweeps" / "tiny.yaml").write_text(TINY_SWEEP)
    instance.get_instance.cache_clear()
    return folder


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """An empty lab project in tmp_path (`lab_project`)."""
    yield lab_project(tmp_path, monkeypatch)
    instance.get_instance.cache_clear()


def lab_cli(*args, cwd, timeout=300, env: dict[str, str] | None = None):
    """Run the real `lab` entry point in a subprocess (same interpreter, same environment, `env`
    over it: a copied package's PYTHONPATH, another lab home)."""
    return subprocess.run(
        [sys.executable, "-m", "lab_assets.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        out = json.loads(resp.read())
    assert "errors" not in out, out
    return out["data"]


def wait_for(predicate, timeout: float, what: str):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def interrupt_when(proc: subprocess.Popen, ready, timeout: float = 300) -> tuple[str, str]:
    """Ctrl-C for `proc` (started with `start_new_session`): SIGINT to its process group once
    `ready()` holds; its (stdout, stderr). Killed if it is still there after the test."""
    try:
        wait_for(lambda: ready() or proc.poll() is not None, timeout, "the moment to interrupt")
        assert proc.poll() is None, proc.communicate()
        os.killpg(proc.pid, signal.SIGINT)
        return proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@contextmanager
def lab_ui(lab):
    """`lab ui` on a free port, up and answering; every process it started is stopped after."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab_assets.cli.main", "ui", "--port", str(port)],
        cwd=lab,
        env=os.environ.copy(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:

        def up():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False

        wait_for(up, 120, "the webserver")
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


S3_BUCKET = "lab-bucket"


@pytest.fixture
def s3(lab, monkeypatch):
    """Moto's S3 server on a free port, its bucket the lab's storage root (LAB_STORAGE_URL,
    the endpoint in LAB_STORAGE_OPTIONS); yields a boto3 client of that server."""
    import boto3

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    endpoint = f"http://127.0.0.1:{port}"
    for var, value in {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(var, value)
    client = boto3.client("s3", endpoint_url=endpoint)
    deadline = time.time() + 30
    while True:
        try:
            client.create_bucket(Bucket=S3_BUCKET)
            break
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
    monkeypatch.setenv("LAB_STORAGE_URL", f"s3://{S3_BUCKET}/lab")
    monkeypatch.setenv("LAB_STORAGE_OPTIONS", json.dumps({"endpoint_url": endpoint}))
    yield client
    os.killpg(server.pid, signal.SIGTERM)
    server.wait(timeout=30)
