"""Controls and ground truth in sweeps (issue 41): `random` and `true_latent`, the control-scaled
score against a hand computation, plan-time refusals (one line naming the field, exit 2), the
undeclared `true_latent` cells of a mixed sweep, and a small ground-truth sweep end to end."""

import math

import numpy as np
import pandas as pd
import pytest

from lab_assets.core import storage
from lab_assets.dr import controls
from lab_assets.dr.methods import METHODS
from lab_assets.dr.sweep import SweepError, load_sweep, parse_sweep
from lab_assets_tests.conftest import lab_cli


def test_scaled_scores_against_a_hand_computation():
    cells = pd.DataFrame(
        {
            "data": ["d0", "d0", "d0", "d1", "d1", "d1", "d2", "d2"],
            "method": ["random", "truth", "pca", "random", "truth", "pca", "random", "pca"],
            "up": [0.2, 0.9, 0.55, 0.1, 0.6, 0.6, 0.3, 0.5],  # higher is better
            "down": [0.8, 0.0, 0.2, 0.5, 0.5, 0.1, 0.4, 0.2],  # lower is better; d1's controls tie
        }
    )
    got = controls.scaled_scores(cells, ["up", "down"], "random", "truth")
    expected_up = [0, 1, (0.55 - 0.2) / (0.9 - 0.2), 0, 1, (0.6 - 0.1) / (0.6 - 0.1), math.nan, math.nan]
    expected_down = [0, 1, (0.2 - 0.8) / (0.0 - 0.8), math.nan, math.nan, math.nan, math.nan, math.nan]
    np.testing.assert_allclose(got["up"], expected_up)
    np.testing.assert_allclose(got["down"], expected_down)
    assert list(got["method"]) == list(cells["method"])  # everything else as it was


def test_control_keys_need_both_controls():
    assert controls.control_keys([("pca", "p"), ("random", "r1"), ("random", "r2"), ("true_latent", "t")]) == (
        "r1",
        "t",
    )
    assert controls.control_keys([("pca", "p"), ("random", "r")]) is None


def test_random_is_seeded_gaussian_and_true_latent_embeds_what_it_is_given():
    X = np.zeros((500, 4))
    a, b = METHODS["random"](3, n_components=3), METHODS["random"](4, n_components=3)
    Za = a.fit_transform(X)
    assert Za.shape == (500, 3) and np.array_equal(Za, METHODS["random"](3, n_components=3).fit_transform(X))
    assert not np.array_equal(Za, b.fit_transform(X))
    assert abs(Za.mean()) < 0.1 and abs(Za.std() - 1) < 0.1
    t = METHODS["true_latent"](0, **METHODS["true_latent"].validate({}))
    with pytest.raises(ValueError, match="true_latent: the dataset has no ground-truth latent coordinates"):
        t.fit_transform(X)
    t.latent = np.arange(1500.0).reshape(500, 3)
    assert np.array_equal(t.fit_transform(X), t.latent)
    t2 = METHODS["true_latent"](0, n_components=2)
    t2.latent = t.latent
    assert np.array_equal(t2.fit_transform(X), t.latent[:, :2])


SWEEP = """
name: gt
data:
{data}
seeds: [0]
methods:
  pca: {{}}
{methods}
metrics:
{metrics}
"""


def sweep_text(data="  swissroll: {n_samples: 100}", methods="  true_latent: {}", metrics="  rnx: {k: 5}"):
    return SWEEP.format(data=data, methods=methods, metrics=metrics)


@pytest.mark.parametrize(
    "data, methods, metrics, line",
    [
        (
            "  torus: {n_samples: 100}",
            "  true_latent: {}",
            "  rnx: {k: 5}",
            "methods.true_latent: needs ground-truth latent coordinates, and no dataset of the sweep (torus) has them",
        ),
        (
            "  gaussian_blobs: {n_samples: 100}",
            "  random: {}",
            "  geodesic_distance_correlation: {}",
            "metrics.geodesic_distance_correlation: needs ground-truth latent coordinates",
        ),
        (
            "  swissroll: {n_samples: 100}",
            "  random: {}",
            "  rnx_auc: {k_max: 99}",
            "metrics.rnx_auc.k_max: k_max=99 must be below n - 1: the data has n=100 points",
        ),
        (
            "  file: {path: pts.csv}",
            "  random: {}",
            "  neighborhood_hit: {k: 5}",
            "metrics.neighborhood_hit: needs class labels, and no dataset of the sweep has labels",
        ),
    ],
)
def test_plan_time_refusals(tmp_path, monkeypatch, data, methods, metrics, line):
    monkeypatch.chdir(tmp_path)
    pd.DataFrame(np.random.default_rng(0).normal(size=(50, 3)), columns=list("abc")).to_csv("pts.csv", index=False)
    with pytest.raises(SweepError) as e:
        parse_sweep(sweep_text(data, methods, metrics), "gt.yaml")
    (only,) = str(e.value).splitlines()
    assert only.startswith(f"gt.yaml: {line}")


