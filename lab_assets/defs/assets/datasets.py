"""raw_dataset -> dataset: the one true intermediate format.

`dataset` is a Parquet table with a fixed schema: `row` (int64 id), `split` ("train"/"test",
decided here once, seeded), `label` (int64 classes, float64 coordinate, or all-null), then
`label_name` (categorical: the name of each row's class, categories in class-id order) only when
the dataset names its classes, and the features: dense, `x0..x{d-1}` (float64); or sparse (a
dataset that returns a scipy sparse matrix), one CSR row per table row, `x_indices` (list<int32>,
ascending), `x_values` (list<float64>) and `x_width` (int32, d on every row). Every downstream
asset reads this table, never the raw one (docs/single-cell.md, "The intermediate format").

Both assets are partitioned by cell (defs/partitions.py) and stored by the cell's data key: the
cells of one dataset config and seed write and read the same deterministic file.
"""

import hashlib
from base64 import b64encode

import dagster as dg
import numpy as np
import pandas as pd

from lab_assets.core import keys, lineage, storage
from lab_assets.defs import asset_checks, inflight, integrity, step_versions
from lab_assets.defs.assets.specs import data_spec, data_version
from lab_assets.defs.metadata import materialization_metadata
from lab_assets.defs.partitions import CELL
from lab_assets.dr import keystore
from lab_assets.dr.datasets import DATASETS, Raw
from lab_assets.dr.datasets.raw import DENSE_LIMIT_GIB, dense_gib

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


SPARSE_COLUMNS = ["x_indices", "x_values", "x_width"]
LABEL_NAME = "label_name"


def is_sparse(df: pd.DataFrame) -> bool:
    return SPARSE_COLUMNS[0] in df.columns


def feature_columns(df: pd.DataFrame) -> list[str]:
    return SPARSE_COLUMNS if is_sparse(df) else [c for c in df.columns if c.startswith("x")]


def n_features(df: pd.DataFrame) -> int:
    if is_sparse(df):
        return int(df["x_width"].iloc[0]) if len(df) else 0
    return len(feature_columns(df))


def sparse_features(df: pd.DataFrame):
    """The sparse form's features as a scipy CSR matrix (n, d)."""
    from scipy import sparse

    lengths = df["x_indices"].map(len).to_numpy()
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.concatenate([*df["x_indices"], np.empty(0, np.int32)]).astype(np.int32)
    values = np.concatenate([*df["x_values"], np.empty(0)]).astype(np.float64)
    return sparse.csr_matrix((values, indices, indptr), shape=(len(df), n_features(df)))


def features(df: pd.DataFrame) -> np.ndarray:
    """The features as methods and metrics receive them: dense float64. A sparse table within
    DENSE_LIMIT_GIB is densified here (the plan refuses larger ones: reduce them in the data entry)."""
    if not is_sparse(df):
        return df[feature_columns(df)].to_numpy(dtype=np.float64)
    size = dense_gib(len(df), n_features(df))
    if size > DENSE_LIMIT_GIB:
        raise BadDataError(
            f"sparse features {len(df)} x {n_features(df)} would be {size:.1f} GiB dense, over the "
            f"{DENSE_LIMIT_GIB:g} GiB limit; reduce them in the data entry (n_pcs) or read an obsm key"
        )
    return sparse_features(df).toarray()


def label_kind(labels: pd.Series) -> str:
    if labels.isna().all():
        return "none"
    return "class" if pd.api.types.is_integer_dtype(labels) else "continuous"


def content_version(df: pd.DataFrame) -> dg.DataVersion:
    """Data version from the table's values, so an unchanged output does not stale its users."""
    lists = [c for c in SPARSE_COLUMNS[:2] if c in df.columns]  # arrays per row: hashed as one array each
    flat = df.drop(columns=lists) if lists else df  # drop copies the frame: most tables have no arrays
    h = hashlib.sha256(pd.util.hash_pandas_object(flat, index=False).to_numpy().tobytes())
    for c in lists:
        h.update(df[c].map(len).to_numpy(dtype=np.int64).tobytes())
        h.update(np.concatenate([*df[c], np.empty(0, df[c].iloc[0].dtype if len(df) else np.float64)]).tobytes())
    h.update(",".join(df.columns).encode())
    return dg.DataVersion(h.hexdigest()[:16])


