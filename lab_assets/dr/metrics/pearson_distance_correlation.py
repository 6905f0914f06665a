"""Pearson correlation of pairwise distances: are distances kept up to an affine map?

Like `spearman_distance_correlation`, over a seeded sample of pairs (memory O(n_pairs)), but on
the distances themselves rather than their ranks, so a monotone but curved distortion lowers it.
Range [-1, 1]; 1 = embedding distances are an affine function of data distances.
"""

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.dr.metrics import METRICS
from lab_assets.dr.metrics.neighbors import Neighborhoods
from lab_assets.dr.metrics.spearman_distance_correlation import sampled_distances


def pearson_distance_correlation(nb: Neighborhoods, *, n_pairs: Annotated[int, Field(ge=2)] = 20000) -> float:
    """Pearson correlation of data vs embedding distances over a seeded sample of pairs."""
    d, e = sampled_distances(nb, n_pairs, "pearson_distance_correlation", constant_is_undefined=True)
    return float(np.corrcoef(d, e)[0, 1])


pearson_distance_correlation = METRICS(
    "pearson_distance_correlation", packages=["numpy"], valid_range="[-1, 1]", better="higher"
)(pearson_distance_correlation)
