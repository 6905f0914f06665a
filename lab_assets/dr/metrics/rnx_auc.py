"""Area under the R_NX(K) curve with log-K weighting (Lee, Peluffo-Ordóñez & Verleysen 2015):
one number for how well neighbourhoods of every size are kept, small ones weighing most.

AUC = sum_K R_NX(K) / K  /  sum_K 1 / K. The published AUC runs over K = 1..n-2
(`k_max: all`): exact here up to 5,000 points (full rank rows a block at a time, never an n x n
matrix). Beyond that, give `k_max` (100 is the usual choice): K = 1..k_max from the shared kNN
lists, and the column (`rnx_auc@k_max=100`) says so. Range [-1, 1].
"""

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from lab_assets.core.registry import Shape
from lab_assets.dr.metrics import METRICS
from lab_assets.dr.metrics.coranking import EXACT_MAX_POINTS, co_neighbours, exact_co_neighbours, rnx_from_counts
from lab_assets.dr.metrics.neighbors import Neighborhoods

ALL = "all"


def _problem(k_max: Any, n: int) -> str | None:
    if k_max == ALL and n > EXACT_MAX_POINTS:
        return (
            f"k_max=all (the exact AUC over K = 1..n-2) is computed up to {EXACT_MAX_POINTS} points, "
            f"the data has {n}: give k_max (e.g. 100)"
        )
    if k_max != ALL and k_max > n - 2:
        return f"k_max={k_max} must be below n - 1: the data has n={n} points (so k_max <= {n - 2})"
    return None


def _limits(params: dict[str, Any], shape: Shape) -> dict[str, str]:
    problem = None if shape.points is None else _problem(params.get("k_max", ALL), shape.points)
    return {"k_max": problem} if problem else {}


def rnx_auc(nb: Neighborhoods, *, k_max: Annotated[int, Field(ge=1)] | Literal["all"] = ALL) -> float:
    """Log-K-weighted area under R_NX over K = 1..n-2 (`all`), or over K = 1..k_max."""
    if (problem := _problem(k_max, nb.n)) is not None:
        raise ValueError(f"rnx_auc: {problem}")
    counts = exact_co_neighbours(nb.X, nb.Z)[: nb.n - 2] if k_max == ALL else co_neighbours(nb, k_max)
    weights = 1.0 / np.arange(1, counts.size + 1)
    return float((rnx_from_counts(counts, nb.n) * weights).sum() / weights.sum())


rnx_auc = METRICS("rnx_auc", packages=["numpy", "scipy"], valid_range="[-1, 1]", better="higher", limits=_limits)(
    rnx_auc
)
