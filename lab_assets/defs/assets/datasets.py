"""raw_dataset -> dataset: the one true intermediate format.

`dataset` is a Parquet table with a fixed schema: `row` (int64 id), `split` ("train"/"test",
decided here once, seeded), `label` (int64 classes, float64 coordinate, or all-null), and the
features `x0..x{d-1}` (float64). Every downstream asset reads this table, never the raw one.

Both assets are partitioned by cell (defs/partitions.py) and stored by the cell's data key: the
cells of one dataset config and seed write and read the same deterministic file.
"""

import hashlib

import dagster as dg
import numpy as np
import pandas as pd

from lab_assets.core import keys, lineage, storage
from lab_assets.defs import checks, inflight, integrity, step_versions
from lab_assets.defs.assets.specs import data_spec, data_version
from lab_assets.defs.metadata import materialization_metadata
from lab_assets.defs.partitions import CELL
from lab_assets.dr import keystore
from lab_assets.dr.datasets import DATASETS, Raw

GROUP = "datasets"
CODE_VERSION = step_versions.declared(__name__)  # declared: defs/step_versions.py
TEST_FRACTION = 0.2
# Independent RNG streams per purpose, from the one seed in the data key: adding a draw to the
# generator never shifts the split, and vice versa.
GENERATE_STREAM, SPLIT_STREAM = 0, 1


class BadDataError(ValueError):
    """Data that no method should see (NaN/inf, too few rows, no features)."""


def rng(seed: int, stream: int) -> np.random.Generator:
    return np.random.default_rng([seed, stream])


def features(df: pd.DataFrame) -> np.ndarray:
    return df[[c for c in df.columns if c.startswith("x")]].to_numpy(dtype=np.float64)


def label_kind(labels: pd.Series) -> str:
    if labels.isna().all():
        return "none"
    return "class" if pd.api.types.is_integer_dtype(labels) else "continuous"


