"""A lab's own code, tried as a new user would: a package outside the repository installed by pip
in editable mode (its `lab_assets.plugins` entry point; into a folder of its own on PYTHONPATH)
and a second module named by LAB_PLUGINS only, with a dataset, a decorated method, a metric and a plain class named
by import path (`estimator:`). A sweep mixing them with built-ins runs and its values equal a
direct computation; a real edit of the plugin's method stales exactly its cells; each bad plugin
is refused in one line, exit 2, nothing run; `lab list` and `lab new` (its test passes as written).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import numpy as np
import pytest
from sklearn.manifold import trustworthiness

from lab_assets.cli import scaffold
from lab_assets.core import estimator_paths
from lab_assets.core.registry import Entry, RegistryError, package_version
from lab_assets.core.storage import asset_path, parquet_frame, parquet_provenance
from lab_assets.defs.assets.datasets import GENERATE_STREAM, features, rng
from lab_assets.dr.metrics import METRICS
from lab_assets.runtime.instance import get_instance
from lab_assets_tests.conftest import TINY_SWEEP, lab_cli

PYPROJECT = """[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "mylab"
version = "0.1.0"

[project.entry-points."lab_assets.plugins"]
mylab = "mylab.entries"

[tool.setuptools]
packages = ["mylab"]
"""
RING = '''"""A noisy ring (a plugin dataset)."""
import numpy as np
from lab_assets.core.registry import Shape
from lab_assets.dr.datasets import DATASETS, Raw


@DATASETS("ring", shape=lambda p: Shape(p["n_samples"], 3))
def ring(rng: np.random.Generator, *, n_samples: int = 100, noise: float = 0.1) -> Raw:
    """Points on a circle in 3-d, plus noise."""
    t = rng.uniform(0, 2 * np.pi, n_samples)
    X = np.column_stack([np.cos(t), np.sin(t), 0.1 * t]) + noise * rng.standard_normal((n_samples, 3))
    return Raw(X, t)
'''
SCALED = '''"""A plugin method: the first two coordinates, scaled."""
from typing import Annotated
from pydantic import Field
from lab_assets.dr.methods import METHODS


class Scaled:
    def __init__(self, factor):
        self.factor = factor

    def fit_transform(self, X):
        return X[:, :2] * self.factor


@METHODS("scaled", limits=lambda params, shape: {})
def scaled(seed: int, *, factor: Annotated[float, Field(gt=0)] = 2.0):
    """The first two coordinates, times a factor."""
    return Scaled(factor)
'''
REDUCERS = '''"""A plain scikit-learn-style class: no lab_assets import at all."""
import numpy as np


class Shuffled:
    """Two random columns of the data (seeded by random_state)."""

    def __init__(self, n_components=2, random_state=None):
        self.n_components = n_components
        self.random_state = random_state

    def fit_transform(self, X):
        cols = np.random.default_rng(self.random_state).permutation(X.shape[1])[: self.n_components]
        return X[:, cols]


class NoFit:
    def __init__(self, n_components=2):
        self.n_components = n_components
'''
ENTRIES = "from mylab import ring, scaled  # noqa: F401 - the entry point: importing registers them\n"
SPREAD = '''"""A plugin metric, loaded through LAB_PLUGINS only."""
import numpy as np
from lab_assets.dr.metrics import METRICS


@METRICS("spread", better=None, valid_range="[0, inf)")
def spread(nb, *, power: int = 1) -> float:
    """Mean distance of the embedding's points from their centroid, to a power."""
    return float(np.mean(np.linalg.norm(nb.Z - nb.Z.mean(0), axis=1) ** power))
'''
SWEEP = """name: mine
data:
  ring: {n_samples: 60}
  swissroll: {n_samples: 60}
methods:
  scaled: {factor: 3.0}
  shuffled: {estimator: "mylab.reducers:Shuffled", n_components: 2}
metrics:
  trustworthiness: {k: 5}
  spread: {}
"""


def test_lab_new_writes_entries_whose_tests_pass_as_written(lab, monkeypatch):
    # First in the file: before `mylab` is installed, so this process registers none of its entries.
    done = lab_cli("new", "method", "my_proj", cwd=lab)
    assert done.returncode == 0, done.stderr
    assert "LAB_PLUGINS=plugins" in done.stdout and '[project.entry-points."lab_assets.plugins"]' in done.stdout
    scaffold.write("dataset", "my_circle", lab / "plugins")
    scaffold.write("metric", "my_overlap", lab / "plugins")
    with pytest.raises(scaffold.NewEntryError, match="exists already; nothing written"):
        scaffold.write("method", "my_proj", lab / "plugins")
    with pytest.raises(scaffold.NewEntryError, match=r"metric 'trustworthiness' exists already \(built-in\)"):
        scaffold.write("metric", "trustworthiness", lab / "plugins")
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "plugins"],
        cwd=lab,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert tests.returncode == 0 and "3 passed" in tests.stdout, tests.stdout[-3000:]
    monkeypatch.setenv("LAB_PLUGINS", "plugins")
    (lab / "sweeps" / "new.yaml").write_text(
        "name: new\ndata:\n  my_circle: {n_samples: 40}\nmethods:\n  my_proj: {n_components: 40}\nmetrics:\n  my_overlap: {k: 5}\n"
    )
    plan = lab_cli("sweep", "plan", "sweeps/new.yaml", cwd=lab)  # the new entries' limits, at plan time
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "methods.my_proj.n_components: n_components=40 needs more points than the data has (40)" in plan.stderr


SPREAD_SWEEP = TINY_SWEEP.replace("  lid: {k: [10]}\n", "  spread: {}\n")


def test_a_project_names_its_plugins_once_in_its_pyproject(lab, monkeypatch):
    # Before `mylab` is installed (the module fixture below): no plugin at all is loaded at first.
    monkeypatch.delenv("LAB_PLUGINS", raising=False)
    (lab / "labextra.py").write_text(SPREAD)
    (lab / "sweeps" / "spread.yaml").write_text(SPREAD_SWEEP)
    unknown = lab_cli("sweep", "plan", "sweeps/spread.yaml", cwd=lab)
    assert unknown.returncode == 2, unknown.stdout + unknown.stderr
    assert unknown.stderr.splitlines()[1].endswith(
        f"metrics.spread: unknown metric 'spread'; allowed: {', '.join(METRICS.names())}; no plugin is loaded; "
        "a lab's own entries load from the modules named in pyproject.toml [tool.lab_assets] plugins, in "
        "LAB_PLUGINS, or by a 'lab_assets.plugins' entry point (docs/your-own-code.md)"
    ), unknown.stderr

    (lab / "pyproject.toml").write_text('[project]\nname = "mine"\n\n[tool.lab_assets]\nplugins = ["labextra"]\n')
    listed = lab_cli("list", "metrics", "--json", cwd=lab)
    assert listed.returncode == 0, listed.stderr
    assert {e["name"]: e["origin"] for e in json.loads(listed.stdout)["metrics"]}["spread"] == "labextra"
    planned = lab_cli("sweep", "plan", "--json", "sweeps/spread.yaml", cwd=lab)
    assert planned.returncode == 0, planned.stderr
    assert len(json.loads(planned.stdout)["cells"]) == 4

    (lab / "extra2.py").write_text(SPREAD.replace('"spread"', '"spread2"'))
    with_env = lab_cli("list", "metrics", "--json", cwd=lab, env={"LAB_PLUGINS": "extra2,labextra"})
    names = [e["name"] for e in json.loads(with_env.stdout)["metrics"]]
    assert {"spread", "spread2"} <= set(names), (
        "LAB_PLUGINS adds to the project's plugins, a module named twice loads once"
    )


@pytest.mark.parametrize(
    "table, problem, command",
    [
        (
            'plugins = "labextra"',
            "[tool.lab_assets] plugins: expected a list of module names like [\"mylab.entries\"], got 'labextra'",
            ("sweep", "run", "sweeps/tiny.yaml"),
        ),
        ('plugin = ["labextra"]', "[tool.lab_assets] plugin: unknown key; allowed: plugins", ("list",)),
        ("plugins = [", "cannot read it as TOML: ", ("list",)),
    ],
)
def test_a_wrong_tool_table_is_refused_in_one_line_naming_the_file(lab, monkeypatch, table, problem, command):
    monkeypatch.delenv("LAB_PLUGINS", raising=False)
    (lab / "pyproject.toml").write_text(f'[project]\nname = "mine"\n\n[tool.lab_assets]\n{table}\n')
    done = lab_cli(*command, cwd=lab)
    assert done.returncode == 2, done.stdout + done.stderr
    first, line = done.stderr.splitlines()
    assert first == "lab: invalid project configuration"
    assert line.startswith(f"{lab / 'pyproject.toml'}: {problem}"), line
    assert not Path(asset_path("embedding", suffix="")).exists()  # nothing ran


def _pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def mylab(tmp_path_factory):
    """The lab's package, outside the repository, installed editable by pip into a folder of its
    own on PYTHONPATH (its entry point and version read from there): never into the shared
    environment, which `lab` processes of the other xdist worker read while this module runs."""
    root = tmp_path_factory.mktemp("mylab-src")
    (root / "pyproject.toml").write_text(PYPROJECT)
    pkg = root / "mylab"
    pkg.mkdir()
    for name, text in {
        "__init__": "",
        "entries": ENTRIES,
        "ring": RING,
        "scaled": SCALED,
        "reducers": REDUCERS,
    }.items():
        (pkg / f"{name}.py").write_text(text)
    target = tmp_path_factory.mktemp("mylab-installed")
    done = _pip("install", "--no-deps", "--no-build-isolation", "--no-index", "--target", str(target), "-e", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    # The editable install's .pth is read only in site folders: its source folder goes on the path
    # beside the installed metadata, for `lab` processes and for this one.
    folders = [str(target), str(root)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join([*folders, *filter(None, [os.environ.get("PYTHONPATH")])]))
        for folder in reversed(folders):
            mp.syspath_prepend(folder)
        yield pkg


@pytest.fixture
def project(lab, mylab, monkeypatch):
    """A project with the installed package and `labextra` (its folder, LAB_PLUGINS only)."""
    (lab / "labextra.py").write_text(SPREAD)
    (lab / "sweeps" / "mine.yaml").write_text(SWEEP)
    monkeypatch.setenv("LAB_PLUGINS", "labextra")
    return lab


def _plan(lab) -> dict[str, str]:
    done = lab_cli("sweep", "plan", "--json", "sweeps/mine.yaml", cwd=lab)
    assert done.returncode == 0, done.stderr[-3000:]
    return {c["partition"]: c["status"] for c in json.loads(done.stdout)["cells"]}


def test_a_sweep_of_plugins_and_built_ins_runs_and_an_edit_stales_exactly_its_cells(project, mylab):
    done = lab_cli("sweep", "run", "--json", "--workers", "1", "sweeps/mine.yaml", cwd=project)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["materialized"]["cells"] == 4 and not summary["failed"], summary

    by_method: dict[str, list[tuple[str, str]]] = {}
    for path in Path(asset_path("embedding", suffix="")).glob("*/*.parquet"):
        data_key, method_key = path.parent.name, path.stem
        by_method.setdefault(method_key.split("-")[0], []).append((data_key, f"{data_key}|{method_key}"))
    assert sorted(by_method) == ["scaled", "shuffled"] and all(len(cells) == 2 for cells in by_method.values())
    # The plugin dataset is what its function makes from the cell's generator.
    ring_key = next(d for d, _ in by_method["scaled"] if d.startswith("ring"))
    raw = parquet_frame(asset_path("raw_dataset", ring_key))
    generator = rng(0, GENERATE_STREAM)  # the plugin's function, computed here (importing it would register it)
    t = generator.uniform(0, 2 * np.pi, 60)
    ring = np.column_stack([np.cos(t), np.sin(t), 0.1 * t]) + 0.1 * generator.standard_normal((60, 3))
    np.testing.assert_allclose(features(raw), ring)

    for method, direct in (
        ("scaled", lambda X: X[:, :2] * 3.0),
        ("shuffled", lambda X: X[:, np.random.default_rng(0).permutation(X.shape[1])[:2]]),
    ):
        for data_key, cell in by_method[method]:
            X = features(parquet_frame(asset_path("dataset", data_key)))
            Z = direct(X)
            emb = parquet_frame(asset_path("embedding", cell))
            np.testing.assert_allclose(emb[["z0", "z1"]].to_numpy(), Z)
            row = parquet_frame(asset_path("metrics", cell)).iloc[0]
            assert row["trustworthiness@k=5"] == pytest.approx(trustworthiness(X, Z, n_neighbors=5), abs=1e-12)
            assert row["spread@power=1"] == pytest.approx(np.mean(np.linalg.norm(Z - Z.mean(0), axis=1)), rel=1e-12)
    # Lineage names the class and the lab's distribution version.
    prov = parquet_provenance(asset_path("embedding", by_method["shuffled"][0][1]))
    assert prov["config"]["estimator"] == "mylab.reducers:Shuffled" and prov["config"]["method"] == "shuffled"
    assert prov["packages"]["mylab"] == "0.1.0"
    # Each cell's materialization links to its method's and dataset's own files (defs/code_links.py).
    own = {"scaled": mylab / "scaled.py", "shuffled": mylab / "reducers.py", "ring": mylab / "ring.py"}
    own["swissroll"] = Path(__file__).resolve().parents[1] / "lab_assets" / "dr" / "datasets" / "manifolds.py"
    records = get_instance().fetch_materializations(dg.AssetKey("embedding"), limit=10).records
    assert len(records) == 4
    for r in records:
        meta = r.asset_materialization.metadata
        dataset, method = (part.split()[0] for part in meta["label"].value.split(" | "))
        assert Path(meta["method_source"].path) == own[method].resolve() and own[method].is_file()
        assert Path(meta["dataset_source"].path) == own[dataset].resolve() and own[dataset].is_file()

    # A real edit of the plugin's method module: its cells only.
    source = mylab / "scaled.py"
    source.write_text(source.read_text().replace("X[:, :2] * self.factor", "X[:, :2] * self.factor + 0.0"))
    after = _plan(project)
    stale = {c for c, s in after.items() if s == "stale"}
    assert stale == {cell for _, cell in by_method["scaled"]}, after
    assert {s for c, s in after.items() if c not in stale} == {"fresh"}
    # And of the class named by import path: its cells too.
    reducers = mylab / "reducers.py"
    reducers.write_text(reducers.read_text() + "\nEDITED = True\n")
    stale = {c for c, s in _plan(project).items() if s == "stale"}
    assert stale == {cell for m in ("scaled", "shuffled") for _, cell in by_method[m]}
    # The first run saved its no-op answer (runner/noop_answer.py): the edits are seen through it.
    again = lab_cli("sweep", "run", "--json", "--workers", "1", "sweeps/mine.yaml", cwd=project)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert json.loads(again.stdout)["materialized"]["cells"] == 4


def test_lab_list_shows_plugins_with_their_origin_and_parameters(project):
    done = lab_cli("list", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    found = {kind: {e["name"]: e for e in entries} for kind, entries in json.loads(done.stdout).items()}
    assert found["datasets"]["ring"]["origin"] == "mylab.ring (mylab 0.1.0)"
    assert found["methods"]["scaled"]["parameters"] == [
        {"name": "factor", "type": "float (gt=0)", "required": False, "default": 2.0}
    ]
    assert found["methods"]["pca"]["origin"] == "built-in"
    assert found["metrics"]["spread"] == {
        "name": "spread",
        "origin": "labextra",
        "better": None,
        "valid_range": "[0, inf)",
        "column": "spread@power=<power>",  # a plugin metric's column, named as the sweep names it
        "doc": "Mean distance of the embedding's points from their centroid, to a power.",
        "parameters": [{"name": "power", "type": "int", "required": False, "default": 1}],
    }
    text = lab_cli("list", "metrics", cwd=project).stdout
    assert "spread  [labextra]" in text and "trustworthiness  [built-in]" in text and "datasets:" not in text


BAD_MODULES = {
    "bad_import": (
        "import numpy\nraise RuntimeError('no GPU here')\n",
        "plugin bad_import (LAB_PLUGINS) does not import: RuntimeError: no GPU here",
    ),
    "bad_builtin": (
        "from lab_assets.dr.methods import METHODS\n\n@METHODS('umap')\ndef umap(seed, *, k: int = 1):\n"
        "    return None\n",
        "plugin bad_builtin (LAB_PLUGINS): method 'umap' of bad_builtin clashes with the built-in method 'umap'",
    ),
    "bad_twice": (
        "from lab_assets.dr.methods import METHODS\n\n@METHODS('scaled')\ndef s(seed, *, k: int = 1):\n"
        "    return None\n",
        "plugin bad_twice (LAB_PLUGINS): method 'scaled' of bad_twice clashes with the method 'scaled' of "
        "mylab.scaled (mylab 0.1.0)",
    ),
    "bad_signature": (
        "from lab_assets.dr.metrics import METRICS\n\n@METRICS('m')\ndef m(nb, k: int = 5):\n    return 0.0\n",
        "plugin bad_signature (LAB_PLUGINS): metric 'm' (bad_signature.m): signature (nb, k: int = 5) is not "
        "(nb, *, <parameters>): one positional argument, then keyword-only parameters",
    ),
}


def test_each_bad_plugin_is_refused_in_its_own_line_and_nothing_runs(project, monkeypatch):
    for module, (text, _) in BAD_MODULES.items():
        (project / f"{module}.py").write_text(text)
    monkeypatch.setenv("LAB_PLUGINS", ",".join(["labextra", *BAD_MODULES]))
    done = lab_cli("sweep", "run", "sweeps/mine.yaml", cwd=project)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == ["lab: invalid plugin", *(line for _, line in BAD_MODULES.values())]
    assert not Path(asset_path("embedding", suffix="")).exists()  # nothing ran
    listed = lab_cli("list", cwd=project)  # every command that reads a registry
    assert listed.returncode == 2 and listed.stderr.splitlines()[1:] == [line for _, line in BAD_MODULES.values()]


BAD_ESTIMATORS = {
    "missing": (
        "mylab.reducers:Missing",
        "",
        "methods.missing.estimator: 'mylab.reducers:Missing' does not resolve: "
        "module 'mylab.reducers' has no 'Missing'",
    ),
    "nowhere": (
        "mylab.nowhere:Shuffled",
        "",
        "methods.nowhere.estimator: 'mylab.nowhere:Shuffled' does not resolve: "
        "module 'mylab.nowhere' does not import: ModuleNotFoundError: No module named 'mylab.nowhere'",
    ),
    "nofit": (
        "mylab.reducers:NoFit",
        "",
        "methods.nofit.estimator: 'mylab.reducers:NoFit' is not a "
        "scikit-learn-compatible class: it has no fit_transform",
    ),
    "typo": (
        "mylab.reducers:Shuffled",
        ", n_componets: 2",
        "methods.typo.n_componets: unknown field; allowed: n_components",
    ),
    "pca": (
        "mylab.reducers:Shuffled",
        "",
        "methods.pca.estimator: 'pca' is a registered method's name: name the class's entry otherwise",
    ),
}


def test_each_bad_estimator_path_is_refused_naming_its_field(project):
    methods = "".join(
        f'  {name}: {{estimator: "{path}"{params}}}\n' for name, (path, params, _) in BAD_ESTIMATORS.items()
    )
    (project / "sweeps" / "bad.yaml").write_text("name: bad\ndata:\n  ring: {}\nmethods:\n" + methods)
    done = lab_cli("sweep", "plan", "sweeps/bad.yaml", cwd=project)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "lab: invalid sweep",
        *(f"sweeps/bad.yaml: {line}" for *_, line in BAD_ESTIMATORS.values()),
    ]


def test_a_scikit_learn_class_by_path_computes_what_the_built_in_entry_does():
    from lab_assets.dr.methods import METHODS

    entry = estimator_paths.entry("sklearn.decomposition:PCA")
    assert entry.packages == ("scikit-learn",) and entry.origin.endswith(
        f"(scikit-learn {package_version('scikit-learn')})"
    )
    assert "random_state" not in entry.params_model.model_fields and entry(3).random_state == 3
    params = entry.validate({"n_components": 2, "svd_solver": "full"})
    X = np.random.default_rng(0).normal(size=(50, 6))
    np.testing.assert_array_equal(
        entry(0, **params).fit_transform(X), METHODS["pca"](0, n_components=2).fit_transform(X)
    )


def test_a_class_in_the_project_folder_is_found_by_path(lab):
    (lab / "project_reducers.py").write_text(REDUCERS)  # not on the import path: the project folder is
    entry = estimator_paths.entry("project_reducers:Shuffled")
    assert entry.origin == "project_reducers" and entry.packages == () and entry(4).random_state == 4
    assert str(lab) not in sys.path


def test_an_estimator_entry_takes_the_cell_seed_and_its_init_parameters(mylab):
    entry = estimator_paths.entry("mylab.reducers:Shuffled")
    assert isinstance(entry, Entry) and entry.module == "mylab.reducers" and "mylab" in entry.packages
    assert sorted(entry.params_model.model_fields) == ["n_components"]  # random_state is the cell's seed
    assert entry.validate({}) == {"n_components": 2}
    assert entry(7, n_components=3).random_state == 7
    with pytest.raises(RegistryError, match="not an import path"):
        estimator_paths.resolve("Shuffled")


@pytest.mark.slow  # a one-machine cluster: Postgres, an object store, the code server, the daemon
def test_the_clusters_code_server_and_run_processes_load_the_plugins(project, mylab, monkeypatch):
    import pandas as pd

    from lab_assets_tests.test_cluster import read_metric_table, running_cluster, use_cluster

    # `labextra` importable "in the image": the run processes get the image's PYTHONPATH and LAB_PLUGINS
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(project), os.environ["PYTHONPATH"]]))
    embedded = lab_cli("sweep", "run", "--quiet", "sweeps/mine.yaml", cwd=project)
    assert embedded.returncode == 0, embedded.stdout[-3000:] + embedded.stderr[-3000:]
    reference = read_metric_table(str(project / ".lab" / "assets" / "metric_table.parquet"))
    assert {"spread@power=1", "trustworthiness@k=5"} <= set(reference.columns) and len(reference) == 4
    with running_cluster(project) as state:
        use_cluster(state, project, monkeypatch)
        submitted = lab_cli("sweep", "run", "--quiet", "--submit", state.ui_url, "sweeps/mine.yaml", cwd=project)
        assert submitted.returncode == 0, submitted.stdout[-3000:] + submitted.stderr[-3000:]
        result = read_metric_table("s3://lab-assets/lab/assets/metric_table.parquet")
    pd.testing.assert_frame_equal(result, reference, check_exact=True)
