"""`lab study run FILE` (propose, train and record trials: runner/studies.py) and `lab study show
FILE` (the ledger)."""

from __future__ import annotations

import json
import sys

from lab_assets.cli.exits import FAILED
from lab_assets.cli.output import group


def add_parser(sub) -> None:
    study = group(sub, "study", "autonomous training search: run a study file, show its ledger")
    srun = study.add_parser("run", help="propose, train and record trials until the study's budget of trials is spent")
    srun.add_argument("file")
    srun.add_argument("--json", action="store_true", help="machine-readable ledger, no progress lines")
    srun.set_defaults(fn=run, writes=True)
    show = study.add_parser("show", help="the study's ledger (TSV: pipe it to `column -t`)")
    show.add_argument("file")
    show.add_argument("--json", action="store_true")
    show.set_defaults(fn=run_show)


def run(args) -> int:
    from lab_assets.runner.studies import run_study
    from lab_assets.runtime.instance import get_instance
    from lab_assets.training.study import load_study

    study = load_study(args.file)
    quiet = args.json

    def report(p) -> None:
        if not quiet:
            print(f"study {p.study}: {p.done}/{p.total} trials; {p.state}", file=sys.stderr, flush=True)

    final = run_study(get_instance(), study, report)
    return _show(study.name, args.json, final.heartbeat())


def run_show(args) -> int:
    from lab_assets.training.study import load_study

    return _show(load_study(args.file).name, args.json, None)


def _show(name: str, as_json: bool, heartbeat: dict | None) -> int:
    from lab_assets.training import ledger

    rows = ledger.rows(name)
    if as_json:
        print(
            json.dumps(
                {"study": name, "progress": heartbeat, "rows": rows, "tsv": ledger.path(name, ".tsv")},
                indent=2,
                default=str,
            )
        )
    else:
        print(ledger.tsv(rows), end="")
        print(f"ledger: {ledger.path(name, '.tsv')} (and .parquet)", file=sys.stderr)
    # A crashed trial is a result (a bad proposal); a study with no result at all is a failure.
    return FAILED if heartbeat is not None and all(r["status"] == "crash" for r in rows) else 0
