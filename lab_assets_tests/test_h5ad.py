"""h5ad datasets (issue 42): real .h5ad files written by anndata itself (sparse and dense X,
layers, obsm, categorical and numeric obs, a var mask) and the PBMC file scanpy ships, read into
the intermediate format (its sparse form and `label_name`), checked against anndata and scanpy
(or the recipe's formula) computed directly; the plan-time refusals; the content hash kept per
file state; existing datasets' tables unchanged."""

import warnings

import anndata as ad
import h5py
import numpy as np
import pandas as pd
import pytest
import scanpy as sc
from scipy import sparse

from lab_assets.core import file_hashes, storage
from lab_assets.core.registry import Shape
from lab_assets.defs import asset_checks
from lab_assets.defs.assets.datasets import (
    GENERATE_STREAM,
    BadDataError,
    content_version,
    features,
    raw_frame,
    rng,
    sparse_features,
)
from lab_assets.dr.datasets import DATASETS, h5ad
from lab_assets.dr.sweep import SweepError, parse_sweep

CELL_TYPES = ["T cell", "B cell", "NK cell"]  # not alphabetical: the file's order is kept


def written(adata_of, path, *args):
    """`adata_of(*args)` written by anndata. anndata 0.12.6 (the newest that installs beside
    pandas 3 on Python 3.11: later 0.12 releases require pandas < 3, 0.13 Python 3.12) cannot
    write pandas 3's Arrow-backed strings, so its tables are built with plain object strings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pd.errors.Pandas4Warning)  # the option goes away in pandas 4
        with pd.option_context("future.infer_string", False):
            adata = adata_of(*args)
            adata.write_h5ad(path)
    return adata


def counts_adata(n=240, genes=300, seed=0) -> ad.AnnData:
    """Raw counts like a droplet experiment's: three cell types with their own marker genes."""
    g = np.random.default_rng(seed)
    kind = g.integers(0, 3, size=n)
    rate = np.full((n, genes), 0.05)
    for k in range(3):
        rate[np.ix_(kind == k, np.arange(k * 20, k * 20 + 20))] = 4.0
    X = sparse.csr_matrix(g.poisson(rate * g.uniform(0.5, 2.0, size=(n, 1))).astype(np.float32))
    obs = pd.DataFrame(
        {
            "cell_type": pd.Categorical.from_codes(kind, categories=CELL_TYPES),
            "n_genes": np.asarray((X > 0).sum(axis=1)).ravel().astype(np.int64),
            "score": g.normal(size=n),
        },
        index=[f"cell{i}" for i in range(n)],
    )
    var = pd.DataFrame({"highly_variable": np.arange(genes) < 80}, index=[f"gene{j}" for j in range(genes)])
    adata = ad.AnnData(X, obs=obs, var=var)
    adata.layers["counts"] = X.copy()
    adata.layers["dense_counts"] = X.toarray()
    adata.obsm["X_pca"] = g.normal(size=(n, 10))
    return adata


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("h5ad")
    adata = written(counts_adata, folder / "sparse.h5ad")
    written(lambda: ad.AnnData(adata.X.toarray(), obs=adata.obs, var=adata.var), folder / "dense.h5ad")
    with h5py.File(folder / "plain.h5", "w") as f:  # HDF5, but not AnnData
        f["data"] = np.zeros((3, 3))
    (folder / "text.h5ad").write_text("not a file of any kind\n")
    return folder, adata


def generate(seed=0, **params):
    entry = DATASETS["h5ad"]
    return entry(rng(seed, GENERATE_STREAM), **entry.validate(params))


def plan_problems(**params):
    entry = DATASETS["h5ad"]
    valid = entry.validate(params)
    return entry.problems(valid, entry.shape_of(valid))


