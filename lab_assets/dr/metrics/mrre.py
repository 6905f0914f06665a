"""Mean relative rank error (Lee & Verleysen 2007), in either direction: how far the ranks of each
point's k nearest neighbours move between the spaces, relative to their rank.

direction `data`: over each point's k data neighbours, sum |rho - r| / rho; `embedding`: over its
k embedding neighbours, sum |rho - r| / r (rho: rank in the data, r: rank in the embedding). Both
are divided by H_k = n * sum_{j=1..k} |n - 2j| / j, the worst case. Range [0, 1]; 0 = every
neighbour keeps its rank. Lower is better.
"""

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from lab_assets.dr.metrics import METRICS, k_below_points
from lab_assets.dr.metrics.neighbors import Neighborhoods


def mrre(
    nb: Neighborhoods, *, k: Annotated[int, Field(ge=1)], direction: Literal["data", "embedding"] = "data"
) -> float:
    """Mean relative rank error of the k data (or embedding) neighbours, normalised by H_k."""
    nb.check_k(k)
    own = np.arange(1, k + 1)[None, :]  # a neighbour's rank in its own space is its list position
    other = (nb.data_nbrs_emb_rank if direction == "data" else nb.emb_nbrs_data_rank)[:, :k]
    j = np.arange(1, k + 1)
    worst = nb.n * float((np.abs(nb.n - 2 * j) / j).sum())
    return float((np.abs(other - own) / own).sum() / worst)


mrre = METRICS(
    "mrre", packages=["numpy", "scipy", "scikit-learn"], valid_range="[0, 1]", better="lower", limits=k_below_points
)(mrre)
