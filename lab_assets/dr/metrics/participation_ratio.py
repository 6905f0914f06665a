"""Participation ratio: a linear estimate of how many dimensions the points really use.

PR = (sum_i lambda_i)^2 / sum_i lambda_i^2 over the eigenvalues lambda of the covariance matrix.
Range [1, d]: 1 = all variance along one axis, d = variance spread evenly over all d axes.
Measured in the embedding or the data, so one can compare how many directions each keeps.
"""

from typing import Literal

import numpy as np

from lab_assets.dr.metrics import METRICS
from lab_assets.dr.metrics.neighbors import Neighborhoods

# Elements of one block of the Gram product (~32 MB), as in neighbors.py.
_BLOCK = 1 << 22


def ratio(A: np.ndarray, space: str, metric: str = "participation_ratio") -> float:
    """(sum of covariance eigenvalues)^2 / sum of their squares of the points A."""
    A = A - A.mean(axis=0)
    # sum(lambda) = trace(C) and sum(lambda^2) = |C|_F^2, and A^T A and A A^T share their
    # nonzero eigenvalues: no eigensolver needed, and the Gram side is the smaller one. The
    # 1/(n-1) of the covariance cancels in the ratio.
    M = A if A.shape[1] <= A.shape[0] else A.T
    p = M.shape[1]
    trace = float(np.einsum("ij,ij->", M, M))
    if trace == 0:
        raise ValueError(
            f"{metric} is undefined: all {A.shape[0]} points of the {space} space are identical (zero variance)"
        )
    frob2 = 0.0
    step = max(1, _BLOCK // max(p, M.shape[0]))
    for s in range(0, p, step):  # column blocks: never more than a block of the p x p Gram
        g = M.T @ M[:, s : s + step]
        frob2 += float(np.einsum("ij,ij->", g, g))
    return trace**2 / frob2


def participation_ratio(nb: Neighborhoods, *, space: Literal["embedding", "data"] = "embedding") -> float:
    """(sum of covariance eigenvalues)^2 / sum of their squares, in the embedding or the data."""
    return ratio(nb.Z if space == "embedding" else nb.X, space)


participation_ratio = METRICS("participation_ratio", packages=["numpy"], valid_range="[1, inf)", better=None)(
    participation_ratio
)  # descriptive
