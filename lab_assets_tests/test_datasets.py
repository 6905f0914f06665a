"""Dataset registry entries: shapes, dtypes, labels, seeding, parameters, the user-file loader
and the NaN/inf gate in `raw_frame`."""

import numpy as np
import pandas as pd
import pydantic
import pytest
from sklearn.datasets import load_digits

from lab_assets.defs.assets.datasets import GENERATE_STREAM, BadDataError, raw_frame, rng
from lab_assets.dr.datasets import DATASETS, Raw


def generate(name, seed=0, **params):
    """What the raw_dataset asset does: validate the parameters, then call with the seeded RNG."""
    entry = DATASETS[name]
    return entry(rng(seed, GENERATE_STREAM), **entry.validate(params))


def check_basic(raw, n, d, label_kind):
    assert raw.X.shape == (n, d)
    assert raw.X.dtype == np.float64
    assert np.isfinite(raw.X).all()
    assert raw.labels is not None and raw.labels.shape == (n,)
    assert raw.labels.dtype.kind == label_kind  # "i": classes, "f": a continuous coordinate


def check_seeding(name, **params):
    a, b, c = generate(name, 0, **params), generate(name, 0, **params), generate(name, 1, **params)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert not np.array_equal(a.X, c.X)
    return a, c


def test_registry_lists_every_dataset():
    assert set(DATASETS.names()) >= {"swissroll", "s_curve", "torus", "gaussian_blobs", "digits", "file"}


def test_swissroll():
    raw = generate("swissroll", n_samples=300)
    check_basic(raw, 300, 3, "f")
    x, y, z = raw.X.T
    t = raw.labels
    # noise=0: the points lie exactly on the roll parameterised by the label.
    np.testing.assert_allclose(x, t * np.cos(t), atol=1e-12)
    np.testing.assert_allclose(z, t * np.sin(t), atol=1e-12)
    assert ((y >= 0) & (y <= 21)).all()
    assert generate("swissroll").X.shape == (2000, 3)  # the default n_samples
    check_seeding("swissroll", n_samples=300)
    # Noise is added on top of the same draw: same labels, residuals of about `noise`.
    noisy = generate("swissroll", n_samples=300, noise=0.5)
    np.testing.assert_array_equal(noisy.labels, t)
    assert 0.4 < np.std(noisy.X - raw.X) < 0.6
    with pytest.raises(pydantic.ValidationError):
        DATASETS["swissroll"].validate({"n_samples": 5})
    with pytest.raises(pydantic.ValidationError):
        DATASETS["swissroll"].validate({"noise": -0.1})


def test_s_curve():
    raw = generate("s_curve", n_samples=250)
    check_basic(raw, 250, 3, "f")
    t = raw.labels
    np.testing.assert_allclose(raw.X[:, 0], np.sin(t), atol=1e-12)
    np.testing.assert_allclose(raw.X[:, 2], np.sign(t) * (np.cos(t) - 1), atol=1e-12)
    check_seeding("s_curve", n_samples=250)
    noisy = generate("s_curve", n_samples=250, noise=0.3)
    assert 0.2 < np.std(noisy.X - raw.X) < 0.4


def test_torus():
    R, r = 3.0, 1.0
    raw = generate("torus", n_samples=500)
    check_basic(raw, 500, 3, "f")
    x, y, z = raw.X.T
    np.testing.assert_allclose((np.sqrt(x**2 + y**2) - R) ** 2 + z**2, r**2, atol=1e-9)
    # The label is the angle u around the z axis (position along the tube's centre line).
    np.testing.assert_allclose(np.mod(np.arctan2(y, x), 2 * np.pi), raw.labels, atol=1e-9)
    assert ((raw.labels >= 0) & (raw.labels < 2 * np.pi)).all()
    check_seeding("torus", n_samples=500)

    other = generate("torus", n_samples=400, major_radius=5.0, minor_radius=0.5)
    x, y, z = other.X.T
    assert other.X.shape == (400, 3)
    np.testing.assert_allclose((np.sqrt(x**2 + y**2) - 5.0) ** 2 + z**2, 0.25, atol=1e-9)

    noisy = generate("torus", n_samples=500, noise=0.1)
    x, y, z = noisy.X.T
    residual = (np.sqrt(x**2 + y**2) - R) ** 2 + z**2 - r**2
    assert np.abs(residual).max() > 1e-3
    with pytest.raises(pydantic.ValidationError):
        DATASETS["torus"].validate({"minor_radius": 0.0})


