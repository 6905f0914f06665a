"""What every dataset function returns."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Raw(NamedTuple):
    """Features (n, d) and optional labels (n,): integer labels are classes, floats a
    continuous coordinate (e.g. the position along a swiss roll), used to colour figures."""

    X: np.ndarray
    labels: np.ndarray | None = None


def sklearn_random_state(rng: np.random.Generator) -> np.random.RandomState:
    # sklearn's generators take a legacy RandomState; derive one from the cell's Generator so
    # the seed still flows explicitly from the sweep file and no global state is touched.
    return np.random.RandomState(rng.integers(2**32 - 1, dtype=np.uint64))
