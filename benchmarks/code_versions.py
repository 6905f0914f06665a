"""What versions by meaning cost (issue 38): every registry entry's code version and every metric's
column version, computed in a cold process (a fresh interpreter each time), for this checkout and
a `--baseline` checkout (`git archive 171c77e | tar -x -C DIR`: byte digests), interleaved,
REPEATS times each. This checkout is measured twice: with its digest cache as a developer's
machine has it (warm: every module parsed before) and empty (the first command ever after an
install: every module parsed).

    python benchmarks/code_versions.py --baseline /tmp/base --repeats 9
Prints one JSON object: medians in ms and the differences against the baseline, within this run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Timed inside the process: importing the registries (and Dagster, for the specs) is the same for
# both trees; `versions` is what this issue changed.
PROBE = """
import json, time
t0 = time.perf_counter()
from lab_assets.defs.assets import specs
from lab_assets.dr.declarations import REGISTRIES
entries = [e for r in REGISTRIES for e in r.entries()]
t1 = time.perf_counter()
versions = [e.code_version for e in entries] + [specs.column_version(n) for n in REGISTRIES[-1].names()]
t2 = time.perf_counter()
print(json.dumps({"discover": t1 - t0, "versions": t2 - t1, "count": len(versions)}))
"""


def probe(tree: Path, cache: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "XDG_CACHE_HOME": cache}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tree, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout of the code before (171c77e)")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    warm = tempfile.mkdtemp(prefix="canonical-warm-")
    probe(ROOT, warm)  # fills the warm cache
    runs: dict[str, list[dict]] = {"baseline": [], "warm": [], "empty": []}
    for _ in range(args.repeats):
        runs["baseline"].append(probe(args.baseline, warm))
        runs["warm"].append(probe(ROOT, warm))
        runs["empty"].append(probe(ROOT, tempfile.mkdtemp(prefix="canonical-empty-")))
    medians = {
        name: {k: round(1000 * statistics.median(r[k] for r in rs), 1) for k in ("discover", "versions")}
        for name, rs in runs.items()
    }
    out = {
        "repeats": args.repeats,
        "versions_computed": runs["warm"][0]["count"],
        "median_ms": medians,
        "versions_ms_more_than_baseline": {
            name: round(medians[name]["versions"] - medians["baseline"]["versions"], 1) for name in ("warm", "empty")
        },
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
