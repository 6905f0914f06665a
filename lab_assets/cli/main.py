"""`lab`: the command line. Plain, scriptable, `--json` on request; heavy imports stay inside
the commands so `lab --help` answers at once.

Exit codes: 0 success, 1 a partition failed (a study: no trial succeeded), 2 bad input (a sweep or
study file, a flag).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

BAD_INPUT, FAILED = 2, 1


def _load(path: str):
    from lab_assets.dr.sweep import load_sweep

    return load_sweep(path)


def _progress_factory(enabled: bool):
    """A rich progress bar per phase on stderr (stdout stays clean for --json)."""
    if not enabled:
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)

    def factory(label: str, total: int):
        if total == 0:
            return lambda outcome: None
        bar = Progress(TextColumn(f"{label:>8}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console)
        bar.start()
        task = bar.add_task(label, total=total)
        done = [0]

        def tick(outcome) -> None:
            done[0] += 1
            bar.update(task, advance=1)
            if not outcome.ok:
                console.print(f"[red]{outcome.status}[/red] {outcome.job} {outcome.partition}")
            if done[0] == total:
                bar.stop()

        return tick

    return factory


def cmd_plan(args: argparse.Namespace) -> int:
    from lab_assets.runner.sweeps import plan as make_plan

    plan = make_plan(_load(args.file))
    if args.json:
        print(json.dumps(plan.to_json(), indent=2))
        return 0
    s = plan.sweep
    print(f"sweep {s.name} ({s.source}): {len(s.data)} data keys x {len(s.methods)} method keys = {len(s.cells)} cells")
    print(f"metrics: {', '.join(m.column for m in s.metrics) or '(none)'}")
    for d in s.data:
        st = plan.datasets[d.key]
        print(f"  data    {d.key:<28} {st.status:<8} {d.dataset} {json.dumps(d.params)} seed={d.seed}")
    for m in s.methods:
        print(f"  method  {m.key:<28} {'':<8} {m.method} {json.dumps(m.params)}")
    for c in plan.cells:
        print(f"  cell    {c.partition:<52} {c.status:<8} {c.reason}")
    print(f"report: {plan.report.status}")
    print(" ".join(f"{n} {k}" for k, n in plan.counts.items()))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from lab_assets.defs.jobs import CELLS, DATASETS, METRIC_TABLE, REPORT
    from lab_assets.runner.run import FRESH
    from lab_assets.runner.sweeps import run_sweep
    from lab_assets.runner.webserver import SubmitError

    sweep = _load(args.file)
    try:
        result = run_sweep(
            sweep, workers=args.workers, progress=_progress_factory(not args.json and not args.quiet), submit=args.submit
        )
    except SubmitError as e:
        print(f"lab: {e}", file=sys.stderr)
        return FAILED
    failed = result.failed
    if args.json:
        jobs = (DATASETS, CELLS, METRIC_TABLE, REPORT)
        print(json.dumps({
            "sweep": sweep.name,
            "seconds": round(result.seconds, 3),
            "before": result.before.counts,
            "materialized": {job: result.count(job) for job in jobs},
            "fresh": {job: result.count(job, FRESH) for job in jobs},
            "failed": [o.to_json() for o in failed],
            "skipped": [o.to_json() for o in result.skipped],
            "report": _report_dir(sweep.name),
        }, indent=2))
    else:
        print(f"sweep {sweep.name}: {result.count(DATASETS)} datasets and {result.count(CELLS)} cells materialized, "
              f"{result.count(CELLS, FRESH)} already fresh, {len(failed)} failed, in {result.seconds:.1f} s")
        _print_problems(result)
        _print_report(sweep)
    return 0 if result.ok else FAILED


def _print_problems(result) -> None:
    """One line per failed or skipped run, on stderr: the root cause's first line, and the run."""
    for o in result.failed:
        first = o.why.splitlines()[0] if o.why else "failed (see the run's logs)"
        print(f"FAILED {o.job} {o.partition}: {first}  [run {o.run_id}]", file=sys.stderr)
    for o in result.skipped:
        print(f"SKIPPED {o.job} {o.partition}: {o.why}", file=sys.stderr)


