"""Spearman correlation of pairwise distances: do far-apart points stay far apart?

The rank correlation between the data-space and the embedding-space euclidean distance over
point pairs: a global measure (dominated by the many large distances) that, unlike stress, does
not care about scale or any monotone distortion. Range [-1, 1]; 1 = the embedding orders all
pairs by distance exactly as the data does.

Pairs are a seeded sample of `n_pairs` distinct unordered pairs i != j (all pairs when there are
no more than `n_pairs`), so memory is O(n_pairs), never O(n^2).
"""

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.dr.metrics import METRICS
from lab_assets.dr.metrics.neighbors import Neighborhoods

# Elements of one block of pair differences (~32 MB), as in neighbors.py.
_BLOCK = 1 << 22


def pair_indices(n: int, n_pairs: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) with i < j: every pair when n(n-1)/2 <= n_pairs, else a seeded sample of distinct
    pairs drawn uniformly without replacement."""
    total = n * (n - 1) // 2
    if n_pairs >= total:
        i, j = np.triu_indices(n, 1)
        return i.astype(np.int64), j.astype(np.int64)
    # Drawing positions in the strict upper triangle (row-major, as triu_indices/pdist order
    # it) makes pairs distinct and i != j by construction, with no rejection loop.
    p = np.sort(rng.choice(total, size=n_pairs, replace=False))
    return triangle_pair(p, n)


def triangle_pair(p: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of position p in the row-major strict upper triangle of an n x n matrix."""
    p = np.asarray(p, dtype=np.int64)
    b = 2 * n - 1
    i = np.floor((b - np.sqrt(float(b) ** 2 - 8.0 * p)) / 2).astype(np.int64)
    # The square root can round one row off at row boundaries: correct with exact integers.
    i -= start(i, n) > p
    i += start(i + 1, n) <= p
    return i, p - start(i, n) + i + 1


def start(i: np.ndarray, n: int) -> np.ndarray:
    """Position of the first pair (i, i+1) of row i."""
    return i * (2 * n - i - 1) // 2


def pair_distances(A: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    out = np.empty(i.size)
    step = max(1, _BLOCK // A.shape[1])
    for s in range(0, i.size, step):
        diff = A[i[s : s + step]] - A[j[s : s + step]]
        out[s : s + step] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    return out


def sampled_pairs(nb: Neighborhoods, n_pairs: int, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """The metric's seeded sample of pairs (every pair when there are no more than n_pairs),
    recorded in `nb.sampled` when it is a sample."""
    if nb.n < 3:
        raise ValueError(f"{metric} needs at least 3 points (2 pairs), got {nb.n}")
    i, j = pair_indices(nb.n, n_pairs, nb.rng(metric))
    if i.size < nb.n * (nb.n - 1) // 2:
        nb.sampled = {"pairs": int(i.size), "of": nb.n * (nb.n - 1) // 2, "seed": nb.seed}
    return i, j


def refuse_constant(d: np.ndarray, space: str, metric: str, what: str = "sampled pair distances") -> None:
    """A correlation with a constant is undefined (scipy would warn and return nan): say so."""
    if d.min() == d.max():
        raise ValueError(f"{metric} is undefined: all {d.size} {what} of the {space} space are equal ({d[0]:g})")


def sampled_distances(
    nb: Neighborhoods, n_pairs: int, metric: str, constant_is_undefined: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Data and embedding distances of the metric's sample of pairs."""
    i, j = sampled_pairs(nb, n_pairs, metric)
    dx, dz = pair_distances(nb.X, i, j), pair_distances(nb.Z, i, j)
    if constant_is_undefined:
        for d, space in [(dx, "data"), (dz, "embedding")]:
            refuse_constant(d, space, metric)
    return dx, dz


def spearman_distance_correlation(nb: Neighborhoods, *, n_pairs: Annotated[int, Field(ge=2)] = 20000) -> float:
    """Spearman rank correlation of data vs embedding distances over a seeded sample of pairs."""
    dx, dz = sampled_distances(nb, n_pairs, "spearman_distance_correlation", constant_is_undefined=True)
    from scipy.stats import spearmanr  # imported on use: registering the entry must stay cheap

    return float(spearmanr(dx, dz).statistic)


spearman_distance_correlation = METRICS(
    "spearman_distance_correlation", packages=["numpy", "scipy"], valid_range="[-1, 1]", better="higher"
)(spearman_distance_correlation)
