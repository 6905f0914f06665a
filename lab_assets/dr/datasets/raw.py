"""What every dataset function returns."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class Raw(NamedTuple):
    """Features (n, d) and optional labels (n,): integer labels are classes, floats a
    continuous coordinate (e.g. the position along a swiss roll), used to colour figures.
    `X` may be a scipy sparse matrix (kept sparse: the intermediate format's sparse form);
    `names`: the classes' names, label i is names[i] (cell types, for legends and reports)."""

    X: Any
    labels: np.ndarray | None = None
    names: tuple[str, ...] | None = None


# The most a sparse dataset's features may take as a dense float64 matrix (what methods and
# metrics receive): beyond it the data is refused at plan time (docs/single-cell.md).
DENSE_LIMIT_GIB = 4.0


def dense_gib(rows: int, columns: int) -> float:
    return rows * columns * 8 / (1 << 30)


def sklearn_random_state(rng: np.random.Generator) -> np.random.RandomState:
    # sklearn's generators take a legacy RandomState; derive one from the cell's Generator so
    # the seed still flows explicitly from the sweep file and no global state is touched.
    return np.random.RandomState(rng.integers(2**32 - 1, dtype=np.uint64))
