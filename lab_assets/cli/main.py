"""`lab`: the command line. Plain, scriptable, `--json` on request. Each command is a module of
`lab_assets/cli/` with `add_parser(subparsers)` (its `fn` default runs it) listed in `COMMANDS`;
where a command executes (saved no-op answer, warm service, worker pool, webserver) is the
runner's choice (`runner/commands.py`).

Every command module is imported by every `lab` call (`lab --help` included), so their heavy
imports (Dagster, pandas, pydantic, rich) stay inside the functions that run a command.

Exit codes (`cli/exits.py`): 0 success, 1 a partition failed (a study: no trial succeeded), 2 bad
input (a sweep or study file, a flag), 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys

from lab_assets.cli import (
    check,
    cluster,
    compare,
    entries,
    gc,
    impact,
    logs,
    new,
    push,
    query,
    report,
    service,
    study,
    sweep,
    sweep_remove,
    ui,
    verify,
)
from lab_assets.cli.exits import BAD_INPUT, FAILED, INTERRUPTED
from lab_assets.core import fast_exit, gc_thresholds
from lab_assets.core.settings import check_writable
from lab_assets.runner.commands import hand_over

COMMANDS = (
    sweep,
    sweep_remove,
    report,
    verify,
    logs,
    query,
    study,
    ui,
    service,
    cluster,
    check,
    impact,
    compare,
    entries,
    new,
    gc,
    push,
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lab", description="Sweeps of datasets x methods x seeds as Dagster assets.")
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the program, not a caller that goes on
        as_program()
        return fast_exit.exiting(_command(sys.argv[1:]))
    return _command(argv)


def as_program() -> None:
    """What `lab`, the program, sets first: it ends without the interpreter's teardown, and its
    garbage collector runs at thresholds for the stack it loads (core/gc_thresholds.py)."""
    fast_exit.end_without_teardown()
    gc_thresholds.raise_for_a_large_stack()


def _command(argv: list[str]) -> int:
    return execute(parser().parse_args(argv))


def execute(args: argparse.Namespace) -> int:
    """A parsed command, run to its exit code. The warm service's child calls this same function
    with the same arguments (`runner/commands.ENTRY`), never the parser again."""
    if getattr(args, "workers", None) is not None and args.workers < 1:
        print("lab: --workers must be at least 1", file=sys.stderr)
        return BAD_INPUT
    try:
        if getattr(args, "warm", False):  # `sweep run` hands over later: after its no-op answer
            if (code := hand_over(args)) is not None:
                return code
        if getattr(args, "writes", False):
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
    before the command: a hand-over to the warm service loads neither pandas nor pydantic."""
    from lab_assets.core.input_files import InputError
    from lab_assets.core.storage import UnreadableFileError

    if isinstance(error, InputError):
        print(f"lab: invalid {error.what}\n{error}", file=sys.stderr)
        return BAD_INPUT
    if isinstance(error, UnreadableFileError):  # a file read here (a report's, lab query's tables)
        print(
            f"lab: {error.problem}; `lab verify <sweep file>` names every damaged file and the command that "
            "recomputes it",
            file=sys.stderr,
        )
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
        cannot_write = any(w in text for w in ("readonly", "disk is full", "disk i/o"))
        if type(error).__name__ == "OperationalError" and cannot_write:
            return (
                f"{dagster_home()}: the Dagster instance cannot write ({str(error).splitlines()[0]}). "
                "Free space there or make it writable, or point DAGSTER_HOME at another folder."
            )
        error = error.__cause__ or error.__context__
    return None


if __name__ == "__main__":
    sys.exit(main())
