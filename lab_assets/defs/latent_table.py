"""The latent table of a data key: the dataset's ground truth (`dr/latents.py`), in a file beside
the dataset's (`assets/latent/<data key>.parquet`), written the first time a step needs it (the
`true_latent` embedding, a ground-truth metric) and read afterwards.

Not an asset of its own: the dataset's table, data version and cells stay exactly as they were
without it, and it is a function of what the dataset's file is (its entry's version and seed) plus
the latent function's module.
"""

import inspect

from lab_assets.core import lineage, storage
from lab_assets.defs.assets.datasets import GENERATE_STREAM, generated_by, rng
from lab_assets.dr import latents
from lab_assets.dr.sweep import DataConfig


def latent(config: DataConfig) -> latents.Latent | None:
    """The data key's latent (None for a dataset without ground truth)."""
    if not latents.has_latents(config.dataset):
        return None
    path = storage.asset_path("latent", config.key)
    spec = f"{generated_by(config)}|{lineage.module_version(inspect.getsourcefile(latents.LATENTS[config.dataset]))}"
    try:
        df, prov = storage.read_parquet_with_provenance(path)
        if prov.get("generated_by") == spec:
            return latents.Latent.from_table(df, prov["geodesic"])
    except storage.UnreadableFileError:  # missing or damaged: generate it
        pass
    found = latents.generate(config.dataset, rng(config.seed, GENERATE_STREAM), config.params)
    storage.write_parquet(path, found.table(), {"generated_by": spec, "geodesic": found.geodesic})
    return found
