"""The negative control: a seeded standard Gaussian embedding that ignores the data. Every score is
read against it (OpenProblems' negative control): a method that does no better keeps nothing."""

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.dr.methods import METHODS


class GaussianEmbedding:
    """fit_transform(X): n points drawn from N(0, I) in n_components dimensions, from the seed alone."""

    def __init__(self, n_components: int, seed: int):
        self.n_components, self.seed = n_components, seed

    def fit_transform(self, X) -> np.ndarray:
        return np.random.default_rng(self.seed).standard_normal((np.shape(X)[0], self.n_components))


NAME = "random"


@METHODS(NAME)
def random(seed: int, *, n_components: Annotated[int, Field(ge=1)] = 2) -> GaussianEmbedding:
    """Negative control: i.i.d. standard Gaussian coordinates, seeded, independent of the data."""
    return GaussianEmbedding(n_components, seed)
