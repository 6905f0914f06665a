"""Datasets registry: one function per dataset, `fn(rng, *, params...) -> Raw`."""

from lab_assets.datasets.raw import Raw
from lab_assets.registry import Registry

DATASETS = Registry("dataset", __name__)

__all__ = ["DATASETS", "Raw"]
