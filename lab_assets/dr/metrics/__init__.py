"""Metrics registry: one function per metric, `fn(neighborhoods, *, k, ...) -> float`.

Every kNN-based metric receives the same `Neighborhoods` object, which holds one kNN search of
the data and one of the embedding at the largest k any metric asks for; smaller k are slices.
"""

from lab_assets.core.registry import Registry

METRICS = Registry("metric", __name__)


class NotApplicable(ValueError):
    """The metric has no meaning for this cell (silhouette of a dataset without classes, the
    reconstruction error of a method that cannot invert). The metrics asset records the value
    as null together with this reason, instead of failing the cell's other metrics."""
