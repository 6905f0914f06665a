"""A cold sweep against the loops a practised user writes instead (issue 44), and where the
platform's extra seconds go.

    python benchmarks/cold_sweep.py [--repeats 3] [--parts sweep,commands,floor] [--json PATH]
    python benchmarks/cold_sweep.py --render PATH      # the tables of an earlier run's --json

- sweep: the 12-cell sweep (swissroll and s_curve at 1,500 points x seeds 0, 1 x PCA, Isomap,
  UMAP; trustworthiness@10), cold: `lab sweep run` from a new project and lab home each
  repetition, no warm service (`LAB_SERVICE=0`, as in a script, CI or an agent), and the same with
  `LAB_WANDB=off`, against the two-process joblib loop and the serial loop
  (benchmarks/joblib_loop.py), interleaved, the order rotated each repetition; medians and ratios
  within this run, each figure with the load average when it started and the CPU seconds of its
  process tree. UMAP's numba code is compiled once a machine (`dr/jit_cache.py`): `lab` runs
  with it cached by an earlier sweep, `lab_first` after its cache is deleted (the first sweep
  that runs UMAP on a machine); the loops compile it in each process, as umap-learn does. The loops' values must equal the platform's (the same work). Then one more
  `lab sweep run` under benchmarks/lab_probe.py: its phases before the first cell (imports,
  parse, register, plan, worker start), the cells, and after the last cell (metric table,
  report, the no-op answer saved), from the probe's spans and the Dagster event log, and per
  cell run: Dagster's steps and the time between them, the compute the steps report, and the
  seconds in our own functions (W&B offline, results cache, provenance, hashing, Parquet).
- commands: without a terminal, on an 8-cell sweep at 1,200 points: `lab sweep plan`, a no-op
  `lab sweep run`, and adding a metric (one more column to compute in 8 cells) as `lab` runs it,
  with `--workers 1` and with `LAB_WANDB=off`, each under the probe, with its compute (the metrics
  steps' `wall_seconds`) beside its wall time.
- floor: Dagster's floor for a cell run in a warm process (benchmarks/run_cost.py, 12 cells).

Prints Markdown tables; `--json PATH` writes every number.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402
import run_cost  # noqa: E402
from run_all import LAB, PY, ROOT, project  # noqa: E402

K = 10
DATA = {"swissroll": {"n_samples": 1500, "noise": 0.05}, "s_curve": {"n_samples": 1500}}
SEEDS = [0, 1]
METHODS = ["pca", "isomap", "umap"]
DATA_LINES = "".join(f"  {d}: {{{', '.join(f'{k}: {v}' for k, v in p.items())}}}\n" for d, p in DATA.items())
METHOD_LINES = "".join(f"  {m}: {{}}\n" for m in METHODS)
SWEEP = f"""name: cold
data:
{DATA_LINES}seeds: {SEEDS}
methods:
{METHOD_LINES}metrics:
  trustworthiness: {{k: [{K}]}}
"""
# The commands part: 8 small cells, then one metric added (8 columns to compute, 8 carried).
SMALL = """name: small
data:
  swissroll: {n_samples: 1200, noise: 0.05}
  s_curve: {n_samples: 1200}
seeds: [0, 1]
methods:
  pca: {}
  isomap: {}
metrics:
  trustworthiness: {k: [10]}
"""
# Each adds one column to compute in the 8 cells: as `lab` runs it, then the two ideas to test
# that need no code change: no worker processes (`--workers 1`: this process runs the cells) and
# no W&B run per cell (`LAB_WANDB=off`).
ADDITIONS = {
    "add a metric": ("continuity", [], {}),
    "add a metric, --workers 1": ("knn_preservation", ["--workers", "1"], {}),
    "add a metric, LAB_WANDB=off": ("lid", [], {"LAB_WANDB": "off"}),
}
WANDB_OFF = {"LAB_WANDB": "off"}
PROBE = ROOT / "benchmarks" / "lab_probe.py"
CELL_JOBS = ("materialize_cells", "materialize_cells_with_data")


def run_with_cpu(cmd: list[str], env: dict, cwd: Path) -> tuple[measure.Measured, float]:
    """The command measured, and the CPU seconds (user + system) of its process tree: every
    descendant it waited for (`lab`'s workers, joblib's), not W&B's service processes, which
    outlive the workers. Steadier than wall time on a shared machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = measure.run(cmd, env, cwd, timeout=1800)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return m, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def load() -> float:
    return round(os.getloadavg()[0], 2)


