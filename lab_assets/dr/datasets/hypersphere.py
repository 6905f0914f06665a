"""A sphere of intrinsic dimension `dim` (the unit sphere in dim + 1 coordinates), placed in
`n_features` dimensions by a random rotation and blurred by isotropic noise in all of them.

Ground truth: the clean points on the sphere; the geodesic is the great-circle distance.
"""

from typing import Annotated, Any

import numpy as np
from pydantic import Field

from lab_assets.core.registry import Shape
from lab_assets.dr.datasets import DATASETS, Raw
from lab_assets.dr.latents import LATENTS, Latent

NSamples = Annotated[int, Field(ge=10, le=10_000_000)]


def _draw(rng: np.random.Generator, n_samples: int, dim: int, n_features: int, noise: float):
    if (problem := _too_few_features(n_features, dim)) is not None:
        raise ValueError(f"hypersphere: {problem}")
    # Normalised Gaussians are uniform on the sphere.
    S = rng.standard_normal((n_samples, dim + 1))
    S /= np.linalg.norm(S, axis=1, keepdims=True)
    # A random orthonormal frame: the sphere keeps its shape, no axis is special.
    frame, _ = np.linalg.qr(rng.standard_normal((n_features, dim + 1)))
    X = S @ frame.T + noise * rng.standard_normal((n_samples, n_features))
    return X, S


def _too_few_features(n_features: int, dim: int) -> str | None:
    return f"n_features={n_features} must exceed dim={dim} (the sphere needs dim + 1)" if n_features <= dim else None


def _limits(params: dict[str, Any], shape: Shape) -> dict[str, str]:
    problem = _too_few_features(params["n_features"], params["dim"])
    return {"n_features": problem} if problem else {}


def hypersphere(
    rng: np.random.Generator,
    *,
    n_samples: NSamples = 2000,
    dim: Annotated[int, Field(ge=1, le=1000)] = 2,
    n_features: Annotated[int, Field(ge=2, le=10_000)] = 50,
    noise: Annotated[float, Field(ge=0.0)] = 0.05,
) -> Raw:
    """The unit `dim`-sphere, rotated into `n_features` dimensions, with noise; the label is the
    first sphere coordinate (from pole to pole)."""
    X, S = _draw(rng, n_samples, dim, n_features, noise)
    return Raw(X, S[:, 0])


def hypersphere_latent(
    rng: np.random.Generator, *, n_samples: int, dim: int = 2, n_features: int = 50, noise: float = 0.05
) -> Latent:
    """The clean points on the unit sphere (dim + 1 coordinates)."""
    return Latent(_draw(rng, n_samples, dim, n_features, noise)[1], geodesic="sphere")


hypersphere = DATASETS("hypersphere", shape=lambda p: Shape(p["n_samples"], p["n_features"]), limits=_limits)(
    hypersphere
)
LATENTS["hypersphere"] = hypersphere_latent
