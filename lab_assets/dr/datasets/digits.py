"""scikit-learn's bundled copy of the UCI handwritten digits (8x8 images, 1797 samples)."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.core.registry import Shape
from lab_assets.dr.datasets import DATASETS, Raw

N_DIGITS, PIXELS = 1797, 64


@DATASETS("digits", packages=["scikit-learn"], shape=lambda p: Shape(p["n_samples"] or N_DIGITS, PIXELS))
def digits(rng: np.random.Generator, *, n_samples: Annotated[int, Field(ge=10, le=1797)] | None = None) -> Raw:
    """64-d pixel vectors labelled 0-9; ships inside scikit-learn, so nothing is downloaded.
    `n_samples` takes a seeded subsample."""
    from sklearn.datasets import load_digits  # imported on use: registering the entry must stay cheap

    X, y = load_digits(return_X_y=True)
    if n_samples is not None:
        keep = np.sort(rng.choice(len(X), size=n_samples, replace=False))
        X, y = X[keep], y[keep]
    return Raw(X.astype(np.float64), y.astype(np.int64))
