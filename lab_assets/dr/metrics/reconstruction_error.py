"""Reconstruction error: how much of the data survives the round trip through the embedding.

For methods that can map an embedding back to data space (PCA, the autoencoder), the mean over
rows of |x - decode(encode(x))|^2, divided by the rows' total variance when `normalized`: 0 =
perfect, 1 = no better than predicting the mean. For PCA this equals the share of variance its
components leave out. Measured on the test split by default: the autoencoder trains on the train
split only, so that is where generalisation shows (PCA is fitted on all rows).
"""

from typing import Literal

import numpy as np

from lab_assets.dr.metrics import METRICS, NotApplicable
from lab_assets.dr.metrics.neighbors import Neighborhoods


def reconstruction_error(
    nb: Neighborhoods, *, split: Literal["test", "train", "all"] = "test", normalized: bool = True
) -> float:
    """Mean squared reconstruction error of the rows in `split` (/ their total variance if normalized)."""
    if nb.reconstruction is None:
        raise NotApplicable("reconstruction_error needs a method that can invert its embedding (pca, autoencoder)")
    rows = np.ones(nb.n, dtype=bool) if split == "all" else np.asarray(nb.split) == split
    if not rows.any():
        raise ValueError(f"reconstruction_error: the dataset has no {split!r} rows")
    error = float(np.mean(np.asarray(nb.reconstruction)[rows]))
    if not normalized:
        return error
    X = nb.X[rows]
    variance = float(((X - X.mean(axis=0)) ** 2).sum(axis=1).mean())
    if variance == 0:
        raise ValueError(f"reconstruction_error: the {split!r} rows are all identical, so normalized error is 0/0")
    return error / variance


reconstruction_error = METRICS("reconstruction_error", packages=["numpy"], valid_range="[0, inf)", better="lower")(
    reconstruction_error
)
