"""Sensors that keep sweeps up to date with nobody at a terminal.

- `sweep_registry`: a new or edited file under `<project>/sweeps/` has its partition keys
  registered (and its specs observed), so it appears in the UI without restarting anything; a
  deleted one unregisters its sweep (`register.unregister`, as `lab sweep remove`).
- `sweep_schedules`: each sweep with `schedule: "<cron>"` gets, at every cron tick, one backfill
  of exactly its missing or stale partitions (nothing when all is fresh). It is a sensor rather
  than a Dagster schedule because only sensors can request a backfill, and a backfill is what
  orders the work (datasets before the cells that read them) and shows in the UI as one unit.
  A tick is handled once (the cursor keeps the last one), and no second backfill is requested
  while the sweep's previous one is still running, so firing twice never floods the queue.
- `sweep_launches`: each materialization of `sweep[<name>]` (how a person launches a sweep from
  the UI, defs/assets/sweeps.py) gets the same backfill, planned when the sensor sees it.
"""

import hashlib
import json
import time
from pathlib import Path

import dagster as dg

from lab_assets.core import cron
from lab_assets.core.settings import CACHE_FOLDER, lab_home, project_dir, resolve_path
from lab_assets.defs.freshness import plan_sweep
from lab_assets.defs.register import register, unregister
from lab_assets.defs.work import SWEEP_TAG, requests, sweep_work
from lab_assets.dr import keystore
from lab_assets.dr.sweep import Sweep, SweepError, parse_sweep
from lab_assets.runtime.backfills import backfill_running


def sweep_files() -> list[Path]:
    return sorted((project_dir() / "sweeps").glob("*.yaml"))


def _parse(path: Path) -> Sweep:
    return parse_sweep(path.read_text(), str(path.relative_to(project_dir())))


@dg.sensor(minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING)
def sweep_registry(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """Registers the partition keys of new or edited sweep files."""
    seen: dict[str, str] = json.loads(context.cursor or "{}")
    changed = []
    for path in sweep_files():
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if seen.get(path.name) == digest:
            continue
        seen[path.name] = digest  # a broken file is reported once, not every 30 s
        try:
            register(context.instance, _parse(path))
        except SweepError as e:
            context.log.error(str(e))
            continue
        changed.append(path.name)
    changed += _unregister_deleted(context, seen)
    if not changed:
        return dg.SensorResult(skip_reason="no new or edited sweep file", cursor=json.dumps(seen))
    # Registration is the whole job (no run to launch), so the tick says what it registered.
    return dg.SensorResult(skip_reason=f"registered {', '.join(changed)}", cursor=json.dumps(seen))


def _unregister_deleted(context: dg.SensorEvaluationContext, seen: dict[str, str]) -> list[str]:
    """Unregister the sweeps whose file, seen before, is gone (after the new files registered: a
    renamed file's sweep is the new file's now)."""
    out = []
    for name in [n for n in seen if not (project_dir() / "sweeps" / n).is_file()]:
        del seen[name]
        path = project_dir() / "sweeps" / name
        for sweep in keystore.sweeps():
            if resolve_path(sweep.source) == path:
                unregister(context.instance, sweep.name)
                out.append(f"{name} (deleted: {sweep.name} unregistered)")
    return out


# What the sweep sensors may request: Dagster validates a sensor's backfill requests against its
# `asset_selection` when the daemon evaluates it (a sensor without one fails every tick that
# requests a backfill; calling the function directly, as a unit test might, skips that check).
SWEEP_ASSETS = dg.AssetSelection.assets(
    "raw_dataset", "dataset", "model", "embedding", "metrics", "metric_table", "report"
)


def _backfill(context: dg.SensorEvaluationContext, sweep: Sweep, why: str) -> list[dg.RunRequest]:
    """One backfill of the sweep's missing or stale partitions (nothing when all is fresh, or
    while its previous backfill still runs)."""
    if backfill_running(context.instance, {SWEEP_TAG: sweep.name}):
        context.log.info(f"{sweep.name}: previous backfill still running; {why} skipped")
        return []
    graph = context.repository_def.asset_graph
    plan = plan_sweep(sweep, context.instance, graph, cache=lab_home() / CACHE_FOLDER)
    backfill = requests(sweep_work(plan), graph)
    if not backfill:
        context.log.info(f"{sweep.name}: everything fresh")
    else:
        context.log.info(f"{sweep.name} ({why}): {len(plan.pending_cells())} cells")
    return backfill


@dg.sensor(minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING, asset_selection=SWEEP_ASSETS)
def sweep_schedules(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """At each sweep's cron tick, requests one backfill of its missing or stale partitions."""
    last_tick: dict[str, float] = json.loads(context.cursor or "{}")
    now = time.time()
    run_requests = []
    for path in sweep_files():
        try:
            sweep = _parse(path)
        except SweepError:
            continue  # sweep_registry reports it
        if not sweep.schedule:
            continue
        tick = cron.last_tick(sweep.schedule, now)  # UTC
        if sweep.name not in last_tick:
            last_tick[sweep.name] = tick  # first sight: start with the next tick, not a past one
            continue
        if tick <= last_tick[sweep.name]:
            continue
        last_tick[sweep.name] = tick
        register(context.instance, sweep)
        run_requests += _backfill(context, sweep, "cron tick")
    return dg.SensorResult(run_requests=run_requests, cursor=json.dumps(last_tick))


# A fresh cursor looks back this far only: a launch asked for while the daemon was starting
# counts, last week's materializations do not.
FIRST_LOOK_SECONDS = 600


@dg.sensor(minimum_interval_seconds=5, default_status=dg.DefaultSensorStatus.RUNNING, asset_selection=SWEEP_ASSETS)
def sweep_launches(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """Answers each new materialization of `sweep[<name>]` with one backfill of that sweep's
    missing or stale partitions."""
    after = int(context.cursor) if context.cursor else None
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("sweep"), after_storage_id=after), limit=100, ascending=True
    ).records
    if not records:
        return dg.SensorResult(skip_reason="no sweep launched", cursor=context.cursor)
    cursor = str(records[-1].storage_id)
    if after is None:
        records = [r for r in records if r.timestamp >= time.time() - FIRST_LOOK_SECONDS]
    run_requests = []
    for name in dict.fromkeys(r.partition_key for r in records):
        run_requests += _backfill(context, keystore.sweep(name), "launched from the UI")
    return dg.SensorResult(run_requests=run_requests, cursor=cursor)


SENSORS = [sweep_registry, sweep_schedules, sweep_launches]
