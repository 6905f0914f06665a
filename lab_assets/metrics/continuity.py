"""Continuity (Venna & Kaski): are the data's k nearest neighbours kept near in the embedding?

Trustworthiness with the roles swapped: each data neighbour is penalised by how far beyond
rank k it sits in the embedding. Range [0, 1], 1 = no neighbour torn away.
"""

from typing import Annotated

from pydantic import Field

from lab_assets.metrics import METRICS
from lab_assets.metrics.neighbors import Neighborhoods


@METRICS("continuity", packages=["numpy", "scipy", "scikit-learn"])
def continuity(nb: Neighborhoods, *, k: Annotated[int, Field(ge=1)]) -> float:
    """Continuity at neighbourhood size k: 1 = every data neighbour stays an embedding neighbour."""
    nb.check_k(k)
    n = nb.n
    # Same normaliser as trustworthiness, which is the worst case only for k < n/2.
    if 2 * k >= n:
        raise ValueError(f"continuity needs k < n/2, got k={k} with n={n} points")
    excess = nb.data_nbrs_emb_rank[:, :k] - k
    penalty = int(excess[excess > 0].sum())
    return float(1.0 - penalty * (2.0 / (n * k * (2.0 * n - 3.0 * k - 1.0))))
