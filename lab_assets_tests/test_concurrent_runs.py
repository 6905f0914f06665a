"""One computation per cell at a time (issue 17, "What to build" 2): two `lab sweep run` of one
sweep on one lab home, started a second apart, compute each partition once; the second waits
for what the first has in flight and counts it."""

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time

import dagster as dg
import pytest

from lab_assets.core import keys
from lab_assets.defs.inflight import OWNER_TAG
from lab_assets.runtime.instance import get_instance
from lab_assets_tests.conftest import interrupt_when, lab_cli, lab_ui, wait_for
from lab_assets_tests.test_trust import _no_traceback

SLOW = (
    "name: slow\ndata:\n  swissroll: {n_samples: 400}\nseeds: [0, 1, 2, 3]\n"
    "methods:\n  tsne: {max_iter: 500}\nmetrics:\n  trustworthiness: {k: [5]}\n"
)


def _materializations(asset: str) -> dict[str, int]:
    """How many times each partition of `asset` was materialized."""
    records = get_instance().fetch_materializations(dg.AssetKey(asset), limit=1000).records
    counts: dict[str, int] = {}
    for r in records:
        counts[r.partition_key] = counts.get(r.partition_key, 0) + 1
    return counts


def _two_commands_compute_each_cell_once(lab, sweep: str, n: int, workers: int, delay: float) -> None:
    (lab / "sweeps" / "s.yaml").write_text(sweep)
    command = [
        sys.executable,
        "-m",
        "lab_assets.cli.main",
        "sweep",
        "run",
        "sweeps/s.yaml",
        "--json",
        "--workers",
        str(workers),
    ]
    first = subprocess.Popen(
        command, cwd=lab, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    time.sleep(delay)
    second = subprocess.Popen(
        command, cwd=lab, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    outs = []
    for proc in (first, second):
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        outs.append(json.loads(out))

    # Each dataset and cell computed once, by one of the two; the other waited for it and says so.
    for job in ("datasets", "cells"):
        assert sum(o["materialized"][job] for o in outs) == n, outs
        assert sum(o["waited"][job] + o["materialized"][job] for o in outs) == 2 * n, outs
    assert sum(o["waited"]["cells"] for o in outs) >= 1, outs  # they did overlap: the proof is not vacuous
    for asset in ("raw_dataset", "dataset", "embedding", "metrics"):
        counts = _materializations(asset)
        assert len(counts) == n and set(counts.values()) == {1}, (asset, counts)


# The default suite's variant, overlapping by construction rather than by timing: a method that
# holds its cell in flight until the test opens a gate, and a second command that says when it
# found the cell in flight and waits for it (`inflight.wait`, wrapped before `lab` runs).
HELD = '''"""A method that holds its cell in flight until the test opens the gate."""
import os
import time
from pathlib import Path

from lab_assets.dr.methods import METHODS


class Held:
    def fit_transform(self, X):
        gate = Path(os.environ["LAB_TEST_GATE"])
        (gate / f"computing-{os.getpid()}").touch()
        deadline = time.time() + 120
        while not (gate / "open").exists():
            if time.time() > deadline:
                raise TimeoutError("the gate never opened")
            time.sleep(0.05)
        return X[:, :2]


@METHODS("held", limits=lambda params, shape: {})
def held(seed: int, *, factor: float = 1.0):
    """The first two coordinates, once the gate is open."""
    return Held()
'''
WAITING = """
import sys
from pathlib import Path
from lab_assets.cli.main import main
from lab_assets.defs import inflight
gate, wait = Path(sys.argv[1]), inflight.wait
def waiting(*args, **kwargs):
    (gate / "waiting").touch()
    return wait(*args, **kwargs)
inflight.wait = waiting
sys.exit(main(sys.argv[2:]))
"""


def test_two_commands_started_together_compute_each_cell_once(lab, monkeypatch):
    gate = lab / "gate"
    gate.mkdir()
    (lab / "held.py").write_text(HELD)
    (lab / "sweeps" / "s.yaml").write_text(
        "name: held\ndata:\n  swissroll: {n_samples: 100}\nseeds: [0]\nmethods:\n  held: {}\n"
        "metrics:\n  trustworthiness: {k: [5]}\n"
    )
    monkeypatch.setenv("LAB_PLUGINS", "held")
    monkeypatch.setenv("LAB_TEST_GATE", str(gate))
    args = ["sweep", "run", "sweeps/s.yaml", "--json", "--workers", "1"]
    pipes = dict(cwd=lab, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = subprocess.Popen([sys.executable, "-m", "lab_assets.cli.main", *args], **pipes)
    second = None
    try:
        wait_for(lambda: any(gate.glob("computing-*")) or first.poll() is not None, 180, "the first cell in flight")
        assert first.poll() is None, first.communicate()
        second = subprocess.Popen([sys.executable, "-c", WAITING, str(gate), *args], **pipes)
        wait_for(
            lambda: (gate / "waiting").exists() or len(list(gate.glob("computing-*"))) > 1 or second.poll() is not None,
            180,
            "the second command to find the cell in flight",
        )
        # The first command computes the cell; the second waits for it instead of computing it too.
        assert sorted(p.name for p in gate.iterdir()) == [f"computing-{first.pid}", "waiting"]
    finally:
        (gate / "open").touch()
    outs = []
    for proc in (first, second):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        outs.append(json.loads(out))
    assert [o["materialized"]["cells"] for o in outs] == [1, 0] and outs[1]["waited"]["cells"] == 1, outs
    for asset in ("raw_dataset", "dataset", "embedding", "metrics"):
        assert set(_materializations(asset).values()) == {1}, asset


@pytest.mark.slow
def test_two_runs_of_one_sweep_compute_each_cell_once(lab):
    _two_commands_compute_each_cell_once(lab, SLOW, n=4, workers=2, delay=1)


@pytest.mark.slow
def test_processes_opening_a_fresh_instance_at_once_leave_it_usable(lab):
    """Dagster creates a new SQLite database and stamps its schema version as two steps; four
    processes opening the fresh instance in the same instant (as a command's workers do) must
    not stamp it twice, which fails them and every later start ("more than one head")."""
    start = time.time() + 4  # after all four have imported Dagster
    code = (
        "import sys, time; from lab_assets.runtime.instance import get_instance; import dagster;"
        "time.sleep(max(0, float(sys.argv[1]) - time.time())); get_instance()"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(start)], cwd=lab, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
    for db in (lab / ".lab" / "dagster").rglob("*.db"):
        with sqlite3.connect(db) as conn:
            # At most one version each (the event log's table stays empty: it is never stamped).
            if conn.execute("SELECT name FROM sqlite_master WHERE name = 'alembic_version'").fetchall():
                assert conn.execute("SELECT COUNT(*) FROM alembic_version").fetchone()[0] <= 1, db
    run = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--json", "--workers", "1", cwd=lab)
    assert run.returncode == 0, run.stderr


def test_a_dead_commands_run_does_not_block_a_cell(lab):
    """A run left 'started' by a killed process (its owner tag names a pid that is gone) is
    marked failed by the waiter, which then computes the partition itself."""
    out = lab_cli("sweep", "plan", "sweeps/tiny.yaml", "--json", cwd=lab)
    cell = json.loads(out.stdout)["cells"][0]["partition"]  # datasets too are partitioned by cell
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    instance = get_instance()
    orphan = instance.create_run_for_job(
        job_def=_datasets_job(),
        status=dg.DagsterRunStatus.STARTED,
        tags={
            "dagster/partition": cell,
            OWNER_TAG: f"{socket.gethostname()}:{dead.pid}",
            keys.tag("command"): "someone-else",
        },
    )
    run = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--json", "--workers", "1", cwd=lab)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["materialized"]["datasets"] == 2  # by data key, the orphan's cell included
    assert instance.get_run_by_id(orphan.run_id).status == dg.DagsterRunStatus.FAILURE


def _datasets_job():
    from lab_assets.defs.jobs import DATASETS, job_name
    from lab_assets.runner.local import definitions

    return definitions().resolve_job_def(job_name(DATASETS))


@pytest.mark.slow
def test_ctrl_c_during_submit_leaves_the_submitted_runs_running_and_a_rerun_waits_for_them(lab):
    (lab / "sweeps" / "slow.yaml").write_text(SLOW.replace("[0, 1, 2, 3]", "[0, 1]").replace("500}", "1500}"))
    # 2 cells (a process per run here), long enough to be in flight when the command is run again
    instance = get_instance()
    with lab_ui(lab) as port:
        url = f"http://127.0.0.1:{port}"
        # A terminal's Ctrl-C: SIGINT to the command's process group (the webserver is not in it).
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lab_assets.cli.main",
                "sweep",
                "run",
                "sweeps/slow.yaml",
                "--quiet",
                "--submit",
                url,
            ],
            cwd=lab,
            env=os.environ.copy(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        started = dg.RunsFilter(job_name="materialize_cells_with_data", statuses=[dg.DagsterRunStatus.STARTED])
        out, err = interrupt_when(proc, lambda: instance.get_runs(started))
        assert proc.returncode == 130, err
        _no_traceback(err)
        *_, done, left = err.strip().splitlines()
        assert done.startswith("interrupted: ") and done.endswith(" of 2 cells done; run again to continue")
        assert (
            left == f"the 2 runs submitted to {url} keep running there (cancel them in its UI); "
            "running again waits for them instead of starting them again"
        )

        again = lab_cli("sweep", "run", "sweeps/slow.yaml", "--json", "--submit", url, cwd=lab)
        assert again.returncode == 0, again.stderr
        summary = json.loads(again.stdout)
    # The submitted runs went on: the re-run computed no cell, it waited for those still running.
    assert summary["materialized"]["cells"] == 0
    assert summary["waited"]["cells"] + summary["fresh"]["cells"] == 2 and summary["waited"]["cells"] >= 1
    counts = _materializations("embedding")
    assert len(counts) == 2 and set(counts.values()) == {1}, counts


BACKFILL = """mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on Error { message } } }"""
CELL_ASSETS = ("raw_dataset", "dataset", "embedding", "metrics")


@pytest.mark.slow
def test_a_ui_backfill_in_flight_and_a_sweep_run_compute_each_cell_once(lab):
    """A backfill of a sweep's cells launched the UI's way (`launchPartitionBackfill` through
    `lab ui`: the run queue, the daemon, warm workers; runs of Dagster's implicit asset job) is in
    flight when `lab sweep run` of the same sweep starts: each cell is computed once, the command
    counts what it waited for, and a backfill run that came second stopped naming the run
    that computes its cell."""
    from lab_assets.defs import inflight
    from lab_assets.defs.failures import run_failure
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.runner.sweeps import register_and_plan
    from lab_assets.runtime.instance import instance_yaml
    from lab_assets_tests.conftest import REPO, graphql, wait_for

    home = lab / ".lab" / "dagster"
    (home / "dagster.yaml").write_text(instance_yaml((REPO / "dagster.yaml").read_text(), home))  # what users run
    # Cells of several seconds each: with warm workers, 400-point cells could all finish before
    # the command, started once the backfill's first run has, gets to plan (seen in CI).
    (lab / "sweeps" / "slow.yaml").write_text(SLOW.replace("n_samples: 400", "n_samples: 1500"))
    sweep = load_sweep(lab / "sweeps" / "slow.yaml")
    cells = [keys.cell_key(d, m) for d, m in sweep.cells]
    instance = get_instance()
    with lab_ui(lab) as port:
        register_and_plan(sweep)
        ranges = {"ranges": [{"start": c, "end": c} for c in cells]}
        params = {"partitionsByAssets": [{"assetKey": {"path": [a]}, "partitions": ranges} for a in CELL_ASSETS]}
        launched = graphql(port, BACKFILL, {"params": params})["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        of_backfill = {"dagster/backfill": launched["backfillId"]}
        started = dg.RunsFilter(tags=of_backfill, statuses=[dg.DagsterRunStatus.STARTED])
        wait_for(lambda: instance.get_runs(started), 120, "a run of the backfill to start")

        run = lab_cli("sweep", "run", "sweeps/slow.yaml", "--json", "--workers", "2", cwd=lab, timeout=600)
        assert run.returncode == 0, run.stderr
        summary = json.loads(run.stdout)
        backfill_runs = wait_for(
            lambda: (
                (runs := instance.get_runs(dg.RunsFilter(tags=of_backfill)))
                and all(r.is_finished for r in runs)
                and runs
            ),
            300,
            "the backfill's runs to finish",
        )

    # Each dataset and cell computed once, by the backfill or the command; the command counts
    # what it waited for, and as fresh what the backfill had finished before it planned (or
    # before its cells were planned again after the datasets' phase).
    for asset in CELL_ASSETS:
        counts = _materializations(asset)
        assert len(counts) == 4 and set(counts.values()) == {1}, (asset, counts, summary)
    for job in ("datasets", "cells"):
        assert summary["materialized"][job] + summary["waited"][job] + summary["fresh"][job] == 4, summary
    # Waited for: the datasets at least (the backfill's runs compute a cell's dataset and the
    # cell in one run; the cells, planned again once the datasets' phase is done, can be fresh).
    assert sum(summary["waited"].values()) >= 1, summary
    # The backfill's runs that came second stopped before computing, naming the run they deferred to.
    for r in backfill_runs:
        if r.status != dg.DagsterRunStatus.SUCCESS:
            reason = run_failure(instance, r.run_id)
            assert inflight.elsewhere(reason) is not None, reason
