"""Sweep files: grid expansion, partition keys, metric columns and the error messages."""

import hashlib
import json
import re
from pathlib import Path

import pytest

from lab_assets.dr import sweep as sweep_module
from lab_assets.dr.datasets import DATASETS
from lab_assets.dr.methods import METHODS
from lab_assets.dr.metrics import METRICS
from lab_assets.dr.sweep import Sweep, SweepError, load_sweep, parse_sweep

SWEEPS = Path(__file__).resolve().parents[1] / "sweeps"
# `<name>[-<changed parameters>]-<digest>[~s<seed>]` (core/keys.py)
DATA_KEY = re.compile(r"^(?P<name>[a-z_]+)(-(?P<stem>[A-Za-z0-9_.=+-]+))?-(?P<hex>[0-9a-f]{6})~s(?P<seed>\d+)$")
METHOD_KEY = re.compile(r"^(?P<name>[a-z_]+)(-(?P<stem>[A-Za-z0-9_.=+-]+))?-(?P<hex>[0-9a-f]{6})$")

GRID = """
name: grid
data:
  swissroll: {n_samples: [100, 200], noise: [0.0, 0.1, 0.2]}
  torus: {n_samples: 100}
seeds: [0, 1]
methods:
  umap: {n_neighbors: [5, 15], min_dist: [0.0, 0.5]}
  pca: {}
metrics:
  trustworthiness: {k: [15, 40]}  # k < n/2 for n = 100 (checked at plan time)
  lid: {k: 10, space: [data, embedding]}
"""


def parse(text, source="sweeps/test.yaml"):
    return parse_sweep(text, source)


def minimal(data="torus: {}", methods="pca: {}", extra=""):
    return f"name: t\ndata: {{{data}}}\nmethods: {{{methods}}}\n{extra}"


def expected_digest(name, params):
    """The documented key recipe, computed independently: sha256 of sorted compact JSON."""
    text = json.dumps([name, params], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:6]


def test_grid_expansion():
    sweep = parse(GRID)
    # Lists expand as a product (Hydra --multirun): swissroll 2 x 3, torus 1; then x 2 seeds.
    assert len(sweep.data) == (2 * 3 + 1) * 2
    assert len({d.key for d in sweep.data}) == 14
    swiss = {(d.params["n_samples"], d.params["noise"], d.seed) for d in sweep.data if d.dataset == "swissroll"}
    assert swiss == {(n, s, seed) for n in (100, 200) for s in (0.0, 0.1, 0.2) for seed in (0, 1)}
    assert len(sweep.methods) == 2 * 2 + 1
    umap = {(m.params["n_neighbors"], m.params["min_dist"]) for m in sweep.methods if m.method == "umap"}
    assert umap == {(5, 0.0), (5, 0.5), (15, 0.0), (15, 0.5)}
    assert len(sweep.cells) == len(set(sweep.cells)) == 14 * 5
    assert set(sweep.cells) == {(d.key, m.key) for d in sweep.data for m in sweep.methods}
    assert [m.column for m in sweep.metrics] == [
        "trustworthiness@k=15",
        "trustworthiness@k=40",
        "lid@k=10,space=data",
        "lid@k=10,space=embedding",
    ]


def test_contains_is_cell_membership():
    """`Sweep.contains` (what a cell's run asks of every registered sweep) answers exactly as
    looking the pair up in `cells`, including pairs whose keys each occur in some cell."""
    sweep, other = parse(GRID), parse(GRID.replace("noise: [0.0, 0.1, 0.2]", "noise: [0.3]"))
    candidates = {(d, m) for d, _ in sweep.cells + other.cells for _, m in sweep.cells + other.cells}
    candidates |= {(m, d) for d, m in sweep.cells[:5]} | {("nope", sweep.cells[0][1])}
    assert {c for c in candidates if sweep.contains(*c)} == set(sweep.cells)


