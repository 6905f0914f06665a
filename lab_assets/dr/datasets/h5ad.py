"""A lab's single-cell data: an AnnData `.h5ad` file (features from X, a layer or an obsm key;
labels from an obs column, category names kept), with the standard recipe on raw counts
(total-count normalization, log1p, highly variable genes, PCA) run here, in the dataset step.

Sparse counts stay sparse: the file's matrix is read as CSR, the recipe runs on it (scanpy), and
an unreduced sparse result is handed on as CSR (the intermediate format's sparse form,
defs/assets/datasets.py). docs/single-cell.md is the user's guide.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from lab_assets.core.file_hashes import file_digest, stamp
from lab_assets.core.registry import Shape
from lab_assets.core.settings import resolve_path
from lab_assets.dr.datasets import DATASETS, Raw
from lab_assets.dr.datasets.raw import DENSE_LIMIT_GIB, dense_gib, sklearn_random_state

PBMC = "scanpy:10x_pbmc68k_reduced"  # the file scanpy's package ships (scanpy.datasets.pbmc68k_reduced)
COUNT_STEPS = ("normalize_total", "log1p", "n_top_genes")


class NotAnnDataError(ValueError):
    """A file that is not an AnnData .h5ad file."""


@dataclass(frozen=True)
class Matrix:
    rows: int
    columns: int
    sparse: bool


@dataclass(frozen=True)
class Layout:
    """What the file holds, read from its structure (no matrix is read)."""

    X: Matrix
    layers: dict[str, Matrix] = field(default_factory=dict)
    obsm: dict[str, Matrix] = field(default_factory=dict)
    obs: dict[str, str] = field(default_factory=dict)  # column -> "categorical", "integer", "float", ...
    var_masks: dict[str, int] = field(default_factory=dict)  # boolean var column -> genes it keeps


def pbmc_path() -> str:
    """The PBMC 68k reduced file inside the installed scanpy package (nothing is downloaded)."""
    from importlib.util import find_spec

    spec = find_spec("scanpy")
    if spec is None or spec.origin is None:
        raise FileNotFoundError(f"h5ad dataset {PBMC!r}: scanpy is not installed")
    return str(Path(spec.origin).parent / "datasets" / "10x_pbmc68k_reduced.h5ad")


def _path(path: str):
    p = resolve_path(pbmc_path() if path == PBMC else path)
    if not p.is_file():
        raise FileNotFoundError(f"h5ad dataset {path!r}: no such file ({p})")
    return p


KINDS = {"b": "boolean", "i": "integer", "u": "integer", "f": "float"}


def _kind(node) -> str:
    """An obs or var column's kind, from anndata's encoding attributes (no values read)."""
    import h5py

    encoding = str(node.attrs.get("encoding-type", ""))
    if isinstance(node, h5py.Dataset) and encoding in ("", "array"):
        return KINDS.get(node.dtype.kind, "string-array")
    return encoding or "unknown"


def _matrix(node) -> Matrix:
    import h5py

    if isinstance(node, h5py.Dataset):
        if node.ndim != 2:
            raise NotAnnDataError(f"{node.name} is not a matrix (shape {node.shape})")
        return Matrix(int(node.shape[0]), int(node.shape[1]), sparse=False)
    if "shape" not in node.attrs:  # a data frame in obsm: its columns are the features
        return Matrix(len(node[node.attrs["_index"]]), len(node.attrs["column-order"]), sparse=False)
    rows, columns = (int(s) for s in node.attrs["shape"])
    return Matrix(rows, columns, sparse=True)


def _members(f, group: str) -> dict:
    return dict(f[group].items()) if group in f else {}


def _encoded_layout(f) -> Layout:
    """The layout of a file in anndata's encoding (anndata >= 0.8), from its structure alone."""
    var_index = f["var"].attrs.get("_index")
    masks = {
        name: int(np.count_nonzero(node[()]))
        for name, node in _members(f, "var").items()
        if name != var_index and _kind(node) == "boolean"
    }
    obs_index = f["obs"].attrs.get("_index")
    return Layout(
        X=_matrix(f["X"]),
        layers={k: _matrix(v) for k, v in _members(f, "layers").items()},
        obsm={k: _matrix(v) for k, v in _members(f, "obsm").items()},
        obs={k: _kind(v) for k, v in _members(f, "obs").items() if k != obs_index},
        var_masks=masks,
    )


