"""Trustworthiness (Venna & Kaski): are the embedding's k nearest neighbours near in the data too?

Each embedding neighbour is penalised by how far beyond rank k it sits in the data space.
Range [0, 1], 1 = no false neighbours. Equals `sklearn.manifold.trustworthiness` (euclidean).
"""

from typing import Annotated

from pydantic import Field

from lab_assets.metrics import METRICS
from lab_assets.metrics.neighbors import Neighborhoods


@METRICS("trustworthiness", packages=["numpy", "scipy", "scikit-learn"])
def trustworthiness(nb: Neighborhoods, *, k: Annotated[int, Field(ge=1)]) -> float:
    """Trustworthiness at neighbourhood size k: 1 = every embedding neighbour is a data neighbour."""
    nb.check_k(k)
    n = nb.n
    # The normaliser is the worst case only for k < n/2; beyond it the score leaves [0, 1].
    if 2 * k >= n:
        raise ValueError(f"trustworthiness needs k < n/2, got k={k} with n={n} points")
    excess = nb.emb_nbrs_data_rank[:, :k] - k
    penalty = int(excess[excess > 0].sum())
    return float(1.0 - penalty * (2.0 / (n * k * (2.0 * n - 3.0 * k - 1.0))))
