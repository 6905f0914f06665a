"""Per-cell cost against the size of the lab home (issue #15): the same small sweep of new cells,
run in a lab home that already holds a large sweep and in an empty one. A cell's run should cost
the same in both; it grew with the home when each run re-read every registered sweep's cells
(0.52 s a cell at 10,000 cells against 0.13 s at 1,000).

The large sweep (benchmarks/scaling.py's trivial cells) is run once; then, REPEATS times and
interleaved, a PROBE-cell sweep of new cells (a fresh `n_samples`, so nothing is reused) runs in
each home, with this checkout's code and, with --baseline, another checkout's
(`git archive <commit> | tar -x -C DIR`).

    python benchmarks/home_size.py --home-cells 2000 --baseline /tmp/base
Prints one JSON line; medians and ratios are within this run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402
from run_all import LAB, ROOT, project  # noqa: E402
from scaling import SHAPES, sweep_text, with_code  # noqa: E402

PROBE = 12


def probe_text(n_samples: int) -> str:
    """12 new cells (4 seeds x 3 methods) whose dataset no earlier probe used."""
    return sweep_text(PROBE).replace("name: scaling", "name: probe").replace("n_samples: 60", f"n_samples: {n_samples}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--home-cells", type=int, default=2000, help=f"the large sweep's size, of {sorted(SHAPES)}")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--baseline", type=Path, help="a checkout's root whose code is the baseline")
    args = p.parse_args()
    codes = {"this": ROOT, **({"baseline": args.baseline} if args.baseline else {})}
    out: dict = {"home_cells": args.home_cells, "probe_cells": PROBE}
    samples = iter(range(61, 1000))
    per_cell: dict[str, list[float]] = {f"{code}_{home}": [] for code in codes for home in ("large", "empty")}
    with (
        project(sweep_text(args.home_cells), "scaling") as (large, large_env, large_file),
        project(probe_text(next(samples)), "probe") as (empty, empty_env, _),
    ):
        start = time.perf_counter()
        measure.run([*LAB, "sweep", "run", large_file, "--quiet"], with_code(large_env, ROOT), large, timeout=7200)
        out["home_build_s"] = round(time.perf_counter() - start, 1)
        for _ in range(args.repeats):
            for code, root in codes.items():
                for home, folder, env in (("large", large, large_env), ("empty", empty, empty_env)):
                    (folder / "sweeps" / "probe.yaml").write_text(probe_text(next(samples)))
                    run = measure.run(
                        [*LAB, "sweep", "run", "sweeps/probe.yaml", "--quiet"], with_code(env, root), folder
                    )
                    per_cell[f"{code}_{home}"].append(run.seconds / PROBE)
    out["per_cell_s"] = {k: [round(v, 3) for v in vs] for k, vs in per_cell.items()}
    med = {k: statistics.median(vs) for k, vs in per_cell.items()}
    for code in codes:
        out[f"ratio_{code}_large_over_empty"] = round(med[f"{code}_large"] / med[f"{code}_empty"], 2)
    if args.baseline:
        out["ratio_large_this_over_baseline"] = round(med["this_large"] / med["baseline_large"], 2)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
