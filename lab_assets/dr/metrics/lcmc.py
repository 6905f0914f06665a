"""Local continuity meta-criterion (Chen & Buja 2009): the share of K nearest neighbours kept,
minus what a random embedding keeps on average.

LCMC(K) = Q_NX(K) - K / (n - 1). Range [-1, 1]; 0 = chance, at most 1 - K / (n - 1).
"""

from typing import Annotated

from pydantic import Field

from lab_assets.dr.metrics import METRICS, k_below_points
from lab_assets.dr.metrics.coranking import co_neighbours
from lab_assets.dr.metrics.neighbors import Neighborhoods


def lcmc(nb: Neighborhoods, *, k: Annotated[int, Field(ge=1)]) -> float:
    """Q_NX(k) - k / (n - 1): the neighbourhood overlap above chance."""
    kept = co_neighbours(nb, k)[k - 1] / (k * nb.n)
    return float(kept - k / (nb.n - 1))


lcmc = METRICS("lcmc", packages=["numpy"], valid_range="[-1, 1]", better="higher", limits=k_below_points)(lcmc)
