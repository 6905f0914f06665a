"""Datasets registry: one function per dataset, `fn(rng, *, params...) -> Raw`."""

from lab_assets.core.registry import Registry
from lab_assets.dr.datasets.raw import Raw

DATASETS = Registry("dataset", __name__, first="rng")

__all__ = ["DATASETS", "Raw"]
