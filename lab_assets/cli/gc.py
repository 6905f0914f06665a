"""`lab gc [--dry-run]`: list, with sizes, what no registered sweep uses any more, and delete it
(`defs/gc.py` says what counts and what is left alone)."""

from __future__ import annotations

import argparse
import json


def add_parser(sub) -> None:
    gc = sub.add_parser(
        "gc",
        help="delete what no registered sweep uses any more (cells and datasets of "
        "configurations no sweep declares, sweeps whose file is gone, old report versions, files no "
        "materialization points to): files, partitions and their runs",
    )
    gc.add_argument("--dry-run", action="store_true", help="list it with sizes, delete nothing")
    gc.add_argument("--json", action="store_true", help="machine-readable list")
    gc.set_defaults(fn=run, writes=True)


def size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def run(args: argparse.Namespace) -> int:
    from lab_assets.defs import gc
    from lab_assets.runtime.instance import get_instance

    instance = get_instance()
    items = gc.find(instance)
    if not args.dry_run:
        items = gc.collect(instance, items)
    total = sum(i.size for i in items)
    if args.json:
        listing = {"deleted": not args.dry_run, "bytes": total, "items": [i.to_json() for i in items]}
        listing["left_in_wandb"] = [i.name for i in items if i.in_wandb]
        print(json.dumps(listing, indent=2))
        return 0
    for i in items:
        extra = "".join(f", {n} {what}" for n, what in ((len(i.runs), "runs"), (len(i.partitions), "partitions")) if n)
        print(f"{i.kind:<15} {i.name:<60} {size(i.size):>9}{extra}  ({i.why})")
    verb = "would delete" if args.dry_run else "deleted"
    print(f"lab gc: {verb} {len(items)} items, {size(total)}" if items else "lab gc: nothing to delete")
    in_wandb = [i.name for i in items if i.in_wandb]
    print(
        "W&B: lab gc deletes local run folders only; "
        + (
            f"{len(in_wandb)} of those runs are in a W&B project already and stay there "
            f"(delete them in the project): {', '.join(in_wandb)}"
            if in_wandb
            else "runs already in a W&B project (online, or uploaded by `wandb sync`) stay there"
        )
    )
    return 0
