"""A sweep's results over seeds: per dataset config x method config, every metric as mean, sd, n
and a 95% t-interval, ranked per dataset (1 = best, in the metric's direction), and, per metric,
the best method against the runner-up paired over the same data seeds (Wilcoxon signed-rank).

Pure pandas/SciPy (no Dagster): the report asset writes these tables, `lab` prints them
(`tables.py` renders them as text and Markdown).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lab_assets.core import keys
from lab_assets.dr import controls
from lab_assets.dr.metrics import METRICS
from lab_assets.dr.sweep import Sweep

CONFIDENCE = 0.95
INTERVAL = (
    "95% t-interval: mean ± t(0.975, n-1) · sd / √n (none for n = 1), clipped to the metric's valid range "
    "where it leaves it (marked clipped)"
)
ALPHA = 0.05
TEST = "Wilcoxon signed-rank"
# The exact two-sided Wilcoxon p-value of n pairs is at least 2 / 2**n: with fewer than 6 pairs
# (0.0625 at 5) no lead can reach p < 0.05, so the test cannot tell a lead from seed noise.
MIN_PAIRS = 6

LEAD, NOISE, TOO_FEW, TIE = "lead", "within seed noise", "too few pairs", "tie"

SUMMARY_COLUMNS = [
    "data_config",
    "dataset_label",
    "method",
    "method_label",
    "metric",
    "metric_name",
    "metric_label",
    "better",
    "n",
    "mean",
    "sd",
    "ci_low",
    "ci_high",
    "ci_clipped",
    "rank",
    "best",
    "scaled",
    "scaled_sd",
]
COMPARISON_COLUMNS = [
    "data_config",
    "dataset_label",
    "metric",
    "metric_name",
    "metric_label",
    "better",
    "best",
    "best_label",
    "runner_up",
    "runner_up_label",
    "test",
    "n_pairs",
    "mean_difference",
    "statistic",
    "p_value",
    "verdict",
]


def config_key(data_key: str) -> str:
    """`swissroll-noise=0.05-03af35~s0` -> `swissroll-noise=0.05-03af35`: the data config, all seeds."""
    return keys.split_data_key(data_key)[0]


def _metric_label(label: str, name: str) -> str:
    """`trustworthiness k=15` -> `k=15`; a metric with nothing varying -> its name."""
    rest = label[len(name) :].strip()
    return rest or name


def summarize(sweep: Sweep, cells: pd.DataFrame) -> pd.DataFrame:
    """One row per (data config, method config, metric column): n, mean, sd (ddof=1), the 95%
    t-interval (clipped to the metric's valid range: a trustworthiness interval never reaches
    past 1; `ci_clipped` says where), rank per (data config, metric) and whether it is the best.
    `cells` has one row per materialized cell: `data` (key), `method` (key), `seed` and the metric
    columns; null metric values (not applicable) are left out of n. `scaled`, `scaled_sd`: mean and
    sd over seeds of the control-scaled score (`controls.py`) of a ranked metric, when the sweep has
    both controls."""
    from scipy import stats

    labels = sweep.labels
    cells = cells.assign(data_config=cells["data"].map(config_key)) if len(cells) else cells.assign(data_config=[])
    scaled = _scaled(sweep, cells)
    configs = list(dict.fromkeys(d.config_key for d in sweep.data))
    declared = {(config_key(d), m) for d, m in sweep.cells}  # not `true_latent` where there are no latents
    rows = []
    for dc in configs:
        for m in sweep.methods:
            if (dc, m.key) not in declared:
                continue
            sub = cells[(cells["data_config"] == dc) & (cells["method"] == m.key)]
            for metric in sweep.metrics:
                col = metric.column
                values = sub[col].dropna().to_numpy(dtype=np.float64) if col in sub else np.array([])
                n = len(values)
                mean = float(values.mean()) if n else math.nan
                sd = float(values.std(ddof=1)) if n > 1 else math.nan
                half = float(stats.t.ppf((1 + CONFIDENCE) / 2, n - 1)) * sd / math.sqrt(n) if n > 1 else math.nan
                by_seed = scaled.loc[sub.index, col].dropna() if col in scaled else pd.Series(dtype=float)
                lo, hi = METRICS[metric.metric].bounds()
                rows.append(
                    {
                        "data_config": dc,
                        "dataset_label": labels[dc],
                        "method": m.key,
                        "method_label": labels[m.key],
                        "metric": col,
                        "metric_name": metric.metric,
                        "metric_label": _metric_label(labels[col], metric.metric),
                        "better": METRICS[metric.metric].better,
                        "n": n,
                        "mean": mean,
                        "sd": sd,
                        "ci_low": max(mean - half, lo) if n > 1 else math.nan,
                        "ci_high": min(mean + half, hi) if n > 1 else math.nan,
                        "ci_clipped": n > 1 and (mean - half < lo or mean + half > hi),
                        "scaled": float(by_seed.mean()) if len(by_seed) else math.nan,
                        "scaled_sd": float(by_seed.std(ddof=1)) if len(by_seed) > 1 else math.nan,
                    }
                )
    table = pd.DataFrame(rows, columns=[c for c in SUMMARY_COLUMNS if c not in ("rank", "best")])
    table["rank"] = pd.array([pd.NA] * len(table), dtype="Int64")
    for (_, _), group in table.groupby(["data_config", "metric"], sort=False):
        better = group["better"].iloc[0]
        if pd.isna(better):  # descriptive: never ranked
            continue
        ranks = group["mean"].rank(ascending=better == "lower", method="min", na_option="keep")
        table.loc[group.index, "rank"] = ranks.astype("Int64")
    table["best"] = (table["rank"] == 1).fillna(False).astype(bool)
    return table[SUMMARY_COLUMNS]


def _scaled(sweep: Sweep, cells: pd.DataFrame) -> pd.DataFrame:
    """Per cell, the control-scaled score of each ranked metric column (no columns without both
    controls in the sweep)."""
    pair = controls.control_keys([(m.method, m.key) for m in sweep.methods])
    ranked = [m.column for m in sweep.metrics if METRICS[m.metric].better is not None and m.column in cells]
    if pair is None or not ranked or not len(cells):
        return pd.DataFrame(index=cells.index)
    return controls.scaled_scores(cells, ranked, *pair)[ranked]


def compare(sweep: Sweep, cells: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Per (data config, metric with a direction): the best method against the runner-up, over
    the seeds where both have a value. The Wilcoxon signed-rank test (two-sided,
    `scipy.stats.wilcoxon` with its defaults) of best - runner-up; the verdict is `lead` when
    p < ALPHA, `within seed noise` otherwise, `too few pairs` below MIN_PAIRS (whatever p), `tie`
    when every paired difference is 0."""
    from scipy import stats

    cells = cells.assign(data_config=cells["data"].map(config_key)) if len(cells) else cells.assign(data_config=[])
    order = {m.key: i for i, m in enumerate(sweep.methods)}
    rows = []
    for (dc, col), group in summary.groupby(["data_config", "metric"], sort=False):
        ranked = group[group["rank"].notna()]
        if pd.isna(group["better"].iloc[0]) or len(ranked) < 2:  # descriptive: None (or NaN in a str column)
            continue
        ranked = ranked.assign(order=ranked["method"].map(order)).sort_values(["rank", "order"])
        best, runner = ranked.iloc[0], ranked.iloc[1]

        def by_seed(method: str) -> pd.Series:
            sub = cells[(cells["data_config"] == dc) & (cells["method"] == method)]
            return sub.set_index("seed")[col].dropna()

        paired = pd.concat([by_seed(best["method"]), by_seed(runner["method"])], axis=1, join="inner").sort_index()
        a, b = paired.iloc[:, 0].to_numpy(dtype=np.float64), paired.iloc[:, 1].to_numpy(dtype=np.float64)
        diff = a - b
        statistic = p = math.nan
        if len(diff) and np.any(diff != 0):
            result = stats.wilcoxon(a, b)
            statistic, p = float(result.statistic), float(result.pvalue)
        if len(diff) and not np.any(diff != 0):
            verdict = TIE
        elif len(diff) < MIN_PAIRS:
            verdict = TOO_FEW
        else:
            verdict = LEAD if p < ALPHA else NOISE
        rows.append(
            {
                "data_config": dc,
                "dataset_label": best["dataset_label"],
                "metric": col,
                "metric_name": best["metric_name"],
                "metric_label": best["metric_label"],
                "better": best["better"],
                "best": best["method"],
                "best_label": best["method_label"],
                "runner_up": runner["method"],
                "runner_up_label": runner["method_label"],
                "test": TEST,
                "n_pairs": len(diff),
                "mean_difference": float(diff.mean()) if len(diff) else math.nan,
                "statistic": statistic,
                "p_value": p,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
