"""The definitions load (without heavy imports), validate with Dagster's own CLI, and have the
documented shape."""

import subprocess
import sys
from pathlib import Path

import dagster as dg

from lab_assets.defs.definitions import defs

REPO = Path(__file__).resolve().parents[1]

# Libraries that cost seconds to import: only running a dataset, method or metric may load them.
HEAVY = ["sklearn", "scipy", "numba", "umap", "phate", "torch", "torchdr", "matplotlib", "ripser"]


def test_dagster_definitions_validate():
    dagster = Path(sys.executable).parent / "dagster"
    out = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_parsing_a_sweep_and_loading_definitions_import_no_heavy_library():
    """What every `lab` call and code-server start pays: parsing a sweep imports every registry
    module (and validates its parameters), so one module-level heavy import in any dataset,
    method or metric file would cost seconds on every no-op re-run."""
    script = (
        "import sys\n"
        "from lab_assets.dr.sweep import load_sweep\n"
        "from lab_assets.dr.datasets import DATASETS\n"
        "from lab_assets.dr.methods import METHODS\n"
        "from lab_assets.dr.metrics import METRICS\n"
        "import lab_assets.defs.definitions\n"
        "load_sweep('sweeps/dr_benchmark.yaml')\n"
        "for registry in (DATASETS, METHODS, METRICS):\n"
        "    for name in registry.names():\n"
        "        registry[name].params_model, registry[name].code_version\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = sorted(set(HEAVY) & {m.split(".")[0] for m in out.stdout.split()})
    assert not loaded, f"heavy modules imported by parsing a sweep / loading the definitions: {', '.join(loaded)}"


def test_asset_graph_and_partitions():
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == {
        "data_spec",
        "method_spec",
        "metric_spec",
        "sweep_spec",
        "raw_dataset",
        "dataset",
        "model",
        "embedding",
        "metrics",
        "metric_table",
        "report",
        "sweep",
        "corpus",
        "gpt_model",
        "study_ledger",
    }

    def parents(asset):
        return {k.to_user_string() for k in graph.get(dg.AssetKey(asset)).parent_keys}

    assert parents("dataset") == {"raw_dataset"}
    assert parents("model") == {"dataset", "method_spec"}
    assert parents("embedding") == {"model", "dataset", "method_spec"}
    assert parents("metrics") == {"embedding", "dataset", "metric_spec"}
    assert parents("report") == {"metric_table", "sweep_spec", "embedding"}

    # One `cell` dimension for everything a cell reads or writes, specs included: identity edges,
    # which Dagster's webserver and daemon see as the code does (defs/partitions.py).
    for asset in ("data_spec", "method_spec", "metric_spec", "raw_dataset", "dataset", "model", "embedding", "metrics"):
        assert graph.get(dg.AssetKey(asset)).partitions_def == dg.DynamicPartitionsDefinition(name="cell"), asset
    assert graph.get(dg.AssetKey("metric_table")).partitions_def is None
    for asset in ("sweep_spec", "report"):
        assert graph.get(dg.AssetKey(asset)).partitions_def == dg.DynamicPartitionsDefinition(name="sweep"), asset
    trial = graph.get(dg.AssetKey("gpt_model")).partitions_def
    assert [d.name for d in trial.partitions_defs] == ["corpus", "trial"]
    assert parents("gpt_model") == {"corpus"}
    for asset in (
        "raw_dataset",
        "dataset",
        "model",
        "embedding",
        "metrics",
        "metric_table",
        "report",
        "corpus",
        "gpt_model",
    ):
        assert graph.get(dg.AssetKey(asset)).code_version, asset