def test_each_key_is_computed_once_per_config_not_per_cell(monkeypatch):
    """A key is a digest; a 10,000-cell sweep is rebuilt from its record in every cell's run and
    every plan, so its keys must cost one digest per config, however often cells ask."""
    sweep = parse(GRID)
    calls = []
    real = sweep_module._key
    monkeypatch.setattr(sweep_module, "_key", lambda *a: calls.append(a) or real(*a))
    again = Sweep.from_json(json.loads(json.dumps(sweep.to_json())))
    for d, m in again.cells:
        assert again.contains(d, m)
    assert [d.key for d in again.data] == [d.key for d in sweep.data]
    # data: one config key per data config (its key adds the seed); methods: one key each
    assert len(calls) == len(again.data) + len(again.methods)


def test_key_format_and_recipe():
    sweep = parse(GRID)
    for d in sweep.data:
        m = DATA_KEY.match(d.key)
        assert m, d.key
        assert m["name"] == d.dataset and int(m["seed"]) == d.seed
        assert m["hex"] == expected_digest(d.dataset, d.params)
    for meth in sweep.methods:
        m = METHOD_KEY.match(meth.key)
        assert m, meth.key
        assert m["name"] == meth.method and m["hex"] == expected_digest(meth.method, meth.params)
    # The stem is what a person reads in the UI: the parameters that differ from the defaults.
    assert {m.key.rsplit("-", 1)[0] for m in sweep.methods} == {
        "pca",
        "umap-min_dist=0.0-n_neighbors=5",
        "umap-min_dist=0.5-n_neighbors=5",
        "umap-min_dist=0.0",
        "umap-min_dist=0.5",
    }
    # Seeds share the config's digest and differ only in the suffix.
    torus = sorted(d.key for d in sweep.data if d.dataset == "torus")
    assert [k.split("~")[0] for k in torus] == [torus[0].split("~")[0]] * 2
    assert [k.split("~")[1] for k in torus] == ["s0", "s1"]


def test_keys_independent_of_order():
    reordered = """
name: grid
seeds: [1, 0]
metrics:
  lid: {space: [embedding, data], k: 10}
  trustworthiness: {k: [40, 15]}
methods:
  pca: {}
  umap: {min_dist: [0.5, 0.0], n_neighbors: [15, 5]}
data:
  torus: {n_samples: 100}
  swissroll: {noise: [0.2, 0.1, 0.0], n_samples: [200, 100]}
"""
    a, b = parse(GRID), parse(reordered)
    assert {d.key for d in a.data} == {d.key for d in b.data}
    assert {m.key for m in a.methods} == {m.key for m in b.methods}
    assert set(a.cells) == set(b.cells)
    assert {m.column for m in a.metrics} == {m.column for m in b.metrics}
    # And stable from one parse to the next.
    assert [d.key for d in parse(GRID).data] == [d.key for d in a.data]


def test_key_changes_with_parameters_and_name():
    def data_key(data):
        return parse(minimal(data=data)).data[0].key

    def method_key(methods):
        return parse(minimal(methods=methods)).methods[0].key

    assert data_key("swissroll: {n_samples: 100}") != data_key("swissroll: {n_samples: 101}")
    assert data_key("swissroll: {noise: 0.1}") != data_key("swissroll: {noise: 0.2}")
    # swissroll and s_curve have the same parameters; the name is part of the digest too.
    assert data_key("swissroll: {}").split("-")[1] != data_key("s_curve: {}").split("-")[1]
    assert method_key("tsne: {perplexity: 30}") != method_key("tsne: {perplexity: 31}")
    assert method_key("pca: {whiten: true}") != method_key("pca: {}")


def test_defaults_filled_in():
    explicit = parse(
        minimal(
            data="swissroll: {n_samples: 2000, noise: 0.0}",
            methods="tsne: {n_components: 2, perplexity: 30.0, learning_rate: auto, max_iter: 1000, init: pca}",
        )
    )
    for text in [
        minimal(data="swissroll: {}", methods="tsne: {}"),
        minimal(data="swissroll: null", methods="tsne: null"),
        minimal(data="swissroll: {noise: 0}", methods="tsne: {perplexity: 30}"),
    ]:
        sweep = parse(text)
        assert sweep.data[0].key == explicit.data[0].key
        assert sweep.methods[0].key == explicit.methods[0].key
    assert explicit.data[0].params == {"n_samples": 2000, "noise": 0.0}
    assert [d.seed for d in explicit.data] == [0]  # the default seeds
    lid = parse(minimal(extra="metrics: {lid: {k: 10}}")).metrics[0]
    assert lid.column == "lid@k=10,space=embedding"


