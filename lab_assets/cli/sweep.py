"""`lab sweep plan FILE` and `lab sweep run FILE`: what they print. How a run executes (saved
no-op answer, warm service, worker pool, webserver) is `runner/commands.py`'s choice."""

from __future__ import annotations

import json
import sys

from lab_assets.cli.exits import FAILED, INTERRUPTED
from lab_assets.cli.output import (
    group,
    print_problems,
    print_report,
    print_traces,
    progress_factory,
    report_text,
    width,
)
from lab_assets.runner.commands import Handed, Refused, Saved, sweep_run

SWEEP = "plan, run or remove a sweep file"
VERIFY_HELP = (
    "find damaged files by content hash (reads every file), not only by size: a corruption that "
    "kept the size is then recomputed"
)


def add_parser(sub) -> None:
    sweep = group(sub, "sweep", SWEEP)
    plan = sweep.add_parser("plan", help="dry run: the grid, its keys, and which cells are fresh/stale/missing")
    plan.add_argument("file")
    plan.add_argument("--json", action="store_true", help="machine-readable output")
    plan.add_argument("--verify", action="store_true", help=VERIFY_HELP)
    plan.set_defaults(fn=run_plan, writes=True, warm=True)
    run = sweep.add_parser("run", help="materialize exactly the missing or stale cells, then the report")
    run.add_argument("file")
    run.add_argument("--workers", type=int, default=None, help="parallel runs (default: one per core)")
    run.add_argument("--json", action="store_true", help="machine-readable summary, no progress bar")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--verbose", action="store_true", help="every failure's full trace, not one line each")
    run.add_argument("--verify", action="store_true", help=VERIFY_HELP)
    run.add_argument(
        "--submit",
        metavar="URL",
        help="launch the runs through this Dagster webserver (its run "
        "launcher and queue, e.g. on Kubernetes) instead of in this process",
    )
    run.set_defaults(fn=run_run, writes=True)


def run_plan(args) -> int:
    from lab_assets.dr.methods.true_latent import NAME as TRUE_LATENT
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.runner.sweeps import plan as make_plan

    plan = make_plan(load_sweep(args.file), args.verify)
    if args.json:
        print(json.dumps(plan.to_json(), indent=2))
        return 0
    s = plan.sweep
    grid = f"{len(s.data)} data keys x {len(s.methods)} method keys"
    less = f" less {len(s.undeclared)} not declared" if s.undeclared else ""
    print(f"sweep {s.name} ({s.source}): {grid}{less} = {len(s.cells)} cells")
    if s.undeclared:
        without = ", ".join(dict.fromkeys(d.dataset for d in s.data if any(d.key == k for k, _ in s.undeclared)))
        print(f"not declared: {TRUE_LATENT} on {without}, which have no ground-truth latent coordinates")
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


def run_run(args) -> int:
    shown = []  # the progress display, once the workers are started

    def progress():
        shown.append(progress_factory(not args.json and not args.quiet))
        return shown[-1]

    done = sweep_run(
        args.file,
        args.argv,
        workers=args.workers,
        submit=args.submit,
        verify=args.verify,
        width=width(),
        progress=progress,
    )
    if isinstance(done, Handed):
        return done.code
    if isinstance(done, Saved):
        _print_noop(done.answer, args.json, done.seconds)
        return 0
    if isinstance(done, Refused):
        print(f"lab: {done.why}", file=sys.stderr)
        return FAILED
    sweep, result = done.sweep, done.result
    if result.interrupted:
        if shown and shown[-1] is not None:
            shown[-1].stop()
        print_problems(result, args.verbose)
        print(
            f"interrupted: {_cells_done(result)} of {len(sweep.cells)} cells done; run again to continue",
            file=sys.stderr,
        )
        if result.left_running:
            # Submitted runs belong to the webserver's instance: stopping this command stops none of them.
            print(
                f"the {len(result.left_running)} runs submitted to {args.submit} keep running there (cancel them in "
                "its UI); running again waits for them instead of starting them again",
                file=sys.stderr,
            )
        return INTERRUPTED
    _print_result(args, sweep, result)
    done.save_noop(lambda: report_text(sweep))
    return 0 if result.ok else FAILED


