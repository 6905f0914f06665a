"""Local intrinsic dimension (Levina & Bickel MLE), averaged over points.

Per point, from its k neighbour distances T_1 <= ... <= T_k:
m(x) = [ 1/(k-1) * sum_{j<k} log(T_k / T_j) ]^-1. Range (0, inf); measured in the embedding or
the data, so one can see whether the embedding keeps (or inflates) the local dimension.
"""

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from lab_assets.dr.metrics import METRICS, NotApplicable, k_below_points
from lab_assets.dr.metrics.neighbors import Neighborhoods


def pointwise_lid(nb: Neighborhoods, k: int, space: str, metric: str = "lid") -> np.ndarray:
    """Each point's Levina-Bickel estimate from its k nearest neighbours in `space`."""
    nb.check_k(k)
    dist = (nb.emb_dist if space == "embedding" else nb.data_dist)[:, :k]
    # log(T_k / 0) is inf and would silently turn the mean into 0 or nan. Undefined, not an
    # error of the cell: recorded as null with this reason (the cell's other metrics stand).
    dup = dist[:, 0] == 0
    if dup.any():
        raise NotApplicable(
            f"{metric} is undefined for duplicate points: {int(dup.sum())} points of the {space} "
            f"space have a neighbour at distance 0 (first: point {int(np.flatnonzero(dup)[0])})"
        )
    logs = np.log(dist[:, -1:] / dist[:, :-1]).sum(axis=1)
    # All k neighbours equidistant: the likelihood has no maximum (dimension -> infinity).
    flat = logs == 0
    if flat.any():
        raise NotApplicable(
            f"{metric} is undefined when all {k} neighbours are equidistant: {int(flat.sum())} "
            f"points of the {space} space (first: point {int(np.flatnonzero(flat)[0])})"
        )
    return (k - 1) / logs


def lid(
    nb: Neighborhoods,
    *,
    k: Annotated[int, Field(ge=2)],
    space: Literal["embedding", "data"] = "embedding",
) -> float:
    """Mean Levina-Bickel maximum-likelihood local dimension over the k nearest neighbours."""
    return float(np.mean(pointwise_lid(nb, k, space)))


lid = METRICS("lid", packages=["numpy", "scikit-learn"], valid_range="(0, inf)", better=None, limits=k_below_points)(
    lid
)  # descriptive: no better direction
