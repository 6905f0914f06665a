"""The study loop, one step at a time: propose -> register the trial key -> launch -> the
trial's row in the ledger says keep/discard/crash -> propose again.

`advance` looks only at the ledger and at Dagster's run records (runs tagged with the study),
so it can be called by the `study_loop` sensor every 30 s, by `lab study run` in a loop, or
after a restart of either, and it neither loses nor duplicates a trial:
- a run of the study still in progress: wait (trials are sequential: each proposal sees the
  previous result);
- a trial whose run failed without a ledger row (killed, out of memory): launch it again, once
  (it resumes from its checkpoint); after MAX_ATTEMPTS, record a `crash` row and move on;
- otherwise propose trial number len(ledger) (exp0 is the baseline). Proposals are a function of
  the ledger, and run keys are `<study>:<trial key>:<attempt>`, so a sensor evaluated twice
  before its run started asks Dagster for the same run key (which Dagster launches once).

A run executed by `lab study run` in its own process carries a `lab_assets/pid` tag; if that
process is gone while the run still reads as started (SIGKILL, power loss), the run is marked
failed here. Runs launched by the daemon are watched by Dagster's run monitoring instead.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import dagster as dg

from lab_assets.core import keys, storage
from lab_assets.defs.failures import run_failure
from lab_assets.defs.jobs import CORPUS, TRIAL
from lab_assets.defs.partitions import add_keys, trial_cell_key
from lab_assets.defs.work import Run
from lab_assets.runtime.orphans import fail_orphans
from lab_assets.training import ledger, proposers
from lab_assets.training.study import Study, Trial, description, save
from lab_assets.training.study import trial as trial_record

STUDY_TAG, KIND_TAG, TRIAL_TAG, EXP_TAG, PID_TAG = map(keys.tag, ("study", "kind", "trial", "exp", "pid"))
MAX_ATTEMPTS = 2  # a killed trial is retried once (resuming), then recorded as a crash


@dataclass
class Progress:
    study: str
    done: int
    total: int
    best: dict[str, Any] | None
    state: str
    launch: Run | None = None
    finished: bool = False

    def heartbeat(self) -> dict[str, Any]:
        return {
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "state": self.state,
            "trials": f"{self.done}/{self.total}",
            "best": self.best,
            "finished": self.finished,
        }


def _runs(instance: dg.DagsterInstance, study: Study) -> list[dg.DagsterRun]:
    """The study's runs, newest first."""
    return [r.dagster_run for r in instance.get_run_records(filters=dg.RunsFilter(tags={STUDY_TAG: study.name}))]


def best(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    kept = [r for r in rows if r["status"] in ("baseline", "keep") and r["val_bpb"] is not None]
    if not kept:
        return None
    top = min(kept, key=lambda r: r["val_bpb"])
    return {"exp": top["exp"], "val_bpb": top["val_bpb"], "description": top["description"]}


def history(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The latest row per trial, in experiment order: what proposers see."""
    latest = {r["trial"]: r for r in rows}
    return sorted(
        (
            {
                "exp": r["exp"],
                "description": r["description"],
                "config": json.loads(r["config"]),
                "val_bpb": r["val_bpb"],
                "status": r["status"],
            }
            for r in latest.values()
        ),
        key=lambda h: h["exp"],
    )


def _trial_launch(study: Study, trial: Trial, attempt: int) -> Run:
    return Run(
        TRIAL,
        trial_cell_key(trial.corpus, trial.key),
        {STUDY_TAG: study.name, KIND_TAG: "trial", TRIAL_TAG: trial.key, EXP_TAG: str(trial.exp)},
        run_key=f"{study.name}:{trial.key}:{attempt}",
    )


def advance(instance: dg.DagsterInstance, study: Study) -> Progress:
    """The study's state and, when it is time, the one run to launch next."""
    save(study)
    add_keys(instance, "study", [study.name])
    add_keys(instance, "corpus", [study.corpus.key])
    runs = _runs(instance, study)  # newest first
    if fail_orphans(instance, runs, PID_TAG):
        runs = _runs(instance, study)
    rows = ledger.rows(study.name)

    def progress(state: str, launch: Run | None = None, finished: bool = False) -> Progress:
        return Progress(
            study.name, len({r["trial"] for r in rows}), study.total_trials, best(rows), state, launch, finished
        )

    running = [r for r in runs if not r.is_finished]
    if running:
        what = running[0].tags.get(TRIAL_TAG, running[0].tags.get(KIND_TAG, "?"))
        return progress(f"waiting for run {running[0].run_id[:8]} ({what})")

    if not storage.exists(storage.asset_path("corpus", study.corpus.key)):
        corpus_runs = [r for r in runs if r.tags.get(KIND_TAG) == "corpus"]
        attempts = len(corpus_runs)
        if attempts >= MAX_ATTEMPTS:
            last_run = corpus_runs[0].run_id
            return progress(
                f"corpus {study.corpus.key} failed {attempts} times: {run_failure(instance, last_run)} "
                f"[run {last_run[:8]}; full log: lab logs {last_run[:8]}]",
                finished=True,
            )
        tags = {STUDY_TAG: study.name, KIND_TAG: "corpus"}
        return progress(
            "building the corpus",
            Run(CORPUS, study.corpus.key, tags, run_key=f"{study.name}:corpus:{study.corpus.key}:{attempts}"),
        )

    last = next((r for r in runs if r.tags.get(KIND_TAG) == "trial"), None)
    recorded = {r["trial"] for r in rows}
    if last is not None and last.status != dg.DagsterRunStatus.SUCCESS and last.tags[TRIAL_TAG] not in recorded:
        trial = trial_record(last.tags[TRIAL_TAG])
        attempts = sum(r.tags.get(TRIAL_TAG) == trial.key for r in runs)
        if attempts < MAX_ATTEMPTS:
            return progress(
                f"relaunching exp{trial.exp} (resumes from its checkpoint)", _trial_launch(study, trial, attempts)
            )
        error = (
            f"run {last.run_id} ended {last.status.value} {attempts} times without a result: "
            f"{run_failure(instance, last.run_id)}"
        )
        rows.append(
            ledger.append(study.name, {**trial.ledger_row(last.run_id), "status": "crash", "error": error}, trial.noise)
        )

    n = len({r["trial"] for r in rows})
    if n >= study.total_trials:
        return progress("done", finished=True)
    overrides = {} if n == 0 else proposers.propose(study, history(rows))
    if overrides is None:
        return progress("done: the grid is exhausted", finished=True)
    config = study.config(overrides, f"{study.source}: proposal for exp{n}")
    trial = Trial(study.name, n, study.corpus.key, config, description(study.baseline, config), study.search.noise)
    save(study, trial)
    add_keys(instance, "trial", [trial.key])
    return progress(f"launching exp{n} ({trial.description})", _trial_launch(study, trial, 0))