def test_sparse_x_stays_sparse_through_the_intermediate_format(files, tmp_path):
    folder, adata = files
    got = generate(path=str(folder / "sparse.h5ad"), label="cell_type")
    assert sparse.issparse(got.X)
    np.testing.assert_array_equal(got.X.toarray(), adata.X.toarray())
    np.testing.assert_array_equal(got.labels, adata.obs["cell_type"].cat.codes)
    assert got.names == tuple(CELL_TYPES)

    df = raw_frame(got, "key")
    assert list(df.columns) == ["row", "label", "label_name", "x_indices", "x_values", "x_width"]
    # Each row holds its own non-zeros only: the file's CSR, row by row.
    np.testing.assert_array_equal(df["x_indices"][5], adata.X[5].indices)
    np.testing.assert_array_equal(df["x_values"][5], adata.X[5].data)
    assert (df["x_width"] == adata.n_vars).all()
    np.testing.assert_array_equal(df["label_name"].astype(str), adata.obs["cell_type"].astype(str))
    assert (df["label_name"].cat.codes == df["label"]).all()

    # Written and read back as Parquet: the same table, the same content version, and the
    # features as methods receive them equal the file's matrix.
    df.insert(1, "split", np.where(np.arange(len(df)) % 5 == 0, "test", "train"))
    path = storage.write_parquet(str(tmp_path / "dataset.parquet"), df)
    back = storage.read_parquet(path)
    assert list(back["label_name"].cat.categories) == CELL_TYPES
    assert content_version(back) == content_version(df)
    assert (sparse_features(back) != adata.X).nnz == 0
    np.testing.assert_array_equal(features(back), adata.X.toarray())
    assert all(r.passed for r in asset_checks.check_dataset(back, len(df))), asset_checks.check_dataset(back, len(df))
    # Another value changes the content version.
    edited = back.copy()
    edited.at[3, "x_values"] = edited.at[3, "x_values"] + 1
    assert content_version(edited) != content_version(back)


def test_layers_obsm_dense_x_and_numeric_labels(files):
    folder, adata = files
    sparse_file, dense_file = str(folder / "sparse.h5ad"), str(folder / "dense.h5ad")
    np.testing.assert_array_equal(
        generate(path=sparse_file, layer="counts").X.toarray(), adata.layers["counts"].toarray()
    )
    dense_layer = generate(path=sparse_file, layer="dense_counts").X
    assert isinstance(dense_layer, np.ndarray)
    np.testing.assert_array_equal(dense_layer, adata.layers["dense_counts"])
    from_obsm = generate(path=sparse_file, obsm="X_pca", label="score")
    np.testing.assert_array_equal(from_obsm.X, adata.obsm["X_pca"])
    assert from_obsm.labels.dtype == np.float64 and from_obsm.names is None  # a coordinate, not classes
    np.testing.assert_array_equal(from_obsm.labels, adata.obs["score"])
    dense = generate(path=dense_file, label="n_genes")
    assert isinstance(dense.X, np.ndarray)
    np.testing.assert_array_equal(dense.X, adata.X.toarray())
    assert dense.labels.dtype == np.int64 and dense.names is None
    np.testing.assert_array_equal(dense.labels, adata.obs["n_genes"])
    df = raw_frame(dense, "key")
    assert "label_name" not in df and df.columns[2:5].tolist() == ["x0", "x1", "x2"]


def test_var_mask_keeps_those_genes(files):
    folder, adata = files
    got = generate(path=str(folder / "sparse.h5ad"), var_mask="highly_variable")
    np.testing.assert_array_equal(got.X.toarray(), adata[:, adata.var["highly_variable"]].X.toarray())
    params = DATASETS["h5ad"].validate({"path": str(folder / "sparse.h5ad"), "var_mask": "highly_variable"})
    assert DATASETS["h5ad"].shape_of(params) == Shape(240, 80)  # known at plan time