def _column_kind(column) -> str:
    import pandas as pd

    if isinstance(column.dtype, pd.CategoricalDtype):
        return "categorical"
    return KINDS.get(getattr(column.dtype, "kind", "O"), "string-array")


def _legacy_layout(p) -> Layout:
    """The layout of a file written before anndata's encoding (scanpy's PBMC file): anndata reads
    it backed, so X stays on disk."""
    import anndata as ad
    from scipy import sparse

    def matrix(m) -> Matrix:
        return Matrix(int(m.shape[0]), int(m.shape[1]), sparse=sparse.issparse(m) or hasattr(m, "format"))

    with _quiet():
        adata = ad.read_h5ad(p, backed="r")
    try:
        return Layout(
            X=matrix(adata.X),
            layers={k: matrix(v) for k, v in adata.layers.items()},
            obsm={k: matrix(v) for k, v in adata.obsm.items()},
            obs={k: _column_kind(adata.obs[k]) for k in adata.obs.columns},
            var_masks={
                k: int(adata.var[k].sum()) for k in adata.var.columns if _column_kind(adata.var[k]) == "boolean"
            },
        )
    finally:
        adata.file.close()


@contextmanager
def _quiet():
    """anndata's notes on a file written before its encoding (fields moved into place, elements
    without encoding metadata) say nothing about the data read."""
    import anndata as ad

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", ad.OldFormatWarning)
        yield


@lru_cache(maxsize=16)
def _layout(path: str, p: Path, file_state: tuple) -> Layout:
    """Keyed by the resolved file and its state: one process may plan several projects (the warm service)."""
    import h5py

    try:
        f = h5py.File(p, "r")
    except OSError:
        raise NotAnnDataError(f"h5ad dataset {path!r}: not an HDF5 file, so not AnnData ({p})") from None
    with f:
        if f.attrs.get("encoding-type") == "anndata":
            return _encoded_layout(f)
    try:
        return _legacy_layout(p)
    except Exception:  # noqa: BLE001 - whatever anndata says, the file is not one it can read
        raise NotAnnDataError(
            f"h5ad dataset {path!r}: an HDF5 file but not AnnData (anndata cannot read it; write it with "
            "adata.write_h5ad(path))"
        ) from None


def _listed(names) -> str:
    return ", ".join(sorted(names)) or "none"


def _source(layout: Layout, params: dict[str, Any]) -> tuple[str, Matrix]:
    if params.get("obsm") is not None:
        return f"obsm {params['obsm']!r}", layout.obsm[params["obsm"]]
    if params.get("layer") is not None:
        return f"layer {params['layer']!r}", layout.layers[params["layer"]]
    return "X", layout.X


def _output(layout: Layout, params: dict[str, Any]) -> tuple[str, Matrix, Matrix]:
    """The source matrix's description, the matrix read (after the var mask), and the features
    produced (after the recipe)."""
    what, source = _source(layout, params)
    read = source
    if params.get("var_mask") is not None:
        read = Matrix(source.rows, layout.var_masks[params["var_mask"]], source.sparse)
    out = read
    if params.get("n_top_genes") is not None:
        out = Matrix(out.rows, min(params["n_top_genes"], out.columns), out.sparse)
    if params.get("n_pcs") is not None:
        out = Matrix(out.rows, params["n_pcs"], sparse=False)
    return what, read, out


def _gib(m: Matrix) -> float:
    return dense_gib(m.rows, m.columns)


