"""Every version a plan compares, for a whole source tree, as JSON: the asset modules' code
versions and, per cell of each sweep file, its dataset's and method's versions and its metric
columns' versions (the same functions `register` observes and `freshness.plan_sweep` compares:
`specs.data_version`, `method_version`, `column_version`, `sweep_version`).

`lab impact` runs this module's source in a fresh interpreter whose import path starts at a
tree (a git revision's, the working tree's), so each tree's versions are its own code's
(`runner/impact.py`). That tree may predate this file: it uses only what the specs have offered
since per-cell versions exist, and runs as `python -c <this source> <sweep files>`.
"""

import importlib
import json
import sys

# The asset modules whose code version is every cell's: editing one stales what it materializes.
ASSET_MODULES = ("datasets", "experiments", "metrics", "reports")


def shared(specs) -> dict[str, str]:
    """{file: version} of the code every metric column shares (only what `lab impact` says changed)."""
    if hasattr(specs, "shared_metric_code"):
        return specs.shared_metric_code()
    from lab_assets.core.lineage import module_version  # a tree from before versions by meaning
    from lab_assets.core.registry import source_file

    return {source_file(m).rsplit("/", 1)[-1]: module_version(source_file(m)) for m in specs.SHARED_METRIC_CODE}


def snapshot(paths: list[str]) -> dict:
    from lab_assets.core import keys
    from lab_assets.defs.assets import specs
    from lab_assets.dr.datasets import DATASETS
    from lab_assets.dr.methods import METHODS
    from lab_assets.dr.metrics import METRICS
    from lab_assets.dr.sweep import load_sweep

    out: dict = {
        "assets": {
            f"{m}.py": importlib.import_module(f"lab_assets.defs.assets.{m}").CODE_VERSION for m in ASSET_MODULES
        },
        "shared": shared(specs),
        "sweeps": {},
        "columns": {},
        # Every registered metric's column version: a column a sweep no longer asks for stays in
        # its cells' rows only while its code is unchanged (`specs.metric_version`).
        "metrics": {name: specs.column_version(name) for name in METRICS.names()},
    }
    sweeps = {}
    for path in paths:
        try:
            sweeps[path] = load_sweep(path)
        except Exception as e:  # noqa: BLE001 - a file this tree cannot run: said, not fatal
            out["sweeps"][path] = {"error": str(e)}
    suites = specs.cell_suites(list(sweeps.values()))  # a cell's suite: the union over the sweeps containing it
    for path, s in sweeps.items():
        data, methods, cells = {d.key: d for d in s.data}, {m.key: m for m in s.methods}, {}
        for d, m in s.cells:
            dc, mc, cell = data[d], methods[m], keys.cell_key(d, m)
            # `entry` covers `estimator:` methods, in no registry; trees before it have no such property.
            method = mc.entry if hasattr(mc, "entry") else METHODS[mc.method]
            for c in suites[cell]:
                out["columns"][c.column] = {
                    "metric": c.metric,
                    "version": specs.column_version(c.metric),
                    "code": METRICS[c.metric].code_version,
                }
            cells[cell] = {
                "data": d,
                "method": m,
                "dataset": dc.dataset,
                "method_name": mc.method,
                "data_version": specs.data_version(dc),
                "dataset_code": DATASETS[dc.dataset].code_version,
                "method_version": specs.method_version(mc),
                "method_code": method.code_version,
                "trainable": method.trainable,
                "columns": [c.column for c in suites[cell]],
            }
        out["sweeps"][path] = {"name": s.name, "sweep_version": specs.sweep_version(s), "cells": cells}
    return out


if __name__ == "__main__":
    print(json.dumps(snapshot(sys.argv[1:])))
