"""What a cell's W&B run costs now (`defs/tracked.track`: flat config, the embedding image, the
embedding artifact by reference, a stable run id) against the logging before issue 43 (config
and metric values only, a random id), measured in the same process, alternating, offline, on a
2,000-point embedding and its dataset. Prints JSON: medians in ms and the difference.

    python benchmarks/wandb_cell.py [CELLS]
"""

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main(cells: int) -> dict:
    home = Path(tempfile.mkdtemp(prefix="wandb-bench-"))
    os.environ["LAB_HOME"] = str(home)
    os.environ.pop("LAB_WANDB", None)
    os.environ.pop("LAB_STORAGE_URL", None)
    import numpy as np
    import pandas as pd
    import wandb

    from lab_assets.core import storage, tracking
    from lab_assets.defs import tracked
    from lab_assets.dr.sweep import DataConfig, MethodConfig

    rng = np.random.default_rng(0)
    values = {f"trustworthiness@k={k}": float(rng.random()) for k in (10, 30)} | {"lid@k=10": 2.0}

    def before(cell: str, data: DataConfig, method: MethodConfig) -> None:
        """`core/tracking.track_cell` as it was at 171c77e (before issue 43)."""
        config = {"partition": cell, "data": data.__dict__, "method": method.__dict__, "seed": data.seed}
        run = wandb.init(
            project="bench",
            group="bench",
            name=cell,
            tags=["bench"],
            config=config,
            mode="offline",
            dir=str(home / "wandb"),
            reinit="finish_previous",
            settings=wandb.Settings(**tracking.SETTINGS),
        )
        run.log(values)
        run.summary.update(values)
        run.finish()

    (home / "wandb").mkdir(parents=True, exist_ok=True)
    wandb.setup()
    times: dict[str, list[float]] = {"before": [], "now": []}
    for i in range(cells + 2):  # the first two of each warm up (imports, the service)
        data = DataConfig("swissroll", {"n_samples": 2000, "noise": 0.05}, i)
        method = MethodConfig("umap", {"n_neighbors": 15})
        cell = f"{data.key}|{method.key}"
        frame = pd.DataFrame(rng.normal(size=(2000, 3)), columns=["x0", "x1", "x2"]).assign(label=rng.random(2000))
        emb = pd.DataFrame(rng.normal(size=(2000, 2)), columns=["z0", "z1"]).assign(label=frame["label"])
        storage.write_parquet(storage.asset_path("dataset", data.key), frame, {})
        storage.write_parquet(storage.asset_path("embedding", cell), emb, {})
        for name in ("before", "now") if i % 2 else ("now", "before"):
            start = time.perf_counter()
            if name == "before":
                before(cell, data, method)
            else:
                meta = tracked.track(cell, data, method, [], values, emb, "0" * 40)
                assert "wandb_error" not in meta, meta
            if i >= 2:
                times[name].append(time.perf_counter() - start)
    medians = {k: statistics.median(v) * 1000 for k, v in times.items()}
    return {
        "cells": cells,
        "median_before_ms": round(medians["before"], 1),
        "median_now_ms": round(medians["now"], 1),
        "difference_ms": round(medians["now"] - medians["before"], 1),
        "load": os.getloadavg(),
    }


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)))