def _key_problems(path: str, layout: Layout, params: dict[str, Any]) -> dict[str, str]:
    """{parameter: problem} for names the file does not have, each line naming what it does have."""
    where = f"h5ad dataset {path!r}"
    out = {}
    if params.get("layer") is not None and params.get("obsm") is not None:
        out["obsm"] = f"{where}: give a layer or an obsm key, not both"
    elif params.get("layer") is not None and params["layer"] not in layout.layers:
        out["layer"] = f"{where}: no layer {params['layer']!r}; the file's layers: {_listed(layout.layers)}"
    elif params.get("obsm") is not None and params["obsm"] not in layout.obsm:
        out["obsm"] = f"{where}: no obsm key {params['obsm']!r}; the file's obsm keys: {_listed(layout.obsm)}"
    label = params.get("label")
    if label is not None and label not in layout.obs:
        out["label"] = f"{where}: no obs column {label!r}; the file's obs columns: {_listed(layout.obs)}"
    elif label is not None and layout.obs[label] not in ("categorical", "string-array", "integer", "float", "boolean"):
        out["label"] = f"{where}: obs column {label!r} is {layout.obs[label]}, not categories or numbers"
    mask = params.get("var_mask")
    if mask is not None and mask not in layout.var_masks:
        out["var_mask"] = f"{where}: no boolean var column {mask!r}; the file's boolean var columns: " + _listed(
            layout.var_masks
        )
    if params.get("obsm") is not None and "obsm" not in out:
        used = [s for s in (*COUNT_STEPS, "var_mask") if params.get(s) not in (None, False)]
        if used:
            out[used[0]] = f"{where}: {', '.join(used)} apply to genes (X or a layer), not to obsm {params['obsm']!r}"
    return out


def _size_problems(path: str, layout: Layout, params: dict[str, Any]) -> dict[str, str]:
    """A matrix that would be dense beyond DENSE_LIMIT_GIB: one the file stores dense (read whole),
    or sparse features that methods and metrics would receive dense."""
    what, read, out = _output(layout, params)
    limit = f"the dense limit of {DENSE_LIMIT_GIB:g} GiB (DENSE_LIMIT_GIB, lab_assets/dr/datasets/raw.py)"
    alternatives = (
        f"reduce it in the data entry (n_pcs: 50), or read a reduction the file has (obsm: {_listed(layout.obsm)})"
    )
    if not read.sparse and _gib(read) > DENSE_LIMIT_GIB:
        return {
            "path": f"h5ad dataset {path!r}: {what} is stored dense, {read.rows} x {read.columns} = "
            f"{_gib(read):.1f} GiB as float64, over {limit}; store it sparse (CSR), or {alternatives}"
        }
    if out.sparse and _gib(out) > DENSE_LIMIT_GIB:
        return {
            "path": f"h5ad dataset {path!r}: {what} is sparse, {out.rows} x {out.columns}; methods and metrics "
            f"would receive it dense, {_gib(out):.1f} GiB as float64, over {limit}; {alternatives}"
        }
    return {}


def _problems(params: dict[str, Any]) -> tuple[Shape, dict[str, str]]:
    path = params["path"]
    try:
        p = _path(path)
        layout = _layout(path, p, stamp(p))
    except (OSError, NotAnnDataError, KeyError, ValueError) as e:
        return Shape(), {"path": str(e)}
    problems = _key_problems(path, layout, params)
    if problems:
        return Shape(), problems
    _, read, out = _output(layout, params)
    n_pcs, genes = params.get("n_pcs"), min(read.columns, params.get("n_top_genes") or read.columns)
    if n_pcs is not None and n_pcs >= min(read.rows, genes):
        bound = min(read.rows, genes) - 1
        return Shape(), {
            "n_pcs": f"h5ad dataset {path!r}: n_pcs={n_pcs} needs fewer than min(cells, genes) = "
            f"min({read.rows}, {genes}); at most {bound}"
        }
    return Shape(out.rows, out.columns), _size_problems(path, layout, params)


def _shape(params: dict[str, Any]) -> Shape:
    """Known from the file's structure, read when the sweep is planned (cached per file state)."""
    return _problems(params)[0]


def _limits(params: dict[str, Any], shape: Shape) -> dict[str, str]:
    return _problems(params)[1]


def _content_hash(params: dict[str, Any]) -> str:
    # The file's bytes, hashed once per file state (size, mtime): an edited file stales exactly
    # its cells, and planning a sweep over a multi-GB file does not read it again.
    return file_digest(_path(params["path"]))


