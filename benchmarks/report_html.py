"""What report.html adds to drawing a sweep's report: `reports.report_files` of a 36-cell sweep (3
datasets x 4 method configs x 3 seeds), with report.html and without it (the report as it was
before issue 43), alternating in one process. Prints JSON: medians in seconds and the difference.

    python benchmarks/report_html.py [REPEATS]
"""

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

SWEEP = """
name: bench36
data:
  swissroll: {n_samples: 300, noise: 0.05}
  s_curve: {n_samples: 300}
  gaussian_blobs: {n_samples: 300, n_features: 5, centers: 3}
seeds: [0, 1, 2]
methods:
  pca: {}
  isomap: {n_neighbors: [8, 12, 16]}
metrics:
  trustworthiness: {k: [5, 10]}
  continuity: {k: [5, 10]}
  lid: {k: [10]}
"""


def main(repeats: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="report-bench-"))
    (folder / "sweeps").mkdir()
    (folder / "sweeps" / "bench36.yaml").write_text(SWEEP)
    os.environ.update({"LAB_PROJECT_DIR": str(folder), "LAB_WANDB": "off", "LAB_SERVICE": "0"})
    os.environ.pop("LAB_HOME", None)
    os.environ.pop("DAGSTER_HOME", None)
    from lab_assets.defs.assets import reports
    from lab_assets.dr import html_report
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.runner.sweeps import materialize_report, materialize_sweep

    sweep = load_sweep(folder / "sweeps" / "bench36.yaml")
    assert materialize_sweep(sweep, workers=2).ok and materialize_report(sweep).ok
    drawn = html_report.report_html
    times: dict[str, list[float]] = {"without_html": [], "with_html": []}
    size = 0
    for i in range(repeats + 1):  # the first of each warms up (imports, fonts)
        for name in ("with_html", "without_html") if i % 2 else ("without_html", "with_html"):
            html_report.report_html = drawn if name == "with_html" else (lambda *args: "")
            start = time.perf_counter()
            files = reports.report_files(sweep)
            size = len(files["report.html"]) if name == "with_html" else size
            if i:
                times[name].append(time.perf_counter() - start)
    html_report.report_html = drawn
    medians = {k: statistics.median(v) for k, v in times.items()}
    return {
        "cells": len(sweep.cells),
        "html_bytes": size,
        "median_without_html_s": round(medians["without_html"], 3),
        "median_with_html_s": round(medians["with_html"], 3),
        "difference_s": round(medians["with_html"] - medians["without_html"], 3),
        "load": os.getloadavg(),
    }


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)))
