"""How a `lab` command executes, decided here; the CLI parses the arguments and prints.

- `hand_over(args)`: the warm service (runner/warm_service.py), if it is on, calls the CLI's
  `execute(args)` (`ENTRY`) in a loaded child: `lab sweep plan`, `lab report`, `lab verify`, and
  `lab sweep run` with work to do.
- `route_sweep_run(...)`: `lab sweep run`'s one route, read top to bottom: the saved no-op answer
  (runner/noop_answer.py, no Dagster loaded), else the warm service, else here: warm workers
  started first (forked from the service's loaded child when the service runs the command), this
  process (one worker), or a webserver (`submit`); then `runner/sweeps.materialize_sweep`. The
  service's child runs this same function (the no-op answer and the hand-over then say no).
- `SweepRunSummary`: what `lab sweep run` reports, whichever way it went (`Saved.summary`,
  `RanHere.summary`): the CLI prints it, text or `--json`, with one function.

Nothing heavy at import (the standard library, `core/settings`, `runner/warm_service.py`,
`runner/preload.py`): the hand-over and the workers' start come before Dagster, pandas or pydantic load.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab_assets.core.warm_workers import HERE_SECONDS, RUN_SECONDS, default_workers
from lab_assets.runner import warm_service
from lab_assets.runner.preload import warm_workers

if TYPE_CHECKING:
    from lab_assets.dr.sweep import Sweep
    from lab_assets.runner.noop_answer import NoopAnswer
    from lab_assets.runner.run import Progress, Result


# What the warm service's child calls with the parsed arguments: the CLI's own function, by name
# (the runner may not import the CLI; as dagster.yaml names `runner.preload:warm` to the runtime).
ENTRY = "lab_assets.cli.main:execute"
PARSER = "lab_assets.cli.main:parser"  # for the service's rehearsal, the one command it parses itself


def hand_over(args: argparse.Namespace) -> int | None:
    """The exit code of the command run by the warm service (which printed its output), or None:
    run it here."""
    return warm_service.forward(ENTRY, args) if warm_service.enabled() else None


@dataclass
class SweepRunSummary:
    """What `lab sweep run` reports, whichever way it went; `to_json()` is its `--json`: one set of
    keys on every path. `waited`: computed by another command's run that this one found in flight
    and waited for."""

    sweep: str
    seconds: float
    before: dict[str, int]
    materialized: dict[str, int]
    fresh: dict[str, int]
    waited: dict[str, int]
    failed: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    report: str = ""
    metrics_only: int = 0  # cells whose metrics step alone ran

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        del out["metrics_only"]  # said in the text only: the `--json` keys are those scripts already read
        return out | {"seconds": round(self.seconds, 3)}


@dataclass
class Handed:
    """The warm service ran the command and printed its output."""

    code: int


@dataclass
class Saved:
    """Nothing to do: the answer the last no-op of this file saved."""

    answer: dict[str, Any]
    seconds: float

    def summary(self) -> SweepRunSummary:
        zero = {job: 0 for job in self.answer["fresh"]}
        a = self.answer
        return SweepRunSummary(a["sweep"], self.seconds, a["before"], zero, a["fresh"], dict(zero), report=a["report"])


@dataclass
class Refused:
    """The webserver at `--submit` could not be reached or refused a run."""

    why: str


@dataclass
class RanHere:
    """Run from this process: on its warm workers, in it, or through a webserver."""

    sweep: Sweep
    result: Result
    noop: NoopAnswer | None

    def summary(self) -> SweepRunSummary:
        from lab_assets.defs.jobs import CELLS, DATASETS, METRIC_TABLE, REPORT
        from lab_assets.runner.run import FRESH, MATERIALIZED, WAITED
        from lab_assets.runner.sweeps import report_folder

        result, jobs = self.result, (DATASETS, CELLS, METRIC_TABLE, REPORT)
        # Cells materialized by their metrics step alone: their embedding was fresh (defs/work.py).
        only = {c.partition for c in (result.before.cells if result.before else []) if set(c.assets) == {"metrics"}}
        return SweepRunSummary(
            self.sweep.name,
            result.seconds,
            result.before.counts,
            materialized={job: result.count(job) for job in jobs},
            fresh={job: result.count(job, FRESH) for job in jobs},
            waited={job: result.count(job, WAITED) for job in jobs},
            failed=[o.to_json() for o in result.failed],
            skipped=[o.to_json() for o in result.skipped],
            report=report_folder(self.sweep.name),
            metrics_only=sum(o.partition in only for o in result.of(MATERIALIZED, CELLS)),
        )

    def save_noop_answer(self, report_text: Callable[[], str]) -> None:
        """Save what the next no-op of this file prints, minus its timing (`report_text`: the
        report as printed). After a run that materialized anything, the sweep is planned again
        (one stale-status resolution per cell, ~6.5 ms) and the answer saved only if that plan
        finds everything fresh: the first re-run is then a no-op too."""
        if self.noop is None or not self.result.ok:
            return
        from lab_assets.defs.integrity import artifact_paths
        from lab_assets.defs.jobs import CELLS, DATASETS, METRIC_TABLE, REPORT
        from lab_assets.runner.run import FRESH
        from lab_assets.runner.sweeps import plan, report_folder

        sweep, now = self.sweep, self.result.before
        if any(o.status != FRESH for o in self.result.outcomes):
            self.noop.mark()  # the state this plan reads, not a later one
            now = plan(sweep)
            if now.pending_datasets or now.pending_cells() or now.report.status != FRESH:
                return
        out = report_folder(sweep.name)
        self.noop.save(
            sweep,
            {
                "sweep": sweep.name,
                "before": now.counts,
                "fresh": {DATASETS: len(now.datasets), CELLS: len(now.cells), METRIC_TABLE: 1, REPORT: 1},
                "cells": len(now.cells),
                "report": out,
                "report_text": report_text(),
            },
            [f"{out}/summary.parquet", f"{out}/comparisons.parquet", f"{out}/metrics.parquet", *artifact_paths(sweep)],
        )


def route_sweep_run(
    path: str,
    *,
    hand_over: Callable[[], int | None],
    workers: int | None = None,
    submit: str | None = None,
    verify: bool = False,
    width: int = 100,
    progress: Callable[[], Progress | None] = lambda: None,
) -> Handed | Saved | Refused | RanHere:
    """`lab sweep run` of the file at `path` (`hand_over`: the command to the warm service, its
    exit code or None; `width`: of the printed tables, part of the saved answer's state;
    `progress`: called once the workers are started, for the progress display)."""
    start = time.perf_counter()
    text = _read(path)
    # `--verify` hashes every file: never answered without looking; `--submit` asks the webserver.
    noop = None if submit or verify or text is None else _noop_answer(path, text, width)
    if noop is not None and (answer := noop.load()) is not None:
        return Saved(answer, time.perf_counter() - start)
    if (code := hand_over()) is not None:
        return Handed(code)
    # The workers start first: their imports and warm-up overlap this process's (preload.warm_workers).
    # Not for a re-run that can only compute metrics of a few cells (metrics added to the file):
    # it runs in this process (`sweeps.small_enough_here`), and workers warming up meanwhile
    # only slow it down (issue 44); if it is bigger after all, the plan starts them.
    count = workers or default_workers()
    first = not submit and count > 1 and not _few_metrics_steps(noop)
    if not first and not submit:
        from lab_assets.core import side_process
        from lab_assets.dr import report_drawing

        # Its cells run here: W&B's import and start and the report's drawing go to the other core now.
        side_process.start(report_drawing.MODULES)
    with warm_workers(count, fork=warm_service.inside()) if first else nullcontext() as pool:
        from lab_assets.dr.sweep import load_sweep, parse_sweep  # Dagster and pandas: after the workers started
        from lab_assets.runner.sweeps import materialize_sweep
        from lab_assets.runner.webserver import SubmitError

        sweep = load_sweep(path) if text is None else parse_sweep(text.decode(), path)
        try:
            result = materialize_sweep(
                sweep,
                workers=workers,
                progress=progress(),
                submit=submit,
                verify=verify,
                registered=noop.mark if noop is not None else None,
                pool=pool,
            )
        except SubmitError as e:
            return Refused(str(e))
        return RanHere(sweep, result, noop)


def _few_metrics_steps(noop: NoopAnswer | None) -> bool:
    cells = None if noop is None else noop.cells_if_metrics_alone_changed()
    return cells is not None and cells * RUN_SECONDS < HERE_SECONDS


def _read(path: str) -> bytes | None:
    """The sweep file's bytes, read once: what is parsed is what the no-op answer is keyed on.
    None if unreadable (`load_sweep` then says why)."""
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def _noop_answer(path: str, text: bytes, width: int) -> NoopAnswer:
    from lab_assets.runner.noop_answer import NoopAnswer  # not needed by `hand_over` alone

    return NoopAnswer(path, text, width)