def _report_dir(name: str) -> str:
    from lab_assets.defs.assets.reports import report_dir

    return report_dir(name)


def _width() -> int:
    """The terminal's width, at most 100 columns (and 100 when not a terminal)."""
    import shutil

    return max(60, min(100, shutil.get_terminal_size((100, 24)).columns))


def _print_report(sweep, cells: bool = False) -> None:
    """The seed-aggregated summary (or, with `cells`, the per-cell table), readable at 100 columns."""
    from lab_assets.core import storage
    from lab_assets.dr import tables

    out = _report_dir(sweep.name)
    if not storage.exists(f"{out}/summary.parquet"):
        return
    if cells:
        table = storage.read_parquet(f"{out}/metrics.parquet")
        metric_columns = [m.column for m in sweep.metrics if m.column in table.columns]
        print(tables.cells_text(table, metric_columns, sweep.labels, _width()))
    else:
        summary = storage.read_parquet(f"{out}/summary.parquet")
        comparisons = storage.read_parquet(f"{out}/comparisons.parquet")
        print(tables.summary_text(summary, comparisons, _width()))
    print(f"\nreport: {out}/\n  summary.md, summary.csv, summary.parquet, comparisons.csv, comparisons.parquet,\n"
          "  per cell: metrics.md, metrics.csv, metrics.parquet; embeddings.png, metrics_vs_k.png")


def cmd_report(args: argparse.Namespace) -> int:
    from lab_assets.runner.sweeps import materialize_report

    sweep = _load(args.file)
    result = materialize_report(sweep)
    _print_problems(result)
    if args.json:
        from lab_assets.core import storage

        out = _report_dir(sweep.name)
        print(json.dumps({"sweep": sweep.name, "ok": result.ok, "report": out, "files": storage.glob(f"{out}/*")}, indent=2))
    else:
        _print_report(sweep, cells=args.cells)
    return 0 if result.ok else FAILED


def cmd_query(args: argparse.Namespace) -> int:
    import duckdb

    from lab_assets.dr.query import run, tables

    if not tables():
        print("lab query: no results yet; run `lab sweep run <file>` first", file=sys.stderr)
        return BAD_INPUT
    try:
        df = run(args.sql)
    except duckdb.Error as e:
        print(f"lab query: {e}\nviews: {', '.join(tables())}", file=sys.stderr)
        return BAD_INPUT
    if args.format == "json":
        print(df.to_json(orient="records", indent=2))
    elif args.format == "csv":
        print(df.to_csv(index=False), end="")
    else:
        print(df.to_markdown(index=False))
    return 0


def _study(path: str):
    from lab_assets.training.study import load_study

    return load_study(path)


def cmd_study_run(args: argparse.Namespace) -> int:
    from lab_assets.runtime.instance import get_instance
    from lab_assets.runner.studies import run_study

    study = _study(args.file)
    quiet = args.json

    def report(p) -> None:
        if not quiet:
            print(f"study {p.study}: {p.done}/{p.total} trials; {p.state}", file=sys.stderr, flush=True)

    final = run_study(get_instance(), study, report)
    return _show(study.name, args.json, final.heartbeat())


def cmd_study_show(args: argparse.Namespace) -> int:
    return _show(_study(args.file).name, args.json, None)


def _show(name: str, as_json: bool, heartbeat: dict | None) -> int:
    from lab_assets.training import ledger

    rows = ledger.rows(name)
    if as_json:
        print(json.dumps({"study": name, "progress": heartbeat, "rows": rows,
                          "tsv": ledger.path(name, ".tsv")}, indent=2, default=str))
    else:
        print(ledger.tsv(rows), end="")
        print(f"ledger: {ledger.path(name, '.tsv')} (and .parquet)", file=sys.stderr)
    # A crashed trial is a result (a bad proposal); a study with no result at all is a failure.
    return FAILED if heartbeat is not None and all(r["status"] == "crash" for r in rows) else 0


