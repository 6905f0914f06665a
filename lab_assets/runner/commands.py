"""How a `lab` command executes, chosen here; the CLI parses the arguments and prints.

- `hand_over(argv)`: the warm service (runner/service.py) runs the command, if it is on: `lab
  sweep plan`, `lab report`, `lab verify`, and `lab sweep run` with work to do.
- `sweep_run(...)`: `lab sweep run`'s one call: the saved no-op answer (runner/noop_cache.py, no
  Dagster loaded), else the warm service, else here: on a worker pool started first (forked from
  the service's loaded child when the service runs the command), in this process (one worker),
  or through a webserver (`submit`).

Nothing heavy at import (the standard library, `core/settings`, `runner/service.py`,
`runner/pool.py`): the hand-over and the workers' start come before Dagster, pandas or pydantic load.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab_assets.core.warm_workers import default_workers
from lab_assets.runner import service
from lab_assets.runner.pool import WorkerPool

if TYPE_CHECKING:
    from lab_assets.dr.sweep import Sweep
    from lab_assets.runner.noop_cache import NoopCache
    from lab_assets.runner.run import Progress, Result


def hand_over(argv: list[str]) -> int | None:
    """The exit code of `lab argv` run by the warm service (which printed its output), or None:
    run it here."""
    return service.forward(argv) if service.enabled() else None


@dataclass
class Handed:
    """The warm service ran the command and printed its output."""

    code: int


@dataclass
class Saved:
    """Nothing to do: the answer the last no-op of this file saved."""

    answer: dict[str, Any]
    seconds: float


@dataclass
class Refused:
    """The webserver at `--submit` could not be reached or refused a run."""

    why: str


@dataclass
class Ran:
    sweep: Sweep
    result: Result
    cache: NoopCache | None

    def save_noop(self, report_text: Callable[[], str]) -> None:
        """Save what the next no-op of this file prints, minus its timing (`report_text`: the
        report as printed). After a run that materialized anything, the sweep is planned again
        (one stale-status resolution per cell, ~6.5 ms) and the answer saved only if that plan
        finds everything fresh: the first re-run is then a no-op too."""
        if self.cache is None or not self.result.ok:
            return
        from lab_assets.defs.integrity import artifact_paths
        from lab_assets.defs.jobs import CELLS, DATASETS, METRIC_TABLE, REPORT
        from lab_assets.runner.run import FRESH
        from lab_assets.runner.sweeps import plan, report_folder

        sweep, now = self.sweep, self.result.before
        if any(o.status != FRESH for o in self.result.outcomes):
            self.cache.mark()  # the state this plan reads, not a later one
            now = plan(sweep)
            if now.pending_datasets or now.pending_cells() or now.report.status != FRESH:
                return
        out = report_folder(sweep.name)
        self.cache.save(
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


def sweep_run(
    path: str,
    argv: list[str],
    *,
    workers: int | None = None,
    submit: str | None = None,
    verify: bool = False,
    width: int = 100,
    progress: Callable[[], Progress | None] = lambda: None,
) -> Handed | Saved | Refused | Ran:
    """`lab sweep run` of the file at `path` (`argv`: the command line, for the warm service;
    `width`: of the printed tables, part of the saved answer's state; `progress`: called once the
    workers are started, for the progress display)."""
    start = time.perf_counter()
    text = _read(path)
    # `--verify` hashes every file: never answered without looking; `--submit` asks the webserver.
    cache = None if submit or verify or text is None else _noop_cache(path, text, width)
    if cache is not None and (answer := cache.load()) is not None:
        return Saved(answer, time.perf_counter() - start)
    if (code := hand_over(argv)) is not None:
        return Handed(code)
    # The workers start first: their imports and warm-up overlap this process's (runner/pool.py).
    count = workers or default_workers()
    with WorkerPool(count, fork=service.inside()) if not submit and count > 1 else nullcontext() as pool:
        from lab_assets.dr.sweep import load_sweep, parse_sweep  # Dagster and pandas: after the workers started
        from lab_assets.runner.sweeps import run_sweep
        from lab_assets.runner.webserver import SubmitError

        sweep = load_sweep(path) if text is None else parse_sweep(text.decode(), path)
        try:
            result = run_sweep(
                sweep,
                workers=workers,
                progress=progress(),
                submit=submit,
                verify=verify,
                registered=cache.mark if cache is not None else None,
                pool=pool,
            )
        except SubmitError as e:
            return Refused(str(e))
        return Ran(sweep, result, cache)


def _read(path: str) -> bytes | None:
    """The sweep file's bytes, read once: what is parsed is what the no-op cache is keyed on.
    None if unreadable (`load_sweep` then says why)."""
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def _noop_cache(path: str, text: bytes, width: int) -> NoopCache:
    from lab_assets.runner.noop_cache import NoopCache  # not needed by `hand_over` alone

    return NoopCache(path, text, width)
