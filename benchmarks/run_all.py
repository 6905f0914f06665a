"""The performance suite (issue #7): one command, results written into BENCHMARKS.md.

    python3 run.py bench                                   # everything (~30 min on 2 cores)
    .venv/bin/python benchmarks/run_all.py --parts startup,overhead --repeats 3

Parts (each from an empty project folder, lab home and Dagster instance):
- sweep:    SWEEP (default sweeps/dr_benchmark.yaml) via (a) benchmarks/plain_loop.py, one
            process, one thread, the same library calls, no Dagster; (b) `lab sweep run` on the
            embedded default, with the peak memory of its process tree; (c) one
            `launchPartitionBackfill` through a running `lab ui` (webserver + daemon).
            Run once each (minutes each); ratios are within this run.
- noop:     `lab sweep run` again on the fully materialized sweep of (b), REPEATS times.
- overhead: a trivial method (random_projection, 20 cells), each cell's run wall time minus its
            reported compute, in one worker (benchmarks/overhead.py), REPEATS fresh instances.
- startup:  `lab --help` and importing the definitions, REPEATS times.
- scaling:  1,000 cells of the trivial method: plan, run, no-op re-run, and the UI partition
            view's query on the result.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import textwrap
import time
from contextlib import contextmanager
from datetime import date
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402
import ui_backfill  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
LAB = [PY, "-m", "lab_assets.cli.main"]
BEGIN, END = "<!-- perf-suite:begin (benchmarks/run_all.py writes this block) -->", "<!-- perf-suite:end -->"
OVERHEAD_SWEEP = """name: overhead
data:
  swissroll: {n_samples: 200, noise: 0.05}
seeds: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
methods:
  random_projection: {n_components: [2, 3]}
metrics:
  trustworthiness: {k: [5, 10]}
"""
# 100 data keys x 10 method keys.
SCALING_SWEEP = f"""name: scaling
data:
  swissroll: {{n_samples: 100, noise: 0.05}}
seeds: {list(range(100))}
methods:
  random_projection: {{n_components: {list(range(1, 11))}}}
metrics:
  trustworthiness: {{k: [5]}}
"""


@contextmanager
def project(sweep_text: str, name: str):
    """An empty lab project: the repository's dagster.yaml and one sweep file. Not the
    repository itself, so the sweep sensor under `lab ui` sees only this sweep."""
    folder = Path(tempfile.mkdtemp(prefix="lab-bench-"))
    try:
        shutil.copyfile(ROOT / "dagster.yaml", folder / "dagster.yaml")
        (folder / "sweeps").mkdir()
        (folder / "sweeps" / f"{name}.yaml").write_text(sweep_text)
        env = {**os.environ, "LAB_PROJECT_DIR": str(folder), "LAB_HOME": str(folder / ".lab")}
        for var in ("DAGSTER_HOME", "LAB_STORAGE_URL", "LAB_STORAGE_OPTIONS", "LAB_EXECUTOR"):
            env.pop(var, None)
        yield folder, env, f"sweeps/{name}.yaml"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def register(folder: Path, env: dict, sweep_file: str) -> float:
    """What `lab sweep run` and the UI's sweep sensor both do first (keys, partitions, specs)."""
    code = "import sys; from lab_assets.runner.sweeps import register_and_plan; from lab_assets.dr.sweep import load_sweep; register_and_plan(load_sweep(sys.argv[1]))"
    return measure.run([PY, "-c", code, sweep_file], env, folder).seconds


def part_sweep(sweep_path: str, repeats: int) -> dict:
    text = (ROOT / sweep_path).read_text()
    name = Path(sweep_path).stem
    out: dict = {"sweep": sweep_path}
    out["plain_loop_s"] = measure.run(
        [PY, "benchmarks/plain_loop.py", sweep_path], os.environ.copy(), ROOT, timeout=3600
    ).seconds
    with project(text, name) as (folder, env, file):
        run = measure.run([*LAB, "sweep", "run", file, "--quiet"], env, folder, timeout=3600)
        out["lab_sweep_run_s"], out["lab_sweep_run_peak_gib"] = run.seconds, run.peak_rss_gib
        noop = [measure.run([*LAB, "sweep", "run", file, "--quiet"], env, folder) for _ in range(repeats)]
        out["noop_runs_s"] = [m.seconds for m in noop]
    with project(text, name) as (folder, env, file):
        from lab_assets.dr.sweep import load_sweep

        with ui_backfill.lab_ui(folder, env) as port:
            out["ui_register_s"] = register(folder, env, file)
            out["ui_backfill_s"] = ui_backfill.backfill(port, load_sweep(folder / file))
    out["ratio_lab_over_plain"] = out["lab_sweep_run_s"] / out["plain_loop_s"]
    out["ratio_ui_over_lab"] = out["ui_backfill_s"] / out["lab_sweep_run_s"]
    return out