def _labels(obs_column) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """Class ids and their names (a categorical or string column), or the numbers as they are."""
    import pandas as pd

    column = obs_column
    if pd.api.types.is_bool_dtype(column):
        column = column.astype("category")
    if isinstance(column.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(column):
        categorical = pd.Categorical(column)
        missing = int((categorical.codes < 0).sum())
        if missing:
            raise ValueError(
                f"obs column {column.name!r}: {missing} of {len(categorical)} cells have no category; "
                "drop them from the file or fill them in"
            )
        return categorical.codes.astype(np.int64), tuple(str(c) for c in categorical.categories)
    values = column.to_numpy()
    return (values.astype(np.int64) if np.issubdtype(values.dtype, np.integer) else values.astype(np.float64)), None


def _elements(p, layer: str | None, obsm: str | None, label: str | None, var_mask: str | None):
    """The matrix, the obs column and the var mask the parameters name. From a file in anndata's
    encoding only those are read (not its other layers or obsm keys); an older file is read whole."""
    import anndata as ad
    import h5py
    from anndata.io import read_elem

    with h5py.File(p, "r") as f:
        if f.attrs.get("encoding-type") == "anndata":
            node = f["obsm"][obsm] if obsm is not None else f["layers"][layer] if layer is not None else f["X"]
            column = read_elem(f["obs"])[label] if label is not None else None
            mask = read_elem(f["var"])[var_mask].to_numpy(dtype=bool) if var_mask is not None else None
            return read_elem(node), column, mask
    with _quiet():
        adata = ad.read_h5ad(p)
    matrix = adata.obsm[obsm] if obsm is not None else adata.layers[layer] if layer is not None else adata.X
    column = adata.obs[label] if label is not None else None
    return matrix, column, adata.var[var_mask].to_numpy(dtype=bool) if var_mask is not None else None


@DATASETS(
    "h5ad",
    packages=["anndata", "scanpy", "h5py", "scipy"],
    fingerprint=_content_hash,
    shape=_shape,
    limits=_limits,
)
def h5ad(
    rng: np.random.Generator,
    *,
    path: str,
    layer: str | None = None,
    obsm: str | None = None,
    label: str | None = None,
    var_mask: str | None = None,
    normalize_total: Annotated[float, Field(gt=0)] | None = None,
    log1p: bool = False,
    n_top_genes: Annotated[int, Field(ge=2)] | None = None,
    n_pcs: Annotated[int, Field(ge=1)] | None = None,
) -> Raw:
    """Cells of an AnnData .h5ad file ("scanpy:10x_pbmc68k_reduced": the PBMC file scanpy ships).
    Features: X, a `layer`, or an `obsm` key (X_pca); `label`: an obs column (category names
    kept); `var_mask`: a boolean var column keeping those genes. The recipe, in this order, on
    counts: `normalize_total` (target sum per cell), `log1p`, `n_top_genes` highly variable genes,
    `n_pcs` principal components (scanpy)."""
    import anndata as ad
    import pandas as pd
    import scanpy as sc
    from scipy import sparse

    params = {"path": path, "layer": layer, "obsm": obsm, "label": label, "var_mask": var_mask}
    params |= {"normalize_total": normalize_total, "log1p": log1p, "n_top_genes": n_top_genes, "n_pcs": n_pcs}
    problems = _problems(params)[1]
    if problems:
        raise ValueError(next(iter(problems.values())))
    matrix, column, mask = _elements(_path(path), layer, obsm, label, var_mask)
    labels, names = _labels(column) if column is not None else (None, None)
    if obsm is not None:
        matrix = matrix.to_numpy() if isinstance(matrix, pd.DataFrame) else matrix
        return Raw(matrix.toarray() if sparse.issparse(matrix) else np.asarray(matrix, np.float64), labels, names)
    if mask is not None:
        matrix = matrix[:, mask]
    # One matrix, as float64 CSR (or dense when the file stores it so), for scanpy to work on.
    matrix = sparse.csr_matrix(matrix, dtype=np.float64) if sparse.issparse(matrix) else np.array(matrix, np.float64)
    cells = ad.AnnData(matrix)
    if normalize_total is not None:
        sc.pp.normalize_total(cells, target_sum=normalize_total)
    if log1p:
        sc.pp.log1p(cells)
    if n_top_genes is not None:
        sc.pp.highly_variable_genes(cells, n_top_genes=min(n_top_genes, cells.n_vars), subset=True)
    if n_pcs is not None:
        sc.pp.pca(cells, n_comps=n_pcs, random_state=sklearn_random_state(rng))
        return Raw(np.asarray(cells.obsm["X_pca"], dtype=np.float64), labels, names)
    return Raw(cells.X, labels, names)
