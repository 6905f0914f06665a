"""Metrics registry: one function per metric, `fn(neighborhoods, *, k, ...) -> float`.

Every kNN-based metric receives the same `Neighborhoods` object, which holds one kNN search of
the data and one of the embedding at the largest k any metric asks for; smaller k are slices.
"""

from lab_assets.registry import Registry

METRICS = Registry("metric", __name__)