def test_gaussian_blobs():
    raw = generate("gaussian_blobs", n_samples=300, n_features=7, centers=4)
    check_basic(raw, 300, 7, "i")
    assert raw.labels.dtype == np.int64
    assert sorted(np.unique(raw.labels)) == [0, 1, 2, 3]
    check_seeding("gaussian_blobs", n_samples=300, n_features=7, centers=4)
    defaults = generate("gaussian_blobs")
    check_basic(defaults, 2000, 10, "i")
    assert len(np.unique(defaults.labels)) == 5
    # cluster_std is honoured: tight clusters have tiny within-cluster spread.
    tight = generate("gaussian_blobs", n_samples=300, n_features=3, centers=2, cluster_std=0.01)
    for c in (0, 1):
        assert tight.X[tight.labels == c].std(axis=0).max() < 0.05
    with pytest.raises(pydantic.ValidationError):
        DATASETS["gaussian_blobs"].validate({"n_features": 1})
    with pytest.raises(pydantic.ValidationError):
        DATASETS["gaussian_blobs"].validate({"centers": 0})


def test_digits():
    X_all, y_all = load_digits(return_X_y=True)
    full = generate("digits")
    check_basic(full, 1797, 64, "i")
    assert full.labels.dtype == np.int64
    np.testing.assert_array_equal(full.X, X_all)
    np.testing.assert_array_equal(full.labels, y_all)
    # Documented: without n_samples the whole bundled set is returned, whatever the seed.
    np.testing.assert_array_equal(generate("digits", seed=1).X, full.X)

    sub, other = check_seeding("digits", n_samples=100)
    check_basic(sub, 100, 64, "i")
    # A subsample is a set of distinct original rows, kept in their original order.
    matches = (sub.X[:, None, :] == X_all[None, :, :]).all(axis=2)
    assert (matches.sum(axis=1) >= 1).all()
    first = matches.argmax(axis=1)
    np.testing.assert_array_equal(y_all[first], sub.labels)
    with pytest.raises(pydantic.ValidationError):
        DATASETS["digits"].validate({"n_samples": 1798})


# -- the user's own file ------------------------------------------------------------------


@pytest.fixture
def table():
    return pd.DataFrame(
        {
            "a": [0.5, 1.5, 2.5, 3.5, 4.5],
            "b": [1, 2, 3, 4, 5],
            "species": ["setosa", "virginica", "setosa", "versicolor", "virginica"],
        }
    )