def lab_env(env: dict) -> dict:
    return {**env, "PYTHONPATH": str(ROOT), "LAB_SERVICE": "0"}


# ---------------------------------------------------------------- the loops and the platform


def loop(mode: str) -> dict:
    cells = [[d, p, s, m, {}, K] for d, p in DATA.items() for s in SEEDS for m in METHODS]
    at, launched = load(), time.time()
    with tempfile.TemporaryDirectory() as cwd:
        m, cpu = run_with_cpu(
            [PY, str(ROOT / "benchmarks" / "joblib_loop.py"), mode, json.dumps(cells)], os.environ, Path(cwd)
        )
    out = json.loads(m.stdout)
    split: dict[str, float] = defaultdict(float)
    for name, x in out["seconds"].items():
        split[f"fit {name.rsplit('|', 1)[1]}"] += x["fit"]
        for what in ("data", "import method", "metric"):
            split[what] += x[what]
    first: dict[int, float] = {}
    for x in out["seconds"].values():
        first[x["pid"]] = min(first.get(x["pid"], x["start"]), x["start"])
    return {
        "wall_s": m.seconds,
        "cpu_s": cpu,
        "load": at,
        "peak_gib": m.peak_rss_gib,
        "values": out["values"],
        "split": dict(split),
        "first_task_s": sorted(t - launched for t in first.values()),
    }


def platform_values(folder: Path) -> dict[str, float]:
    """{dataset|seed|method: trustworthiness} from the cells' metrics files."""
    import pyarrow.parquet as pq

    out = {}
    for path in (folder / ".lab" / "assets" / "metrics").glob("*/*.parquet"):
        row = pq.read_table(path).to_pylist()[0]
        out[f"{row['dataset']}|{row['seed']}|{row['method_name']}"] = row[f"trustworthiness@k={K}"]
    return out


def lab_command(
    folder: Path, env: dict, args: list[str], probe: Path | None = None
) -> tuple[float, float, float, float]:
    """(launched at, wall seconds, load when started, CPU seconds) of `lab ARGS`, under the probe if `probe`."""
    at, launched = load(), time.time()
    if probe is None:
        cmd = [*LAB, *args]
    else:
        cmd = [PY, str(PROBE), *args]
        env = {**env, "COLD_PROBE_DIR": str(probe), "COLD_PROBE_T0": repr(launched)}
    m, cpu = run_with_cpu(cmd, env, folder)
    return launched, m.seconds, at, cpu


def lab_sweep(probe: Path | None = None, extra: dict | None = None) -> dict:
    with project(SWEEP, "cold") as (folder, env, file):
        env = {**lab_env(env), **(extra or {})}
        launched, seconds, at, cpu = lab_command(folder, env, ["sweep", "run", file, "--quiet"], probe)
        runs = run_events(folder / ".lab" / "dagster")
        out = {"wall_s": seconds, "cpu_s": cpu, "load": at, "values": platform_values(folder)}
        out.update(phases(runs, launched, seconds))
        if probe is not None:
            out["probe"] = probed(probe, launched, runs)
        return out


# ---------------------------------------------------------------- the Dagster event log


def run_events(home: Path, since: float = 0.0) -> list[dict]:
    """Every run started after `since`: its job, start and end, each step's start and end, and the
    compute its materializations report (`wall_seconds`, by asset)."""
    import dagster as dg

    runs = []
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for r in instance.get_run_records():
            if r.start_time is None or r.start_time < since:
                continue
            steps: dict[str, list[float]] = defaultdict(list)
            compute: dict[str, float] = {}
            logs = instance.all_logs(r.dagster_run.run_id)
            for e in logs:
                kind = e.dagster_event.event_type_value if e.dagster_event else None
                if kind in ("STEP_START", "STEP_SUCCESS", "STEP_FAILURE"):
                    steps[e.step_key].append(e.timestamp)
                m = e.asset_materialization
                if m is not None and "wall_seconds" in m.metadata:
                    compute[m.asset_key.path[-1]] = float(m.metadata["wall_seconds"].value)
            runs.append(
                {
                    "job": r.dagster_run.job_name,
                    "partition": r.dagster_run.tags.get("dagster/partition", ""),
                    "start": r.start_time,
                    "end": r.end_time,
                    "first_event": logs[0].timestamp,
                    "last_event": logs[-1].timestamp,
                    "steps": {k: (min(v), max(v)) for k, v in steps.items()},
                    "compute": compute,
                }
            )
    return sorted(runs, key=lambda r: r["start"])


