"""`lab report FILE`: write a sweep's report here (the metric table and the report), print it."""

from __future__ import annotations

import json
import sys

from lab_assets.cli.exits import FAILED, INTERRUPTED
from lab_assets.cli.output import print_problems, print_report


def add_parser(sub) -> None:
    report = sub.add_parser(
        "report",
        help="write a sweep's summary over seeds and per-cell table (Parquet, CSV, "
        "Markdown) and figures; print the summary",
    )
    report.add_argument("file")
    report.add_argument("--cells", action="store_true", help="print the per-cell table (one row per seed) instead")
    report.add_argument("--json", action="store_true")
    report.add_argument(
        "--open", action="store_true", help="then open report.html (one self-contained file) in the web browser"
    )
    report.add_argument("--verbose", action="store_true", help="every failure's full trace, not one line each")
    report.set_defaults(fn=run, writes=True, warm=True)


def run(args) -> int:
    from lab_assets.core import side_process
    from lab_assets.dr import report_drawing

    # Before Dagster loads: matplotlib and W&B load on the other core meanwhile.
    side_process.start(report_drawing.MODULES, modules_first=True)
    from lab_assets.core import storage
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.runner.sweeps import materialize_report, report_folder

    sweep = load_sweep(args.file)
    result = materialize_report(sweep)
    if result.interrupted:
        print("interrupted: the report was not written; run again to continue", file=sys.stderr)
        return INTERRUPTED
    print_problems(result, args.verbose)
    if args.json:
        out = report_folder(sweep.name)
        files = storage.glob(f"{out}/*")
        print(json.dumps({"sweep": sweep.name, "ok": result.ok, "report": out, "files": files}, indent=2))
    else:
        print_report(sweep, cells=args.cells)
    if args.open:
        open_html(f"{report_folder(sweep.name)}/report.html")
    return 0 if result.ok else FAILED


def open_html(path: str) -> None:
    """Open a local report in the browser; a report on an object store cannot be opened from
    there: say where it is."""
    import webbrowser
    from pathlib import Path

    if "://" in path:
        print(f"report.html is at {path}: copy it here to open it", file=sys.stderr)
    elif not webbrowser.open(Path(path).resolve().as_uri()):
        print(f"no web browser found: open {path}", file=sys.stderr)