def part_overhead(repeats: int) -> dict:
    runs = []
    for _ in range(repeats):
        with project(OVERHEAD_SWEEP, "overhead") as (folder, env, file):
            runs.append(
                json.loads(measure.run([PY, str(ROOT / "benchmarks" / "overhead.py"), file], env, folder).stdout)
            )
    return {
        "cells": runs[0]["cells"],
        "runs": runs,
        "median_overhead_s": median([r["median_overhead_s"] for r in runs]),
    }


def part_startup(repeats: int) -> dict:
    env = os.environ.copy()
    helps = [measure.run([str(Path(PY).parent / "lab"), "--help"], env, ROOT).seconds for _ in range(repeats)]
    defs = [measure.run([PY, "-c", "import lab_assets.defs.definitions"], env, ROOT).seconds for _ in range(repeats)]
    return {"lab_help_s": helps, "import_definitions_s": defs}


def part_scaling() -> dict:
    out: dict = {"cells": 1000}
    with project(SCALING_SWEEP, "scaling") as (folder, env, file):
        out["plan_before_s"] = measure.run([*LAB, "sweep", "plan", file, "--json"], env, folder).seconds
        run = measure.run([*LAB, "sweep", "run", file, "--quiet"], env, folder, timeout=3600)
        out["run_s"], out["run_peak_gib"] = run.seconds, run.peak_rss_gib
        out["plan_after_s"] = measure.run([*LAB, "sweep", "plan", file, "--json"], env, folder).seconds
        out["noop_s"] = measure.run([*LAB, "sweep", "run", file, "--quiet"], env, folder).seconds
        with ui_backfill.lab_ui(folder, env) as port:
            views = [ui_backfill.partition_view_seconds(port) for _ in range(3)]
        out["ui_partition_view_s"] = [s for s, _ in views]
        out["ui_partitions_materialized"] = views[0][1]
    return out


def versions() -> str:
    names = ("dagster", "numpy", "scikit-learn", "umap-learn", "pandas")
    return f"Python {platform.python_version()}, " + ", ".join(f"{n} {version(n)}" for n in names)


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    mem = (
        int(
            next(
                line.split()[1]
                for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal")
            )
        )
        / 2**20
    )
    return f"{platform.machine()} {cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM"


def _fmt(xs: list[float]) -> str:
    return "[" + ", ".join(f"{x:.2f}" for x in xs) + "]"


def _when(part: dict) -> str:
    return f"_{part['date']}, load {part['load']}; {part['note']}._"


