"""Metrics registry: one function per metric, `fn(neighborhoods, *, k, ...) -> float`.

Every kNN-based metric receives the same `Neighborhoods` object, which holds one kNN search of
the data and one of the embedding at the largest k any metric asks for; smaller k are slices.
A metric module registers its function by a call after it (`name = METRICS("name", ...)(name)`),
not with decorator syntax: mutmut does not mutate decorated functions (docs/mutation-testing.md).
"""

from typing import Any

from lab_assets.core.registry import Registry, Shape

# Every metric receives the shared kNN code (`nb`): part of each column's version (`specs.column_version`),
# not of each metric's own.
METRICS = Registry("metric", __name__, first="nb", receives=("lab_assets.dr.metrics.neighbors",))


def k_below_points(params: dict[str, Any], shape: Shape) -> dict[str, str]:
    """Limits: k neighbours of a point need k + 1 points (the kNN search is shared)."""
    n, k = shape.points, params.get("k")
    if n is not None and k is not None and k >= n:
        return {"k": f"k={k} needs at least {k + 1} points, the data has {n}"}
    return {}


def k_below_half_points(params: dict[str, Any], shape: Shape) -> dict[str, str]:
    """Limits of Venna & Kaski's rank scores (trustworthiness, continuity): k < n/2."""
    n, k = shape.points, params.get("k")
    if n is not None and k is not None and 2 * k >= n:
        return {"k": f"k={k} needs k < n/2, the data has n={n} points (so k <= {(n - 1) // 2})"}
    return {}


class NotApplicable(ValueError):
    """The metric has no meaning for this cell (silhouette of a dataset without classes, the
    reconstruction error of a method that cannot invert). The metrics asset records the value
    as null together with this reason, instead of failing the cell's other metrics."""
