"""`lab gc` on a lab home of 1,000 materialized cells (issue #34; the performance suite's scaling
sweep: 100 data keys x 10 `random_projection` keys, run_all.SCALING_SWEEP).

After one `lab sweep run` of the N-cell sweep, REPEATS times each:
- `lab gc --dry-run` with the sweep registered (nothing to delete: the look alone), against
  `lab sweep plan` of the same sweep (the reference: a command that loads Dagster and reads every
  cell's records; a no-op `lab sweep run` answers from its saved answer without either), interleaved;
then `lab sweep remove` and, REPEATS times, `lab gc --dry-run` (N cells listed), then one `lab gc`
that deletes the N cells' files, partitions and runs, and one more `lab gc` (must find nothing).

    python benchmarks/gc.py
Prints one JSON line; medians and ratios are within this run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402
from run_all import LAB, SCALING_SWEEP, project  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    cells = 1000
    out: dict = {"cells": cells, "load_before": os.getloadavg()[0]}
    with project(SCALING_SWEEP, "scaling") as (folder, env, file):
        env = {**env, "LAB_SERVICE": "0"}

        def timed(*cmd: str) -> measure.Measured:
            return measure.run([*LAB, *cmd], env, folder, timeout=7200)

        out["run_s"] = timed("sweep", "run", file, "--quiet").seconds
        look, plan = [], []
        for _ in range(args.repeats):
            listed = timed("gc", "--dry-run", "--json")
            assert json.loads(listed.stdout)["items"] == [], listed.stdout[:500]
            look.append(listed.seconds)
            plan.append(timed("sweep", "plan", file, "--json").seconds)
        out["gc_dry_run_nothing_s"], out["plan_s"] = statistics.median(look), statistics.median(plan)
        out["gc_dry_run_nothing_vs_plan"] = out["gc_dry_run_nothing_s"] / out["plan_s"]

        timed("sweep", "remove", "scaling")
        listing = []
        for _ in range(args.repeats):
            listed = timed("gc", "--dry-run", "--json")
            listing.append(listed.seconds)
        items = json.loads(listed.stdout)["items"]
        out["listed_cells"] = sum(i["kind"] == "cell" for i in items)
        out["listed_bytes"] = sum(i["bytes"] for i in items)
        out["gc_dry_run_all_s"] = statistics.median(listing)
        deleted = timed("gc", "--json")
        out["gc_delete_all_s"] = deleted.seconds
        out["gc_delete_per_cell_ms"] = 1000 * deleted.seconds / cells
        out["gc_delete_peak_gib"] = round(deleted.peak_rss_gib, 2)
        again = timed("gc", "--dry-run", "--json")
        out["second_gc_items"] = len(json.loads(again.stdout)["items"])
        out["second_gc_s"] = again.seconds
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