def phases(runs: list[dict], launched: float, seconds: float) -> dict:
    """The command's wall time cut at its first cell run's start and its last one's end."""
    cells = [r for r in runs if r["job"] in CELL_JOBS]
    first, last = min(r["start"] for r in cells), max(r["end"] for r in cells)
    busy = sum(r["end"] - r["start"] for r in cells)
    after = [r for r in runs if r["start"] >= last]
    return {
        "before_first_cell_s": first - launched,
        "cells_s": last - first,
        "after_last_cell_s": launched + seconds - last,
        "cell_runs": len(cells),
        "cell_runs_busy_s": busy,
        "after_runs_s": {r["job"]: r["end"] - r["start"] for r in after},
        "per_cell": per_cell(cells),
    }


def per_cell(cells: list[dict]) -> dict:
    """Sums over the cell runs: the run, each step, what is outside the steps, the reported compute."""
    out: dict[str, float] = defaultdict(float)
    for r in cells:
        out["run"] += r["end"] - r["start"]
        inside = 0.0
        for step, (start, end) in r["steps"].items():
            out[f"step {step}"] += end - start
            inside += end - start
        out["Dagster outside steps"] += r["end"] - r["start"] - inside
        method = r["partition"].rpartition("|")[2].split("-")[0]
        for asset, s in r["compute"].items():
            out[f"compute {asset} ({method})" if asset == "embedding" else f"compute {asset}"] += s
    return dict(out)


# ---------------------------------------------------------------- the probe's spans


def spans(folder: Path) -> dict[int, list[dict]]:
    by_pid = {}
    for path in folder.glob("*.jsonl"):
        by_pid[int(path.stem)] = [json.loads(line) for line in path.read_text().splitlines()]
    return by_pid


def probed(folder: Path, launched: float, runs: list[dict]) -> dict:
    """The probe's spans, as seconds from launch: the parent's phases (first call of each, and
    the total of repeated ones), each worker's boot, warm-up and runs, and the seconds per part of
    ours summed over the workers' runs."""
    by_pid = spans(folder)
    parent = next(pid for pid, s in by_pid.items() if any(x["name"] == "probe start" for x in s))
    timeline: list[tuple[str, float, float]] = []
    for s in by_pid[parent]:
        if s["kind"] == "phase":
            timeline.append((s["name"], s["start"] - launched, s["end"] - launched))
    timeline.append(("interpreter start", 0.0, by_pid[parent][0]["start"] - launched))
    workers = {}
    parts: dict[str, float] = defaultdict(float)
    run_spans = []
    running = 0  # processes that ran runs: the parent, or the workers
    for pid, ss in by_pid.items():
        mine = [x for x in ss if x["kind"] == "phase" and x["name"] == "run"]  # `--workers 1`: the parent's
        run_spans += mine
        running += bool(mine)
        for x in ss:
            if x["kind"] == "part" and any(r["start"] <= x["start"] <= r["end"] for r in mine):
                parts[x["name"]] += x["own"]
        if pid == parent:
            continue
        boot = next((x["start"] for x in ss if x["name"] == "worker boot"), None)
        warm = next((x for x in ss if x["name"] == "worker warm-up"), None)
        warming: dict[str, float] = defaultdict(float)
        for x in ss:
            if warm is not None and warm["start"] <= x["start"] <= warm["end"] and "end" in x:
                warming[x["name"]] += x["own"]
        workers[pid] = {
            "boot_s": None if boot is None else boot - launched,
            "warm_up_s": None if warm is None else [warm["start"] - launched, warm["end"] - launched],
            "warm_up_parts_s": dict(warming),
            "runs": len(mine),
            "first_run_s": min((x["start"] - launched for x in mine), default=None),
            "busy_s": sum(x["end"] - x["start"] for x in mine),
        }
    if len(run_spans) != len(runs):  # the probe missed runs (a worker without the hook): its parts would be wrong
        raise SystemExit(f"the probe saw {len(run_spans)} runs, the instance recorded {len(runs)}")
    executed = sum(x["end"] - x["start"] for x in run_spans)
    cell_runs = [r for r in runs if r["job"] in CELL_JOBS]
    return {
        "timeline": sorted(timeline, key=lambda t: t[1]),
        "workers": workers,
        "parts_s": dict(parts),
        "worker_run_spans_s": executed,
        "dagster_runs_s": sum(r["end"] - r["start"] for r in runs),
        "cell_runs": len(cell_runs),
        "running_processes": running,
    }


