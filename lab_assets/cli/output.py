"""What commands print, shared: the progress display, failed and skipped runs, a
sweep's report tables. Heavy imports stay inside the functions: every `lab` call (`lab --help`
included) imports the command modules that import this, and must not load Dagster, pandas or rich.
"""

from __future__ import annotations

import contextlib
import io
import sys
import textwrap

from lab_assets.cli.logs import failure_traces


def group(sub, name: str, what: str):
    """The subcommands of `lab <name>` (`lab sweep plan|run|...`; `what`: its help), created by the
    first command module that registers one: a new `lab sweep <action>` lives in its own module."""
    groups = vars(sub).setdefault("lab_groups", {})
    if name not in groups:
        groups[name] = sub.add_parser(name, help=what).add_subparsers(dest="action", required=True)
    return groups[name]


def progress_factory(enabled: bool):
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
        bar = Progress(
            TextColumn(f"{label:>8}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
        )
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


def print_problems(result, verbose: bool = False) -> None:
    """One line per failed or skipped run, on stderr: what failed, the root cause's first line, the
    run and the command that prints its whole log; `--verbose` adds every failure's full trace."""
    for o in result.failed:
        first = o.why.splitlines()[0] if o.why else "failed (see the run's log)"
        step = f"step {o.step}, " if o.step else ""
        print(
            f"FAILED {o.job} {o.partition}: {first}  [{step}run {o.run_id[:8]}; full log: lab logs {o.run_id[:8]}]",
            file=sys.stderr,
        )
    for o in result.skipped:
        print(f"SKIPPED {o.job} {o.partition}: {o.why}", file=sys.stderr)
    if verbose:
        print_traces(result)


def print_traces(result) -> None:
    from lab_assets.runtime.instance import get_instance

    for o in result.failed:
        if o.run_id:
            print(f"\n--- {o.job} {o.partition} (run {o.run_id})", file=sys.stderr)
            for trace in failure_traces(get_instance(), o.run_id):
                print(trace.rstrip(), file=sys.stderr)


def width() -> int:
    """The terminal's width, at most 100 columns (and 100 when not a terminal)."""
    import shutil

    return max(60, min(100, shutil.get_terminal_size((100, 24)).columns))


def print_report(sweep, cells: bool = False) -> None:
    """The seed-aggregated summary (or, with `cells`, the per-cell table), readable at 100 columns."""
    from lab_assets.core import storage
    from lab_assets.dr import controls, ground_truth, tables
    from lab_assets.runner.sweeps import report_folder

    out = report_folder(sweep.name)
    if not storage.exists(f"{out}/summary.parquet"):
        return
    if cells:
        table = storage.read_parquet(f"{out}/metrics.parquet")
        metric_columns = [m.column for m in sweep.metrics if m.column in table.columns]
        print(tables.cells_text(table, metric_columns, sweep.labels, width()))
    else:
        summary = storage.read_parquet(f"{out}/summary.parquet")
        comparisons = storage.read_parquet(f"{out}/comparisons.parquet")
        print(tables.summary_text(summary, comparisons, width()))
        if (
            summary["better"].notna().any()
            and controls.control_keys([(m.method, m.key) for m in sweep.methods]) is None
        ):
            print(
                "\n" + "\n".join(textwrap.wrap(controls.how_to_add(sweep.source, ground_truth.with_latents()), width()))
            )
    print(
        f"\nreport: {out}/\n  summary.md, summary.csv, summary.parquet, comparisons.csv, comparisons.parquet,\n"
        "  per cell: metrics.md, metrics.csv, metrics.parquet; embeddings.png, metrics_vs_k.png\n"
        "  report.html: all of it in one self-contained page, sortable, with the gallery (lab report --open)"
    )


def report_text(sweep) -> str:
    """`print_report` as a string (the saved no-op answer prints it again)."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        print_report(sweep)
    return text.getvalue()
