"""`lab impact --base REF [SWEEP ...]`: which assets and cells of each sweep the change between
the git revision REF and the working tree recomputes (changed, or new in this change), and why,
without running anything (`runner/impact.py`); where the lab home has an instance, how many cells
never ran there (missing) and the recorded wall seconds of those recomputed.
A table, `--json`, or `--markdown` (a pull request's `$GITHUB_STEP_SUMMARY`)."""

from __future__ import annotations

import argparse
import json

from lab_assets.cli.exits import BAD_INPUT


def add_parser(sub) -> None:
    p = sub.add_parser(
        "impact",
        help="what the change since a git revision recomputes, per sweep and cell (changed, new in "
        "this change), and why (nothing is run); missing cells and recorded costs where an instance is at hand",
    )
    p.add_argument("sweeps", nargs="*", metavar="SWEEP", help="sweep files (default: every file under sweeps/)")
    p.add_argument("--base", required=True, help="the git revision to compare with (origin/main, HEAD~1, a SHA)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true")
    out.add_argument("--markdown", action="store_true", help="for a pull request's step summary or comment")
    p.add_argument("--brief", action="store_true", help="the reasons only, not the recomputed cells one by one")
    p.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    from lab_assets.dr import impact
    from lab_assets.runner.impact import change_impact

    impacts = change_impact(args.base, args.sweeps or None)
    if args.json:
        print(json.dumps({"base": args.base, "sweeps": [s.to_json() for s in impacts]}, indent=2))
    elif args.markdown:
        print(impact.markdown(impacts, args.base, cells=not args.brief))
    else:
        print(impact.text(impacts, cells=not args.brief))
    return BAD_INPUT if any(s.error for s in impacts) else 0
