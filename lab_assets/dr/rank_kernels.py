"""numba kernels of the exact rank computation (`metrics/neighbors._rank`), kept out of the
discovered `metrics` package so that registering the metrics never imports numba; imported on
the first rank query. Compiled with `cache=True`: the first call in a fresh checkout compiles for
a few seconds, later processes load the machine code from `__pycache__`.
"""

import numba
import numpy as np

# Grid cells per threshold in `count_below`: more cells, fewer entries that need comparing.
CELLS_PER_THRESHOLD = 16


@numba.njit(inline="always")
def sqdist(A, sq, gram, r, i, j):  # pragma: no cover - compiled
    """Squared distance of points i and j (i is row r of the block): the one expression both
    thresholds and compared distances use."""
    if gram.shape[1] > 0:
        return (sq[i] + sq[j]) - 2.0 * gram[r, j]
    total = 0.0
    for k in range(A.shape[1]):
        diff = A[i, k] - A[j, k]
        total += diff * diff
    return total


@numba.njit(cache=True)
def thresholds(A, sq, gram, rows, local, cols):  # pragma: no cover - compiled
    out = np.empty(cols.size)
    for t in range(cols.size):
        out[t] = sqdist(A, sq, gram, local[t], rows[local[t]], cols[t])
    return out


@numba.njit(parallel=True, cache=True)
def count_below(A, sq, gram, rows, seg, thr, workers):  # pragma: no cover - compiled
    """For block row r (point rows[r]) and each threshold thr[p] of its segment seg[r]:seg[r+1]
    (sorted), the number of other points j whose squared distance to rows[r] is strictly below
    thr[p].

    Distances are formed here, not in a block-sized temporary, and binned on a uniform grid
    over [smallest, largest threshold] (cell 0 below it, the last cell above it). The grid map
    is monotone, so every entry of a cell before a threshold's cell is below the threshold and
    every entry of a later cell is not: only entries sharing a cell with a threshold need a
    comparison. They are set aside without a branch (always written, the end advanced by the
    cell's flag) and compared afterwards. One branch-free pass per row, no sort: a binary
    search per entry mispredicts at every level and was several times slower.
    """
    out = np.zeros(thr.size, dtype=np.int64)
    n = A.shape[0]
    for w in numba.prange(workers):
        kept = np.empty(n)  # this worker's entries that share a cell with a threshold
        for r in range(w, rows.size, workers):
            s, m = seg[r], seg[r + 1] - seg[r]
            if m == 0:
                continue
            lo, top = thr[s], thr[s + m - 1]
            cells = CELLS_PER_THRESHOLD * m
            scale = (cells - 1) / (top - lo) if top > lo else 0.0
            # Thresholds first[c]:last[c] lie in cell c.
            first = np.full(cells + 2, m, dtype=np.int64)
            last = np.zeros(cells + 2, dtype=np.int64)
            for q in range(m):
                c = cell(thr[s + q], lo, scale, cells)
                if first[c] == m:
                    first[c] = q
                last[c] = q + 1
            flag = (last > 0).astype(np.int64)
            count = np.zeros(cells + 2, dtype=np.int64)
            me, size = rows[r], 0
            for j in range(n):
                x = sqdist(A, sq, gram, r, me, j)
                c = cell(x, lo, scale, cells)
                count[c] += 1
                kept[size] = x
                size += flag[c]
            # The point itself (distance ~0) was binned like any other; take it out again.
            x = sqdist(A, sq, gram, r, me, me)
            c = cell(x, lo, scale, cells)
            count[c] -= 1
            partial = np.zeros(m, dtype=np.int64)  # same-cell entries below each threshold
            if flag[c]:
                for q in range(first[c], last[c]):
                    partial[q] -= x < thr[s + q]
            for t in range(size):
                x = kept[t]
                c = cell(x, lo, scale, cells)
                for q in range(first[c], last[c]):
                    partial[q] += x < thr[s + q]
            below, done = 0, 0
            for q in range(m):
                c = cell(thr[s + q], lo, scale, cells)
                while done < c:
                    below += count[done]
                    done += 1
                out[s + q] = below + partial[q]
    return out


@numba.njit(inline="always")
def cell(x, lo, scale, cells):  # pragma: no cover - compiled
    """Grid cell of a squared distance: 0 below the smallest threshold, cells + 1 far above the
    largest; monotone in x, which is all the counting relies on."""
    return min(max(int((x - lo) * scale) + 1, 0), cells + 1)
