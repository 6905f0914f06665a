"""Which datasets carry ground truth (`dr/latents.py`), their latents, and the reason a measure
has no value without them. Apart from `latents.py` so that the dataset modules, which register
their latent functions there, never import what imports them."""

import numpy as np

from lab_assets.dr.datasets import DATASETS
from lab_assets.dr.latents import LATENTS, Latent


def has_latents(dataset: str) -> bool:
    """Whether the registered dataset carries ground truth."""
    DATASETS.names()  # imports every dataset module, so LATENTS is complete
    return dataset in LATENTS


def with_latents() -> list[str]:
    """The datasets that carry ground truth, by name (for messages)."""
    return [name for name in DATASETS.names() if name in LATENTS]


def generate(dataset: str, rng: np.random.Generator, params: dict) -> Latent:
    """The dataset's latent, from the same generator its entry is given."""
    if not has_latents(dataset):
        raise ValueError(
            f"dataset {dataset!r} has no ground-truth latent coordinates; these do: {', '.join(with_latents())}"
        )
    return LATENTS[dataset](rng, **params)


def missing(what: str) -> str:
    """The reason a ground-truth measure or control has no value on a dataset without latents."""
    return (
        f"{what} needs ground-truth latent coordinates, and this dataset has none "
        f"(datasets with them: {', '.join(with_latents())})"
    )
