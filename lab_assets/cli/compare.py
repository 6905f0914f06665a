"""`lab compare SWEEP`: the sweep's results before and after a change, per metric and dataset x
method, against seed noise (`dr/compare.py`). Before/after: each cell's previous and latest
materialization in this lab home's instance (default), or another lab home's metric files
against this one's (`--against PATH`). `--fail-on regress` exits 1 when a metric with a
direction got significantly worse: a CI gate."""

from __future__ import annotations

import argparse
import json
import sys

from lab_assets.cli.exits import BAD_INPUT, FAILED

REGRESSED = FAILED  # `--fail-on regress`: a result got worse, as a failed partition fails a run


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="a sweep's results before and after a change: per metric and dataset x "
        "method, the paired difference over seeds and whether it is beyond seed noise",
    )
    p.add_argument("file", metavar="SWEEP")
    p.add_argument(
        "--against",
        metavar="PATH",
        help="another lab home (a folder): its metric files are 'before', "
        "this lab home's are 'after' (default: each cell's previous materialization here)",
    )
    p.add_argument(
        "--fail-on",
        choices=["regress"],
        help="regress: exit 1 when a metric with a direction (better=) got significantly worse",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true")
    out.add_argument("--markdown", action="store_true", help="for a pull request's step summary or comment")
    p.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    from lab_assets.core import keys
    from lab_assets.core.settings import resolve_path
    from lab_assets.defs.metric_history import latest_two, stored
    from lab_assets.dr import compare
    from lab_assets.dr.sweep import load_sweep

    sweep = load_sweep(args.file)
    cells = [keys.cell_key(d, m) for d, m in sweep.cells]
    if args.against:
        home = resolve_path(args.against)
        if not (home / "assets").is_dir():
            print(f"lab: --against {args.against}: {home} is not a lab home (no assets/ folder)", file=sys.stderr)
            return BAD_INPUT
        columns = [m.column for m in sweep.metrics]
        before, after = stored(cells, columns, home), stored(cells, columns)
        what = f"{args.against} (before) vs this lab home (after)"
    else:
        from lab_assets.runtime.instance import get_instance

        before, after = latest_two(get_instance(), cells)
        what = "each cell's latest materialization vs its previous one"
    table = compare.compare(sweep, before, after)
    if args.json:
        rows = json.loads(table.to_json(orient="records"))  # NaN -> null
        print(
            json.dumps(
                {
                    "sweep": sweep.name,
                    "before_after": what,
                    "test": compare.TEST,
                    "alpha": compare.ALPHA,
                    "min_pairs": compare.MIN_PAIRS,
                    "rows": rows,
                },
                indent=2,
            )
        )
    elif args.markdown:
        print(compare.markdown(sweep.name, table, what))
    else:
        print(compare.text(sweep.name, table, what))
    if args.fail_on == "regress" and table["regressed"].any():
        print(f"lab compare: {int(table['regressed'].sum())} metric(s) got significantly worse", file=sys.stderr)
        return REGRESSED
    return 0