def test_metric_columns():
    sweep = parse(minimal(extra="metrics: {trustworthiness: {k: 15}, lid: {k: 10, space: data}}"))
    assert [m.column for m in sweep.metrics] == ["trustworthiness@k=15", "lid@k=10,space=data"]


def test_duplicate_method_configs_collapse():
    sweep = parse(minimal(methods="pca: {n_components: [2, 2]}"))
    assert len(sweep.methods) == 1


def test_duplicate_data_configs_collapse():
    # `noise: [0.0, 0]` validates to the same parameters twice: one data key, not two copies
    # (which would repeat every cell of that dataset).
    sweep = parse(minimal(data="torus: {noise: [0.0, 0]}"))
    assert len(sweep.data) == len({d.key for d in sweep.data}) == 1
    assert len(sweep.cells) == len(set(sweep.cells))


def test_json_round_trip():
    sweep = parse(GRID)
    again = Sweep.from_json(json.loads(json.dumps(sweep.to_json())))
    assert again == sweep
    assert again.cells == sweep.cells


def test_registered_sweep_is_parsed_once_and_an_edit_is_read(lab, monkeypatch):
    from lab_assets.dr import keystore

    keystore._parsed.cache_clear()  # another test may have registered the same record
    built = []
    from_json = Sweep.from_json.__func__
    monkeypatch.setattr(
        Sweep, "from_json", classmethod(lambda cls, obj: built.append(obj["name"]) or from_json(cls, obj))
    )
    first = parse(GRID)
    keystore.save_sweep(first)
    assert keystore.sweep(first.name) == first and keystore.sweeps_containing(*first.cells[0]) == [first]
    assert built == [first.name]  # the second look was answered from the parsed record
    edited = parse(GRID.replace("seeds: [0, 1]", "seeds: [0, 1, 2]"))
    assert edited.cells != first.cells
    keystore.save_sweep(edited)
    assert keystore.sweep(first.name) == edited
    assert keystore.sweeps_containing(*edited.cells[-1]) == [edited] and built == [first.name] * 2


SRC = "sweeps/broken.yaml"
ERRORS = {
    "unknown dataset": (
        minimal(data="swirl: {}"),
        ["data.swirl", "unknown dataset 'swirl'", "allowed: " + ", ".join(DATASETS.names())],
    ),
    "unknown method": (
        minimal(methods="tsnee: {}"),
        ["methods.tsnee", "unknown method 'tsnee'", "allowed: " + ", ".join(METHODS.names())],
    ),
    "unknown metric": (
        minimal(extra="metrics: {trust: {k: 5}}"),
        ["metrics.trust", "unknown metric 'trust'", "allowed: " + ", ".join(METRICS.names())],
    ),
    "unknown parameter": (
        minimal(data="torus: {n_sample: 100}"),
        ["data.torus.n_sample", "unknown field", "allowed: major_radius, minor_radius, n_samples, noise"],
    ),
    "unknown method parameter": (
        minimal(methods="umap: {neighbors: 5}"),
        ["methods.umap.neighbors", "allowed: metric, min_dist, n_components, n_neighbors"],
    ),
    "wrong type": (
        minimal(data="torus: {n_samples: many}"),
        ["data.torus.n_samples", "valid integer", "'many'"],
    ),
    "value out of range": (
        minimal(data="torus: {n_samples: 5}"),
        ["data.torus.n_samples", "greater than or equal to 10", "got 5"],
    ),
    "not an allowed value": (
        minimal(methods="tsne: {init: spectral}"),
        ["methods.tsne.init", "'pca' or 'random'", "'spectral'"],
    ),
    "bad value inside a grid": (
        minimal(methods="isomap: {n_neighbors: [5, 1]}"),
        ["methods.isomap.n_neighbors", "greater than or equal to 2", "got 1"],
    ),
    "malformed yaml": ("name: t\ndata: {torus: {}\nmethods: [pca\n", ["not valid YAML", "line"]),
    "top level is a list": ("- torus\n- pca\n", ["expected a mapping with name, data, methods", "got list"]),
    "empty file": ("", ["expected a mapping", "got NoneType"]),
    "missing name": ("data: {torus: {}}\nmethods: {pca: {}}\n", ["name: required field is missing"]),
    "missing methods": ("name: t\ndata: {torus: {}}\n", ["methods: required field is missing"]),
    "bad name": (minimal().replace("name: t", "name: 'my sweep'"), ["name:", "pattern", "'my sweep'"]),
    "unknown top-level field": (
        minimal(extra="metric: {lid: {k: 5}}"),
        ["metric: unknown field", "allowed: data, description, methods, metrics, name, schedule, seeds"],
    ),
    "duplicate seeds": (minimal(extra="seeds: [0, 1, 0]"), ["seeds:", "seeds must be unique", "[0, 1, 0]"]),
    "negative seed": (minimal(extra="seeds: [-1]"), ["seeds.0", "greater than or equal to 0"]),
    "bad cron": (minimal(extra="schedule: 'every day'"), ["schedule:", "not a valid cron string", "'0 3 * * *'"]),
    "empty data": ("name: t\ndata: {}\nmethods: {pca: {}}\n", ["data:", "at least 1 item"]),
    "empty methods": ("name: t\ndata: {torus: {}}\nmethods: {}\n", ["methods:", "at least 1 item"]),
    "missing metric parameter": (minimal(extra="metrics: {lid: {}}"), ["metrics.lid.k: required field is missing"]),
}


