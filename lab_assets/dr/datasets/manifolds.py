"""Synthetic manifolds with a known intrinsic coordinate (the label colours it)."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.core.registry import Shape
from lab_assets.dr.datasets import DATASETS, Raw
from lab_assets.dr.datasets.raw import sklearn_random_state

NSamples = Annotated[int, Field(ge=10, le=10_000_000)]
Noise = Annotated[float, Field(ge=0.0)]


def _in_3d(params: dict) -> Shape:
    return Shape(params["n_samples"], 3)


@DATASETS("swissroll", packages=["scikit-learn"], shape=_in_3d)
def swissroll(rng: np.random.Generator, *, n_samples: NSamples = 2000, noise: Noise = 0.0) -> Raw:
    """A 2-d sheet rolled up in 3-d; the label is the position along the roll."""
    # sklearn is imported on use (here and below): registering the entries must stay cheap.
    from sklearn import datasets as skd

    X, t = skd.make_swiss_roll(n_samples, noise=noise, random_state=sklearn_random_state(rng))
    return Raw(X, t)


@DATASETS("s_curve", packages=["scikit-learn"], shape=_in_3d)
def s_curve(rng: np.random.Generator, *, n_samples: NSamples = 2000, noise: Noise = 0.0) -> Raw:
    """A 2-d sheet bent into an S in 3-d; the label is the position along the S."""
    from sklearn import datasets as skd

    X, t = skd.make_s_curve(n_samples, noise=noise, random_state=sklearn_random_state(rng))
    return Raw(X, t)


@DATASETS("torus", shape=_in_3d)
def torus(
    rng: np.random.Generator,
    *,
    n_samples: NSamples = 2000,
    major_radius: Annotated[float, Field(gt=0)] = 3.0,
    minor_radius: Annotated[float, Field(gt=0)] = 1.0,
    noise: Noise = 0.0,
) -> Raw:
    """A 2-d torus in 3-d (it has a hole, so no 2-d embedding is faithful); the label is the
    angle around the z axis (the position along the ring)."""
    u, v = rng.uniform(0, 2 * np.pi, size=(2, n_samples))
    ring = major_radius + minor_radius * np.cos(v)
    X = np.column_stack([ring * np.cos(u), ring * np.sin(u), minor_radius * np.sin(v)])
    X += noise * rng.standard_normal(X.shape)
    return Raw(X, u)


@DATASETS("gaussian_blobs", packages=["scikit-learn"], shape=lambda p: Shape(p["n_samples"], p["n_features"]))
def gaussian_blobs(
    rng: np.random.Generator,
    *,
    n_samples: NSamples = 2000,
    n_features: Annotated[int, Field(ge=2, le=10_000)] = 10,
    centers: Annotated[int, Field(ge=1, le=1000)] = 5,
    cluster_std: Annotated[float, Field(gt=0)] = 1.0,
) -> Raw:
    """Isotropic Gaussian clusters; the label is the cluster."""
    from sklearn import datasets as skd

    X, y = skd.make_blobs(
        n_samples,
        n_features=n_features,
        centers=centers,
        cluster_std=cluster_std,
        random_state=sklearn_random_state(rng),
    )
    return Raw(X, y.astype(np.int64))