# ---------------------------------------------------------------- commands without a terminal


def commands(repeats: int) -> dict:
    out: dict = {"plan": [], "noop": [], **{what: [] for what in ADDITIONS}}
    for _ in range(repeats):
        with project(SMALL, "small") as (folder, env, file), tempfile.TemporaryDirectory() as probe:
            env = lab_env(env)
            lab_command(folder, env, ["sweep", "run", file, "--quiet"])
            _, seconds, at, cpu = lab_command(folder, env, ["sweep", "plan", file])
            out["plan"].append({"wall_s": seconds, "load": at, "cpu_s": cpu})
            _, seconds, at, cpu = lab_command(folder, env, ["sweep", "run", file, "--quiet"])
            out["noop"].append({"wall_s": seconds, "load": at, "cpu_s": cpu})
            for what, (metric, flags, extra) in ADDITIONS.items():
                out[what].append(add_metric(folder, {**env, **extra}, file, metric, flags, Path(probe) / metric))
        print(json.dumps({"commands": out}), file=sys.stderr, flush=True)
    return out


def add_metric(folder: Path, env: dict, file: str, metric: str, flags: list[str], probe: Path) -> dict:
    """`lab sweep run` after `metric` at k=10 was added to the sweep, under the probe."""
    path = folder / file
    path.write_text(path.read_text() + f"  {metric}: {{k: [10]}}\n")
    probe.mkdir()
    launched, seconds, at, cpu = lab_command(folder, env, ["sweep", "run", file, "--quiet", *flags], probe)
    runs = run_events(folder / ".lab" / "dagster", since=launched)
    compute = sum(r["compute"].get("metrics", 0.0) for r in runs if r["job"] in CELL_JOBS)
    seen = probed(probe, launched, runs)
    return {
        "wall_s": seconds,
        "cpu_s": cpu,
        "load": at,
        "metrics_compute_s": compute,
        # Compute spread over the processes that ran the cells (this one alone: all of it).
        "beyond_compute_s": seconds - compute / seen["running_processes"],
        **phases(runs, launched, seconds),
        "probe": seen,
    }


# ---------------------------------------------------------------- output


def med(xs) -> float:
    return statistics.median(xs)


def check_values(platform: dict[str, float], loops: dict[str, float], what: str) -> float:
    """The largest difference between the loop's and the platform's values: the same work, or the
    comparison means nothing."""
    if set(platform) != set(loops):
        raise SystemExit(f"{what}: cells differ from the platform's: {sorted(set(platform) ^ set(loops))}")
    worst = max(abs(platform[c] - loops[c]) for c in platform)
    if worst > 1e-9:
        raise SystemExit(f"{what}: values differ from the platform's by up to {worst:.3g}")
    return worst


def forget_umap_machine_code() -> int:
    """Delete numba's cache of umap-learn's functions (`dr/jit_cache.py` writes it beside umap's
    sources): the next process compiles them, as on a machine that never ran UMAP. Files deleted."""
    import importlib.util

    folder = Path(importlib.util.find_spec("umap").origin).parent / "__pycache__"
    files = [*folder.glob("*.nbi"), *folder.glob("*.nbc")]
    for f in files:
        f.unlink()
    return len(files)


def sweep_part(repeats: int) -> dict:
    order = ["serial", "joblib", "lab", "lab_first", "lab_wandb_off"]
    out: dict = {kind: [] for kind in order}
    for i in range(repeats):
        n = i % len(order)
        for kind in order[n:] + order[:n]:  # rotated: no side always runs first
            if kind == "lab_first":
                forget_umap_machine_code()
            if kind.startswith("lab"):
                out[kind].append(lab_sweep(extra=WANDB_OFF if kind == "lab_wandb_off" else None))
            else:
                out[kind].append(loop(kind))
            print(json.dumps({kind: {k: v for k, v in out[kind][-1].items() if k != "values"}}), file=sys.stderr)
    for kind in ("serial", "joblib"):
        out[f"{kind}_max_value_difference"] = max(
            check_values(lab["values"], r["values"], kind) for lab, r in zip(out["lab"], out[kind])
        )
    # UMAP's machine code loaded from the cache computes what a fresh compile does.
    for first, r in zip(out["lab_first"], out["joblib"]):
        check_values(first["values"], r["values"], "lab_first")
    with tempfile.TemporaryDirectory() as probe:
        out["probed"] = lab_sweep(Path(probe))
    for kind in order:
        out[f"{kind}_median_s"] = med(r["wall_s"] for r in out[kind])
    out["lab_over_joblib"] = out["lab_median_s"] / out["joblib_median_s"]
    out["lab_first_over_joblib"] = out["lab_first_median_s"] / out["joblib_median_s"]
    out["lab_over_serial"] = out["lab_median_s"] / out["serial_median_s"]
    return out