@pytest.mark.parametrize("case", ERRORS)
def test_errors(case):
    text, fragments = ERRORS[case]
    with pytest.raises(SweepError) as info:
        parse(text, SRC)
    message = str(info.value)
    assert message.startswith(f"{SRC}: ")
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_every_problem_is_reported_at_once():
    text = minimal(data="nope: {}, torus: {n_samples: 5}", methods="pca: {whiten: 1}")
    with pytest.raises(SweepError) as info:
        parse(text, SRC)
    lines = str(info.value).splitlines()
    assert len(lines) == 3
    assert all(line.startswith(f"{SRC}: ") for line in lines)
    assert [line.split(": ")[1] for line in lines] == ["data.nope", "data.torus.n_samples", "methods.pca.whiten"]


def test_load_sweep_files(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(GRID)
    sweep = load_sweep(good)
    assert sweep.source == str(good) and sweep.name == "grid" and len(sweep.cells) == 70
    bad = tmp_path / "bad.yaml"
    bad.write_text(minimal(data="torus: {n_sample: 1}"))
    with pytest.raises(SweepError, match=re.escape(f"{bad}: data.torus.n_sample: unknown field")):
        load_sweep(bad)
    missing = tmp_path / "missing.yaml"
    with pytest.raises(SweepError, match=re.escape(f"{missing}: cannot read sweep file: No such file")):
        load_sweep(missing)


@pytest.mark.parametrize("path", sorted(SWEEPS.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_sweeps_parse(path):
    sweep = load_sweep(path)
    assert sweep.name == path.stem
    assert sweep.cells and sweep.metrics
    assert len(set(sweep.cells)) == len(sweep.cells)


def test_dr_benchmark():
    sweep = load_sweep(SWEEPS / "dr_benchmark.yaml")
    assert {d.dataset for d in sweep.data} == {"swissroll", "s_curve", "torus", "gaussian_blobs"}
    assert sorted({d.seed for d in sweep.data}) == [0, 1, 2]
    assert len(sweep.data) == len({d.key for d in sweep.data}) == 4 * 3
    assert {m.method for m in sweep.methods} == {"pca", "isomap", "tsne", "umap", "phate"}
    assert len(sweep.methods) == 5
    assert len(sweep.cells) == len(set(sweep.cells)) == 60
    assert all(d.params["n_samples"] == 2000 for d in sweep.data)
    assert len(sweep.metrics) == 12 and "trustworthiness@k=15" in {m.column for m in sweep.metrics}
    assert sweep.schedule == "0 3 * * *"
