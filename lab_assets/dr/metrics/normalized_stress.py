"""Normalized stress: the squared misfit of embedding distances to data distances, relative to the
data's, sum (d_ij - e_ij)^2 / sum d_ij^2 over pairs (the form Smelser et al. 2024 call normalized
stress). Depends on the embedding's scale: see `scale_normalized_stress`. Range [0, inf); 0 = every
distance kept. Pairs are sampled as in `spearman_distance_correlation` (memory O(n_pairs)).
"""

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.dr.metrics import METRICS
from lab_assets.dr.metrics.neighbors import Neighborhoods
from lab_assets.dr.metrics.spearman_distance_correlation import sampled_distances


def stress(d: np.ndarray, e: np.ndarray) -> float:
    """sum (d - e)^2 / sum d^2."""
    return float(((d - e) ** 2).sum() / (d**2).sum())


def normalized_stress(nb: Neighborhoods, *, n_pairs: Annotated[int, Field(ge=2)] = 20000) -> float:
    """Normalized stress of the embedding as it is, over a seeded sample of pairs."""
    d, e = sampled_distances(nb, n_pairs, "normalized_stress")
    if not d.any():
        raise ValueError("normalized_stress is undefined: every sampled data distance is 0")
    return stress(d, e)


normalized_stress = METRICS("normalized_stress", packages=["numpy"], valid_range="[0, inf)", better="lower")(
    normalized_stress
)