def table(rows: list[list], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def s(x: float) -> str:
    return f"{x:.2f}"


def markdown(r: dict) -> str:
    parts = []
    if sw := r.get("sweep"):
        rows = [
            [
                kind,
                ", ".join(f"{x['wall_s']:.1f} (load {x['load']})" for x in sw[kind]),
                s(sw[f"{kind}_median_s"]),
                ", ".join(f"{x['cpu_s']:.1f}" for x in sw[kind] if "cpu_s" in x),
            ]
            for kind in ("serial", "joblib", "lab", "lab_first", "lab_wandb_off")
        ]
        parts += [
            "**12-cell sweep, cold, no warm service** (runs interleaved; wall s, load at start)",
            table(rows, ["path", "runs", "median s", "CPU s of the process tree"]),
            f"platform / joblib = **{sw['lab_over_joblib']:.2f}**, platform / serial = **{sw['lab_over_serial']:.2f}**, "
            f"the platform's first sweep with UMAP on this machine (`lab_first`) / joblib = "
            f"**{sw['lab_first_over_joblib']:.2f}**, "
            f"platform with `LAB_WANDB=off` / joblib = {sw['lab_wandb_off_median_s'] / sw['joblib_median_s']:.2f}; "
            f"values equal (max difference: joblib {sw['joblib_max_value_difference']:.1g}, "
            f"serial {sw['serial_max_value_difference']:.1g})",
            "",
            compute_table(sw),
            "",
            phase_table(
                [*sw["lab"], *sw["lab_first"], *sw["lab_wandb_off"], sw["probed"]],
                "12-cell sweep",
                [
                    *(f"run {i + 1}" for i in range(len(sw["lab"]))),
                    *(f"first {i + 1}" for i in range(len(sw["lab_first"]))),
                    *(f"W&B off {i + 1}" for i in range(len(sw["lab_wandb_off"]))),
                    "probed",
                ],
            ),
            "",
            probe_tables(sw["probed"]["probe"], len(sw["probed"]["values"])),
        ]
    if c := r.get("commands"):
        rows = [
            [
                what,
                ", ".join(f"{x['wall_s']:.2f} (load {x['load']})" for x in c[key]),
                s(med(x["wall_s"] for x in c[key])),
            ]
            for what, key in (
                ("`lab sweep plan`", "plan"),
                ("no-op `lab sweep run`", "noop"),
                *((a, a) for a in ADDITIONS),
            )
        ]
        parts += [
            "**Commands without a terminal** (8 cells at 1,200 points)",
            table(rows, ["command", "runs: wall s (load)", "median s"]),
        ]
        for a in ADDITIONS:
            parts += [
                f"{a}: compute {s(med(x['metrics_compute_s'] for x in c[a]))} s summed over the 8 metrics steps; "
                f"wall minus compute / processes that ran cells: **{s(med(x['beyond_compute_s'] for x in c[a]))} s**",
                phase_table(c[a], a, [f"run {i + 1}" for i in range(len(c[a]))]),
                probe_tables(c[a][-1]["probe"], 8),
            ]
    if f := r.get("floor"):
        parts += [
            "**Dagster's floor, warm process** (run_cost.py, medians)",
            table(
                [
                    ["a trivial cell run (isomap, 60 points, W&B offline)", s(f["wall_s"])],
                    ["the same shape, empty bodies", s(f["floor_wall_s"])],
                    ["the same assets and checks in one step", s(f["floor_folded_wall_s"])],
                    ["one empty asset, no check", s(f["floor_one_step_wall_s"])],
                ],
                ["run", "wall s"],
            ),
        ]
    return "\n\n".join(parts)


def compute_table(sw: dict) -> str:
    """Where the compute went, summed over the 12 cells (medians of the runs): the loops' own
    split against what the platform's steps report."""
    loops = {kind: [r["split"] for r in sw[kind]] for kind in ("serial", "joblib")}
    lab = [r["per_cell"] for r in sw["lab"]]
    rows = [
        ["first task / first cell starts, s from launch"]
        + [", ".join(s(x) for x in sw[kind][0]["first_task_s"]) + " (run 1)" for kind in loops]
        + [s(med(r["before_first_cell_s"] for r in sw["lab"]))]
    ]
    for m in (k.removeprefix("fit ") for k in loops["serial"][0] if k.startswith("fit ")):
        rows.append(
            [f"fit {m}", *(s(med(x[f"fit {m}"] for x in v)) for v in loops.values())]
            + [s(med(x.get(f"compute embedding ({m})", 0.0) for x in lab))]
        )
    rows.append(
        ["metric (loops: sklearn; platform: its metrics step's compute)"]
        + [s(med(x["metric"] for x in v)) for v in loops.values()]
        + [s(med(x.get("compute metrics", 0.0) for x in lab))]
    )
    rows.append(
        ["data (loops: with a process's first imports)"]
        + [s(med(x["data"] for x in v)) for v in loops.values()]
        + [s(med(x.get("compute raw_dataset", 0.0) + x.get("compute dataset", 0.0) for x in lab))]
    )
    return table(rows, ["summed over the cells, s (medians)", "serial", "joblib", "platform"])


def phase_table(runs: list[dict], what: str, labels: list[str]) -> str:
    keys = ["before_first_cell_s", "cells_s", "after_last_cell_s", "wall_s"]
    rows = [[k.removesuffix("_s").replace("_", " "), *(s(x[k]) for x in runs)] for k in keys]
    per = [x["per_cell"] for x in runs]
    for k in sorted(per[-1]):
        rows.append([f"cell runs, summed: {k}", *(s(p.get(k, 0.0)) for p in per)])
    for job in runs[-1]["after_runs_s"]:
        rows.append([f"after: {job}", *(s(x["after_runs_s"].get(job, 0.0)) for x in runs)])
    return table(rows, [f"{what}: seconds", *labels])


def probe_tables(p: dict, cells: int) -> str:
    rows = [[name, s(start), s(end), s(end - start)] for name, start, end in p["timeline"] if end - start >= 0.005]
    out = [table(rows, ["the command's process: phase", "from launch s", "to s", "s"])]
    wrows = [
        [
            pid,
            s(w["boot_s"] or 0),
            " - ".join(s(x) for x in w["warm_up_s"] or []),
            ", ".join(f"{k} {v:.2f}" for k, v in sorted(w["warm_up_parts_s"].items(), key=lambda kv: -kv[1])),
            s(w["first_run_s"] or 0),
            w["runs"],
            s(w["busy_s"]),
        ]
        for pid, w in p["workers"].items()
    ]
    header = ["worker", "boot at s", "warm-up (s from launch)", "warm-up parts, s", "first run at s", "runs", "busy s"]
    out.append(table(wrows, header))
    prow = [[name, s(v), f"{1000 * v / cells:.0f}"] for name, v in sorted(p["parts_s"].items(), key=lambda kv: -kv[1])]
    prow.append(["(Dagster runs, summed)", s(p["dagster_runs_s"]), f"{1000 * p['dagster_runs_s'] / cells:.0f}"])
    out.append(table(prow, ["inside the runs: ours (exclusive)", "s, summed", "ms per cell"]))
    return "\n\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--parts", default="sweep,commands,floor")
    p.add_argument("--json", type=Path, help="write every number here")
    p.add_argument("--render", type=Path, help="only print the tables of a run's --json file")
    args = p.parse_args()
    if args.render:
        print(markdown(json.loads(args.render.read_text())))
        return
    r: dict = {"load_before": os.getloadavg(), "cores": len(os.sched_getaffinity(0))}
    for part in args.parts.split(","):
        at = load()
        if part == "sweep":
            r[part] = sweep_part(args.repeats)
        elif part == "commands":
            r[part] = commands(args.repeats)
        elif part == "floor":
            r[part] = {"load": at, **run_cost.measure(ROOT, 12)}
        else:
            raise SystemExit(f"unknown part {part!r}")
        if args.json:
            args.json.write_text(json.dumps(r, indent=1, default=str))
    r["load_after"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(r, indent=1, default=str))
    print(markdown(r))


if __name__ == "__main__":
    main()
