"""The warm-worker run launcher (lab_assets/runtime/launcher.py) with real worker processes: runs reuse
warm workers, cancelling interrupts the run, a killed worker fails only its own run (retirement on
edited code: test_warm_workers.py, the mechanism's own test). Plus the whole UI path: a backfill of
the sweep through `lab ui`'s webserver, queue, daemon and warm workers."""

import fcntl
import os
import signal
import sys

import dagster as dg
import pytest
from dagster._core.launcher import LaunchRunContext, WorkerStatus

from benchmarks import ui_backfill
from lab_assets.core.source_stamps import PACKAGE
from lab_assets.defs.freshness import plan_sweep
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.local import definitions
from lab_assets.runner.sweeps import register_and_plan
from lab_assets.runtime.instance import get_instance, instance_yaml
from lab_assets.runtime.launcher import WORKER_PID_TAG, WarmWorkerRunLauncher
from lab_assets_tests.conftest import PACKAGE_EDIT_LOCK, REPO, lab_ui, wait_for
from lab_assets_tests.sleep_job import sleep_job

SLEEP_SECONDS = 120


def _launch(instance, launcher, seconds: float) -> str:
    recon = dg.reconstructable(sleep_job)
    run = instance.create_run_for_job(
        sleep_job,
        run_config={"ops": {"sleep_op": {"config": {"seconds": seconds}}}},
        job_code_origin=recon.get_python_origin(),
    )
    launcher.launch_run(LaunchRunContext(dagster_run=run, workspace=None))
    return run.run_id


def _wait_status(instance, run_id: str, statuses, what: str) -> dg.DagsterRun:
    def reached():
        run = instance.get_run_by_id(run_id)
        if run.is_finished and run.status not in statuses:  # say why, rather than time out
            raise AssertionError(
                f"{what}: run ended {run.status}: {[e.message for e in instance.all_logs(run_id)][-3:]}"
            )
        return run.status in statuses and run

    return wait_for(reached, 120, what)


def _worker_pid(instance, run_id: str) -> int:
    return int(
        wait_for(lambda: instance.get_run_by_id(run_id).tags.get(WORKER_PID_TAG), 120, "a worker to pick up the run")
    )


def test_runs_reuse_warm_workers_and_cancel_and_crash_stay_contained(lab):
    instance = get_instance()
    launcher = WarmWorkerRunLauncher(workers=2)
    launcher.register_instance(instance)
    try:
        first, second = _launch(instance, launcher, 0), _launch(instance, launcher, 0)
        for run_id in (first, second):
            _wait_status(instance, run_id, {dg.DagsterRunStatus.SUCCESS}, "a quick run to succeed")
        third = _launch(instance, launcher, 0)
        _wait_status(instance, third, {dg.DagsterRunStatus.SUCCESS}, "a run on a warm worker")
        pids = {_worker_pid(instance, r) for r in (first, second, third)}
        assert len(pids) == 2  # three runs, two (warm) processes

        # Cancel (as the UI's "Terminate" does): the run ends CANCELED, its worker lives on.
        slow = _launch(instance, launcher, SLEEP_SECONDS)
        pid = _worker_pid(instance, slow)
        _wait_status(instance, slow, {dg.DagsterRunStatus.STARTED}, "the slow run to start")
        assert launcher.terminate(slow)
        _wait_status(instance, slow, {dg.DagsterRunStatus.CANCELED}, "the run to be canceled")
        os.kill(pid, 0)  # still alive

        # A worker killed mid-run (out of memory, say) fails that run, with the reason, and only it.
        doomed, neighbour = _launch(instance, launcher, SLEEP_SECONDS), _launch(instance, launcher, 3)
        doomed_pid = _worker_pid(instance, doomed)
        os.kill(doomed_pid, signal.SIGKILL)
        failed = _wait_status(instance, doomed, {dg.DagsterRunStatus.FAILURE}, "the killed worker's run to fail")
        assert failed.is_failure
        messages = [e.message for e in instance.all_logs(doomed) if e.dagster_event and e.dagster_event.is_run_failure]
        assert any("Warm worker failed" in m for m in messages), messages
        assert launcher.check_run_worker_health(failed).status == WorkerStatus.FAILED
        _wait_status(instance, neighbour, {dg.DagsterRunStatus.SUCCESS}, "the neighbour run to succeed")
        after = _launch(instance, launcher, 0)  # a fresh worker replaces the dead one
        _wait_status(instance, after, {dg.DagsterRunStatus.SUCCESS}, "a run after the crash")
        assert _worker_pid(instance, after) != doomed_pid
    finally:
        launcher.dispose()


def _warmed() -> dict:
    from lab_assets.runner import preload

    return {"definitions": preload.definitions.cache_info().currsize, "sklearn": "sklearn.neighbors" in sys.modules}


def test_workers_are_warmed_by_the_function_dagster_yaml_names(lab):
    config = {"workers": 1, "warm_up": "lab_assets.runner.preload:warm"}  # as in dagster.yaml
    launcher = WarmWorkerRunLauncher.from_config_value(None, config)
    try:
        assert launcher.workers().submit(_warmed).result(timeout=300) == {"definitions": 1, "sklearn": True}
    finally:
        launcher.dispose()


@pytest.mark.edits_package
def test_edited_code_retires_warm_workers(lab):
    """A real edit of a package source (restored after, with its old mtime), not a stubbed stamp."""
    source = PACKAGE / "dr" / "methods" / "isomap.py"
    original, stat = source.read_bytes(), source.stat()
    launcher = WarmWorkerRunLauncher.from_config_value(None, {"workers": 1})
    with open(PACKAGE_EDIT_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # no warm service of another test may see the edit
        try:
            workers = launcher.workers()
            first = workers.submit(os.getpid).result(timeout=300)
            assert workers.submit(os.getpid).result(timeout=300) == first  # same code: same warm worker
            source.write_bytes(original + b"\n# an edit\n")
            assert workers.submit(os.getpid).result(timeout=300) != first  # a source file changed: a fresh one
        finally:
            source.write_bytes(original)
            os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
            launcher.dispose()


@pytest.mark.slow
def test_sweep_backfill_through_lab_ui_runs_on_warm_workers(lab):
    """The UI's path end to end on the project's own instance settings (run queue, warm workers,
    `lab ui`'s daemon): every asset of the sweep in one launchPartitionBackfill."""
    home = lab / ".lab" / "dagster"
    (home / "dagster.yaml").write_text(instance_yaml((REPO / "dagster.yaml").read_text(), home))
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    with lab_ui(lab) as port:
        register_and_plan(sweep)
        ui_backfill.backfill(port, sweep, timeout=600)
    instance = get_instance()
    runs = instance.get_runs()
    assert runs and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    pids = {r.tags.get(WORKER_PID_TAG) for r in runs}
    assert None not in pids and len(pids) <= 2 < len(runs)
    assert plan_sweep(sweep, instance, definitions().resolve_asset_graph()).pending_cells() == []
