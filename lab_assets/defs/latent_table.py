"""The latent table of a data key: the dataset's ground truth (`dr/latents.py`), in a file beside
the dataset's (`assets/latent/<data key>.parquet`), written the first time a step needs it (the
`true_latent` embedding, a ground-truth metric) and read afterwards.

Not an asset of its own: the dataset's table, data version and cells stay exactly as they were
without it. The file is a function of what the dataset's file is (the step passes the dataset's
`generated_by` and the generator its entry was given) plus what the latent function's code means
(its module and the science modules it imports, `core/canonical.py`).
"""

import numpy as np

from lab_assets.core import canonical, storage
from lab_assets.core.registry import digest
from lab_assets.dr import ground_truth, latents
from lab_assets.dr.sweep import DataConfig

# `assets/latent/<data key>.parquet`: `lab gc` deletes it with its data key's dataset files.
FOLDER = "latent"


def latent(config: DataConfig, rng: np.random.Generator, generated_by: str) -> latents.Latent | None:
    """The data key's latent (None for a dataset without ground truth), from `rng`, the generator
    the dataset's entry is given, when not already on file for the same `generated_by`."""
    if not ground_truth.has_latents(config.dataset):
        return None
    path = storage.asset_path(FOLDER, config.key)
    code = canonical.closure([latents.LATENTS[config.dataset].__module__], ("lab_assets.dr",))
    spec = f"{generated_by}|{digest({m: d for m, (_, d) in code.items()}, length=12)}"
    try:
        df, prov = storage.read_parquet_with_provenance(path)
        if prov.get("generated_by") == spec:
            return latents.Latent.from_table(df, prov["geodesic"])
    except storage.UnreadableFileError:  # missing or damaged: generate it
        pass
    found = ground_truth.generate(config.dataset, rng, config.params)
    storage.write_parquet(path, found.table(), {"generated_by": spec, "geodesic": found.geodesic})
    return found
