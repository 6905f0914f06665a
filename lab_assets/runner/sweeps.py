"""A sweep through the runner: register its keys, plan, derive the work, run it where asked."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from lab_assets.core import layout, side_process, storage
from lab_assets.core.settings import CACHE_FOLDER, lab_home
from lab_assets.core.warm_workers import HERE_SECONDS, RUN_SECONDS, WarmWorkers, default_workers
from lab_assets.defs.assets.reports import report_dir
from lab_assets.defs.freshness import SweepPlan, plan_sweep
from lab_assets.defs.integrity import Damage, sweep_damage
from lab_assets.defs.recorded_cost import recorded_seconds
from lab_assets.defs.register import register
from lab_assets.defs.work import report_work, sweep_work
from lab_assets.dr import report_drawing
from lab_assets.dr.staleness import METRICS
from lab_assets.dr.sweep import Sweep
from lab_assets.runner.local import LocalTarget
from lab_assets.runner.preload import definitions
from lab_assets.runner.run import Progress, Result, no_progress, run_work
from lab_assets.runner.webserver import WebserverTarget
from lab_assets.runtime.instance import get_instance


def plan(sweep: Sweep, verify: bool = False) -> SweepPlan:
    """What is fresh, stale, damaged or missing now (read-only); `verify`: files' hashes too."""
    return plan_sweep(sweep, get_instance(), definitions().resolve_asset_graph(), verify, lab_home() / CACHE_FOLDER)


def report_folder(name: str) -> str:
    """The sweep's report folder as it is now (on an object store, its current version's folder:
    a complete set, never of two versions)."""
    return storage.current(report_dir(name))


def register_and_plan(sweep: Sweep, verify: bool = False) -> SweepPlan:
    register(get_instance(), sweep)
    return plan(sweep, verify)


def verify(sweep: Sweep) -> list[Damage]:
    """Every artifact of the sweep whose file is missing or differs from what was written
    (content hashes: reads every file). Read-only."""
    return sweep_damage(get_instance(), sweep, full=True)


def upgrade_lab_home() -> None:
    """Before anything runs: migrate a lab home written by an earlier release (`core/layout.py`)
    and say what will recompute and why."""
    for note in layout.upgrade():
        print(f"lab: this lab home was written by an earlier release; {note}", file=sys.stderr, flush=True)


def small_enough_here(plan: SweepPlan) -> bool:
    """Whether the plan's pending work costs less in this process than on warm workers: no cell
    or dataset to compute (the tables alone), or only metrics steps whose last materializations
    recorded little enough (`HERE_SECONDS`). Each cell is priced at the median cell's step: a
    process's first step records its one-off imports too (~3 s in this process, which loads no
    neighbour search before it), and one such record must not send the next re-run to the
    workers. A cell with no recorded cost is not guessed at."""
    cells = plan.pending_cells()
    if plan.pending_datasets or any(set(c.assets) != {METRICS} for c in cells):
        return False
    if not cells:
        return True
    recorded = recorded_seconds(get_instance(), [c.partition for c in cells], parts=(METRICS,))
    if len(recorded) < len(cells):
        return False
    return len(cells) * (statistics.median(r[METRICS] for r in recorded.values()) + RUN_SECONDS) < HERE_SECONDS


def materialize_sweep(
    sweep: Sweep,
    workers: int | None = None,
    progress: Progress | None = None,
    submit: str | None = None,
    verify: bool = False,
    registered: Callable[[], None] | None = None,
    pool: WarmWorkers | None = None,
) -> Result:
    """Materialize the sweep's missing, stale or damaged partitions: on `workers` local processes
    (default one per core), or through the webserver at `submit`. `verify`: find damaged files by
    their content hashes, not only their sizes. `registered` is called once the sweep is
    registered, before it is planned (`noop_answer.NoopAnswer.mark`). `pool`: workers started
    earlier (`lab sweep run` starts them first), used instead of `workers`; its owner closes it,
    but work small enough for this process (`small_enough_here`) ends it unused, here."""
    start = time.perf_counter()
    upgrade_lab_home()
    register(get_instance(), sweep)
    if registered is not None:
        registered()
    before = plan(sweep, verify)
    # Planned again after the datasets ran: one plan is a stale-status query per cell (~15 ms).
    work = sweep_work(before, recheck=lambda: plan(sweep, verify))
    if submit:
        target = WebserverTarget(submit)
    else:
        if small_enough_here(before):
            if pool is not None:
                pool.close()  # never used: its workers end now, mid-warm-up
            target = LocalTarget(1)
        else:
            target = LocalTarget(min(workers or default_workers(), len(before.pending_cells())), pool)
        if target.pool is None:  # its runs log to W&B and draw the report from this process
            side_process.start(report_drawing.MODULES)
    with target:
        result = run_work(work, target, progress or no_progress)
    result.before, result.seconds = before, time.perf_counter() - start
    return result


def materialize_report(sweep: Sweep) -> Result:
    """`lab report`: the metric table and the sweep's report, here, whatever their status."""
    side_process.start(report_drawing.MODULES, modules_first=True)
    upgrade_lab_home()
    register_and_plan(sweep)
    with LocalTarget(1) as here:
        return run_work(report_work(sweep), here)
