"""`lab sweep plan FILE` and `lab sweep run FILE`: their arguments and what they print. How a run
executes (saved no-op answer, warm service, warm workers, webserver) is decided by one function,
`runner/commands.route_sweep_run`; whichever way it went, one function prints it (`_print_summary`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

from lab_assets.cli.exits import FAILED, INTERRUPTED
from lab_assets.cli.output import (
    group,
    print_problems,
    print_traces,
    progress_factory,
    report_text,
    width,
)
from lab_assets.runner.commands import Handed, Refused, Saved, SweepRunSummary, hand_over, route_sweep_run

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
    plan.set_defaults(fn=lab_sweep_plan, writes=True, warm=True)
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
    run.set_defaults(fn=lab_sweep_run, writes=True)


def lab_sweep_plan(args) -> int:
    from lab_assets.dr.methods.true_latent import NAME as TRUE_LATENT
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.runner import sweeps

    plan = sweeps.plan(load_sweep(args.file), args.verify)
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


def lab_sweep_run(args) -> int:
    shown = []  # the progress display, once the workers are started

    def progress():
        shown.append(progress_factory(not args.json and not args.quiet))
        return shown[-1]

    done = route_sweep_run(
        args.file,
        hand_over=lambda: hand_over(args),
        workers=args.workers,
        submit=args.submit,
        verify=args.verify,
        width=width(),
        progress=progress,
    )
    if isinstance(done, Handed):
        return done.code
    if isinstance(done, Refused):
        print(f"lab: {done.why}", file=sys.stderr)
        return FAILED
    if isinstance(done, Saved):
        _print_summary(args, done.summary(), lambda: done.answer["report_text"])
        return 0
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
    _print_summary(args, done.summary(), lambda: report_text(sweep), result)
    done.save_noop_answer(lambda: report_text(sweep))
    return 0 if result.ok else FAILED


def _print_summary(args, summary: SweepRunSummary, report: Callable[[], str], result=None) -> None:
    """`lab sweep run`'s output, text or `--json`, whichever way it went (`result`: a run's
    outcomes, for its failures' details; None for a saved answer, which has none). The counts are
    read by their `--json` keys (defs/jobs.py's kinds), not through defs/jobs: that loads Dagster,
    which a saved answer prints without."""
    if args.json:
        print(json.dumps(summary.to_json(), indent=2))
        if args.verbose and result is not None:
            print_traces(result)
        return
    only = f" ({summary.metrics_only} of them: metrics step alone)" if summary.metrics_only else ""
    print(
        f"sweep {summary.sweep}: {summary.materialized['datasets']} datasets and {summary.materialized['cells']} cells "
        f"materialized{only}, {summary.fresh['cells']} already fresh, {len(summary.failed)} failed, in "
        f"{summary.seconds:.1f} s"
    )
    if any(summary.waited.values()):
        print(
            f"  {summary.waited['datasets']} datasets and {summary.waited['cells']} cells were in flight "
            "in another command: waited for, not computed again"
        )
    if result is not None:
        print_problems(result, args.verbose)
    print(report(), end="")


def _cells_done(result) -> int:
    """Cells fresh before the run plus those materialized by it."""
    from lab_assets.defs.jobs import CELLS
    from lab_assets.runner.run import MATERIALIZED, WAITED

    before = {c.partition for c in result.before.cells if c.status == "fresh"} if result.before else set()
    return len(before | {o.partition for o in result.of(MATERIALIZED, CELLS) + result.of(WAITED, CELLS)})
