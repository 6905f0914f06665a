"""`lab sweep remove NAME`: unregister a sweep (`defs/register.unregister`)."""

from __future__ import annotations

import argparse

from lab_assets.cli.output import group
from lab_assets.cli.sweep import SWEEP


def add_parser(sub) -> None:
    remove = group(sub, "sweep", SWEEP).add_parser(
        "remove",
        help="unregister a sweep: its cells leave the UI unless another sweep "
        "declares them, its metrics leave the other cells' suites; `lab gc` then deletes "
        "its files",
    )
    remove.add_argument("name", help="the sweep's name (its file's `name:`)")
    remove.set_defaults(fn=run, writes=True)


def run(args: argparse.Namespace) -> int:
    from lab_assets.core.key_records import UnknownKeyError
    from lab_assets.defs.register import unregister
    from lab_assets.dr import keystore
    from lab_assets.dr.sweep import SweepError
    from lab_assets.runtime.instance import get_instance

    try:
        dropped = unregister(get_instance(), args.name)
    except UnknownKeyError:  # bad input: `lab` says so and exits 2
        known = ", ".join(keystore.keys("sweep")) or "none"
        raise SweepError(f"no sweep named {args.name!r} is registered (registered: {known})") from None
    print(
        f"lab sweep remove: {args.name} unregistered; {len(dropped)} cells left the UI (`lab gc` deletes their files)"
    )
    return 0
