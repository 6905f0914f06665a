"""Exact k-nearest-neighbour structure of a dataset and of its embedding, shared by all metrics.

One search per space at the largest k any metric needs (`k_max`); a metric at k <= k_max reads
the first k columns. Neighbours exclude the point itself; ranks count from 1 (the nearest).
"""

from __future__ import annotations

import zlib
from functools import cached_property

import numpy as np

# Elements (float64) of one block of the chunked rank computation, ~32 MB: bounds memory at
# O(chunk * n) whatever n is.
_BLOCK = 1 << 22

# Up to this many dimensions distances are computed from differences, beyond it from a Gram block.
_DIRECT_DIMS = 8


class Neighborhoods:
    """kNN of every point in the data `X` (n, D) and in the embedding `Z` (n, d), at `k_max`
    (0: no search, for suites without kNN metrics).

    `data_idx`, `data_dist`, `emb_idx`, `emb_dist`: (n, k_max) arrays, each row sorted by
    increasing euclidean distance.
    """

    def __init__(self, X, Z, k_max: int, labels=None, seed: int = 0, split=None, reconstruction=None):
        X = _as_points(X, "X (data)")
        Z = _as_points(Z, "Z (embedding)")
        if X.shape[0] != Z.shape[0]:
            raise ValueError(
                f"X (data) has {X.shape[0]} rows but Z (embedding) has {Z.shape[0]}; they must describe the same points"
            )
        if isinstance(k_max, bool) or not isinstance(k_max, (int, np.integer)) or k_max < 0:
            raise ValueError(f"k_max must be a non-negative integer, got {k_max!r}")
        n = X.shape[0]
        if k_max >= n:
            raise ValueError(f"k={k_max} needs at least {k_max + 1} points, the dataset has {n}")
        self.X, self.Z, self.n, self.k_max = X, Z, n, int(k_max)
        # Labels (classes or a coordinate, None if the dataset has none) and the cell's seed,
        # for metrics that need them (silhouette, seeded subsampling).
        self.labels, self.seed = labels, seed
        # Each row's "train"/"test" split and, for methods that can invert, its squared
        # reconstruction error (None otherwise), for metrics that are not about neighbours.
        self.split, self.reconstruction = split, reconstruction
        # What the last metric subsampled (None: every point): the metrics asset records it.
        self.sampled: dict | None = None
        self.data_idx, self.data_dist = _knn(X, self.k_max)
        self.emb_idx, self.emb_dist = _knn(Z, self.k_max)

    def rng(self, purpose: str) -> np.random.Generator:
        """A generator seeded by the cell's seed and the purpose (a metric's name), so one
        metric's draws never depend on what another metric drew."""
        return np.random.default_rng([self.seed, zlib.crc32(purpose.encode())])

    def subsample(self, size: int, purpose: str) -> np.ndarray:
        """Sorted indices of at most `size` points: all of them, or a seeded sample (recorded in
        `sampled`), for metrics that are quadratic in the number of points."""
        if self.n <= size:
            return np.arange(self.n)
        self.sampled = {"points": size, "of": self.n, "seed": self.seed, "stream": purpose}
        return np.sort(self.rng(purpose).choice(self.n, size=size, replace=False))

    def check_k(self, k: int) -> None:
        """ValueError unless the slices at k exist."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got k={k}")
        if k > self.k_max:
            raise ValueError(f"k={k} exceeds k_max={self.k_max} that these neighbourhoods were built with")

    def data_rank(self, rows, cols) -> np.ndarray:
        """Rank of point cols[t] among the data-space neighbours of rows[t] (1 = nearest)."""
        return _rank(self.X, rows, cols)

    def emb_rank(self, rows, cols) -> np.ndarray:
        """Rank of point cols[t] among the embedding-space neighbours of rows[t] (1 = nearest)."""
        return _rank(self.Z, rows, cols)

    @cached_property
    def emb_nbrs_data_rank(self) -> np.ndarray:
        """(n, k_max): data-space rank of each embedding neighbour (what trustworthiness needs)."""
        return self._cross_rank(self.emb_idx, self.data_idx, self.data_rank)

    @cached_property
    def data_nbrs_emb_rank(self) -> np.ndarray:
        """(n, k_max): embedding-space rank of each data neighbour (what continuity needs)."""
        return self._cross_rank(self.data_idx, self.emb_idx, self.emb_rank)

    def _cross_rank(self, idx, other_idx, rank_fn) -> np.ndarray:
        # Neighbours that are also among the other space's k_max nearest take their rank from
        # the kNN lists for free; only the rest need a distance scan. Taking positions from
        # the same lists the metrics slice keeps "rank <= k" identical to "in the first k".
        ranks = positions(idx, other_idx)
        rows, cols = np.nonzero(ranks == 0)
        if rows.size:
            # Beyond the other list by construction; the clamp only matters under exact ties.
            ranks[rows, cols] = np.maximum(rank_fn(rows, idx[rows, cols]), self.k_max + 1)
        return ranks


def _as_points(A, name: str) -> np.ndarray:
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (points x features), got shape {A.shape}")
    if A.shape[0] < 2 or A.shape[1] < 1:
        raise ValueError(f"{name} needs at least 2 points and 1 feature, got shape {A.shape}")
    bad = ~np.isfinite(A).all(axis=1)
    if bad.any():
        raise ValueError(
            f"{name} has non-finite values (NaN or inf) in {int(bad.sum())} rows, "
            f"first at row {int(np.flatnonzero(bad)[0])}"
        )
    return A


def _knn(A: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    if k == 0:  # a suite without kNN metrics pays for no search
        return np.empty((A.shape[0], 0), dtype=np.int64), np.empty((A.shape[0], 0))
    # sklearn and numba (below) are imported on use: registering the metrics must stay cheap.
    from sklearn.neighbors import NearestNeighbors

    idx = NearestNeighbors(n_neighbors=k).fit(A).kneighbors(return_distance=False)
    # sklearn's brute-force path uses |a|^2 - 2ab + |b|^2, which loses the small distances
    # that LID's logarithms depend on; recompute them from differences and re-sort.
    dist = np.empty(idx.shape)
    step = max(1, _BLOCK // (k * A.shape[1]))
    for s in range(0, A.shape[0], step):
        diff = A[idx[s : s + step]] - A[s : s + step, None, :]
        dist[s : s + step] = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    order = np.argsort(dist, axis=1, kind="stable")
    return np.take_along_axis(idx, order, 1), np.take_along_axis(dist, order, 1)


def positions(idx: np.ndarray, other_idx: np.ndarray) -> np.ndarray:
    """1-based position of idx[i, j] in other_idx[i], or 0 if absent (vectorised over rows)."""
    n, k = other_idx.shape
    rows = np.arange(n, dtype=np.int64)[:, None]
    # Tag each index with its row so one global sort/search handles all rows at once.
    keys = (rows * n + other_idx).ravel()
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    query = (rows * n + idx).ravel()
    at = np.minimum(np.searchsorted(sorted_keys, query), sorted_keys.size - 1)
    found = sorted_keys[at] == query
    pos = np.where(found, order[at] % k + 1, 0)
    return pos.reshape(idx.shape).astype(np.int64)


def _rank(A: np.ndarray, rows, cols) -> np.ndarray:
    """1 + number of other points strictly closer to rows[t] than cols[t] is.

    Rows are processed in blocks. For wide data one BLAS product gives a block's inner
    products with every point (O(block * n) memory); for a few dimensions (embeddings) the
    differences are cheaper than writing and reading that block. `count_below` forms each
    row's squared distances and bins them against that row's sorted thresholds (never a sort
    of the row). Thresholds come from the same `sqdist` as the distances they are compared
    with, so a pair's rank is consistent with the other distances of its row, ties included.
    """
    import numba

    from lab_assets.dr.rank_kernels import count_below, thresholds

    rows = np.asarray(rows, dtype=np.int64).ravel()
    cols = np.asarray(cols, dtype=np.int64).ravel()
    if rows.shape != cols.shape:
        raise ValueError(f"rows and cols must have the same length, got {rows.size} and {cols.size}")
    if (rows == cols).any():
        raise ValueError("a point has no rank among its own neighbours (rows[t] == cols[t])")
    n = A.shape[0]
    # Centring shrinks |a|^2 + |b|^2 - 2ab's cancellation error without changing any distance.
    A = A - A.mean(axis=0)
    sq = np.einsum("ij,ij->i", A, A)
    out = np.empty(rows.size, dtype=np.int64)
    order = np.argsort(rows, kind="stable")
    urows, starts = np.unique(rows[order], return_index=True)
    bounds = np.append(starts, rows.size)
    step = max(1, _BLOCK // n)
    direct = A.shape[1] <= _DIRECT_DIMS
    for a in range(0, urows.size, step):
        chunk = urows[a : a + step]
        gram = np.empty((0, 0)) if direct else A[chunk] @ A.T
        pairs = order[bounds[a] : bounds[a + chunk.size]]
        local = np.repeat(np.arange(chunk.size), np.diff(bounds[a : a + chunk.size + 1]))
        threshold = thresholds(A, sq, gram, chunk, local, cols[pairs])
        by_value = np.lexsort((threshold, local))  # sorted within each row's segment
        counts = np.empty(pairs.size, dtype=np.int64)
        seg = bounds[a : a + chunk.size + 1] - bounds[a]
        counts[by_value] = count_below(A, sq, gram, chunk, seg, threshold[by_value], numba.get_num_threads())
        out[pairs] = 1 + counts
    return out


def rank_penalty_score(ranks: np.ndarray, k: int, n: int, metric: str) -> float:
    """Venna & Kaski's score shared by trustworthiness and continuity: 1 minus the normalised
    sum of how far beyond rank k each of a point's k neighbours sits in the other space.

    `ranks` is (n, >=k): the other-space rank of each neighbour. The normaliser is the worst
    case only for k < n/2; beyond it the score would leave [0, 1], so that is refused.
    """
    if 2 * k >= n:
        raise ValueError(f"{metric} needs k < n/2, got k={k} with n={n} points")
    excess = ranks[:, :k] - k
    penalty = int(excess[excess > 0].sum())
    return float(1.0 - penalty * (2.0 / (n * k * (2.0 * n - 3.0 * k - 1.0))))