def _print_result(args, sweep, result) -> None:
    from lab_assets.defs.jobs import CELLS, DATASETS, METRIC_TABLE, REPORT
    from lab_assets.runner.run import FRESH, WAITED
    from lab_assets.runner.sweeps import report_folder

    if args.json:
        jobs = (DATASETS, CELLS, METRIC_TABLE, REPORT)
        _print_json(
            sweep.name,
            result.seconds,
            result.before.counts,
            materialized={job: result.count(job) for job in jobs},
            fresh={job: result.count(job, FRESH) for job in jobs},
            waited={job: result.count(job, WAITED) for job in jobs},
            failed=[o.to_json() for o in result.failed],
            skipped=[o.to_json() for o in result.skipped],
            report=report_folder(sweep.name),
        )
    else:
        print(
            _ran(
                sweep.name,
                result.count(DATASETS),
                result.count(CELLS),
                result.count(CELLS, FRESH),
                len(result.failed),
                result.seconds,
                _metrics_only(result),
            )
        )
        if result.of(WAITED):
            print(
                f"  {result.count(DATASETS, WAITED)} datasets and {result.count(CELLS, WAITED)} cells were in flight "
                "in another command: waited for, not computed again"
            )
        print_problems(result, args.verbose)
        print_report(sweep)
    if args.json and args.verbose:
        print_traces(result)


def _ran(name: str, datasets: int, cells: int, fresh: int, failed: int, seconds: float, metrics_only: int = 0) -> str:
    only = f" ({metrics_only} of them: metrics step alone)" if metrics_only else ""
    return (
        f"sweep {name}: {datasets} datasets and {cells} cells materialized{only}, {fresh} already fresh, "
        f"{failed} failed, in {seconds:.1f} s"
    )


def _metrics_only(result) -> int:
    """Cells materialized by their metrics step alone: their embedding was fresh (defs/work.py)."""
    from lab_assets.defs.jobs import CELLS
    from lab_assets.runner.run import MATERIALIZED

    only = {c.partition for c in (result.before.cells if result.before else []) if set(c.assets) == {"metrics"}}
    return sum(o.partition in only for o in result.of(MATERIALIZED, CELLS))


def _print_json(
    name: str,
    seconds: float,
    before: dict,
    *,
    materialized: dict,
    fresh: dict,
    waited: dict,
    failed: list,
    skipped: list,
    report: str,
) -> None:
    """`lab sweep run --json`, whichever path answered (a run, a saved no-op answer): one set of keys.
    `waited`: computed by another command's run that this one found in flight and waited for."""
    summary = {
        "sweep": name,
        "seconds": round(seconds, 3),
        "before": before,
        "materialized": materialized,
        "fresh": fresh,
        "waited": waited,
        "failed": failed,
        "skipped": skipped,
        "report": report,
    }
    print(json.dumps(summary, indent=2))


def _print_noop(answer: dict, as_json: bool, seconds: float) -> None:
    """A saved no-op answer, printed as a no-op run prints."""
    if as_json:
        zero = {job: 0 for job in answer["fresh"]}
        _print_json(
            answer["sweep"],
            seconds,
            answer["before"],
            materialized=zero,
            fresh=answer["fresh"],
            waited=zero,
            failed=[],
            skipped=[],
            report=answer["report"],
        )
    else:
        print(_ran(answer["sweep"], 0, 0, answer["cells"], 0, seconds))
        print(answer["report_text"], end="")


def _cells_done(result) -> int:
    """Cells fresh before the run plus those materialized by it."""
    from lab_assets.defs.jobs import CELLS
    from lab_assets.runner.run import MATERIALIZED, WAITED

    before = {c.partition for c in result.before.cells if c.status == "fresh"} if result.before else set()
    return len(before | {o.partition for o in result.of(MATERIALIZED, CELLS) + result.of(WAITED, CELLS)})
