"""Scale-normalized stress (Smelser et al. 2024): normalized stress at the embedding scale that
minimizes it, so that it compares methods, not the units their coordinates come in.

The best scale alpha of sum (d - alpha e)^2 is sum d e / sum e^2, which gives
1 - (sum d e)^2 / (sum d^2 sum e^2). Range [0, 1]; 0 = distances kept up to one factor.
"""

from typing import Annotated

from pydantic import Field

from lab_assets.dr.metrics import METRICS
from lab_assets.dr.metrics.neighbors import Neighborhoods
from lab_assets.dr.metrics.normalized_stress import stress
from lab_assets.dr.metrics.spearman_distance_correlation import sampled_distances


def scale_normalized_stress(nb: Neighborhoods, *, n_pairs: Annotated[int, Field(ge=2)] = 20000) -> float:
    """Normalized stress of the embedding scaled by the stress-minimizing factor."""
    d, e = sampled_distances(nb, n_pairs, "scale_normalized_stress")
    if not e.any():
        raise ValueError("scale_normalized_stress is undefined: every sampled embedding distance is 0")
    alpha = (d * e).sum() / (e**2).sum()
    return stress(d, alpha * e)


scale_normalized_stress = METRICS("scale_normalized_stress", packages=["numpy"], valid_range="[0, 1]", better="lower")(
    scale_normalized_stress
)
