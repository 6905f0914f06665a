"""R_NX(K) (Lee, Peluffo-Ordóñez & Verleysen 2015): the share of K nearest neighbours kept,
rescaled so that 0 is what a random embedding keeps on average and 1 is every neighbourhood kept.

R_NX(K) = ((n - 1) Q_NX(K) - K) / (n - 1 - K), Q_NX(K) = mean over points of |N_K^data ∩ N_K^emb| / K.
Range [-1, 1].
"""

from typing import Annotated

from pydantic import Field

from lab_assets.dr.metrics import METRICS
from lab_assets.dr.metrics.coranking import co_neighbours, k_at_most_points_minus_two, rnx_from_counts
from lab_assets.dr.metrics.neighbors import Neighborhoods


def rnx(nb: Neighborhoods, *, k: Annotated[int, Field(ge=1)]) -> float:
    """R_NX at neighbourhood size k: 1 = all k neighbours kept, 0 = chance."""
    if k > nb.n - 2:
        raise ValueError(f"rnx needs k <= n - 2, got k={k} with n={nb.n} points")
    return float(rnx_from_counts(co_neighbours(nb, k), nb.n)[k - 1])


rnx = METRICS("rnx", packages=["numpy"], valid_range="[-1, 1]", better="higher", limits=k_at_most_points_minus_two)(rnx)
