"""Trustworthiness (Venna & Kaski): are the embedding's k nearest neighbours near in the data too?

Each embedding neighbour is penalised by how far beyond rank k it sits in the data space.
Range [0, 1], 1 = no false neighbours. Equals `sklearn.manifold.trustworthiness` (euclidean).
"""

from typing import Annotated

from pydantic import Field

from lab_assets.dr.metrics import METRICS, k_below_half_points
from lab_assets.dr.metrics.neighbors import Neighborhoods, rank_penalty_score


def trustworthiness(nb: Neighborhoods, *, k: Annotated[int, Field(ge=1)]) -> float:
    """Trustworthiness at neighbourhood size k: 1 = every embedding neighbour is a data neighbour."""
    nb.check_k(k)
    return rank_penalty_score(nb.emb_nbrs_data_rank, k, nb.n, "trustworthiness")


trustworthiness = METRICS(
    "trustworthiness",
    packages=["numpy", "scipy", "scikit-learn"],
    valid_range="[0, 1]",
    better="higher",
    limits=k_below_half_points,
)(trustworthiness)
