"""The per-sweep summary over seeds (dr/summary.py), its text/Markdown (dr/tables.py), readable
labels, and what a sweep run shows: the terminal at 100 columns, the report's summary metadata,
each embedding's scatter plot."""

import base64
import json
import math
import textwrap

import dagster as dg
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from lab_assets.core import keys
from lab_assets.core.registry import BETTER
from lab_assets.dr import summary, tables
from lab_assets.dr.metrics import METRICS
from lab_assets.dr.sweep import parse_sweep
from lab_assets_tests.conftest import lab_cli

SWEEP = """
name: grid
data:
  swissroll: {n_samples: 100, noise: [0.05, 0.2]}
  gaussian_blobs: {n_samples: 100}
seeds: [0, 1, 2, 3, 4, 5, 6, 7]
methods:
  pca: {}
  umap: {n_neighbors: [15, 50]}
metrics:
  trustworthiness: {k: [5, 10]}
  lid: {k: [10]}
  reconstruction_error: {}
"""


def synthetic_cells(sweep, rng, shift=None):
    """A metric row per cell: random values, with a per-method shift of trustworthiness."""
    shift = shift or {}
    rows = []
    for d in sweep.data:
        for m in sweep.methods:
            row = {"partition": keys.cell_key(d.key, m.key), "data": d.key, "method": m.key, "seed": d.seed}
            for metric in sweep.metrics:
                row[metric.column] = rng.normal(0.8, 0.05) + shift.get(m.key, 0.0)
            row["reconstruction_error@normalized=True,split=test"] = (
                rng.uniform(0.1, 1) if m.method == "pca" else np.nan
            )
            rows.append(row)
    return pd.DataFrame(rows)


@pytest.fixture
def sweep():
    return parse_sweep(SWEEP, "grid.yaml")


def test_labels_name_only_the_parameters_that_vary(sweep):
    labels = sweep.labels
    assert sorted(labels[d.config_key] for d in sweep.data if d.seed == 0) == [
        "gaussian_blobs",
        "swissroll noise=0.05",
        "swissroll noise=0.2",
    ]
    assert [labels[m.key] for m in sweep.methods] == ["pca", "umap n_neighbors=15", "umap n_neighbors=50"]
    assert labels["trustworthiness@k=5"] == "trustworthiness k=5"
    assert labels["reconstruction_error@normalized=True,split=test"] == "reconstruction_error"
    # Nothing varies: just the names.
    single = parse_sweep("name: s\ndata: {torus: {n_samples: 100}}\nmethods: {umap: {n_neighbors: 15}}\n", "s.yaml")
    assert set(single.labels.values()) == {"torus", "umap"}


def test_every_metric_declares_its_direction():
    expected = {
        "trustworthiness": "higher",
        "continuity": "higher",
        "knn_preservation": "higher",
        "spearman_distance_correlation": "higher",
        "silhouette": "higher",
        "reconstruction_error": "lower",
        "lid": None,
        "participation_ratio": None,
        "persistent_homology": None,
        "rnx": "higher",
        "rnx_auc": "higher",
        "lcmc": "higher",
        "mrre": "lower",
        "neighborhood_hit": "higher",
        "normalized_stress": "lower",
        "scale_normalized_stress": "lower",
        "pearson_distance_correlation": "higher",
        "density_preservation": "higher",
        "lid_error": "lower",
        "participation_ratio_error": "lower",
        "geodesic_distance_correlation": "higher",
        "latent_knn_preservation": "higher",
    }
    assert {name: METRICS[name].better for name in METRICS.names()} == expected
    assert all(METRICS[name].better in BETTER for name in METRICS.names())


