"""Geodesic distance correlation: the Spearman correlation between the true geodesic distances of
the manifold (from its parametrization, not a kNN graph: `dr/latents.py`) and the embedding's
euclidean distances, over a seeded sample of pairs (memory O(n_pairs)).

Only for datasets with ground-truth latent coordinates; null with the reason on the others.
Range [-1, 1]; 1 = the embedding orders all pairs as the manifold's own geometry does.
"""

from typing import Annotated

from pydantic import Field

from lab_assets.dr.metrics import METRICS
from lab_assets.dr.metrics.latent_neighborhoods import ground_truth
from lab_assets.dr.metrics.neighbors import Neighborhoods
from lab_assets.dr.metrics.spearman_distance_correlation import pair_distances, refuse_constant, sampled_pairs


def geodesic_distance_correlation(nb: Neighborhoods, *, n_pairs: Annotated[int, Field(ge=2)] = 20000) -> float:
    """Spearman correlation of true geodesic vs embedding distances over a seeded sample of pairs."""
    latent = ground_truth(nb, "geodesic_distance_correlation").latent
    i, j = sampled_pairs(nb, n_pairs, "geodesic_distance_correlation")
    truth, dz = latent.distances(i, j), pair_distances(nb.Z, i, j)
    for d, space in [(truth, "latent"), (dz, "embedding")]:
        refuse_constant(d, space, "geodesic_distance_correlation")
    from scipy.stats import spearmanr  # imported on use: registering the entry must stay cheap

    return float(spearmanr(truth, dz).statistic)


geodesic_distance_correlation = METRICS(
    "geodesic_distance_correlation", packages=["numpy", "scipy"], valid_range="[-1, 1]", better="higher"
)(geodesic_distance_correlation)
