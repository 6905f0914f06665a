"""`lab verify FILE`: every artifact of a sweep against the size and content hash recorded when it
was written; one line per damaged one, with the command that recomputes it."""

from __future__ import annotations

import sys

from lab_assets.cli.exits import FAILED


def add_parser(sub) -> None:
    verify = sub.add_parser(
        "verify",
        help="check every artifact of a sweep against the size and content hash "
        "recorded when it was written; one line per damaged one, with the command that repairs it",
    )
    verify.add_argument("file")
    verify.set_defaults(fn=run, warm=True)


def run(args) -> int:
    from lab_assets.defs.integrity import repair_command
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.runner.sweeps import verify

    sweep = load_sweep(args.file)
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