def markdown(r: dict) -> str:
    """The generated section: numbers, then each target as met or missed."""
    lines = [
        f"Machine: {r['machine']}; {r['versions']}. Each part: its date, the load average "
        "when it started, and what else ran.",
        "",
    ]
    targets = []
    if s := r.get("sweep"):
        lines += [
            f"**sweep** (`{s['sweep']}`, one run each, same session) {_when(s)}",
            "",
            "| path | wall (s) | ratio |",
            "|---|---:|---:|",
            f"| (a) plain loop, 1 process, 1 thread | {s['plain_loop_s']:.1f} | 1 |",
            f"| (b) `lab sweep run` (embedded, {os.cpu_count()} workers) | {s['lab_sweep_run_s']:.1f} | (b)/(a) = {s['ratio_lab_over_plain']:.2f} |",
            f"| (c) `launchPartitionBackfill` via `lab ui` (webserver + daemon) | {s['ui_backfill_s']:.1f} (+ {s['ui_register_s']:.1f} registering) | (c)/(b) = {s['ratio_ui_over_lab']:.2f} |",
            "",
            f"Peak memory of `lab sweep run` (process tree): {s['lab_sweep_run_peak_gib']:.2f} GiB. "
            f"No-op re-run: median {median(s['noop_runs_s']):.2f} s {_fmt(s['noop_runs_s'])}.",
            "",
        ]
        targets += [
            ("(b)/(a) ≤ 0.65", s["ratio_lab_over_plain"], 0.65, "{:.3f}"),
            ("(c)/(b) ≤ 1.3", s["ratio_ui_over_lab"], 1.3, "{:.2f}"),
            ("no-op re-run ≤ 3 s", median(s["noop_runs_s"]), 3.0, "{:.2f} s"),
            ("peak memory ≤ 2 GiB", s["lab_sweep_run_peak_gib"], 2.0, "{:.2f} GiB"),
        ]
    if o := r.get("overhead"):
        per = [x["median_overhead_s"] for x in o["runs"]]
        lines += [
            f"**overhead** ({o['cells']} cells of `random_projection`, 1 worker) {_when(o)} Platform time per cell "
            f"(run wall minus reported compute) median {o['median_overhead_s']:.3f} s, per instance {_fmt(per)}; "
            f"compute per cell {median([x['median_compute_s'] for x in o['runs']]):.3f} s.",
            "",
        ]
        targets.append(("overhead ≤ 0.1 s per cell", o["median_overhead_s"], 0.1, "{:.3f} s"))
    if st := r.get("startup"):
        lines += [
            f"**startup** {_when(st)} `lab --help` median {median(st['lab_help_s']):.2f} s {_fmt(st['lab_help_s'])}; "
            f"`import lab_assets.defs.definitions` median {median(st['import_definitions_s']):.2f} s {_fmt(st['import_definitions_s'])}.",
            "",
        ]
        targets.append(("`lab --help` ≤ 0.5 s", median(st["lab_help_s"]), 0.5, "{:.2f} s"))
    if sc := r.get("scaling"):
        lines += [
            f"**scaling** ({sc['cells']} cells, `random_projection` on 100 points) {_when(sc)} Plan {sc['plan_before_s']:.1f} s "
            f"before, {sc['plan_after_s']:.1f} s after; run {sc['run_s']:.1f} s ({sc['run_s'] / sc['cells']:.2f} s per cell, "
            f"peak {sc['run_peak_gib']:.2f} GiB); no-op re-run {sc['noop_s']:.1f} s; UI partition view query "
            f"{_fmt(sc['ui_partition_view_s'])} s, {sc['ui_partitions_materialized']} partitions shown materialized.",
            "",
        ]
    if targets:
        lines += ["| target | measured | |", "|---|---:|---|"]
        lines += [
            f"| {name} | {fmt.format(value)} | {'met' if value <= limit else '**missed**'} |"
            for name, value, limit, fmt in targets
        ]
    # Prose wrapped at 100 columns (tables stay one row a line): the docs keep lines readable.
    return "\n".join(line if line.startswith("|") else textwrap.fill(line, 100) for line in lines)


def write_markdown(block: str) -> None:
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text()
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{path}: markers {BEGIN!r} ... {END!r} not found")
    path.write_text(pattern.sub(lambda _: f"{BEGIN}\n{block}\n{END}", text))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--parts", default="startup,overhead,sweep,scaling", help="comma-separated (default: all)")
    p.add_argument("--sweep", default="sweeps/dr_benchmark.yaml")
    p.add_argument("--repeats", type=int, default=3, help="repeats of the short measurements")
    p.add_argument("--note", default="the machine was shared with other jobs; ratios are within this run")
    p.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md and results.json alone")
    args = p.parse_args()
    # Parts not run now keep their last results (re-run one part without the 30-minute rest).
    results = ROOT / "benchmarks" / "results.json"
    r: dict = json.loads(results.read_text()) if results.exists() else {}
    r.update(machine=machine(), versions=versions())
    for part in args.parts.split(","):
        stamp = {"date": str(date.today()), "load": ", ".join(f"{x:.1f}" for x in os.getloadavg()), "note": args.note}
        start = time.perf_counter()
        if part == "sweep":
            r[part] = part_sweep(args.sweep, args.repeats)
        elif part == "overhead":
            r[part] = part_overhead(args.repeats)
        elif part == "startup":
            r[part] = part_startup(args.repeats)
        elif part == "scaling":
            r[part] = part_scaling()
        else:
            raise SystemExit(f"unknown part {part!r}")
        r[part] |= stamp
        print(json.dumps({part: r[part], "part_seconds": round(time.perf_counter() - start, 1)}), flush=True)
        if not args.no_write:
            results.write_text(json.dumps(r, indent=2) + "\n")
    block = markdown(r)
    print(block)
    if not args.no_write:
        write_markdown(block)


if __name__ == "__main__":
    main()
