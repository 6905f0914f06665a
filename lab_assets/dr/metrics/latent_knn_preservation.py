"""Latent kNN preservation: the average share of each point's k nearest neighbours in the true
latent coordinates (`dr/latents.py`) that are also among its k embedding neighbours. Range [0, 1];
1 = every true neighbourhood kept, about k/n = chance.

Only for datasets with ground-truth latent coordinates; null with the reason on the others.
"""

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.dr.metrics import METRICS, k_below_points
from lab_assets.dr.metrics.latent_neighborhoods import ground_truth
from lab_assets.dr.metrics.neighbors import Neighborhoods, positions


def latent_knn_preservation(nb: Neighborhoods, *, k: Annotated[int, Field(ge=1)]) -> float:
    """Mean fraction of the k true-latent neighbours kept among the k embedding neighbours."""
    truth = ground_truth(nb, "latent_knn_preservation")
    nb.check_k(k)
    pos = positions(nb.emb_idx[:, :k], truth.latent_idx[:, :k])
    return float(np.count_nonzero(pos, axis=1).mean() / k)


latent_knn_preservation = METRICS(
    "latent_knn_preservation",
    packages=["numpy", "scikit-learn"],
    valid_range="[0, 1]",
    better="higher",
    limits=k_below_points,
)(latent_knn_preservation)
