"""What the integrity check costs a plan at 1,000 cells (issue 17): the scaling sweep of the
performance suite (100 data keys x 10 method keys of `random_projection`) run once, then, in
one process and interleaved, `defs/freshness.plan_sweep` as `lab sweep plan` runs it (one stat per recorded
file) against the same plan with the integrity check left out (the baseline), and the
content-hash check of `lab verify` / `--verify` (reads every file). Also what the look for
another command's run costs a run (defs/inflight.py: one run-storage query, made before a run
starts and again in its first step), per cell on that instance's ~2,200 runs.

    PYTHONPATH=. .venv/bin/python benchmarks/integrity_plan.py [--repeats 5]

Prints one JSON object; BENCHMARKS.md ("Integrity at plan time") quotes it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_all  # noqa: E402


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    with run_all.project(run_all.SCALING_SWEEP, "scaling") as (folder, env, file):
        subprocess.run(
            [*run_all.LAB, "sweep", "run", file, "--quiet"],
            env=env,
            cwd=folder,
            check=True,
            timeout=3600,
            stdout=subprocess.DEVNULL,
        )
        os.environ.update({k: v for k, v in env.items() if k.startswith("LAB_")})
        os.chdir(folder)
        from lab_assets.core.keys import cell_key
        from lab_assets.defs import freshness, inflight, integrity
        from lab_assets.dr.sweep import load_sweep
        from lab_assets.runner.preload import definitions
        from lab_assets.runtime.instance import get_instance

        sweep, instance, graph = load_sweep(file), get_instance(), definitions().resolve_asset_graph()
        with_check = integrity.sweep_damage  # the plan calls it through the module: swapped for the baseline
        assert freshness.plan_sweep(sweep, instance, graph).counts["fresh"] == 1000
        sizes, baseline, hashes = [], [], []
        for _ in range(repeats):
            integrity.sweep_damage = with_check
            sizes.append(_timed(lambda: freshness.plan_sweep(sweep, instance, graph)))
            integrity.sweep_damage = lambda *args, **kwargs: []
            baseline.append(_timed(lambda: freshness.plan_sweep(sweep, instance, graph)))
            hashes.append(_timed(lambda: with_check(instance, sweep, full=True)))
        integrity.sweep_damage = with_check
        files = sum(1 for _ in (folder / ".lab" / "assets").rglob("*.parquet"))
        tags = inflight.command_tags(time.time())
        looks = [
            _timed(
                lambda: [
                    inflight.other_run(instance, "materialize_cells", cell_key(d, m), tags) for d, m in sweep.cells
                ]
            )
            for _ in range(repeats)
        ]
    med = run_all.median
    print(
        json.dumps(
            {
                "cells": 1000,
                "files": files,
                "machine": run_all.machine(),
                "plan_without_check_s": baseline,
                "plan_with_size_check_s": sizes,
                "hash_check_s": hashes,
                "ratio_plan_with_over_without": med(sizes) / med(baseline),
                "size_check_s": med(sizes) - med(baseline),
                "inflight_look_per_run_ms": 1000 * med(looks) / len(sweep.cells),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