def test_bad_input_is_one_line_and_exit_2(lab):
    (lab / "sweeps" / "gt.yaml").write_text(sweep_text("  torus: {n_samples: 100}"))
    out = lab_cli("sweep", "plan", "sweeps/gt.yaml", cwd=lab)
    assert out.returncode == 2, out.stderr
    header, line = out.stderr.strip().splitlines()  # what every invalid sweep gets, then the one problem
    assert header == "lab: invalid sweep"
    assert "methods.true_latent: needs ground-truth latent coordinates" in line
    assert not (lab / ".lab" / "assets").exists()  # nothing run


def test_a_mixed_sweep_declares_no_true_latent_cell_without_latents():
    sweep = parse_sweep(sweep_text("  swissroll: {n_samples: 100}\n  torus: {n_samples: 100}"), "gt.yaml")
    by_method = {m.method: m.key for m in sweep.methods}
    torus = next(d.key for d in sweep.data if d.dataset == "torus")
    swissroll = next(d.key for d in sweep.data if d.dataset == "swissroll")
    assert sweep.undeclared == [(torus, by_method["true_latent"])]
    assert (torus, by_method["true_latent"]) not in sweep.cells and len(sweep.cells) == 3
    assert (swissroll, by_method["true_latent"]) in sweep.cells
    assert not sweep.contains(torus, by_method["true_latent"]) and sweep.contains(torus, by_method["pca"])
    from lab_assets.dr import summary

    empty = pd.DataFrame(columns=["data", "method", "seed", "rnx@k=5"])
    rows = summary.summarize(sweep, empty)
    assert (
        len(rows) == 3 and not ((rows["dataset_label"] == "torus") & (rows["method"] == by_method["true_latent"])).any()
    )


GEOMETRY = """
name: gt
data:
  swissroll: {n_samples: 80}
  torus: {n_samples: 80}
seeds: [0]
methods:
  pca: {}
  random: {}
  true_latent: {}
metrics:
  geodesic_distance_correlation: {}
  rnx: {k: 10}
  lid: {k: 10}
"""


@pytest.mark.slow  # ~25 s on a quiet machine: a sweep run, two `lab` processes
def test_ground_truth_sweep_end_to_end(lab):
    """true_latent scores the truth (geodesic correlation 1 on the swiss roll: its latents are
    isometric), the scaled scores are 0 for random and 1 for true_latent, torus has no
    true_latent cell and its ground-truth column is null with the reason; then adding a measure
    recomputes no embedding."""
    from lab_assets.runner.sweeps import materialize_sweep, plan

    path = lab / "sweeps" / "gt.yaml"
    path.write_text(GEOMETRY)
    out = lab_cli("sweep", "plan", "sweeps/gt.yaml", cwd=lab)
    assert out.returncode == 0, out.stderr
    assert "2 data keys x 3 method keys less 1 not declared = 5 cells" in out.stdout
    assert "not declared: true_latent on torus, which have no ground-truth latent coordinates" in out.stdout
    sweep = load_sweep(path)
    result = materialize_sweep(sweep, workers=1)
    assert result.ok, [o.to_json() for o in result.failed]
    table = storage.read_parquet(storage.asset_path("metric_table"))
    geo = "geodesic_distance_correlation@n_pairs=20000"
    truth = table[table["method_name"] == "true_latent"]
    assert len(truth) == 1 and (truth["dataset"] == "swissroll").all()
    assert truth[geo].to_numpy() == pytest.approx(1.0, abs=1e-12)
    assert table[table["dataset"] == "torus"][geo].isna().all()
    summary = storage.read_parquet(f"{lab}/.lab/reports/gt/summary.parquet")
    swiss = summary[summary["dataset_label"] == "swissroll"]
    scaled = swiss.set_index(["method_label", "metric"])["scaled"]
    assert scaled[("random", "rnx@k=10")] == 0 and scaled[("true_latent", "rnx@k=10")] == 1
    assert 0 < scaled[("pca", "rnx@k=10")] < 1
    assert summary[summary["metric"] == "lid@k=10,space=embedding"]["scaled"].isna().all()  # descriptive
    markdown = (lab / ".lab" / "reports" / "gt" / "summary.md").read_text()
    assert controls.LEGEND in markdown and " [1.00]" in markdown

    # A measure added: metrics only, every embedding stays fresh.
    path.write_text(GEOMETRY + "  latent_knn_preservation: {k: 10}\n")
    pending = {c["partition"]: c["assets"] for c in plan(load_sweep(path)).to_json()["cells"] if c["status"] != "fresh"}
    assert len(pending) == 5 and all(set(assets) == {"metrics"} for assets in pending.values()), pending

    # A sweep without the controls (its one cell is already computed): the report says how to add them.
    (lab / "sweeps" / "nc.yaml").write_text(
        "name: nc\ndata:\n  swissroll: {n_samples: 80}\nseeds: [0]\nmethods:\n  pca: {}\nmetrics:\n  rnx: {k: 10}\n"
    )
    out = lab_cli("report", "sweeps/nc.yaml", cwd=lab)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "add `random: {}` and `true_latent: {}` under `methods:` in sweeps/nc.yaml" in text