def load(path, label_column=None, seed=0):
    params = {"path": str(path)} if label_column is None else {"path": str(path), "label_column": label_column}
    return generate("file", seed, **params)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_file_tables(tmp_path, table, suffix):
    path = tmp_path / f"table{suffix}"
    if suffix == ".csv":
        table.to_csv(path, index=False)
    else:
        table.to_parquet(path, index=False)
    raw = load(path, "species")
    assert raw.X.dtype == np.float64
    np.testing.assert_array_equal(raw.X, table[["a", "b"]].to_numpy(dtype=np.float64))
    # Class names become integer ids (sorted: setosa=0, versicolor=1, virginica=2).
    assert raw.labels.dtype.kind == "i"
    np.testing.assert_array_equal(raw.labels, [0, 2, 0, 1, 2])
    # Every column but the label column must be numeric.
    with pytest.raises(ValueError, match="non-numeric feature columns: species"):
        load(path)
    with pytest.raises(ValueError, match="non-numeric feature columns: species"):
        load(path, "b")
    numeric = path.with_name(f"numeric{suffix}")
    if suffix == ".csv":
        table[["a", "b"]].to_csv(numeric, index=False)
    else:
        table[["a", "b"]].to_parquet(numeric, index=False)
    # A numeric label column stays numeric, and is removed from the features.
    raw = load(numeric, "b")
    assert raw.labels.dtype.kind == "i"
    np.testing.assert_array_equal(raw.labels, [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(raw.X, table[["a"]].to_numpy(dtype=np.float64))
    raw = load(numeric)
    assert raw.labels is None
    np.testing.assert_array_equal(raw.X, table[["a", "b"]].to_numpy(dtype=np.float64))
    # Reading a file involves no randomness.
    np.testing.assert_array_equal(load(numeric, seed=5).X, raw.X)


def test_file_float_label_is_a_coordinate(tmp_path, table):
    path = tmp_path / "t.csv"
    table[["a", "b"]].to_csv(path, index=False)
    raw = load(path, "a")
    assert raw.labels.dtype.kind == "f"
    np.testing.assert_array_equal(raw.labels, table["a"].to_numpy())
    np.testing.assert_array_equal(raw.X, table[["b"]].to_numpy(dtype=np.float64))


def test_file_npy(tmp_path):
    array = np.arange(12, dtype=np.int32).reshape(4, 3)
    path = tmp_path / "x.npy"
    np.save(path, array)
    raw = load(path)
    assert raw.X.dtype == np.float64 and raw.labels is None
    np.testing.assert_array_equal(raw.X, array)
    # Columns of an .npy are named "0", "1", ...
    raw = load(path, "2")
    np.testing.assert_array_equal(raw.labels, [2, 5, 8, 11])
    np.testing.assert_array_equal(raw.X, array[:, :2])


def test_file_relative_path_uses_project_dir(tmp_path, table, monkeypatch):
    (tmp_path / "data").mkdir()
    table[["a", "b"]].to_csv(tmp_path / "data" / "t.csv", index=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the project folder, not the current folder, anchors it
    monkeypatch.setenv("LAB_PROJECT_DIR", str(tmp_path))
    raw = load("data/t.csv")
    np.testing.assert_array_equal(raw.X, table[["a", "b"]].to_numpy(dtype=np.float64))
    monkeypatch.setenv("LAB_PROJECT_DIR", str(elsewhere))
    with pytest.raises(FileNotFoundError, match="no such file"):
        load("data/t.csv")


def test_file_errors(tmp_path, table):
    with pytest.raises(FileNotFoundError, match=r"missing\.csv': no such file"):
        load(tmp_path / "missing.csv")
    txt = tmp_path / "t.txt"
    txt.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match=r"unsupported format '\.txt'; allowed: \.csv, \.parquet, \.npy"):
        load(txt)
    csv = tmp_path / "t.csv"
    table.to_csv(csv, index=False)
    with pytest.raises(ValueError, match=r"no label column 'label'; columns: a, b, species"):
        load(csv, "label")
    one_d = tmp_path / "v.npy"
    np.save(one_d, np.arange(5.0))
    with pytest.raises(ValueError, match=r"expected a 2-d array, got shape \(5,\)"):
        load(one_d)
    # An object array needs pickle to load, which could run arbitrary code: refused.
    pickled = tmp_path / "o.npy"
    np.save(pickled, np.array([[1, "x"], [2, "y"]], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle"):
        load(pickled)


def test_file_fingerprint_follows_content(tmp_path, table):
    path = tmp_path / "t.csv"
    table[["a", "b"]].to_csv(path, index=False)
    entry = DATASETS["file"]
    params = entry.validate({"path": str(path)})
    v1 = entry.version(params)
    assert entry.version(params) == v1
    path.write_text(path.read_text())  # rewritten, same bytes: same version
    assert entry.version(params) == v1
    table.assign(a=table["a"] + 1)[["a", "b"]].to_csv(path, index=False)
    v2 = entry.version(params)
    assert v2 != v1
    # The parameters are part of the identity too.
    assert entry.version(entry.validate({"path": str(path), "label_column": "a"})) != v2


# -- raw_frame: the gate every dataset passes through ----------------------------------------


def test_raw_frame_rejects_non_finite_rows():
    X = np.arange(40, dtype=np.float64).reshape(10, 4)
    X[2, 1] = np.nan
    X[5, 1] = np.inf
    X[7, 3] = -np.inf
    with pytest.raises(BadDataError, match=r"data k~s0: 3 of 10 rows have NaN/inf features \(columns x1, x3\)"):
        raw_frame(Raw(X, None), "k~s0")
    X[5, 1] = X[7, 3] = 0.0
    with pytest.raises(BadDataError, match=r"1 of 10 rows .*\(columns x1\)"):
        raw_frame(Raw(X, None), "k~s0")


def test_raw_frame_schema():
    raw = generate("gaussian_blobs", n_samples=50, n_features=3, centers=2)
    df = raw_frame(raw, "k")
    assert list(df.columns) == ["row", "label", "x0", "x1", "x2"]
    assert df["label"].dtype == np.int64 and df["row"].dtype == np.int64
    np.testing.assert_array_equal(df[["x0", "x1", "x2"]].to_numpy(), raw.X)
    swiss = raw_frame(generate("swissroll", n_samples=50), "k")
    assert swiss["label"].dtype == np.float64
