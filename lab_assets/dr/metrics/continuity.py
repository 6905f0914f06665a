"""Continuity (Venna & Kaski): are the data's k nearest neighbours kept near in the embedding?

Trustworthiness with the roles swapped: each data neighbour is penalised by how far beyond
rank k it sits in the embedding. Range [0, 1], 1 = no neighbour torn away.
"""

from typing import Annotated

from pydantic import Field

from lab_assets.dr.metrics import METRICS, k_below_half_points
from lab_assets.dr.metrics.neighbors import Neighborhoods, rank_penalty_score


def continuity(nb: Neighborhoods, *, k: Annotated[int, Field(ge=1)]) -> float:
    """Continuity at neighbourhood size k: 1 = every data neighbour stays an embedding neighbour."""
    nb.check_k(k)
    return rank_penalty_score(nb.data_nbrs_emb_rank, k, nb.n, "continuity")


continuity = METRICS(
    "continuity",
    packages=["numpy", "scipy", "scikit-learn"],
    valid_range="[0, 1]",
    better="higher",
    limits=k_below_half_points,
)(continuity)
