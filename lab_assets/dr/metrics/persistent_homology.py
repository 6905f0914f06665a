"""Persistent homology (Vietoris-Rips, via ripser): how many loops (H1) or clusters (H0) the
point cloud has, and how pronounced they are, summarised as one number.

Computed in the embedding or in the data on the same seeded subsample of at most `n_points`
points (Rips complexes grow fast: H1 on 500 points takes about a second), so the two spaces can
be compared point for point. Summaries of the diagram of dimension `dim`:
- "total_persistence": sum of (death - birth) over its finite features (in distance units);
- "betti": the number of features with persistence > `threshold`, infinite ones included (the
  one H0 component that never dies counts). threshold=None means 10% of the subsample's diameter
  (its largest pairwise distance): scale-free, and independent of what the diagram contains.
"""

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from lab_assets.dr.metrics import METRICS
from lab_assets.dr.metrics.neighbors import Neighborhoods

DEFAULT_THRESHOLD_FRACTION = 0.1


def diagram(A: np.ndarray, dim: int) -> np.ndarray:
    """ripser's persistence diagram of dimension `dim`: (features, 2) birth, death."""
    from ripser import ripser  # imported here: only suites that ask for it pay for the import

    return np.asarray(ripser(A, maxdim=dim)["dgms"][dim], dtype=np.float64)


def persistent_homology(
    nb: Neighborhoods,
    *,
    dim: Literal[0, 1] = 1,
    n_points: Annotated[int, Field(ge=3)] = 500,
    space: Literal["embedding", "data"] = "embedding",
    summary: Literal["betti", "total_persistence"] = "total_persistence",
    threshold: Annotated[float, Field(ge=0)] | None = None,
) -> float:
    """Total persistence or thresholded Betti number of the Rips diagram of dimension `dim`, on
    a seeded subsample of at most `n_points` points (threshold=None: 10% of its diameter)."""
    if summary == "total_persistence" and threshold is not None:
        # Silently ignoring it would make two keys that differ only in threshold look distinct.
        raise ValueError("persistent_homology: threshold applies to summary='betti' only")
    A = (nb.Z if space == "embedding" else nb.X)[nb.subsample(n_points, "persistent_homology")]
    dgm = diagram(A, dim)
    life = dgm[:, 1] - dgm[:, 0]
    if summary == "total_persistence":
        return float(life[np.isfinite(life)].sum())
    if threshold is None:
        from scipy.spatial.distance import pdist  # imported on use: registering the entry must stay cheap

        threshold = DEFAULT_THRESHOLD_FRACTION * float(pdist(A).max())
    return float(np.count_nonzero(life > threshold))


persistent_homology = METRICS(
    "persistent_homology", packages=["ripser", "numpy", "scipy"], valid_range="[0, inf)", better=None
)(persistent_homology)  # descriptive
