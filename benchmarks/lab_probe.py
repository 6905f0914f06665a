"""`lab ARGS` with timestamps: where a cold command's seconds go, without a profiler's distortion.

    COLD_PROBE_DIR=DIR COLD_PROBE_T0=<time.time() at launch> python benchmarks/lab_probe.py sweep run FILE

Runs the `lab` command in this process exactly as the `lab` program does (`cli.main`: the same
arguments, the same exit without teardown) and records spans, wall-clock `time.time()`, as JSON
lines in DIR/<pid>.jsonl:
- in this process: the command's phases (the workers' start, parsing, registering, planning,
  running, saving the no-op answer), and the first load of the definitions and of the instance;
- in each sweep worker: its warm-up and each run it executes, and inside the runs the seconds
  spent in named functions of ours (W&B, results cache, provenance, hashing, Parquet I/O, ...),
  each span exclusive of the named functions it calls.

How: a spawned worker imports the parent's main script (this file) as `__mp_main__`, so the
same import hook patches the named functions, in the parent and in every worker, right after
their module executes (before any `from ... import` elsewhere binds them). A span costs a few
microseconds. Standard library only at import: a worker imports this before anything else.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import json
import os
import sys
import time

STARTED = time.time()
OUT = os.environ.get("COLD_PROBE_DIR")

# module -> {attribute path: span name}. Phases of the command (parent) and of a worker run.
PHASES = {
    "lab_assets.runner.preload": {"definitions": "load definitions", "warm": "worker warm-up"},
    "lab_assets.runtime.instance": {"get_instance": "get instance"},
    "lab_assets.dr.sweep": {"parse_sweep": "parse sweep"},
    "lab_assets.runner.sweeps": {
        "upgrade_lab_home": "upgrade lab home",
        "register": "register",
        "plan": "plan",
        "sweep_work": "work",
        "run_work": "run phases",
    },
    "lab_assets.runner.commands": {"warm_workers": "start workers", "RanHere.save_noop_answer": "save no-op answer"},
    "lab_assets.runner.local": {"execute_run": "run"},
}
# Functions of ours inside a cell's run, by what they are for (exclusive seconds per run).
PARTS = {
    "lab_assets.defs.tracked": {"track": "W&B offline run"},
    "lab_assets.core.tracking": {"warm": "W&B warm-up"},
    "lab_assets.core.side_process": {
        "track_sweep": "report: W&B sweep run",
        "call": "report: drawn in the side process",
    },
    "lab_assets.defs.assets.reports": {"report_files": "report: tables"},
    "lab_assets.dr.report_drawing": {"draw": "report: drawn here (and matplotlib's import)"},
    "lab_assets.dr.figures": {"embeddings_grid": "report: embeddings figure", "metric_curves": "report: curves figure"},
    "lab_assets.dr.html_report": {"report_html": "report: report.html"},
    "lab_assets.core.results_cache": {"lookup": "results cache", "store": "results cache"},
    "lab_assets.core.lineage": {"provenance": "provenance"},
    "lab_assets.defs.integrity": {"file_metadata": "hash written file (re-read)", "read_parquet": "Parquet read"},
    "lab_assets.defs.assets.datasets": {"content_version": "hash data version", "data_quirks": "dataset quirks"},
    "lab_assets.defs.assets.experiments": {"_scatter": "scatter thumbnail"},
    "lab_assets.core.storage": {
        "parquet_bytes": "Parquet encode",
        "write_bytes": "file write",
        "replace_folder": "report: write folder",
    },
    "lab_assets.defs.inflight": {"claim": "in-flight claim", "other_run": "in-flight look"},
    "lab_assets.runtime.data_versions": {"last_data_version": "spec version read"},
    "lab_assets.dr.keystore": {"data_config": "key records", "method_config": "key records"},
    "lab_assets.defs.assets.metrics": {"compute_columns": "metric compute"},
    "lab_assets.dr.metrics.neighbors": {"Neighborhoods.__init__": "kNN search"},
}

_stack: list[list[float]] = []  # per open span: [start, seconds of named spans inside it]


def record(**span) -> None:
    if OUT is None:
        return
    with open(os.path.join(OUT, f"{os.getpid()}.jsonl"), "a") as f:
        f.write(json.dumps(span) + "\n")


def _described(name: str, args: tuple) -> dict:
    """What a span is about: a run's job and partition."""
    run = args[0] if args and name == "run" and hasattr(args[0], "job") else None
    return {} if run is None else {"job": run.job, "partition": str(run.partition)}


def timed(fn, name: str, kind: str):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.time()
        _stack.append([start, 0.0])
        try:
            return fn(*args, **kwargs)
        finally:
            _, inner = _stack.pop()
            end = time.time()
            if _stack:
                _stack[-1][1] += end - start
            record(kind=kind, name=name, start=start, end=end, own=end - start - inner, **_described(name, args))

    return wrapper


def patch(module, names: dict[str, str], kind: str) -> None:
    for path, name in names.items():
        *owners, attr = path.split(".")
        owner = module
        for o in owners:
            owner = getattr(owner, o)
        setattr(owner, attr, timed(getattr(owner, attr), name, kind))


class AfterImport(importlib.abc.MetaPathFinder):
    """Finds the named modules as the path finder does, and patches each once it has executed."""

    def find_spec(self, fullname, path, target=None):
        wanted = [(table[fullname], kind) for table, kind in ((PHASES, "phase"), (PARTS, "part")) if fullname in table]
        if not wanted:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            for names, kind in wanted:
                patch(module, names, kind)

        spec.loader.exec_module = exec_module
        return spec


if OUT is not None:
    sys.meta_path.insert(0, AfterImport())
    record(kind="process", name="worker boot" if __name__ == "__mp_main__" else "probe start", start=STARTED)


def main(argv: list[str]) -> None:
    from lab_assets.cli import main as cli
    from lab_assets.core import fast_exit

    record(kind="phase", name="import lab", start=STARTED, end=time.time())
    # The import path of the benchmarks' `lab` (`python -m lab_assets.cli.main`: the working folder
    # first), not this file's folder: a saved no-op answer's state stamps the import path's folders,
    # so under another path a command would miss the answer `lab` saved and take another route.
    sys.path[0] = os.getcwd()
    cli.as_program()  # as `lab` starts: no teardown at exit, its collector's thresholds
    launched = float(os.environ.get("COLD_PROBE_T0", STARTED))
    code = fast_exit.exiting(cli._command(argv))
    record(kind="process", name="command", start=launched, end=time.time(), code=code)
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
