"""The shared neighbourhoods plus the dataset's ground truth (`dr/latents.Latent`), for the metrics
that compare with it. A subclass, so that the kNN code every metric column's version depends on
(`neighbors.py`) is untouched by ground truth: adding it recomputes no existing column."""

from functools import cached_property

import numpy as np

from lab_assets.dr.ground_truth import missing
from lab_assets.dr.latents import Latent
from lab_assets.dr.metrics import NotApplicable
from lab_assets.dr.metrics.neighbors import Neighborhoods, _as_points, _knn


class GroundTruthNeighborhoods(Neighborhoods):
    """`Neighborhoods(X, Z, k_max, ...)` and `latent` (None: the dataset has no ground truth)."""

    def __init__(self, X, Z, k_max: int, latent: Latent | None = None, **kwargs):
        super().__init__(X, Z, k_max, **kwargs)
        if latent is not None and latent.coords.shape[0] != self.n:
            raise ValueError(f"the latent coordinates have {latent.coords.shape[0]} rows for {self.n} points")
        self.latent = latent

    @cached_property
    def latent_idx(self) -> np.ndarray:
        """(n, k_max): each point's nearest neighbours in the true latent coordinates."""
        return _knn(_as_points(self.latent.coords, "latent coordinates"), self.k_max)[0]


def ground_truth(nb: Neighborhoods, metric: str) -> GroundTruthNeighborhoods:
    """`nb` when it carries a latent; NotApplicable with the reason otherwise."""
    if getattr(nb, "latent", None) is None:
        raise NotApplicable(missing(metric))
    return nb
