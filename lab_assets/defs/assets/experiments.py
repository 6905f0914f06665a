"""model -> embedding: one (data, method) cell each, reading the cell's dataset partition (the
same `cell` key: defs/partitions.py). The cell's metrics: defs/assets/metrics.py.
"""

import base64
import hashlib
import warnings

import dagster as dg
import numpy as np
import pandas as pd

from lab_assets.core import keys, lineage, results_cache, storage
from lab_assets.core.checkpoints import Checkpoint
from lab_assets.defs import asset_checks, cached, inflight, integrity, latent_table, step_versions
from lab_assets.defs.assets.datasets import GENERATE_STREAM, content_version, dataset, features, generated_by, rng
from lab_assets.defs.assets.specs import data_version, method_spec, method_version
from lab_assets.defs.code_links import source_links
from lab_assets.defs.metadata import materialization_metadata
from lab_assets.defs.partitions import CELL
from lab_assets.dr import jit_cache, keystore
from lab_assets.dr.datasets import DATASETS
from lab_assets.dr.methods import true_latent
from lab_assets.dr.sweep import readable_labels

GROUP = "experiments"
CODE_VERSION = step_versions.declared(__name__)  # declared: defs/step_versions.py
# What an embedding table carries besides its coordinates, so it can be plotted on its own.
CARRIED_COLUMNS = ["row", "split", "label"]
# Per-row squared reconstruction error, for methods that can map an embedding back to data space.
RECONSTRUCTION_COLUMN = "recon_sq_error"
# Import-time and deprecation chatter says nothing about the cell's result.
IGNORED_WARNINGS = (ImportWarning, DeprecationWarning, PendingDeprecationWarning)
EMBEDDING_FILE = "embedding.parquet"  # its name in a results cache entry


class BadEmbeddingError(ValueError):
    """A method returned something that is not a finite (n, n_components) array."""


def cell_of(context: dg.AssetExecutionContext) -> tuple[str, str, str]:
    data, method = keys.parse_cell_key(context.partition_key)
    return data, method, keys.cell_key(data, method)


def embedding_coordinates(df: pd.DataFrame) -> np.ndarray:
    return df[[c for c in df.columns if c.startswith("z")]].to_numpy(dtype=np.float64)


CELL_INPUTS = [dataset, method_spec]


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "model",
            deps=CELL_INPUTS,
            skippable=True,  # only trainable methods have one
            group_name=GROUP,
            code_version=CODE_VERSION,
            kinds={"pytorch"},
            description="The trained weights of a trainable method (autoencoder), weights-only; "
            "checkpointed while training and resumed after a crash. Not materialized for other methods.",
        ),
        dg.AssetSpec(
            "embedding",
            deps=["model", *CELL_INPUTS],
            group_name=GROUP,
            code_version=CODE_VERSION,
            kinds={"parquet"},
            description="The method's output on every row of the dataset (z0..z{d-1} plus row, split, "
            "label, and recon_sq_error for invertible methods).",
        ),
    ],
    partitions_def=CELL,
    check_specs=asset_checks.specs("embedding", asset_checks.EMBEDDING_CHECKS),
    # Subsettable, so a cell of a method without a model is requested as `embedding` alone: an
    # asset backfill counts a requested partition that was skipped as failed (Dagster 1.13.22+).
    can_subset=True,
)
def model_and_embedding(context: dg.AssetExecutionContext):
    """Fit the cell's method (training and storing a model where it has one), then embed every
    row. One step: fitting and embedding share the fitted estimator in memory."""
    inflight.claim(context)
    data_key, method_key, cell = cell_of(context)
    data, method = keystore.data_config(data_key), keystore.method_config(method_key)
    entry = method.entry
    table = integrity.read_parquet(storage.asset_path("dataset", data_key))
    trainable = entry.trainable
    if trainable and dg.AssetKey("model") not in context.selected_asset_keys:
        raise ValueError(f"cell {cell}: {method.method} trains a model; select `model` together with `embedding`")
    # A trained model is not kept in the results cache: the embedding of a trainable method is
    # computed with its model, which is materialized too.
    identity = None if trainable else embedding_identity(data, method, table)
    with lineage.timed() as t:
        hit = identity and results_cache.lookup(identity)
    if hit:  # before the estimator is built: building it imports its library (umap: seconds)
        yield _embedding_from_cache(context, hit, cell, data, method, len(table), t)
        return
    X = features(table)
    estimator = entry(data.seed, **method.params)
    jit_cache.keep_compiled_for(estimator)  # umap: compiled once a machine, not once a process
    if method.method == true_latent.NAME and not method.estimator:  # the positive control embeds the truth
        found = latent_table.latent(data, rng(data.seed, GENERATE_STREAM), generated_by(data))
        estimator.latent = None if found is None else found.coords
    with lineage.timed() as t, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if trainable:
            # A checkpoint of other code, parameters or data is never resumed.
            version = f"{method_version(method)}|{data_version(data)}|{CODE_VERSION}"
            checkpoint = Checkpoint(storage.asset_path("model", cell, ".ckpt.pt"), version, estimator.checkpoint_every)
            estimator.fit(X[(table["split"] == "train").to_numpy()], checkpoint=checkpoint)
            Z = estimator.transform(X)
        else:
            Z = estimator.fit_transform(X)
        Z = np.asarray(Z, dtype=np.float64)
    # Library warnings (a disconnected kNN graph, say) belong with the cell they concern.
    notes = sorted(
        {f"{w.category.__name__}: {w.message}" for w in caught if not issubclass(w.category, IGNORED_WARNINGS)}
    )
    for note in notes:
        context.log.warning(note)
    if Z.ndim != 2 or Z.shape[0] != len(X) or not np.isfinite(Z).all():
        raise BadEmbeddingError(
            f"cell {cell}: {method.method} returned shape {Z.shape} with "
            f"{(~np.isfinite(Z)).sum()} non-finite values; expected ({len(X)}, n_components) finite"
        )
    prov = lineage.provenance(
        {"method": method.method, **_estimator(method), **method.params},
        data.seed,
        CODE_VERSION,
        entry.packages,
        lineage.device_used(estimator),
        entry.code_digest,
    )
    if trainable:
        yield _model_result(estimator, cell, prov, t)
    if dg.AssetKey("embedding") not in context.selected_asset_keys:  # `model` alone
        return
    df = table[CARRIED_COLUMNS].copy()
    for j in range(Z.shape[1]):
        df[f"z{j}"] = Z[:, j]
    if entry.invertible:
        df[RECONSTRUCTION_COLUMN] = ((estimator.inverse_transform(Z) - X) ** 2).sum(axis=1)
    path = cached.write_and_keep(
        storage.asset_path("embedding", cell),
        storage.parquet_bytes(df, prov),
        identity,
        EMBEDDING_FILE,
        cached.origin(context, prov),
    )
    yield _embedding_result(context, df, Z, prov, t, path, data, method, len(X), notes, None)