def test_means_sds_and_t_intervals_match_pandas_and_scipy(sweep):
    cells = synthetic_cells(sweep, np.random.default_rng(0))
    cells.loc[3, "trustworthiness@k=5"] = np.nan  # a null (not applicable) value is left out of n
    table = summary.summarize(sweep, cells)
    assert len(table) == 3 * 3 * 4  # data configs x methods x metric columns

    direct = cells.assign(data_config=cells["data"].str.replace(r"~s\d+$", "", regex=True))
    for metric in (m.column for m in sweep.metrics):
        g = direct.groupby(["data_config", "method"])[metric]
        for (dc, method), values in g:
            values = values.dropna()
            row = table[(table["data_config"] == dc) & (table["method"] == method) & (table["metric"] == metric)].iloc[
                0
            ]
            assert row["n"] == len(values)
            if len(values) == 0:
                assert math.isnan(row["mean"]) and pd.isna(row["rank"])
                continue
            assert row["mean"] == pytest.approx(values.mean(), rel=1e-12)
            assert row["sd"] == pytest.approx(values.std(ddof=1), rel=1e-12)
            lo, hi = stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
            assert (row["ci_low"], row["ci_high"]) == (pytest.approx(lo, rel=1e-10), pytest.approx(hi, rel=1e-10))
    assert (table.groupby(["data_config", "method", "metric"])["n"].max() <= 8).all()
    assert table["n"].sum() == 3 * 3 * 3 * 8 - 1 + 3 * 8  # reconstruction error: pca only


def test_rank_and_best_follow_each_metrics_direction(sweep):
    cells = synthetic_cells(sweep, np.random.default_rng(1))
    table = summary.summarize(sweep, cells)
    for _, group in table.groupby(["data_config", "metric"]):
        better = METRICS[group["metric_name"].iloc[0]].better
        if better is None:  # descriptive: never ranked
            assert group["rank"].isna().all() and not group["best"].any()
            continue
        ranked = group[group["n"] > 0]
        expected = ranked["mean"].rank(ascending=better == "lower", method="min").astype(int)
        assert list(ranked["rank"]) == list(expected)
        best = ranked["mean"].idxmax() if better == "higher" else ranked["mean"].idxmin()
        assert list(group.index[group["best"]]) == [best]
    # reconstruction_error (lower is better): only pca has values, so it is the best.
    recon = table[table["metric_name"] == "reconstruction_error"]
    assert set(recon[recon["best"]]["method_label"]) == {"pca"}


def test_best_vs_runner_up_is_wilcoxon_over_paired_seeds(sweep):
    keys_ = {m.method + str(m.params.get("n_neighbors", "")): m.key for m in sweep.methods}
    # umap n_neighbors=50 leads by far on every seed; pca and umap 15 are close.
    cells = synthetic_cells(sweep, np.random.default_rng(2), shift={keys_["umap50"]: 0.5})
    cells = cells.drop(index=5)  # one seed of one cell missing: not a pair
    table = summary.summarize(sweep, cells)
    comparisons = summary.compare(sweep, cells, table)
    # A row per data config x metric with a direction (trustworthiness x 2, reconstruction
    # error has a single method with values: nothing to compare).
    assert len(comparisons) == 3 * 2
    for c in comparisons.itertuples():
        assert c.best == keys_["umap50"]
        a = cells[(cells["method"] == c.best)].assign(dc=lambda t: t["data"].map(summary.config_key))
        b = cells[(cells["method"] == c.runner_up)].assign(dc=lambda t: t["data"].map(summary.config_key))
        paired = a[a["dc"] == c.data_config].merge(b[b["dc"] == c.data_config], on="seed")
        x, y = paired[f"{c.metric}_x"].to_numpy(), paired[f"{c.metric}_y"].to_numpy()
        expected = stats.wilcoxon(x, y)
        assert c.n_pairs == len(paired) and c.test == "Wilcoxon signed-rank"
        assert c.statistic == pytest.approx(expected.statistic) and c.p_value == pytest.approx(expected.pvalue)
        assert c.mean_difference == pytest.approx(np.mean(x - y))
        assert c.verdict == summary.LEAD and c.p_value < 0.05
    assert sorted(comparisons["n_pairs"]) == [7, 7, 8, 8, 8, 8]


