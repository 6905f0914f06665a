"""Methods registry: one function per method, `fn(seed, *, params...) -> estimator`.

The estimator follows scikit-learn's contract (`fit_transform`), seeded with the cell's seed.
"""

from lab_assets.core.registry import Registry

METHODS = Registry("method", __name__)