def test_recipe_matches_scanpy_and_the_formula(files):
    """normalize_total -> log1p -> highly variable genes -> PCA, against the formula for the first
    two steps, scanpy's own calls for the genes, and scikit-learn's dense PCA for the components."""
    from sklearn.decomposition import PCA

    folder, adata = files
    path = str(folder / "sparse.h5ad")
    logged = generate(path=path, normalize_total=1e4, log1p=True)
    counts = adata.X.toarray().astype(np.float64)
    expected = np.log1p(counts / counts.sum(axis=1, keepdims=True) * 1e4)
    assert sparse.issparse(logged.X)  # still sparse after normalization and log1p
    np.testing.assert_allclose(logged.X.toarray(), expected, rtol=1e-10, atol=1e-12)

    hvg = generate(path=path, normalize_total=1e4, log1p=True, n_top_genes=50)
    reference = ad.AnnData(sparse.csr_matrix(counts))
    sc.pp.normalize_total(reference, target_sum=1e4)
    sc.pp.log1p(reference)
    sc.pp.highly_variable_genes(reference, n_top_genes=50)
    chosen = reference.var["highly_variable"].to_numpy()
    assert chosen.sum() == 50 and hvg.X.shape == (240, 50)
    np.testing.assert_allclose(hvg.X.toarray(), expected[:, chosen], rtol=1e-10, atol=1e-12)

    pcs = generate(path=path, normalize_total=1e4, log1p=True, n_top_genes=50, n_pcs=5, label="cell_type")
    assert isinstance(pcs.X, np.ndarray) and pcs.X.shape == (240, 5)
    direct = PCA(n_components=5, svd_solver="full").fit_transform(expected[:, chosen])
    signs = np.sign((pcs.X * direct).sum(axis=0))  # a component's sign is arbitrary
    np.testing.assert_allclose(pcs.X * signs, direct, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(pcs.labels, adata.obs["cell_type"].cat.codes)


def test_the_pbmc_file_scanpy_ships():
    pbmc = sc.datasets.pbmc68k_reduced()  # scanpy's own reader of the same file: nothing is downloaded
    got = generate(path=h5ad.PBMC, label="bulk_labels")
    np.testing.assert_array_equal(got.X, pbmc.X)
    assert got.X.shape == (700, 765)
    assert got.names == tuple(pbmc.obs["bulk_labels"].cat.categories)
    np.testing.assert_array_equal(np.asarray(got.names)[got.labels], pbmc.obs["bulk_labels"].astype(str))
    pcs = generate(path=h5ad.PBMC, obsm="X_pca", label="bulk_labels")
    np.testing.assert_array_equal(pcs.X, pbmc.obsm["X_pca"])
    df = raw_frame(pcs, "pbmc")
    assert df["label_name"].value_counts()["CD14+ Monocyte"] == (pbmc.obs["bulk_labels"] == "CD14+ Monocyte").sum()


@pytest.mark.parametrize(
    ("params", "field", "says"),
    [
        ({"layer": "spliced"}, "layer", "no layer 'spliced'; the file's layers: counts, dense_counts"),
        ({"obsm": "X_umap"}, "obsm", "no obsm key 'X_umap'; the file's obsm keys: X_pca"),
        ({"label": "celltype"}, "label", "no obs column 'celltype'; the file's obs columns: cell_type, n_genes, score"),
        (
            {"var_mask": "hvg"},
            "var_mask",
            "no boolean var column 'hvg'; the file's boolean var columns: highly_variable",
        ),
        ({"obsm": "X_pca", "log1p": True}, "log1p", "apply to genes (X or a layer), not to obsm 'X_pca'"),
        ({"n_pcs": 300}, "n_pcs", "n_pcs=300 needs fewer than min(cells, genes) = min(240, 300); at most 239"),
    ],
)
def test_names_the_file_does_not_have_are_refused_at_plan_time(files, params, field, says):
    folder, _ = files
    problems = plan_problems(path=str(folder / "sparse.h5ad"), **params)
    assert list(problems) == [field]
    assert says in problems[field] and "\n" not in problems[field]


def test_files_that_are_not_anndata(files):
    folder, _ = files
    assert "not an HDF5 file, so not AnnData" in plan_problems(path=str(folder / "text.h5ad"))["path"]
    assert "an HDF5 file but not AnnData" in plan_problems(path=str(folder / "plain.h5"))["path"]
    assert "no such file" in plan_problems(path=str(folder / "missing.h5ad"))["path"]


def test_a_matrix_too_big_dense_is_refused_with_its_size_and_the_alternatives(files, monkeypatch):
    folder, _ = files
    # 240 x 300 float64 is 0.54 MiB: over a 0.5 MiB limit, under it once reduced.
    monkeypatch.setattr(h5ad, "DENSE_LIMIT_GIB", 0.5 / 1024)
    sparse_x = plan_problems(path=str(folder / "sparse.h5ad"))["path"]
    assert "X is sparse, 240 x 300; methods and metrics would receive it dense, 0.0 GiB" in sparse_x
    assert "(n_pcs: 50)" in sparse_x and "(obsm: X_pca)" in sparse_x
    assert "stored dense" in plan_problems(path=str(folder / "dense.h5ad"))["path"]
    assert plan_problems(path=str(folder / "sparse.h5ad"), n_pcs=20) == {}
    assert plan_problems(path=str(folder / "sparse.h5ad"), obsm="X_pca") == {}
    assert plan_problems(path=str(folder / "sparse.h5ad"), var_mask="highly_variable") == {}


def test_bad_input_is_one_line_per_field_before_anything_runs(files):
    folder, _ = files
    text = (
        f"name: bad\ndata:\n  h5ad: {{path: {folder / 'sparse.h5ad'}, label: celltype}}\n"
        "methods:\n  pca: {}\nmetrics:\n  trustworthiness: {k: 5}\n"
    )
    with pytest.raises(SweepError) as e:
        parse_sweep(text, "bad.yaml")
    assert str(e.value) == (
        f"bad.yaml: data.h5ad.label: h5ad dataset '{folder / 'sparse.h5ad'}': no obs column 'celltype'; "
        "the file's obs columns: cell_type, n_genes, score"
    )


def test_features_refuse_a_sparse_table_beyond_the_dense_limit(files, monkeypatch):
    folder, _ = files
    df = raw_frame(generate(path=str(folder / "sparse.h5ad")), "key")
    monkeypatch.setattr("lab_assets.defs.assets.datasets.DENSE_LIMIT_GIB", 0.5 / 1024)
    with pytest.raises(BadDataError, match=r"sparse features 240 x 300 would be .* GiB dense"):
        features(df)


def test_content_hash_is_read_once_per_file_state(files, tmp_path, monkeypatch):
    folder, adata = files
    path = tmp_path / "copy.h5ad"
    written(counts_adata, path)
    reads = []
    real = file_hashes._sha256
    monkeypatch.setattr(file_hashes, "_sha256", lambda p: reads.append(p) or real(p))
    version = DATASETS["h5ad"].version
    params = DATASETS["h5ad"].validate({"path": str(path)})
    first = version(params)
    import hashlib

    assert reads and file_hashes.file_digest(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    file_hashes._digest.cache_clear()  # a new process: the record in the lab home answers
    assert version(params) == first and len(reads) == 1
    written(counts_adata, path, 240, 300, 1)
    assert version(params) != first and len(reads) == 2


# content_version of each table, computed with the code at 171c77e (before this change): every
# existing dataset's table is byte for byte the same, so upgrading recomputes none of its cells.
BEFORE = {
    "swissroll": ({"n_samples": 200, "noise": 0.05}, "777ddcbe96b74c66"),
    "torus": ({"n_samples": 150}, "f62f6ad2d5021cd9"),
    "gaussian_blobs": ({"n_samples": 120, "centers": 3}, "f14fd640bc8f6e75"),
    "digits": ({"n_samples": 100}, "d24663ca76e0575c"),
}


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_existing_datasets_tables_are_unchanged(name):
    params, before = BEFORE[name]
    entry = DATASETS[name]
    df = raw_frame(entry(rng(3, GENERATE_STREAM), **entry.validate(params)), "key")
    assert content_version(df).value == before


def test_file_dataset_table_is_unchanged(tmp_path):
    table = pd.DataFrame({"a": np.arange(30.0) ** 0.5, "b": np.cos(np.arange(30)), "label": list("xyz") * 10})
    table.to_csv(tmp_path / "table.csv", index=False)
    entry = DATASETS["file"]
    params = entry.validate({"path": str(tmp_path / "table.csv"), "label_column": "label"})
    assert content_version(raw_frame(entry(rng(3, GENERATE_STREAM), **params), "key")).value == "cf780ac0c5a294f2"


def test_the_colour_key_has_each_class_in_its_scatter_colour():
    """The UI's colour key of a cell-type-labelled dataset: per class present, a swatch of the
    colour every scatter of its embeddings gives that class, top to bottom by class id."""
    import io

    from PIL import Image

    from lab_assets.dr import thumbnail

    codes = pd.Series(np.repeat([0, 2, 3], 30))  # class 1 has no cells: the scatter skips its colour too
    names = ["T cell", "B cell", "NK cell", "Monocyte"]
    g = np.random.default_rng(0)
    Z = g.normal(size=(90, 2)) + codes.to_numpy()[:, None] * 4.0
    scatter = np.asarray(Image.open(io.BytesIO(thumbnail.scatter_png(Z, codes))).convert("RGB"))
    key = np.asarray(Image.open(io.BytesIO(thumbnail.colour_key_png(codes, names))).convert("RGB"))
    for line, c in enumerate([0, 2, 3]):
        # The class's colour in the scatter: the pixel under one of its points.
        x, y = Z[codes == c][0]
        lo, hi = Z.min(axis=0), Z.max(axis=0)
        col = round((x - lo[0]) / (hi[0] - lo[0]) * (thumbnail.SIZE - thumbnail.DOT - 1)) + 1
        row = round((1 - (y - lo[1]) / (hi[1] - lo[1])) * (thumbnail.SIZE - thumbnail.DOT - 1)) + 1
        colour = scatter[row, col]
        swatch = key[2 + line * thumbnail.KEY_LINE + 5, 7]
        np.testing.assert_array_equal(swatch, colour)
    assert key.shape[0] == 4 + 3 * thumbnail.KEY_LINE  # three lines: the classes present
    assert (key == 0).all(axis=2).any()  # their names, in black
    many = pd.Series(np.arange(300))  # a gradient, not a colour per class: no key
    assert thumbnail.colour_key_png(many, [str(i) for i in range(300)]) is None


def test_the_report_grid_names_the_classes_in_their_colours():
    from matplotlib import colormaps

    from lab_assets.dr.figures import embeddings_figure

    names = [*CELL_TYPES, "Monocyte"]  # a fourth type without cells here: colours still by class id
    codes = np.repeat(np.arange(3), 20)
    table = pd.DataFrame({"label": codes, "label_name": pd.Categorical.from_codes(codes, categories=names)})
    table["z0"], table["z1"] = np.arange(60.0), np.sin(np.arange(60.0))
    panels = {("pbmc", "pca"): table, ("pbmc", "umap"): table, ("blobs", "pca"): table.drop(columns="label_name")}
    fig = embeddings_figure(panels)
    pbmc_row = fig.axes[1]  # the legend is right of its row's last panel
    legend = pbmc_row.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == names
    spectral = colormaps["Spectral"]
    expected = [spectral(i / 3) for i in range(4)]
    for handle, colour in zip(legend.legend_handles, expected):
        np.testing.assert_allclose(handle.get_color(), colour)
    # The points: the legend's colour for their class id.
    points = pbmc_row.collections[0]
    np.testing.assert_allclose(points.to_rgba(points.get_array())[codes == 1][0], expected[1])
    assert fig.axes[3].get_legend() is None  # a row without names has none


def test_a_sparse_h5ad_sweep_runs_end_to_end(lab, files):
    """Sparse counts through `lab sweep run`'s code, log-normalized and still sparse: the dataset in
    the sparse form with its cell types named (and their colour key), the report's names, and the metrics
    equal to scikit-learn's on the recipe's formula (what the methods received, densified within
    the limit; continuous values, so no distance ties for the two to break differently)."""
    from sklearn.manifold import trustworthiness
    from sklearn.metrics import silhouette_score

    from lab_assets.core import keys
    from lab_assets.defs.assets.datasets import is_sparse, with_names
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.runner.sweeps import materialize_sweep
    from lab_assets_tests.test_bad_input import latest

    folder, adata = files
    (lab / "sweeps" / "cells.yaml").write_text(
        f"name: cells\ndata:\n  h5ad: {{path: {folder / 'sparse.h5ad'}, label: cell_type, normalize_total: 10000, log1p: true}}\n"
        "seeds: [0]\n"
        "methods:\n  pca: {}\nmetrics:\n  trustworthiness: {k: [5]}\n  silhouette: {space: data}\n"
    )
    sweep = load_sweep(lab / "sweeps" / "cells.yaml")
    result = materialize_sweep(sweep, workers=1)
    assert not result.failed, result.failed
    ((data_key, method_key),) = sweep.cells
    cell = keys.cell_key(data_key, method_key)

    meta = latest("dataset", cell)
    assert meta["features"].value.startswith("sparse") and meta["label_names"].value == CELL_TYPES
    assert meta["n_features"].value == 300
    assert is_sparse(storage.read_parquet(storage.asset_path("dataset", data_key)))
    assert meta["label_colours"].value.startswith("![colour key](data:image/png;base64,")
    embedding = storage.read_parquet(storage.asset_path("embedding", cell))
    named = with_names(embedding, data_key)  # what the report draws: names from the dataset's footer
    np.testing.assert_array_equal(named["label_name"].astype(str), adata.obs["cell_type"].astype(str))
    assert "scatter" in latest("embedding", cell)

    row = storage.read_parquet(storage.asset_path("metrics", cell)).iloc[0]
    counts = adata.X.toarray().astype(np.float64)
    X, Z = np.log1p(counts / counts.sum(axis=1, keepdims=True) * 1e4), embedding[["z0", "z1"]].to_numpy()
    assert row["trustworthiness@k=5"] == pytest.approx(trustworthiness(X, Z, n_neighbors=5), abs=1e-12)
    codes = adata.obs["cell_type"].cat.codes.to_numpy()
    assert row["silhouette@n_points=5000,space=data"] == pytest.approx(silhouette_score(X, codes), abs=1e-9)
