"""The co-ranking family's shared count (Lee & Verleysen): for each neighbourhood size K, how many
(point, neighbour) pairs are among the K nearest in both spaces.

Q_NX(K) = counts[K - 1] / (K n) is the average share of K data neighbours kept among the K
embedding neighbours (`knn_preservation` at K); R_NX and LCMC rescale it. Two ways to the counts:
from the shared kNN lists for K <= k_max (O(n k_max)), or exactly for every K = 1..n-1 from full
rank rows computed a block at a time (O(n^2 log n) time, O(block * n) memory: never an n x n
matrix), which is allowed up to `EXACT_MAX_POINTS`.
"""

import weakref

import numpy as np

from lab_assets.dr.metrics.neighbors import Neighborhoods, positions

# The exact all-K count sorts n rows of n distances per space: 13 s at 5,000 points (2 loaded cores).
EXACT_MAX_POINTS = 5000
# Elements (float64) of one block of rows x points (~8 MB per array).
_BLOCK = 1 << 20
# Each neighbourhoods' counts at its k_max, while it lives.
_COUNTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def co_neighbours(nb: Neighborhoods, k: int) -> np.ndarray:
    """counts[K - 1] for K = 1..k from the shared kNN lists (k <= nb.k_max). Counted once per
    neighbourhoods at their k_max (a pair is in both K-lists for every K from the larger of its
    two positions on), so rnx, lcmc and rnx_auc at any k share one pass."""
    nb.check_k(k)
    if nb not in _COUNTS:
        # Embedding position (1-based, 0 = absent) of each data neighbour: the pair is in both
        # K-neighbourhoods from K = max(data position, embedding position) on.
        emb_pos = positions(nb.data_idx, nb.emb_idx)
        data_pos = np.broadcast_to(np.arange(1, nb.k_max + 1), emb_pos.shape)
        both = np.maximum(data_pos, emb_pos)[emb_pos > 0]
        _COUNTS[nb] = np.cumsum(np.bincount(both, minlength=nb.k_max + 1)[1:])
    return _COUNTS[nb][:k]


def exact_co_neighbours(X: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """counts[K - 1] for every K = 1..n-1, from the full rank of every pair in both spaces (ties
    broken by point index)."""
    n = X.shape[0]
    if n > EXACT_MAX_POINTS:
        raise ValueError(f"the exact co-ranking counts are limited to {EXACT_MAX_POINTS} points, got {n}")
    hist = np.zeros(n + 1, dtype=np.int64)
    step = max(1, _BLOCK // n)
    for s in range(0, n, step):
        rows = np.arange(s, min(n, s + step))
        both = np.maximum(_row_ranks(X, rows), _row_ranks(Z, rows))
        hist += np.bincount(both.ravel(), minlength=n + 1)
    # Rank 0 is the point itself (in both spaces): not a neighbour.
    return np.cumsum(hist[1:n])


def _row_ranks(A: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """ranks[r, j]: rank of point j among the neighbours of rows[r] (1 = nearest; the point
    itself 0)."""
    from scipy.spatial.distance import cdist  # imported on use: registering the metrics must stay cheap

    d = cdist(A[rows], A, "sqeuclidean")
    d[np.arange(rows.size), rows] = -1.0  # the point itself sorts first
    order = np.argsort(d, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(A.shape[0])[None, :], axis=1)
    return ranks


def rnx_from_counts(counts: np.ndarray, n: int) -> np.ndarray:
    """R_NX(K) for K = 1..len(counts): Q_NX rescaled so that 0 = a random embedding's expected
    overlap and 1 = every neighbourhood kept, ((n - 1) Q_NX(K) - K) / (n - 1 - K)."""
    k = np.arange(1, counts.size + 1)
    q = counts / (k * n)
    return ((n - 1) * q - k) / (n - 1 - k)


def k_at_most_points_minus_two(params: dict, shape) -> dict[str, str]:
    """Limits of R_NX(K): K <= n - 2 (at K = n - 1 every neighbourhood is all the other points)."""
    n, k = shape.points, params.get("k")
    if n is not None and k is not None and k > n - 2:
        return {"k": f"k={k} needs k <= n - 2, the data has n={n} points (so k <= {n - 2})"}
    return {}
