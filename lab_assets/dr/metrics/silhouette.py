"""Silhouette score of the dataset's class labels: are the classes separated clusters?

Mean over points of (b - a) / max(a, b), with a = mean distance to the point's own class and
b = mean distance to the nearest other class (euclidean). Range [-1, 1]; 1 = tight, well
separated classes, about 0 = overlapping classes. Measured in the embedding or the data, so one
can see whether the embedding separates the classes more or less than the data does.

Only for datasets with class (integer) labels. O(m^2) in the number of points m, so it uses a
seeded subsample of at most `n_points` points.
"""

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from lab_assets.dr.metrics import METRICS, NotApplicable
from lab_assets.dr.metrics.neighbors import Neighborhoods


def class_labels(nb: Neighborhoods, metric: str = "silhouette") -> np.ndarray:
    """The labels as classes, or ValueError saying why they are not usable as classes."""
    if nb.labels is None:
        raise NotApplicable(f"{metric} needs class labels, but this dataset has no labels")
    labels = np.asarray(nb.labels)
    if labels.shape != (nb.n,):
        raise ValueError(f"{metric}: got labels of shape {labels.shape} for {nb.n} points")
    # Only integers are classes: the dataset asset stores class labels as int64 and continuous
    # ones (a manifold coordinate, say) as float64, which would make every point its own class.
    if not np.issubdtype(labels.dtype, np.integer):
        raise NotApplicable(
            f"{metric} needs class labels, but this dataset has no class labels: its labels "
            f"are {labels.dtype}, not integers (continuous values are not classes)"
        )
    return labels


def silhouette(
    nb: Neighborhoods,
    *,
    space: Literal["embedding", "data"] = "embedding",
    n_points: Annotated[int, Field(ge=3)] = 5000,
) -> float:
    """sklearn's silhouette_score of the class labels, on a seeded subsample of at most
    `n_points` points (the same points in both spaces)."""
    labels = class_labels(nb)
    idx = nb.subsample(n_points, "silhouette")
    A, y = (nb.Z if space == "embedding" else nb.X)[idx], labels[idx]
    n_classes = np.unique(y).size
    # sklearn's own message ("Number of labels is 1. Valid values are 2 to n_samples - 1")
    # does not say which labels or which subsample.
    if n_classes < 2:
        where = "" if idx.size == nb.n else f" among the {idx.size} subsampled points"
        raise ValueError(f"silhouette needs at least 2 classes, the labels have 1{where}")
    if n_classes >= idx.size:
        raise ValueError(f"silhouette needs fewer classes than points: {n_classes} classes for {idx.size} points")
    from sklearn.metrics import silhouette_score  # imported on use: registering the entry must stay cheap

    return float(silhouette_score(A, y, metric="euclidean"))


silhouette = METRICS("silhouette", packages=["scikit-learn", "numpy"], valid_range="[-1, 1]", better="higher")(
    silhouette
)
