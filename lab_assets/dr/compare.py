"""Results of the same cells before and after a change: per metric column and dataset config x
method, the mean before, the mean after, the paired difference over seeds (after - before, the
same data seed on both sides) and a paired t-test of it, with a verdict. Pure pandas/SciPy: the
values come from the instance's history (`defs/metric_history.py`) or another lab home's files.

Verdicts: `bit-identical` (every value present on both sides equal: a seed whose value is null
on one side only does not count), `too few seeds` (fewer
than MIN_PAIRS pairs with values on both sides), `moved beyond seed noise` (p < ALPHA, or every
seed moved by the same non-zero amount), `within noise` otherwise; `no earlier values` when no
cell of the group has a value before. A paired t-test, not the summary's Wilcoxon test: a
change is checked on the few seeds a CI sweep has, and the exact Wilcoxon test cannot reach
p < 0.05 below 6 pairs; the t-test assumes roughly normal seed-to-seed differences.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lab_assets.core import keys
from lab_assets.dr.metrics import METRICS
from lab_assets.dr.sweep import Sweep

ALPHA = 0.05
MIN_PAIRS = 3  # a t-test of 2 pairs has 1 degree of freedom: it tells almost nothing
TEST = "paired t-test"
MOVED, NOISE, TOO_FEW, IDENTICAL, NO_BEFORE = (
    "moved beyond seed noise",
    "within noise",
    "too few seeds",
    "bit-identical",
    "no earlier values",
)

COLUMNS = [
    "metric",
    "metric_name",
    "data_config",
    "dataset_label",
    "method",
    "method_label",
    "better",
    "n_pairs",
    "mean_before",
    "mean_after",
    "mean_difference",
    "statistic",
    "p_value",
    "verdict",
    "regressed",
]

Values = dict[str, dict[str, float]]  # {cell: {column: value}}


def _paired(before: Values, after: Values, cells: list[tuple[int, str]], column: str) -> tuple[np.ndarray, np.ndarray]:
    """Per seed (`cells`: (seed, cell)) that has a value on both sides: (before, after)."""
    pairs = [
        (before[c][column], after[c][column])
        for _, c in sorted(cells)
        if column in before.get(c, {}) and column in after.get(c, {})
    ]
    return np.array([p[0] for p in pairs], dtype=np.float64), np.array([p[1] for p in pairs], dtype=np.float64)


def _verdict(b: np.ndarray, a: np.ndarray) -> tuple[str, float, float]:
    """(verdict, statistic, p) of the paired values (nulls in place)."""
    from scipy import stats

    if not len(b):
        return NO_BEFORE, math.nan, math.nan
    if np.array_equal(b, a, equal_nan=True):
        return IDENTICAL, math.nan, math.nan
    both = np.isfinite(b) & np.isfinite(a)
    diff = a[both] - b[both]
    if len(diff) < MIN_PAIRS:
        return TOO_FEW, math.nan, math.nan
    if np.all(diff == diff[0]):  # no spread: every seed moved by the same amount (t is undefined)
        return (MOVED, math.inf, 0.0) if diff[0] != 0 else (IDENTICAL, math.nan, math.nan)
    result = stats.ttest_rel(a[both], b[both])
    p = float(result.pvalue)
    return (MOVED if p < ALPHA else NOISE), float(result.statistic), p


def compare(sweep: Sweep, before: Values, after: Values) -> pd.DataFrame:
    """One row per (metric column, data config, method) of the sweep."""
    labels = sweep.labels
    groups: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for d, m in sweep.cells:
        config, seed = keys.split_data_key(d)
        groups.setdefault((config, m), []).append((seed, keys.cell_key(d, m)))
    rows = []
    for metric in sweep.metrics:
        better = METRICS[metric.metric].better if metric.metric in METRICS else None
        for (config, method), cells in groups.items():
            b, a = _paired(before, after, cells, metric.column)
            verdict, statistic, p = _verdict(b, a)
            both = np.isfinite(b) & np.isfinite(a)
            difference = float((a[both] - b[both]).mean()) if both.any() else math.nan
            worse = (difference < 0) if better == "higher" else (difference > 0) if better == "lower" else False
            rows.append(
                {
                    "metric": metric.column,
                    "metric_name": metric.metric,
                    "data_config": config,
                    "dataset_label": labels[config],
                    "method": method,
                    "method_label": labels[method],
                    "better": better,
                    "n_pairs": int(both.sum()),
                    "mean_before": float(np.nanmean(b)) if np.isfinite(b).any() else math.nan,
                    "mean_after": float(np.nanmean(a)) if np.isfinite(a).any() else math.nan,
                    "mean_difference": difference,
                    "statistic": statistic,
                    "p_value": p,
                    "verdict": verdict,
                    "regressed": bool(verdict == MOVED and worse),
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def _num(v: float, digits: int = 4) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}g}"


def _verdict_text(r) -> str:
    if r.verdict != MOVED:
        return r.verdict
    if r.better is None or (isinstance(r.better, float) and math.isnan(r.better)):
        return f"{MOVED} (descriptive)"
    return f"{MOVED}: {'worse' if r.regressed else 'better'}"


def counts(table: pd.DataFrame) -> str:
    parts = [f"{n} {v}" for v, n in table["verdict"].value_counts().items()]
    worse = int(table["regressed"].sum())
    return ", ".join(parts) + (f"; {worse} got worse" if worse else "")


def text(name: str, table: pd.DataFrame, what: str) -> str:
    lines = [f"sweep {name}: {what}; {TEST} over seeds, alpha {ALPHA}, at least {MIN_PAIRS} seeds: {counts(table)}"]
    shown = table[table["verdict"] != IDENTICAL]
    for r in shown.itertuples(index=False):
        # A side without values (a new column, a metric that does not apply) reads "none": never "nan".
        difference = "" if math.isnan(r.mean_difference) else f"{r.mean_difference:+.3g}, "
        lines.append(
            f"  {r.metric:<28} {r.dataset_label} | {r.method_label}: {_num(r.mean_before) or 'none'} -> "
            f"{_num(r.mean_after) or 'none'} ({difference}{r.n_pairs} seeds"
            f"{', p=' + _num(r.p_value, 3) if not math.isnan(r.p_value) else ''}): {_verdict_text(r)}"
        )
    if len(shown) < len(table):
        lines.append(f"  ({len(table) - len(shown)} bit-identical not shown)")
    return "\n".join(lines)


def markdown(name: str, table: pd.DataFrame, what: str) -> str:
    out = [
        f"### Results of `{name}`: {what}",
        "",
        f"{TEST} of after - before over the same seeds, alpha {ALPHA}, at least {MIN_PAIRS} seeds: {counts(table)}.",
        "",
    ]
    shown = table[table["verdict"] != IDENTICAL]
    if len(shown):
        out += [
            "| metric | dataset | method | before | after | difference | seeds | p | verdict |",
            "|---|---|---|---:|---:|---:|---:|---:|---|",
        ]
        out += [
            f"| {r.metric} | {r.dataset_label} | {r.method_label} | {_num(r.mean_before)} | {_num(r.mean_after)} | "
            f"{_num(r.mean_difference, 3)} | {r.n_pairs} | {_num(r.p_value, 3)} | {_verdict_text(r)} |"
            for r in shown.itertuples(index=False)
        ]
        out.append("")
    return "\n".join(out)
