"""A saddle (hyperbolic paraboloid) z = curvature * (u^2 - v^2) over the square [-1, 1]^2.

Its geodesics have no closed form: the ground truth is the latent-space distance, euclidean in
(u, v), which the saddle stretches more the further a pair lies from the centre.
"""

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.core.registry import Shape
from lab_assets.dr.datasets import DATASETS, Raw
from lab_assets.dr.latents import LATENTS, Latent

NSamples = Annotated[int, Field(ge=10, le=10_000_000)]
Noise = Annotated[float, Field(ge=0.0)]
Curvature = Annotated[float, Field(gt=0)]


def _draw(rng: np.random.Generator, n_samples: int, noise: float, curvature: float):
    uv = rng.uniform(-1.0, 1.0, size=(n_samples, 2))
    X = np.column_stack([uv, curvature * (uv[:, 0] ** 2 - uv[:, 1] ** 2)])
    return X + noise * rng.standard_normal(X.shape), uv


def saddle(
    rng: np.random.Generator, *, n_samples: NSamples = 2000, noise: Noise = 0.0, curvature: Curvature = 1.0
) -> Raw:
    """A saddle surface in 3-d; the label is the height before noise (up on one axis, down on the other)."""
    X, uv = _draw(rng, n_samples, noise, curvature)
    return Raw(X, curvature * (uv[:, 0] ** 2 - uv[:, 1] ** 2))


def saddle_latent(rng: np.random.Generator, *, n_samples: int, noise: float = 0.0, curvature: float = 1.0) -> Latent:
    """(u, v): the square the saddle is drawn over."""
    return Latent(_draw(rng, n_samples, noise, curvature)[1])


saddle = DATASETS("saddle", shape=lambda p: Shape(p["n_samples"], 3))(saddle)
LATENTS["saddle"] = saddle_latent