def content_version(df: pd.DataFrame) -> dg.DataVersion:
    """Data version from the table's values, so an unchanged output does not stale its users."""
    h = hashlib.sha256(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    h.update(",".join(df.columns).encode())
    return dg.DataVersion(h.hexdigest()[:16])


def raw_frame(raw: Raw, key: str) -> pd.DataFrame:
    X = np.asarray(raw.X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
        raise BadDataError(f"data {key}: expected a (rows >= 2, features >= 1) array, got shape {X.shape}")
    bad_rows = ~np.isfinite(X).all(axis=1)
    if bad_rows.any():
        cols = [f"x{j}" for j in np.flatnonzero(~np.isfinite(X).all(axis=0))]
        raise BadDataError(
            f"data {key}: {bad_rows.sum()} of {len(X)} rows have NaN/inf features "
            f"(columns {', '.join(cols)}); clean or drop them before use"
        )
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    if raw.labels is None:
        df.insert(0, "label", np.full(len(df), np.nan))
    else:
        labels = np.asarray(raw.labels)
        if labels.shape != (len(X),):
            raise BadDataError(f"data {key}: {labels.shape} labels for {len(X)} rows")
        df.insert(0, "label", labels.astype(np.int64 if np.issubdtype(labels.dtype, np.integer) else np.float64))
    df.insert(0, "row", np.arange(len(df), dtype=np.int64))
    return df


def generated_by(config) -> str:
    """What a data key's files are a function of: its dataset's version (code, libraries,
    parameters, a user file's content), its seed, and this module."""
    return f"{data_version(config)}|{CODE_VERSION}"


def stored(path: str, spec: str) -> pd.DataFrame | None:
    """The data key's file, if another cell's run already wrote it from the same `spec` (a data
    key's cells share one file): recorded again, not generated again. None: generate it."""
    try:
        if storage.parquet_provenance(path).get("generated_by") != spec:
            return None
        return storage.read_parquet(path)
    except storage.UnreadableFileError:  # missing or damaged: generate it
        return None


def _materialize(
    df: pd.DataFrame, asset: str, key: str, prov: dict, timing: lineage.Timing, checks=(), reused=False, **extra
) -> dg.MaterializeResult:
    # A reused file stays as it is: the same bytes for every cell of the data key.
    path = storage.asset_path(asset, key) if reused else storage.write_parquet(storage.asset_path(asset, key), df, prov)
    extra["reused"] = "the file another cell of this data key wrote (same data version)" if reused else "no: generated"
    return dg.MaterializeResult(
        metadata=materialization_metadata(prov, timing, len(df), path, **extra),
        data_version=content_version(df),
        check_results=list(checks),
    )


def data_key(context: dg.AssetExecutionContext) -> str:
    return keys.parse_cell_key(context.partition_key)[0]


@dg.asset(partitions_def=CELL, deps=[data_spec], group_name=GROUP, code_version=CODE_VERSION, kinds={"parquet"})
def raw_dataset(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """The dataset as generated, bundled or read from the user's file, before any splitting."""
    inflight.claim(context)
    key = data_key(context)
    config = keystore.data_config(key)
    entry = DATASETS[config.dataset]
    spec = generated_by(config)
    with lineage.timed() as t:
        df = stored(storage.asset_path("raw_dataset", key), spec)
        reused = df is not None
        if not reused:
            df = raw_frame(entry(rng(config.seed, GENERATE_STREAM), **config.params), key)
    prov = lineage.provenance(
        {"dataset": config.dataset, **config.params},
        config.seed,
        CODE_VERSION,
        entry.packages,
        code_digest=entry.code_digest,
    )
    prov["generated_by"] = spec
    return _materialize(df, "raw_dataset", key, prov, t, reused=reused, n_features=df.shape[1] - 2)


@dg.asset(
    partitions_def=CELL,
    deps=[raw_dataset],
    group_name=GROUP,
    code_version=CODE_VERSION,
    kinds={"parquet"},
    check_specs=checks.specs("dataset", checks.DATASET_CHECKS),
)
def dataset(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """The intermediate: raw rows plus the seeded train/test split, schema in the metadata."""
    key = data_key(context)
    config = keystore.data_config(key)
    spec = generated_by(config)
    with lineage.timed() as t:
        df = stored(storage.asset_path("dataset", key), spec)
        reused = df is not None
        if not reused:
            df = integrity.read_parquet(storage.asset_path("raw_dataset", key))
            n_test = int(round(TEST_FRACTION * len(df)))
            split = np.full(len(df), "train", dtype=object)
            split[rng(config.seed, SPLIT_STREAM).permutation(len(df))[:n_test]] = "test"
            df.insert(1, "split", split)
        raw_rows = len(df)
    prov = lineage.provenance({"dataset": config.dataset, **config.params}, config.seed, CODE_VERSION)
    prov["generated_by"] = spec
    counts = df["split"].value_counts()
    quirks = data_quirks(df)
    for what, value in quirks.items():
        if value:
            context.log.warning(f"data {key}: {what} = {value} (kept; see the dataset's metadata)")
    return _materialize(
        df,
        "dataset",
        key,
        prov,
        t,
        checks=checks.check_dataset(df, raw_rows),
        reused=reused,
        schema=dg.TableSchema(columns=[dg.TableColumn(c, str(df[c].dtype)) for c in df.columns]),
        n_features=df.shape[1] - 3,
        label_kind=label_kind(df["label"]),
        train_rows=int(counts.get("train", 0)),
        test_rows=int(counts.get("test", 0)),
        constant_columns=dg.MetadataValue.json(quirks["constant_columns"]),
        duplicate_rows=quirks["duplicate_rows"],
    )


def data_quirks(df: pd.DataFrame) -> dict:
    """Legal but surprising properties, recorded rather than refused: a constant column changes
    no distance (methods that standardise treat its spread as 1), and duplicate rows are points
    at distance 0 (LID is then recorded as not applicable)."""
    cols = [c for c in df.columns if c.startswith("x")]
    return {
        "constant_columns": [c for c in cols if df[c].nunique(dropna=False) <= 1],
        "duplicate_rows": int(df.duplicated(subset=cols).sum()),
    }
