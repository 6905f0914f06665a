"""Control-scaled scores (as OpenProblems reads every score): 0 = the negative control `random`
(a seeded Gaussian embedding), 1 = the positive control `true_latent` (the ground-truth latent
coordinates), per data key (dataset config and seed) and metric column.

    scaled = (value - value_random) / (value_true_latent - value_random)

The same formula for both directions: a lower-is-better metric has value_true_latent below
value_random, so its scaled score still rises towards 1 as a method improves. Null where either
control has no value on that data key, or both controls score the same (nothing to scale by).

Pure pandas, no Dagster: the summary (`summary.py`), the Markdown report and any other renderer
(an HTML report) call `scaled_scores` on a sweep's per-cell table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from lab_assets.dr.methods import random_embedding, true_latent

NEGATIVE, POSITIVE = random_embedding.NAME, true_latent.NAME
LEGEND = f"[scaled]: control-scaled score, 0 = {NEGATIVE}, 1 = {POSITIVE} (per data key and seed, mean over seeds)"


def control_keys(methods: list[tuple[str, str]]) -> tuple[str, str] | None:
    """(negative, positive) method keys among (method name, method key) pairs, the first of each;
    None when the sweep lacks either control."""
    negative = next((key for name, key in methods if name == NEGATIVE), None)
    positive = next((key for name, key in methods if name == POSITIVE), None)
    return None if negative is None or positive is None else (negative, positive)


def scaled_scores(cells: pd.DataFrame, columns: list[str], negative: str, positive: str) -> pd.DataFrame:
    """`cells` (one row per cell: `data` key, `method` key and the metric `columns`) with each of
    `columns` replaced by its control-scaled score against the `negative` and `positive` method
    keys' values on the same data key. Rows, index and other columns are kept as they are."""
    out = cells.copy()
    for column in columns:
        by_data = cells.pivot_table(index="data", columns="method", values=column, aggfunc="first", dropna=False)
        low = cells["data"].map(_control(by_data, negative))
        high = cells["data"].map(_control(by_data, positive))
        span = (high - low).where(lambda s: s != 0)
        out[column] = (pd.to_numeric(cells[column], errors="coerce") - low) / span
    return out


def _control(by_data: pd.DataFrame, method: str) -> pd.Series:
    return by_data[method] if method in by_data.columns else pd.Series(np.nan, index=by_data.index)


def how_to_add(sweep_source: str, datasets_with_latents: list[str]) -> str:
    """What `lab report` says when a sweep has no controls to scale by."""
    return (
        f"control-scaled scores (0 = {NEGATIVE}, 1 = {POSITIVE}) are shown when the sweep has both "
        f"controls: add `{NEGATIVE}: {{}}` and `{POSITIVE}: {{}}` under `methods:` in {sweep_source} "
        f"({POSITIVE} needs a dataset with ground-truth latents: {', '.join(datasets_with_latents)})"
    )