def test_a_small_difference_is_within_seed_noise_and_few_seeds_cannot_tell():
    rng = np.random.default_rng(3)
    sweep = parse_sweep(SWEEP, "grid.yaml")
    comparisons = summary.compare(sweep, c := synthetic_cells(sweep, rng), summary.summarize(sweep, c))
    # Same distribution for every method: some leads, by chance, but mostly noise.
    assert set(comparisons["verdict"]) <= {summary.NOISE, summary.LEAD}
    assert (comparisons["verdict"] == summary.NOISE).sum() >= 4

    few = parse_sweep(SWEEP.replace("[0, 1, 2, 3, 4, 5, 6, 7]", "[0, 1, 2]"), "grid.yaml")
    cells = synthetic_cells(few, rng, shift={few.methods[2].key: 0.5})
    comparisons = summary.compare(few, cells, summary.summarize(few, cells))
    assert set(comparisons["verdict"]) == {summary.TOO_FEW}
    assert (comparisons["n_pairs"] == 3).all() and comparisons["p_value"].notna().all()
    # Every comparison lacks seeds: the text says so once, with the number a test needs, not once per metric.
    lines = tables.comparison_lines(comparisons)
    assert len(lines) == len(textwrap.wrap(" ".join(lines), 100)) <= 3
    assert "at most 3 paired seeds" in " ".join(lines) and "at least 6 seeds" in " ".join(lines)
    markdown = tables.summary_markdown("few", summary.summarize(few, cells), comparisons)
    assert "at least 6 seeds" in markdown and "| verdict" not in markdown
    mixed = comparisons.copy()
    mixed.loc[0, ["verdict", "n_pairs"]] = [summary.NOISE, 8]  # one comparison can tell: every line is shown
    assert tables.too_few_seeds(mixed) is None and len(tables.comparison_lines(mixed)) > len(comparisons)

    cells = synthetic_cells(few, rng)
    for metric in ("trustworthiness@k=5", "trustworthiness@k=10"):
        cells[metric] = 0.9  # every method equal on every seed
    comparisons = summary.compare(few, cells, summary.summarize(few, cells))
    assert set(comparisons["verdict"]) == {summary.TIE} and comparisons["p_value"].isna().all()


def test_the_text_fits_100_columns_even_with_long_labels():
    long = SWEEP.replace("pca: {}", "pca: {}\n  phate: {n_neighbors: [5, 30], decay: [20, 40]}").replace(
        "trustworthiness: {k: [5, 10]}", "trustworthiness: {k: [5, 10, 30, 45]}\n  continuity: {k: [5, 10, 30, 45]}"
    )
    sweep = parse_sweep(long, "long.yaml")
    cells = synthetic_cells(sweep, np.random.default_rng(4))
    table = summary.summarize(sweep, cells)
    text = tables.summary_text(table, summary.compare(sweep, cells, table), width=100)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 100, max(lines, key=len)
    assert "phate n_neighbors=30 decay=40.0" in text and "umap n_neighbors=50" in text
    assert "trustworthiness (higher is better) (1/2)" in text  # four k columns, split in two blocks
    assert "lid (descriptive, not ranked)" in text and "reconstruction_error (lower is better)" in text
    assert "Wilcoxon signed-rank" in text

    per_cell = cells.assign(
        dataset_label=cells["data"].map(lambda k: sweep.labels[summary.config_key(k)]),
        method_label=cells["method"].map(sweep.labels),
    )
    text = tables.cells_text(per_cell, [m.column for m in sweep.metrics], sweep.labels, width=100)
    assert max(map(len, text.splitlines())) <= 100

    md = tables.summary_markdown("long", table, summary.compare(sweep, cells, table))
    assert "#### trustworthiness (higher is better)" in md and "95% CI k=5" in md and "**" in md