def raw_frame(raw: Raw, key: str) -> pd.DataFrame:
    from scipy import sparse

    X = sparse.csr_matrix(raw.X, dtype=np.float64) if sparse.issparse(raw.X) else np.asarray(raw.X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
        raise BadDataError(f"data {key}: expected a (rows >= 2, features >= 1) array, got shape {X.shape}")
    finite = np.isfinite(X.data if sparse.issparse(X) else X)
    if not finite.all():
        _refuse_non_finite(X, finite, key)
    df = _sparse_frame(X) if sparse.issparse(X) else pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    if raw.labels is None:
        df.insert(0, "label", np.full(len(df), np.nan))
    else:
        labels = np.asarray(raw.labels)
        if labels.shape != (X.shape[0],):
            raise BadDataError(f"data {key}: {labels.shape} labels for {X.shape[0]} rows")
        df.insert(0, "label", labels.astype(np.int64 if np.issubdtype(labels.dtype, np.integer) else np.float64))
    if raw.names is not None:
        df.insert(1, LABEL_NAME, _label_names(df["label"], raw.names, key))
    df.insert(0, "row", np.arange(len(df), dtype=np.int64))
    return df


def _refuse_non_finite(X, finite: np.ndarray, key: str):
    from scipy import sparse

    if sparse.issparse(X):  # the stored values of each row: a row is bad when one of them is
        bad = X.copy()
        bad.data = (~finite).astype(np.float64)
        bad.eliminate_zeros()
        bad_rows, bad_cols = np.flatnonzero(bad.getnnz(axis=1)), np.unique(bad.indices)
    else:
        bad_rows, bad_cols = np.flatnonzero(~finite.all(axis=1)), np.flatnonzero(~finite.all(axis=0))
    cols = [f"x{j}" for j in bad_cols]
    raise BadDataError(
        f"data {key}: {len(bad_rows)} of {X.shape[0]} rows have NaN/inf features "
        f"(columns {', '.join(cols)}); clean or drop them before use"
    )


def _sparse_frame(X) -> pd.DataFrame:
    """The sparse form of a CSR matrix: each row's column ids and values, and the width d."""
    X = X.copy()
    X.sum_duplicates()  # canonical: ascending, unique column ids per row
    rows = np.split(np.arange(X.nnz), X.indptr[1:-1])
    return pd.DataFrame(
        {
            "x_indices": [X.indices[r].astype(np.int32) for r in rows],
            "x_values": [X.data[r] for r in rows],
            "x_width": np.full(X.shape[0], X.shape[1], dtype=np.int32),
        }
    )


def _label_names(labels: pd.Series, names: tuple[str, ...], key: str) -> pd.Categorical:
    """Each row's class name: categories in class-id order, so `label_name.cat.codes == label`."""
    if not pd.api.types.is_integer_dtype(labels) or labels.min() < 0 or labels.max() >= len(names):
        raise BadDataError(f"data {key}: class names given for labels that are not class ids 0..{len(names) - 1}")
    if len(set(names)) != len(names):
        raise BadDataError(f"data {key}: class names are not unique: {list(names)}")
    return pd.Categorical.from_codes(labels.to_numpy(), categories=list(names))


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
    return _materialize(df, "raw_dataset", key, prov, t, reused=reused, n_features=n_features(df))


@dg.asset(
    partitions_def=CELL,
    deps=[raw_dataset],
    group_name=GROUP,
    code_version=CODE_VERSION,
    kinds={"parquet"},
    check_specs=asset_checks.specs("dataset", asset_checks.DATASET_CHECKS),
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
    if LABEL_NAME in df:  # class i's name, read from the file's footer alone (the report's legend)
        prov["label_names"] = list(df[LABEL_NAME].cat.categories)
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
        checks=asset_checks.check_dataset(df, raw_rows),
        reused=reused,
        schema=dg.TableSchema(columns=[dg.TableColumn(c, column_type(df, c)) for c in df.columns]),
        n_features=n_features(df),
        features="sparse (CSR rows: x_indices, x_values, x_width)" if is_sparse(df) else "dense (x0..x{d-1})",
        label_kind=label_kind(df["label"]),
        **_names(context, df),
        train_rows=int(counts.get("train", 0)),
        test_rows=int(counts.get("test", 0)),
        constant_columns=dg.MetadataValue.json(quirks["constant_columns"]),
        duplicate_rows=quirks["duplicate_rows"],
    )


def with_names(table: pd.DataFrame, key: str) -> pd.DataFrame:
    """A table of data key `key`'s rows (an embedding) with `label_name` beside its class ids,
    where the dataset names its classes (from the dataset file's footer alone)."""
    try:
        names = storage.parquet_provenance(storage.asset_path("dataset", key)).get("label_names")
    except storage.UnreadableFileError:  # missing or damaged: drawn without names
        return table
    if names is None:
        return table
    return table.assign(**{LABEL_NAME: pd.Categorical.from_codes(table["label"].to_numpy(np.int64), names)})


def _names(context: dg.AssetExecutionContext, df: pd.DataFrame) -> dict:
    """The classes' names (cell types) and the colour key of every scatter of this data, in the
    UI (nothing for data without names)."""
    if LABEL_NAME not in df:
        return {}
    names = list(df[LABEL_NAME].cat.categories)
    try:
        from lab_assets.dr.thumbnail import colour_key_png  # Pillow: only where there are names

        png = colour_key_png(df["label"], names)
    except Exception as e:  # noqa: BLE001 - metadata only: the dataset itself is written and checked
        context.log.warning(f"colour key not drawn: {type(e).__name__}: {e}")
        png = None
    out = {"label_names": dg.MetadataValue.json(names)}
    if png is not None:
        out["label_colours"] = dg.MetadataValue.md(f"![colour key](data:image/png;base64,{b64encode(png).decode()})")
    return out


def data_quirks(df: pd.DataFrame) -> dict:
    """Legal but surprising properties, recorded rather than refused: a constant column changes
    no distance (methods that standardise treat its spread as 1), and duplicate rows are points
    at distance 0 (LID is then recorded as not applicable)."""
    if is_sparse(df):
        X = sparse_features(df)
        constant = np.flatnonzero(X.max(axis=0).toarray().ravel() == X.min(axis=0).toarray().ravel())
        rows = (a.tobytes() + b.tobytes() for a, b in zip(df["x_indices"], df["x_values"]))
        return {
            "constant_columns": [f"x{j}" for j in constant],
            "duplicate_rows": int(pd.Series(list(rows)).duplicated().sum()),
        }
    cols = feature_columns(df)
    return {
        "constant_columns": [c for c in cols if df[c].nunique(dropna=False) <= 1],
        "duplicate_rows": int(df.duplicated(subset=cols).sum()),
    }


def column_type(df: pd.DataFrame, column: str) -> str:
    """A column's type as the schema metadata shows it (the sparse form's lists by their items)."""
    return {"x_indices": "list<int32>", "x_values": "list<float64>"}.get(column, str(df[column].dtype))
