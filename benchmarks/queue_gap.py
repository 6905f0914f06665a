"""Is the fractional run queue (lab_assets/runtime/run_queue.py) worth keeping over Dagster's own
`QueuedRunCoordinator`? The UI path, both ways, interleaved: a `launchPartitionBackfill` of a
small sweep (20 cells of a trivial method) through `lab ui`, once with Dagster's coordinator at
its smallest interval (1 s, an integer) and once with `RunQueue` at 0.25 s. Reports the backfill's
wall time and the idle gap between two consecutive runs on the same warm worker (a run's start
minus the end of that worker's previous run, from the run records).

    PYTHONPATH=. .venv/bin/python benchmarks/queue_gap.py [--repeats 2]

Prints one JSON object; BENCHMARKS.md ("Run queue") quotes it.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_all  # noqa: E402
import ui_backfill  # noqa: E402

COORDINATORS = {
    "dagster QueuedRunCoordinator, 1 s": "module: dagster\n  class: QueuedRunCoordinator\n  config:\n"
    "    max_concurrent_runs: 2\n    dequeue_interval_seconds: 1\n",
    "RunQueue, 0.25 s": "module: lab_assets.runtime.run_queue\n  class: RunQueue\n  config:\n"
    "    max_concurrent_runs: 2\n    dequeue_interval_seconds: 0.25\n",
}


def _with_coordinator(folder: Path, block: str) -> None:
    path = folder / "dagster.yaml"
    text = re.sub(
        r"run_coordinator:\n(  .*\n|    .*\n|\s*#.*\n)*", "run_coordinator:\n  " + block + "\n", path.read_text()
    )
    assert block in text, "dagster.yaml has no run_coordinator block to replace"
    path.write_text(text)


def _gaps(dagster_home: Path) -> list[float]:
    import dagster as dg

    from lab_assets.runtime.launcher import WORKER_PID_TAG

    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        by_worker: dict[str, list] = {}
        for r in instance.get_run_records():
            if r.start_time and r.end_time and (pid := r.dagster_run.tags.get(WORKER_PID_TAG)):
                by_worker.setdefault(pid, []).append((r.start_time, r.end_time))
    gaps = []
    for runs in by_worker.values():
        runs.sort()
        gaps += [start - previous_end for (_, previous_end), (start, _) in zip(runs, runs[1:])]
    return gaps


def measure(name: str, block: str) -> dict:
    from lab_assets.dr.sweep import load_sweep

    with run_all.project(run_all.OVERHEAD_SWEEP, "overhead") as (folder, env, file):
        _with_coordinator(folder, block)
        with ui_backfill.lab_ui(folder, env) as port:
            run_all.register(folder, env, file)
            seconds = ui_backfill.backfill(port, load_sweep(folder / file))
        gaps = _gaps(folder / ".lab" / "dagster")
    return {
        "coordinator": name,
        "backfill_s": round(seconds, 1),
        "runs_gaps": len(gaps),
        "median_gap_s": round(statistics.median(gaps), 3),
        "mean_gap_s": round(statistics.mean(gaps), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    results = [measure(name, block) for _ in range(args.repeats) for name, block in COORDINATORS.items()]
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