def cmd_ui(args: argparse.Namespace) -> int:
    from lab_assets.cli.ui import serve
    from lab_assets.core.settings import project_dir
    from lab_assets.runtime.instance import get_instance

    # The instance's tables, created here once: on a fresh lab home the webserver and the daemon
    # would both create the SQLite schedule storage at start, and two alembic stamps leave it
    # with two heads ("Version table 'alembic_version' has more than one head").
    get_instance()
    workspace = project_dir() / "workspace.yaml"
    target = ["-w", str(workspace)] if workspace.is_file() else ["-m", "lab_assets.defs.definitions"]
    print(f"lab ui: Dagster UI on http://{args.host}:{args.port} (DAGSTER_HOME={os.environ['DAGSTER_HOME']})", flush=True)
    os.chdir(project_dir())
    return serve(args.host, args.port, target)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lab", description="Sweeps of datasets x methods x seeds as Dagster assets.")
    sub = p.add_subparsers(dest="command", required=True)

    sweep = sub.add_parser("sweep", help="plan or run a sweep file").add_subparsers(dest="action", required=True)
    plan = sweep.add_parser("plan", help="dry run: the grid, its keys, and which cells are fresh/stale/missing")
    plan.add_argument("file")
    plan.add_argument("--json", action="store_true", help="machine-readable output")
    plan.set_defaults(fn=cmd_plan)
    run = sweep.add_parser("run", help="materialize exactly the missing or stale cells, then the report")
    run.add_argument("file")
    run.add_argument("--workers", type=int, default=None, help="parallel runs (default: one per core)")
    run.add_argument("--json", action="store_true", help="machine-readable summary, no progress bar")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--submit", metavar="URL", help="launch the runs through this Dagster webserver (its run "
                     "launcher and queue, e.g. on Kubernetes) instead of in this process")
    run.set_defaults(fn=cmd_run)

    report = sub.add_parser("report", help="write a sweep's summary over seeds and per-cell table (Parquet, CSV, "
                            "Markdown) and figures; print the summary")
    report.add_argument("file")
    report.add_argument("--cells", action="store_true", help="print the per-cell table (one row per seed) instead")
    report.add_argument("--json", action="store_true")
    report.set_defaults(fn=cmd_report)

    query = sub.add_parser("query", help="SQL (DuckDB) over metric_table and each sweep's report table")
    query.add_argument("sql")
    query.add_argument("--format", choices=["markdown", "csv", "json"], default="markdown")
    query.set_defaults(fn=cmd_query)

    study = sub.add_parser("study", help="autonomous training search: run a study file, show its ledger")
    study = study.add_subparsers(dest="action", required=True)
    srun = study.add_parser("run", help="propose, train and record trials until the study's budget of trials is spent")
    srun.add_argument("file")
    srun.add_argument("--json", action="store_true", help="machine-readable ledger, no progress lines")
    srun.set_defaults(fn=cmd_study_run)
    show = study.add_parser("show", help="the study's ledger (TSV: pipe it to `column -t`)")
    show.add_argument("file")
    show.add_argument("--json", action="store_true")
    show.set_defaults(fn=cmd_study_show)

    ui = sub.add_parser("ui", help="start the Dagster UI (webserver + daemon) on this machine only")
    ui.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1, this machine only)")
    ui.add_argument("--port", type=int, default=3000)
    ui.set_defaults(fn=cmd_ui)

    from lab_assets.cli.cluster import add_parser as add_cluster_parser  # light: no Dagster import

    add_cluster_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "workers", None) is not None and args.workers < 1:
        print("lab: --workers must be at least 1", file=sys.stderr)
        return BAD_INPUT
    from lab_assets.core.input_files import InputError

    try:
        return args.fn(args)
    except InputError as e:
        print(f"lab: invalid {e.what}\n{e}", file=sys.stderr)
        return BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
