"""`study_loop`: the autonomous search, driven by Dagster. Every 30 s, for each study file under
`<project>/studies/`, one `loop.advance` step: launch the next trial (or the corpus, or a retry)
when nothing of the study is running. Stopped by default: a search spends compute for hours, so
it starts when someone turns it on in the UI (Automation -> study_loop), or runs in a terminal
with `lab study run`.

Progress is visible without opening a log: the sensor's cursor holds each study's heartbeat
(time, state, trials done, best so far), and each change of a ledger is recorded as an
observation of `study_ledger[<study>]` whose metadata holds the table. The cursor is for display
only; what the loop does next is decided from the ledger and the run records.
"""

import json
from pathlib import Path

import dagster as dg

from lab_assets.core.key_records import UnknownKeyError
from lab_assets.core.settings import project_dir
from lab_assets.defs import study_loop as loop
from lab_assets.defs.assets.training import ledger_version
from lab_assets.defs.jobs import STUDY_JOBS
from lab_assets.defs.work import Work, requests
from lab_assets.runtime.data_versions import observe_if_changed
from lab_assets.training import ledger
from lab_assets.training.study import StudyError, parse_study


def study_files() -> list[Path]:
    return sorted((project_dir() / "studies").glob("*.yaml"))


def observe_ledger(instance: dg.DagsterInstance, p: loop.Progress) -> bool:
    """Record an observation of the study's ledger if it changed since the last one."""

    def metadata() -> dict:  # built only when the ledger changed
        table = ledger.tsv(ledger.rows(p.study)).splitlines()
        markdown = "\n".join(
            "| " + " | ".join(line.split("\t")) + " |"
            for line in table[:1] + ["\t".join(["---"] * len(ledger.TSV_COLUMNS))] + table[1:]
        )
        return {
            "trials": f"{p.done}/{p.total}",
            "state": p.state,
            "best": dg.MetadataValue.json(p.best or {}),
            "ledger": dg.MetadataValue.md(markdown),
            "tsv": dg.MetadataValue.path(ledger.path(p.study, ".tsv")),
        }

    return observe_if_changed(instance, "study_ledger", ledger_version(p.study), p.study, metadata=metadata)


@dg.sensor(jobs=STUDY_JOBS, minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.STOPPED)
def study_loop(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """Runs each study's propose -> launch -> record loop, one trial at a time."""
    heartbeat, run_requests = {}, []
    for path in study_files():
        try:
            study = parse_study(path.read_text(), str(path.relative_to(project_dir())))
            p = loop.advance(context.instance, study)
        except (
            StudyError,
            UnknownKeyError,
        ) as e:  # a broken file, a failing proposer, a lost key record: say so, keep the others going
            context.log.error(str(e))
            heartbeat[path.name] = {"error": str(e)}
            continue
        observe_ledger(context.instance, p)
        heartbeat[study.name] = p.heartbeat()
        if p.launch is not None:
            run_requests += requests(Work.single(p.launch))
    cursor = json.dumps(heartbeat, sort_keys=True)
    if run_requests:
        return dg.SensorResult(run_requests=run_requests, cursor=cursor)
    states = "; ".join(f"{name}: {h.get('state', h.get('error'))}" for name, h in heartbeat.items())
    return dg.SensorResult(skip_reason=states or "no study file under studies/", cursor=cursor)