def embedding_identity(data, method, table: pd.DataFrame) -> dict:
    """What an embedding is computed from (its results cache key): this step's code, the method's
    code, libraries and parameters, the seed, and the dataset's contents."""
    return {
        "asset": "embedding",
        "code_version": CODE_VERSION,
        "method": method_version(method),
        "seed": data.seed,
        "dataset": content_version(table).value,
    }


def _embedding_from_cache(context, hit, cell: str, data, method, rows: int, t: lineage.Timing) -> dg.MaterializeResult:
    path, df, prov = cached.restore(hit, EMBEDDING_FILE, storage.asset_path("embedding", cell))
    return _embedding_result(context, df, embedding_coordinates(df), prov, t, path, data, method, rows, [], hit)


def _embedding_result(context, df, Z, prov, t, path, data, method, rows, notes, hit) -> dg.MaterializeResult:
    return dg.MaterializeResult(
        asset_key="embedding",
        metadata={
            "label": cell_label(data, method),
            "scatter": _scatter(context, Z, df["label"]),
            **materialization_metadata(
                prov, t, len(df), path, n_components=Z.shape[1], warnings=dg.MetadataValue.json(notes)
            ),
            **cached.metadata(hit),
            **source_links(method=method.entry, dataset=DATASETS[data.dataset]),
        },
        data_version=content_version(df),
        check_results=asset_checks.check_embedding(Z, rows, method.params.get("n_components")),
    )


def _estimator(method) -> dict[str, str]:
    """The class a method entry names by import path, in its lineage (`estimator:`)."""
    return {"estimator": method.estimator} if method.estimator else {}


def cell_label(data, method, sweeps=None) -> str:
    """`swissroll noise=0.05 seed=0 | umap n_neighbors=15`: the parameters that vary within the
    registered sweeps that contain the cell (the full ones are in `config`)."""
    sweeps = keystore.sweeps_containing(data.key, method.key) if sweeps is None else sweeps
    labels = readable_labels(sweeps)
    return f"{labels.get(data.config_key, data.dataset)} seed={data.seed} | {labels.get(method.key, method.method)}"


def _scatter(context: dg.AssetExecutionContext, Z: np.ndarray, labels: pd.Series) -> dg.MetadataValue | str:
    """The embedding as a small inline PNG (a few KB); a drawing problem never fails the cell."""
    try:
        from lab_assets.dr.thumbnail import scatter_png  # Pillow: imported where a cell is drawn

        encoded = base64.b64encode(scatter_png(Z, labels)).decode()
    except Exception as e:  # noqa: BLE001 - metadata only: the embedding itself is written and checked
        context.log.warning(f"embedding scatter plot not drawn: {type(e).__name__}: {e}")
        return f"not drawn: {type(e).__name__}: {e}"
    coloured = "coloured by label" if labels.notna().any() else "no labels"
    return dg.MetadataValue.md(f"![embedding, {coloured}](data:image/png;base64,{encoded})")


def _model_result(estimator, cell: str, prov: dict, t: lineage.Timing) -> dg.MaterializeResult:
    weights = estimator.weights()
    path = storage.write_bytes(storage.asset_path("model", cell, ".pt"), weights)
    return dg.MaterializeResult(
        asset_key="model",
        metadata=materialization_metadata(
            prov,
            t,
            len(estimator.losses),
            path,
            parameters=estimator.n_parameters,
            epochs=len(estimator.losses),
            resumed_from_epoch=estimator.resumed_from,
            final_loss=float(estimator.losses[-1]),
            loss_curve=dg.MetadataValue.json([round(v, 6) for v in estimator.losses]),
        ),
        data_version=dg.DataVersion(hashlib.sha256(weights).hexdigest()[:16]),
    )