def test_a_sweep_run_shows_the_summary_the_cells_and_a_scatter_per_embedding(lab):
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.runner.sweeps import materialize_sweep
    from lab_assets.runtime.instance import get_instance

    path = lab / "sweeps" / "tiny.yaml"
    path.write_text(
        path.read_text()
        .replace("seeds: [0]", "seeds: [0, 1]")
        .replace("n_neighbors: 12", "n_neighbors: [8, 12]")
        .replace("n_samples: 150", "n_samples: 80")
    )
    sweep = load_sweep(path)
    result = materialize_sweep(sweep, workers=1)
    assert result.ok

    # Each embedding materialization: a readable label and a small inline PNG scatter plot.
    records = get_instance().fetch_materializations(dg.AssetKey("embedding"), limit=100).records
    assert len(records) == len(sweep.cells) == 12
    for r in records:
        meta = r.asset_materialization.metadata
        assert meta["label"].value.startswith(("swissroll seed=", "gaussian_blobs seed="))
        assert meta["label"].value.endswith(("| pca", "| isomap n_neighbors=8", "| isomap n_neighbors=12"))
        md = meta["scatter"].value
        assert md.startswith("![embedding, coloured by label](data:image/png;base64,")
        png = base64.b64decode(md.split("base64,")[1].rstrip(")"))
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) < 8_000

    report = get_instance().fetch_materializations(dg.AssetKey("report"), limit=1).records[0].asset_materialization
    assert "#### trustworthiness (higher is better)" in report.metadata["summary"].value
    assert "isomap n_neighbors=8" in report.metadata["summary"].value
    out = lab / ".lab" / "reports" / "tiny"
    stored = pd.read_parquet(out / "summary.parquet")
    assert len(stored) == 2 * 3 * 3 and set(stored["n"]) == {2}
    assert (out / "summary.md").read_text().startswith("### Summary of `tiny`")
    assert len(pd.read_csv(out / "summary.csv")) == len(stored)
    assert len(pd.read_parquet(out / "metrics.parquet")) == 12  # per cell, as before

    shown = lab_cli("report", "sweeps/tiny.yaml", cwd=lab)
    assert shown.returncode == 0, shown.stderr
    assert max(map(len, shown.stdout.splitlines())) <= 100
    assert "trustworthiness (higher is better)" in shown.stdout and "isomap n_neighbors=12" in shown.stdout
    words = " ".join(shown.stdout.split())  # wrapped lines read as one text
    assert "at most 2 paired seeds" in words and "too few pairs" not in words and "summary.md" in words
    sql = "SELECT method_label, count(*) AS rows FROM tiny_summary WHERE best GROUP BY 1 ORDER BY 1"
    queried = lab_cli("query", sql, "--format", "json", cwd=lab)
    assert queried.returncode == 0, queried.stderr
    assert {r["method_label"] for r in json.loads(queried.stdout)} <= {
        "pca",
        "isomap n_neighbors=8",
        "isomap n_neighbors=12",
    }
    cells = lab_cli("report", "sweeps/tiny.yaml", "--cells", cwd=lab)
    assert cells.returncode == 0, cells.stderr
    assert max(map(len, cells.stdout.splitlines())) <= 100
    assert (
        "seed" in cells.stdout.splitlines()[1]
        and len([ln for ln in cells.stdout.splitlines() if "pca" in ln]) == 2 * 2 * 2
    )


EDGES = """
name: edges
data:
  swissroll: {n_samples: 100}
seeds: [0, 1, 2, 3, 4, 5]
methods:
  pca: {}
  isomap: {}
  random_projection: {}
metrics:
  trustworthiness: {k: [5]}
  reconstruction_error: {}
  lid: {k: [5]}
"""
TW, RE, LID = "trustworthiness@k=5", "reconstruction_error@normalized=True,split=test", "lid@k=5,space=embedding"


