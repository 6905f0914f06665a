"""The positive control: the embedding *is* the dataset's ground-truth latent coordinates
(`dr/latents.py`), which the embedding step hands to the estimator. Only for datasets with ground
truth: a sweep naming it for none of its datasets is refused at plan time, and in a sweep that
mixes datasets its cells on datasets without latents are not declared (`dr/sweep.py`)."""

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.dr.methods import METHODS

NAME = "true_latent"


class LatentEmbedding:
    """fit_transform(X): the first n_components latent coordinates (all when None), set as
    `latent` by the embedding step before fitting."""

    def __init__(self, n_components: int | None):
        self.n_components = n_components
        self.latent: np.ndarray | None = None

    def fit_transform(self, X) -> np.ndarray:
        if self.latent is None:
            raise ValueError(f"{NAME}: the dataset has no ground-truth latent coordinates to embed")
        coords = np.asarray(self.latent, dtype=np.float64)
        if coords.shape[0] != np.shape(X)[0]:
            raise ValueError(f"{NAME}: {coords.shape[0]} latent rows for {np.shape(X)[0]} points")
        if self.n_components is not None and self.n_components > coords.shape[1]:
            raise ValueError(
                f"{NAME}: n_components={self.n_components} but the latent has {coords.shape[1]} coordinates"
            )
        return coords[:, : self.n_components]


@METHODS(NAME)
def true_latent(seed: int, *, n_components: Annotated[int, Field(ge=1)] | None = None) -> LatentEmbedding:
    """Positive control: the dataset's ground-truth latent coordinates (the first n_components; all by default)."""
    return LatentEmbedding(n_components)
