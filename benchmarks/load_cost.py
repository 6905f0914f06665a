"""What issue 40's items 3 and 8 cost where every command pays: loading the definitions (each
asset's code reference: `defs/code_links.py`, two git calls per checkout) and building `lab`'s
parser (the `cluster` command module, now without the deployment's imports). A source tree given
as the baseline is measured in the same run, interleaved, each sample a fresh interpreter.

    git archive BASE | tar -x -C /tmp/base
    .venv/bin/python benchmarks/load_cost.py /tmp/base [--runs 7]

Prints a Markdown table: medians (s) and this tree's ratio to the baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
STEPS = {
    "load the definitions": "import lab_assets.defs.definitions",
    "build lab's parser": "from lab_assets.cli.main import parser; parser()",
}


def sample(root: Path, code: str) -> float:
    """Seconds a fresh interpreter takes to run `code` with `root`'s lab_assets first on the path."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, check=True)
    return time.perf_counter() - start


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("baseline", type=Path, help="the baseline's source tree (its lab_assets/ is imported)")
    options.add_argument("--runs", type=int, default=7)
    args = options.parse_args()
    print("| step | baseline median (s) | this tree median (s) | ratio |\n|---|---|---|---|")
    for what, code in STEPS.items():
        times: dict[Path, list[float]] = {args.baseline: [], HERE: []}
        sample(HERE, code)  # warm the bytecode and the file cache of both trees
        sample(args.baseline, code)
        for _ in range(args.runs):
            for root in times:
                times[root].append(sample(root, code))
        base, here = (statistics.median(times[r]) for r in (args.baseline, HERE))
        print(f"| {what} | {base:.3f} | {here:.3f} | {here / base:.2f} |")


if __name__ == "__main__":
    main()