def edge_cells(sweep, values):
    """{(method name, metric column): [value per seed]} -> the per-cell table (a short list: the
    later seeds have no value for it)."""
    rows = []
    for d in sweep.data:
        for m in sweep.methods:
            row = {"data": d.key, "method": m.key, "seed": d.seed}
            for col in (TW, RE, LID):
                vs = values.get((m.method, col), [])
                row[col] = vs[d.seed] if d.seed < len(vs) else np.nan
            rows.append(row)
    return pd.DataFrame(rows)


def test_the_summary_and_comparison_at_their_edges():
    """What mutation testing found unpinned (docs/mutation-testing.md): n = 1 and 2, ties, a
    lower-is-better ranking, exactly MIN_PAIRS pairs, two ranked methods, the runner-up among
    three, a tie's statistic, the comparison's columns and its row order (the sweep's metric order)."""
    sweep = parse_sweep(EDGES, "edges.yaml")
    lead = [0.9, 0.91, 0.92, 0.93, 0.94, 0.95]
    cells = edge_cells(
        sweep,
        {
            ("pca", TW): lead,
            ("isomap", TW): [v - 0.1 for v in lead],
            ("random_projection", TW): [v - 0.2 for v in lead],
            ("pca", RE): [0.5, 0.7],
            ("isomap", RE): [0.3],
            ("random_projection", RE): [0.3, 0.3],
            ("pca", LID): [2.0] * 6,
        },
    )
    table = summary.summarize(sweep, cells).set_index(["method", "metric"])
    key = {m.method: m.key for m in sweep.methods}
    pca_re, iso_re = table.loc[(key["pca"], RE)], table.loc[(key["isomap"], RE)]
    assert pca_re["n"] == 2 and pca_re["sd"] == pytest.approx(np.std([0.5, 0.7], ddof=1))
    half = stats.t.ppf(0.975, 1) * pca_re["sd"] / math.sqrt(2)
    # 0.6 ± 1.27 leaves the reconstruction error's [0, inf) below: clipped at 0, and marked.
    assert 0.6 - half < 0 and (pca_re["ci_low"], pca_re["ci_high"]) == (0.0, pytest.approx(0.6 + half))
    assert pca_re["ci_clipped"] and not table.loc[(key["isomap"], RE), "ci_clipped"]
    assert (
        iso_re["n"] == 1 and math.isnan(iso_re["sd"]) and math.isnan(iso_re["ci_low"]) and math.isnan(iso_re["ci_high"])
    )
    # Lower is better; isomap and random_projection tie at 0.3: both rank 1 ("min"), pca 3.
    assert [table.loc[(key[m], RE), "rank"] for m in ("pca", "isomap", "random_projection")] == [3, 1, 1]
    assert table["rank"].dtype == "Int64" and table.loc[(key["pca"], LID), "rank"] is pd.NA  # descriptive
    comparisons = summary.compare(sweep, cells, summary.summarize(sweep, cells))
    assert list(comparisons.columns) == summary.COMPARISON_COLUMNS
    assert comparisons["metric"].tolist() == [TW, RE]  # the sweep's order, not sorted
    tw, re_ = comparisons.iloc[0], comparisons.iloc[1]
    labels = sweep.labels
    assert (tw["metric_name"], tw["metric_label"], tw["better"]) == (
        "trustworthiness",
        "trustworthiness",
        "higher",
    )  # k does not vary
    assert (tw["best"], tw["best_label"], tw["runner_up"], tw["runner_up_label"]) == (
        key["pca"],
        labels[key["pca"]],
        key["isomap"],
        labels[key["isomap"]],
    )
    # Exactly MIN_PAIRS pairs, every difference the same sign: the exact p is 2/2^6 < 0.05.
    assert (tw["n_pairs"], tw["verdict"]) == (summary.MIN_PAIRS, summary.LEAD)
    assert tw["p_value"] == pytest.approx(stats.wilcoxon(lead, [v - 0.1 for v in lead]).pvalue)
    assert tw["p_value"] < summary.ALPHA
    # The tie at rank 1: the sweep's method order picks isomap; their one shared seed is equal.
    assert (re_["best"], re_["runner_up"], re_["verdict"], re_["n_pairs"]) == (
        key["isomap"],
        key["random_projection"],
        summary.TIE,
        1,
    )
    assert (re_["metric_name"], re_["better"]) == ("reconstruction_error", "lower")
    assert math.isnan(re_["statistic"]) and math.isnan(re_["p_value"])


