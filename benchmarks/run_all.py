"""Sweep wall times through the platform against the plain-loop baseline, measured in one run.

    python benchmarks/run_all.py [SWEEP ...] [--repeats N]

For each sweep: (a) benchmarks/plain_loop.py (one process, one thread: the same library calls,
no Dagster), (b) `lab sweep run` from an empty lab home (embedded SQLite, one worker per core),
(c) `lab sweep run` again with nothing to do. Prints medians and the ratio (b)/(a).
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def bench(sweep: str, repeats: int) -> dict:
    lab = [sys.executable, "-m", "lab_assets.cli", "sweep", "run", sweep, "--quiet"]
    plain = [sys.executable, "benchmarks/plain_loop.py", sweep]
    runs = {"plain_loop": [], "lab_sweep_run": [], "noop_rerun": []}
    for _ in range(repeats):
        home = Path(tempfile.mkdtemp(prefix="lab-bench-"))
        env = {**os.environ, "LAB_HOME": str(home), "LAB_PROJECT_DIR": str(ROOT)}
        env.pop("DAGSTER_HOME", None)
        try:
            runs["plain_loop"].append(timed(plain, env))
            runs["lab_sweep_run"].append(timed(lab, env))
            runs["noop_rerun"].append(timed(lab, env))
        finally:
            shutil.rmtree(home, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    return {
        "sweep": sweep,
        "repeats": repeats,
        "median_seconds": {k: round(v, 1) for k, v in med.items()},
        "all_seconds": {k: [round(x, 1) for x in v] for k, v in runs.items()},
        "ratio_lab_over_plain": round(med["lab_sweep_run"] / med["plain_loop"], 2),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sweeps", nargs="*", default=["sweeps/demo.yaml", "sweeps/dr_benchmark.yaml"])
    p.add_argument("--repeats", type=int, default=1)
    args = p.parse_args()
    print(json.dumps({"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"}))
    for sweep in args.sweeps:
        print(json.dumps(bench(sweep, args.repeats)), flush=True)


if __name__ == "__main__":
    main()
