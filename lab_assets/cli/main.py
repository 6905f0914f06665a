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
import time
from contextlib import nullcontext
from pathlib import Path

BAD_INPUT, FAILED = 2, 1
INTERRUPTED = 130  # Ctrl-C, as a shell reports a SIGINT
VERIFY_HELP = ("find damaged files by content hash (reads every file), not only by size: a corruption that "
               "kept the size is then recomputed")


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
    bars = []

    def factory(label: str, total: int):
        if total == 0:
            return lambda outcome: None
        bar = Progress(TextColumn(f"{label:>8}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console)
        bar.start()
        bars.append(bar)
        task = bar.add_task(label, total=total)
        done = [0]

        def tick(outcome) -> None:
            done[0] += 1
            bar.update(task, advance=1)
            if outcome.status in ("failed", "skipped"):
                console.print(f"[red]{outcome.status}[/red] {outcome.job} {outcome.partition}")
            if done[0] == total:
                bar.stop()

        return tick

    factory.stop = lambda: [bar.stop() for bar in bars]  # Ctrl-C: leave the terminal clean
    return factory


def cmd_plan(args: argparse.Namespace) -> int:
    from lab_assets.runner.sweeps import plan as make_plan

    plan = make_plan(_load(args.file), args.verify)
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
    start = time.perf_counter()
    text = _read(args.file)
    # A no-op answered from what the last no-op saved, without loading Dagster (runner/noop_cache.py).
    # `--verify` hashes every file: never answered without looking.
    cache = None if args.submit or args.verify or text is None else _noop_cache(args.file, text)
    if cache is not None and (answer := cache.load()) is not None:
        _print_noop(answer, args.json, time.perf_counter() - start)
        return 0

    # Work to do: the warm service runs it if it can (cli/service.py), with everything loaded.
    from lab_assets.cli import service

    if service.enabled() and (code := service.forward(args.argv)) is not None:
        return code
    # The workers start first: their imports and warm-up overlap this process's (runner/pool.py).
    from lab_assets.runner.pool import WorkerPool, default_workers

    workers = args.workers or default_workers()
    with WorkerPool(workers, fork=service.inside()) if not args.submit and workers > 1 else nullcontext() as pool:
        return _run(args, text, cache, pool, start)


def _run(args: argparse.Namespace, text: bytes | None, cache, pool, start: float) -> int:
    from lab_assets.defs.jobs import CELLS, DATASETS, METRIC_TABLE, REPORT
    from lab_assets.dr.sweep import parse_sweep
    from lab_assets.runner.run import FRESH, WAITED
    from lab_assets.runner.sweeps import run_sweep
    from lab_assets.runner.webserver import SubmitError

    sweep = _load(args.file) if text is None else parse_sweep(text.decode(), args.file)
    progress = _progress_factory(not args.json and not args.quiet)
    try:
        result = run_sweep(sweep, workers=args.workers, progress=progress, submit=args.submit, verify=args.verify,
                           registered=cache.mark if cache is not None else None, pool=pool)
    except SubmitError as e:
        print(f"lab: {e}", file=sys.stderr)
        return FAILED
    if result.interrupted:
        if progress is not None:
            progress.stop()
        _print_problems(result, getattr(args, "verbose", False))
        print(f"interrupted: {_cells_done(result)} of {len(sweep.cells)} cells done; run again to continue",
              file=sys.stderr)
        if result.left_running:
            # Submitted runs belong to the webserver's instance: stopping this command stops none of them.
            print(f"the {len(result.left_running)} runs submitted to {args.submit} keep running there (cancel them in "
                  "its UI); running again waits for them instead of starting them again", file=sys.stderr)
        return INTERRUPTED
    failed = result.failed
    if args.json:
        jobs = (DATASETS, CELLS, METRIC_TABLE, REPORT)
        print(json.dumps({
            "sweep": sweep.name,
            "seconds": round(result.seconds, 3),
            "before": result.before.counts,
            "materialized": {job: result.count(job) for job in jobs},
            "fresh": {job: result.count(job, FRESH) for job in jobs},
            # computed by another command's run that this one found in flight and waited for
            "waited": {job: result.count(job, WAITED) for job in jobs},
            "failed": [o.to_json() for o in failed],
            "skipped": [o.to_json() for o in result.skipped],
            "report": _report_dir(sweep.name),
        }, indent=2))
    else:
        print(_ran(sweep.name, result.count(DATASETS), result.count(CELLS), result.count(CELLS, FRESH), len(failed),
                   result.seconds, _metrics_only(result)))
        if result.of(WAITED):
            print(f"  {result.count(DATASETS, WAITED)} datasets and {result.count(CELLS, WAITED)} cells were in flight "
                  "in another command: waited for, not computed again")
        _print_problems(result, args.verbose)
        _print_report(sweep)
    if args.json and args.verbose:
        _print_traces(result)
    if cache is not None and result.ok:
        _save_noop(cache, sweep, result)
    return 0 if result.ok else FAILED


def _read(path: str) -> bytes | None:
    """The sweep file's bytes, read once: what is parsed is what the no-op cache is keyed on.
    None if unreadable (`load_sweep` then says why)."""
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def _noop_cache(path: str, text: bytes):
    from lab_assets.runner.noop_cache import NoopCache

    return NoopCache(path, text, _width())


def _ran(name: str, datasets: int, cells: int, fresh: int, failed: int, seconds: float, metrics_only: int = 0) -> str:
    only = f" ({metrics_only} of them: metrics step alone)" if metrics_only else ""
    return (f"sweep {name}: {datasets} datasets and {cells} cells materialized{only}, {fresh} already fresh, "
            f"{failed} failed, in {seconds:.1f} s")


def _metrics_only(result) -> int:
    """Cells materialized by their metrics step alone: their embedding was fresh (defs/work.py)."""
    from lab_assets.defs.jobs import CELLS
    from lab_assets.runner.run import MATERIALIZED

    only = {c.partition for c in (result.before.cells if result.before else []) if set(c.assets) == {"metrics"}}
    return sum(o.partition in only for o in result.of(MATERIALIZED, CELLS))


def _save_noop(cache, sweep, result) -> None:
    """What the next no-op of this file prints, minus its timing. After a run that materialized
    anything, the sweep is planned again (one stale-status resolution per cell, ~6.5 ms) and the
    answer saved only if that plan finds everything fresh: the first re-run is then a no-op too."""
    import contextlib
    import io

    from lab_assets.defs.integrity import artifact_paths
    from lab_assets.defs.jobs import CELLS, DATASETS, METRIC_TABLE, REPORT
    from lab_assets.runner.run import FRESH
    from lab_assets.runner.sweeps import plan

    now = result.before
    if any(o.status != FRESH for o in result.outcomes):
        cache.mark()  # the state this plan reads, not a later one
        now = plan(sweep)
        if now.pending_datasets or now.pending_cells() or now.report.status != FRESH:
            return
    out = _report_dir(sweep.name)
    report = io.StringIO()
    with contextlib.redirect_stdout(report):
        _print_report(sweep)
    cache.save(sweep, {
        "sweep": sweep.name,
        "before": now.counts,
        "fresh": {DATASETS: len(now.datasets), CELLS: len(now.cells), METRIC_TABLE: 1, REPORT: 1},
        "cells": len(now.cells),
        "report": out,
        "report_text": report.getvalue(),
    }, [f"{out}/summary.parquet", f"{out}/comparisons.parquet", f"{out}/metrics.parquet", *artifact_paths(sweep)])


def _print_noop(answer: dict, as_json: bool, seconds: float) -> None:
    """A saved no-op answer, printed as `cmd_run` prints a no-op."""
    if as_json:
        zero = {job: 0 for job in answer["fresh"]}
        print(json.dumps({"sweep": answer["sweep"], "seconds": round(seconds, 3), "before": answer["before"],
                          "materialized": zero, "fresh": answer["fresh"], "failed": [], "skipped": [],
                          "report": answer["report"]}, indent=2))
    else:
        print(_ran(answer["sweep"], 0, 0, answer["cells"], 0, seconds))
        print(answer["report_text"], end="")


def _cells_done(result) -> int:
    """Cells fresh before the run plus those materialized by it."""
    from lab_assets.defs.jobs import CELLS
    from lab_assets.runner.run import MATERIALIZED, WAITED

    before = {c.partition for c in result.before.cells if c.status == "fresh"} if result.before else set()
    return len(before | {o.partition for o in result.of(MATERIALIZED, CELLS) + result.of(WAITED, CELLS)})


def _print_problems(result, verbose: bool = False) -> None:
    """One line per failed or skipped run, on stderr: what failed, the root cause's first line, the
    run and the command that prints its whole log; `--verbose` adds every failure's full trace."""
    for o in result.failed:
        first = o.why.splitlines()[0] if o.why else "failed (see the run's log)"
        step = f"step {o.step}, " if o.step else ""
        print(f"FAILED {o.job} {o.partition}: {first}  [{step}run {o.run_id[:8]}; full log: lab logs {o.run_id[:8]}]",
              file=sys.stderr)
    for o in result.skipped:
        print(f"SKIPPED {o.job} {o.partition}: {o.why}", file=sys.stderr)
    if verbose:
        _print_traces(result)


def _print_traces(result) -> None:
    from lab_assets.cli.logs import failure_traces
    from lab_assets.runtime.instance import get_instance

    for o in result.failed:
        if o.run_id:
            print(f"\n--- {o.job} {o.partition} (run {o.run_id})", file=sys.stderr)
            for trace in failure_traces(get_instance(), o.run_id):
                print(trace.rstrip(), file=sys.stderr)


def _report_dir(name: str) -> str:
    """The sweep's report folder as it is now (on an object store, its current version's folder:
    a complete set, never of two versions)."""
    from lab_assets.core import storage
    from lab_assets.defs.assets.reports import report_dir

    return storage.current(report_dir(name))


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


def cmd_verify(args: argparse.Namespace) -> int:
    from lab_assets.defs.integrity import repair_command
    from lab_assets.runner.sweeps import verify

    sweep = _load(args.file)
    # One line per file: a dataset's one file is recorded by every cell that reads it.
    by_file: dict[str, object] = {}
    for d in verify(sweep):
        by_file.setdefault(d.path, d)
    damaged = list(by_file.values())
    for d in damaged:
        print(f"DAMAGED {d}; to recompute it: {repair_command([sweep.source], d.content_only)}")
    if damaged:
        print(f"sweep {sweep.name}: {len(damaged)} damaged artifacts", file=sys.stderr)
        return FAILED
    print(f"sweep {sweep.name}: every recorded artifact is intact (sizes and content hashes)")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from lab_assets.runner.sweeps import materialize_report

    sweep = _load(args.file)
    result = materialize_report(sweep)
    if result.interrupted:
        print("interrupted: the report was not written; run again to continue", file=sys.stderr)
        return INTERRUPTED
    _print_problems(result, args.verbose)
    if args.json:
        from lab_assets.core import storage

        out = _report_dir(sweep.name)
        print(json.dumps({"sweep": sweep.name, "ok": result.ok, "report": out, "files": storage.glob(f"{out}/*")}, indent=2))
    else:
        _print_report(sweep, cells=args.cells)
    return 0 if result.ok else FAILED


def cmd_query(args: argparse.Namespace) -> int:
    import duckdb

    from lab_assets.dr.query import QueryRefused, run, tables

    if not tables():
        print("lab query: no results yet; run `lab sweep run <file>` first", file=sys.stderr)
        return BAD_INPUT
    try:
        df = run(args.sql)
    except QueryRefused as e:
        print(f"lab query: refused: {e}", file=sys.stderr)
        return BAD_INPUT
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


def cmd_logs(args: argparse.Namespace) -> int:
    from lab_assets.cli.logs import UnknownRun, run_log
    from lab_assets.runtime.instance import get_instance

    try:
        lines = run_log(get_instance(), args.run)
    except UnknownRun as e:
        print(f"lab logs: {e}", file=sys.stderr)
        return BAD_INPUT
    print("\n".join(lines))
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
    # would both create the SQLite schedule storage at start, with Dagster's own code that does
    # not take get_instance's lock, and two alembic stamps leave it with two heads.
    get_instance()
    workspace = project_dir() / "workspace.yaml"
    target = ["-w", str(workspace)] if workspace.is_file() else ["-m", "lab_assets.defs.definitions"]
    print(f"lab ui: Dagster UI on http://{args.host}:{args.port} (DAGSTER_HOME={os.environ['DAGSTER_HOME']})", flush=True)
    os.chdir(project_dir())
    return serve(args.host, args.port, target)


def cmd_service(args: argparse.Namespace) -> int:
    from lab_assets.cli import service

    if args.action == "stop":
        print(f"lab service: {service.stop_all()} stopped")
        return 0
    if args.action == "start":
        started = service.start()
        print(f"lab service: {'ready' if started else 'did not start'}")
        return 0 if started else FAILED
    found = service.running()
    for s in found:
        whose = "this environment" if s["this_environment"] else "another environment or code"
        print(f"{s['key']}  pid {s['pid']}  {whose}  log {s['log']}")
    if not found:
        print("lab service: none running")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lab", description="Sweeps of datasets x methods x seeds as Dagster assets.")
    sub = p.add_subparsers(dest="command", required=True)

    sweep = sub.add_parser("sweep", help="plan or run a sweep file").add_subparsers(dest="action", required=True)
    plan = sweep.add_parser("plan", help="dry run: the grid, its keys, and which cells are fresh/stale/missing")
    plan.add_argument("file")
    plan.add_argument("--json", action="store_true", help="machine-readable output")
    plan.add_argument("--verify", action="store_true", help=VERIFY_HELP)
    plan.set_defaults(fn=cmd_plan, writes=True, warm=True)
    run = sweep.add_parser("run", help="materialize exactly the missing or stale cells, then the report")
    run.add_argument("file")
    run.add_argument("--workers", type=int, default=None, help="parallel runs (default: one per core)")
    run.add_argument("--json", action="store_true", help="machine-readable summary, no progress bar")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--verbose", action="store_true", help="every failure's full trace, not one line each")
    run.add_argument("--verify", action="store_true", help=VERIFY_HELP)
    run.add_argument("--submit", metavar="URL", help="launch the runs through this Dagster webserver (its run "
                     "launcher and queue, e.g. on Kubernetes) instead of in this process")
    run.set_defaults(fn=cmd_run, writes=True)
    from lab_assets.cli import gc, push, sweep_remove  # light: no Dagster import

    sweep_remove.add_parser(sweep)

    report = sub.add_parser("report", help="write a sweep's summary over seeds and per-cell table (Parquet, CSV, "
                            "Markdown) and figures; print the summary")
    report.add_argument("file")
    report.add_argument("--cells", action="store_true", help="print the per-cell table (one row per seed) instead")
    report.add_argument("--json", action="store_true")
    report.add_argument("--verbose", action="store_true", help="every failure's full trace, not one line each")
    report.set_defaults(fn=cmd_report, writes=True, warm=True)

    verify = sub.add_parser("verify", help="check every artifact of a sweep against the size and content hash "
                            "recorded when it was written; one line per damaged one, with the command that repairs it")
    verify.add_argument("file")
    verify.set_defaults(fn=cmd_verify, warm=True)

    logs = sub.add_parser("logs", help="a run's full log: events, failures with their traces, step output")
    logs.add_argument("run", help="a run id, or its first 8 characters (as `lab sweep run` prints them)")
    logs.set_defaults(fn=cmd_logs)

    query = sub.add_parser("query", help="SQL (DuckDB) over metric_table and each sweep's report table")
    query.add_argument("sql")
    query.add_argument("--format", choices=["markdown", "csv", "json"], default="markdown")
    query.set_defaults(fn=cmd_query)

    study = sub.add_parser("study", help="autonomous training search: run a study file, show its ledger")
    study = study.add_subparsers(dest="action", required=True)
    srun = study.add_parser("run", help="propose, train and record trials until the study's budget of trials is spent")
    srun.add_argument("file")
    srun.add_argument("--json", action="store_true", help="machine-readable ledger, no progress lines")
    srun.set_defaults(fn=cmd_study_run, writes=True)
    show = study.add_parser("show", help="the study's ledger (TSV: pipe it to `column -t`)")
    show.add_argument("file")
    show.add_argument("--json", action="store_true")
    show.set_defaults(fn=cmd_study_show)

    ui = sub.add_parser("ui", help="start the Dagster UI (webserver + daemon) on this machine only")
    ui.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1, this machine only)")
    ui.add_argument("--port", type=int, default=3000)
    ui.set_defaults(fn=cmd_ui, writes=True)

    service = sub.add_parser("service", help="the warm service that runs `lab sweep plan|run`, `lab report` and "
                             "`lab verify` with Dagster and the libraries already loaded (on by default in a "
                             "terminal; LAB_SERVICE=0/1)")
    service.add_argument("action", choices=["status", "start", "stop"])
    service.set_defaults(fn=cmd_service)

    from lab_assets.cli.cluster import add_parser as add_cluster_parser  # light: no Dagster import

    add_cluster_parser(sub)
    gc.add_parser(sub)
    push.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the program, not a caller that goes on: it ends without the teardown
        from lab_assets.core import fast_exit

        fast_exit.end_without_teardown()
        return fast_exit.exiting(_command(sys.argv[1:]))
    return _command(argv)


def _command(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    args.argv = argv  # what the warm service is handed
    if getattr(args, "workers", None) is not None and args.workers < 1:
        print("lab: --workers must be at least 1", file=sys.stderr)
        return BAD_INPUT
    try:
        if getattr(args, "warm", False):  # `sweep run` hands over later: after its no-op answer
            from lab_assets.cli import service

            if service.enabled() and (code := service.forward(args.argv)) is not None:
                return code
        if getattr(args, "writes", False):
            from lab_assets.core.settings import check_writable

            check_writable()  # a read-only or full lab home: refused before anything starts
        return args.fn(args)
    except KeyboardInterrupt:  # before or after the runs (during them, the command reports it)
        print("interrupted", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:  # `lab ... | head`: the reader left; what was done stays done
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return FAILED
    except Exception as e:
        code = _refused(e)
        if code is None:
            raise
        return code


def _refused(error: Exception) -> int | None:
    """The exit code of an error that is the input's or the lab home's, said in one sentence;
    None for any other (a bug: its traceback stays). The error classes are imported here, not
    before the command: `lab sweep run`'s no-op answer and hand-over to the warm service load
    neither pandas nor pydantic."""
    from lab_assets.core.input_files import InputError
    from lab_assets.core.storage import UnreadableFileError

    if isinstance(error, InputError):
        print(f"lab: invalid {error.what}\n{error}", file=sys.stderr)
        return BAD_INPUT
    if isinstance(error, UnreadableFileError):  # a file read here (a report's, lab query's tables)
        print(f"lab: {error.problem}; `lab verify <sweep file>` names every damaged file and the command that "
              "recomputes it", file=sys.stderr)
        return FAILED
    problem = _storage_problem(error)
    if problem is None:
        return None
    print(f"lab: {problem}", file=sys.stderr)
    return BAD_INPUT


def _storage_problem(error: BaseException) -> str | None:
    """A write that the lab home refused (read-only, full) anywhere in the error's chain, said in
    one sentence naming the path; None for any other error (a bug: its traceback stays)."""
    from lab_assets.core.settings import UNWRITABLE, dagster_home, lab_home, unwritable

    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in UNWRITABLE:
            return str(unwritable(lab_home(), error))
        text = str(error).lower()
        if type(error).__name__ == "OperationalError" and ("readonly" in text or "disk is full" in text or "disk i/o" in text):
            return f"{dagster_home()}: the Dagster instance cannot write ({str(error).splitlines()[0]}). " \
                   "Free space there or make it writable, or point DAGSTER_HOME at another folder."
        error = error.__cause__ or error.__context__
    return None


if __name__ == "__main__":
    sys.exit(main())