def test_a_summary_of_one_method_and_of_nothing_to_compare():
    one = parse_sweep(EDGES.replace("  isomap: {}\n  random_projection: {}\n", ""), "one.yaml")
    cells = edge_cells(one, {("pca", TW): [0.9, 0.8]})
    table = summary.summarize(one, cells)
    assert table.loc[table["metric"] == TW, "rank"].tolist() == [1]
    assert table["n"].tolist() == [2, 0, 0]  # a metric no cell has a value for: n = 0
    empty = summary.compare(one, cells, table)
    assert empty.empty and list(empty.columns) == summary.COMPARISON_COLUMNS
    # A metric column no cell has at all (added to the sweep, not computed yet).
    assert summary.summarize(one, cells.drop(columns=[LID]))["n"].tolist() == [2, 0, 0]
    no_metrics = parse_sweep(EDGES.split("metrics:")[0], "none.yaml")
    nothing = summary.summarize(no_metrics, cells)
    assert nothing.empty and list(nothing.columns) == summary.SUMMARY_COLUMNS


def test_two_ranked_methods_are_compared():
    two = parse_sweep(EDGES.replace("  random_projection: {}\n", ""), "two.yaml")
    lead = [0.9, 0.91, 0.92, 0.93, 0.94, 0.95]
    cells = edge_cells(two, {("pca", TW): [v - 0.1 for v in lead], ("isomap", TW): lead})
    [row] = summary.compare(two, cells, summary.summarize(two, cells)).to_dict("records")
    assert (row["metric"], row["best"], row["runner_up"], row["verdict"]) == (
        TW,
        two.methods[1].key,
        two.methods[0].key,
        summary.LEAD,
    )


def test_an_interval_is_clipped_to_the_metrics_range_on_the_side_it_leaves():
    """Clipped exactly where mean ± half leaves the range: above 1 for trustworthiness, below 0
    for a reconstruction error, not at all for values that stay inside (an interval of width 0
    at a value inside, or one that ends inside)."""
    sweep = parse_sweep(EDGES, "edges.yaml")
    cells = edge_cells(
        sweep,
        {
            ("pca", TW): [0.99, 0.97],  # 0.98 ± 12.706 x 0.01: past 1 above, and below 0 it is not
            ("isomap", TW): [0.5, 0.5],  # sd 0: [0.5, 0.5]
            ("random_projection", TW): [0.5, 0.52, 0.48],  # 0.5 ± 0.0497: inside
            ("pca", RE): [0.01, 0.03],  # 0.02 ± 0.127: below 0
        },
    )
    table = summary.summarize(sweep, cells).set_index(["method", "metric"])
    key = {m.method: m.key for m in sweep.methods}
    half = stats.t.ppf(0.975, 1) * np.std([0.99, 0.97], ddof=1) / math.sqrt(2)
    tw = table.loc[(key["pca"], TW)]
    assert (tw["ci_low"], tw["ci_high"], tw["ci_clipped"]) == (pytest.approx(0.98 - half), 1.0, True)
    assert table.loc[(key["isomap"], TW), ["ci_low", "ci_high", "ci_clipped"]].tolist() == [0.5, 0.5, False]
    rp = table.loc[(key["random_projection"], TW)]
    assert not rp["ci_clipped"] and 0 < rp["ci_low"] < rp["ci_high"] < 1
    re = table.loc[(key["pca"], RE)]
    assert (re["ci_low"], re["ci_clipped"]) == (0.0, True) and re["ci_high"] == pytest.approx(0.02 + half)