def test_summary_scaled_mean_and_sd_over_seeds():
    from lab_assets.dr import summary, tables

    sweep = parse_sweep(
        "name: s\ndata:\n  swissroll: {n_samples: 100}\nseeds: [0, 1]\nmethods:\n  pca: {}\n  random: {}\n"
        "  true_latent: {}\nmetrics:\n  rnx: {k: 5}\n  mrre: {k: 5}\n  lid: {k: 5}\n",
        "s.yaml",
    )
    m = {c.method: c.key for c in sweep.methods}
    d0, d1 = (d.key for d in sweep.data)
    values = {  # (rnx higher, mrre lower, lid descriptive) per (data key, method)
        (d0, "pca"): (0.5, 0.3, 2.0),
        (d0, "random"): (0.0, 0.5, 1.0),
        (d0, "true_latent"): (1.0, 0.1, 1.5),
        (d1, "pca"): (0.8, 0.2, 2.5),
        (d1, "random"): (0.2, 0.6, 1.0),
        (d1, "true_latent"): (0.6, 0.2, 1.5),
    }
    cells = pd.DataFrame(
        [
            {
                "data": d,
                "method": m[name],
                "seed": sweep.data[[x.key for x in sweep.data].index(d)].seed,
                "rnx@k=5": v[0],
                "mrre@direction=data,k=5": v[1],
                "lid@k=5,space=embedding": v[2],
            }
            for (d, name), v in values.items()
        ]
    )
    table = summary.summarize(sweep, cells).set_index(["method", "metric"])
    rnx = [(0.5 - 0.0) / (1.0 - 0.0), (0.8 - 0.2) / (0.6 - 0.2)]  # 0.5 and 1.5: past the truth is past 1
    mrre = [(0.3 - 0.5) / (0.1 - 0.5), (0.2 - 0.6) / (0.2 - 0.6)]
    assert table.loc[(m["pca"], "rnx@k=5"), "scaled"] == pytest.approx(np.mean(rnx))
    assert table.loc[(m["pca"], "rnx@k=5"), "scaled_sd"] == pytest.approx(np.std(rnx, ddof=1))
    assert table.loc[(m["pca"], "mrre@direction=data,k=5"), "scaled"] == pytest.approx(np.mean(mrre))
    assert (
        table.loc[(m["random"], "rnx@k=5"), "scaled"] == 0 and table.loc[(m["true_latent"], "rnx@k=5"), "scaled"] == 1
    )
    assert table.xs("lid@k=5,space=embedding", level="metric")["scaled"].isna().all()
    text = tables.summary_text(summary.summarize(sweep, cells), pd.DataFrame(columns=summary.COMPARISON_COLUMNS))
    assert controls.LEGEND in " ".join(text.split()) and "[1.00]" in text and "[0.00]" in text

    without = parse_sweep(
        "name: s\ndata:\n  swissroll: {n_samples: 100}\nseeds: [0, 1]\nmethods:\n  pca: {}\n  random: {}\n"
        "metrics:\n  rnx: {k: 5}\n",
        "s.yaml",
    )
    assert summary.summarize(without, cells[cells["method"].isin([m["pca"], m["random"]])])["scaled"].isna().all()