# Two plugin metrics with known values per seed: one of ~1e-5 (PHATE's variance ratio is of that
# size), one near the top of [0, 1] whose t-interval over two seeds leaves the range on both sides.
SMALL_AND_EDGE = '''"""Metrics of fixed values per seed."""
from lab_assets.dr.metrics import METRICS


def small(nb, *, scale: float = 1.0) -> float:
    """About 1e-5."""
    return scale * (1.2e-5, 1.5e-5)[nb.seed % 2]


def edge(nb, *, scale: float = 1.0) -> float:
    """Near 1, far apart between two seeds."""
    return scale * (0.99, 0.79)[nb.seed % 2]


small = METRICS("small", valid_range="[0, inf)", better=None)(small)
edge = METRICS("edge", valid_range="[0, 1]", better="higher")(edge)
'''


def test_the_summary_keeps_small_values_and_clips_intervals_to_the_valid_range(lab, monkeypatch):
    """Through `lab sweep run` (its summary, and the report's summary.md and .csv): values of 1e-5 are printed with their
    significant digits (never 0.0000), and a t-interval past 1 is clipped to [0, 1] and said so."""
    (lab / "fixed_metrics.py").write_text(SMALL_AND_EDGE)
    monkeypatch.setenv("LAB_PLUGINS", "fixed_metrics")
    (lab / "sweeps" / "fixed.yaml").write_text(
        "name: fixed\ndata:\n  swissroll: {n_samples: 60}\nseeds: [0, 1]\nmethods:\n  pca: {}\n"
        "metrics:\n  small: {}\n  edge: {}\n"
    )
    run = lab_cli("sweep", "run", "sweeps/fixed.yaml", "--workers", "1", cwd=lab)
    assert run.returncode == 0, run.stderr
    # Independent of the code under test: the sample mean and sd of the two values, written out.
    mean, sd = (1.2e-5 + 1.5e-5) / 2, abs(1.5e-5 - 1.2e-5) / math.sqrt(2)
    assert f"{mean:.3e} ± {sd:.2e}" == "1.350e-05 ± 2.12e-06"  # 4 and 3 significant digits
    assert "1.350e-05 ± 2.12e-06" in run.stdout and "0.0000" not in run.stdout, run.stdout
    # edge: mean 0.89, sd 0.1414; t(0.975, 1) = 12.706: 0.89 ± 1.2706 leaves [0, 1] on both sides.
    half = stats.t.ppf(0.975, 1) * abs(0.99 - 0.79) / math.sqrt(2) / math.sqrt(2)
    assert 0.89 - half < 0 and 0.89 + half > 1
    report = lab / ".lab" / "reports" / "fixed"
    markdown = (report / "summary.md").read_text()
    edge_block = markdown.split("#### edge")[1].split("####")[0]
    assert "0.8900 ± 0.141" in edge_block and "[0, 1.000] clipped" in edge_block, markdown
    # small: 1.35e-5 ± 12.706 x 2.121e-6 / sqrt(2) = [-5.56e-6, 3.256e-5]: clipped at 0 too.
    small_block = markdown.split("#### small")[1].split("####")[0]
    assert "1.350e-05 ± 2.12e-06" in small_block and "[0, 3.256e-05] clipped" in small_block, markdown
    table = pd.read_csv(report / "summary.csv").set_index("metric_name")
    assert table.loc["edge", ["ci_low", "ci_high", "ci_clipped"]].tolist() == [0, 1, True]
    assert table.loc["small", "ci_low"] == 0 and bool(table.loc["small", "ci_clipped"])
    assert table.loc["small", "ci_high"] == pytest.approx(mean + stats.t.ppf(0.975, 1) * sd / math.sqrt(2))
