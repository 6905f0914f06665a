"""Metrics against scikit-learn, scikit-dimension and direct O(n^2) formulas."""

import numpy as np
import pydantic
import pytest
from sklearn.manifold import trustworthiness as sk_trustworthiness

from lab_assets.dr.metrics import METRICS
from lab_assets.dr.metrics.latent_neighborhoods import GroundTruthNeighborhoods
from lab_assets.dr.metrics.neighbors import Neighborhoods
from lab_assets_tests.conftest import require_module

KS = [1, 5, 15, 40]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 10))
    Z = X @ rng.normal(size=(10, 2))  # a random projection: many neighbours lost, many kept
    return X, Z


@pytest.fixture(scope="module")
def nb(data):
    return Neighborhoods(*data, k_max=max(KS))


def full_ranks(A):
    """ranks[i, j] = rank of j among i's neighbours (1 = nearest), from a full distance matrix."""
    d = np.linalg.norm(A[:, None] - A[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    ranks = np.empty(d.shape, dtype=int)
    np.put_along_axis(ranks, np.argsort(d, axis=1), np.arange(1, len(A) + 1)[None], axis=1)
    return ranks


def test_neighborhoods_shapes_and_order(data, nb):
    X, Z = data
    for idx, dist, A in [(nb.data_idx, nb.data_dist, X), (nb.emb_idx, nb.emb_dist, Z)]:
        assert idx.shape == dist.shape == (300, max(KS))
        assert not (idx == np.arange(300)[:, None]).any()
        assert (np.diff(dist, axis=1) >= 0).all()
        ranks = full_ranks(A)
        assert (np.take_along_axis(ranks, idx, 1) == np.arange(1, 41)).all()


def test_rank_methods_match_full_matrix(data, nb):
    X, Z = data
    rng = np.random.default_rng(1)
    # Scattered pairs (few per row) and one row with many, as the ranking differs by count.
    rows = np.r_[rng.integers(0, 300, 500), np.full(60, 7)]
    cols = np.r_[rng.integers(0, 300, 500), rng.permutation(300)[:60]]
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    np.testing.assert_array_equal(nb.data_rank(rows, cols), full_ranks(X)[rows, cols])
    np.testing.assert_array_equal(nb.emb_rank(rows, cols), full_ranks(Z)[rows, cols])


@pytest.mark.parametrize("k", KS)
def test_trustworthiness_matches_sklearn(data, nb, k):
    X, Z = data
    got = METRICS["trustworthiness"](nb, k=k)
    # Both are 1 - (integer penalty sum) * the same normaliser: equal ranks give equal values up
    # to the last bits of the final float arithmetic, so 1e-9 only tolerates that rounding.
    assert abs(got - sk_trustworthiness(X, Z, n_neighbors=k)) < 1e-9


@pytest.mark.parametrize("k", KS)
def test_continuity_is_swapped_trustworthiness(data, nb, k):
    X, Z = data
    got = METRICS["continuity"](nb, k=k)
    assert abs(got - sk_trustworthiness(Z, X, n_neighbors=k)) < 1e-9


@pytest.mark.parametrize("k", KS)
def test_continuity_and_knn_preservation_direct(data, nb, k):
    X, Z = data
    n = len(X)
    rx, rz = full_ranks(X), full_ranks(Z)
    in_x, in_z = rx <= k, rz <= k
    penalty = np.where(in_x, np.maximum(rz - k, 0), 0).sum()
    continuity = 1 - 2 * penalty / (n * k * (2 * n - 3 * k - 1))
    assert abs(METRICS["continuity"](nb, k=k) - continuity) < 1e-12
    preservation = (in_x & in_z).sum(axis=1).mean() / k
    assert abs(METRICS["knn_preservation"](nb, k=k) - preservation) < 1e-12


def direct_lid(A, k):
    d = np.sort(np.linalg.norm(A[:, None] - A[None], axis=-1), axis=1)[:, 1 : k + 1]
    return (k - 1) / np.log(d[:, -1:] / d[:, :-1]).sum(axis=1)


@pytest.mark.parametrize("k", [2, 5, 20])
@pytest.mark.parametrize("space", ["embedding", "data"])
def test_lid_direct(data, nb, k, space):
    A = data[1] if space == "embedding" else data[0]
    expected = direct_lid(A, k).mean()
    # Different but exact distance computations: only last-bit rounding can differ.
    assert METRICS["lid"](nb, k=k, space=space) == pytest.approx(expected, rel=1e-12)


def test_lid_default_space_is_embedding(nb):
    assert METRICS["lid"](nb, k=10) == METRICS["lid"](nb, k=10, space="embedding")


@pytest.mark.parametrize("space", ["embedding", "data"])
def test_lid_matches_skdim(data, nb, space):
    skdim = require_module("skdim", "scikit-dimension (the `test` extra) is the LID reference")
    A = data[1] if space == "embedding" else data[0]
    k = 20
    mle = skdim.id.MLE().fit(A, n_neighbors=k)  # defaults: no noise model, unbiased=False
    expected = direct_lid(A, k)
    # skdim evaluates the same closed form (k-1) / sum_{j<=k} log(T_k/T_j) per point, on
    # distances from sklearn's kNN (which on the brute path use |a|^2 - 2ab + |b|^2); the
    # only differences are summation order and that rounding, ~1e-13 relative here, so
    # 1e-9 leaves a wide margin while still catching any k vs k-1 or off-by-one slip.
    np.testing.assert_allclose(mle.dimension_pw_, expected, rtol=1e-9)
    assert METRICS["lid"](nb, k=k, space=space) == pytest.approx(mle.dimension_pw_.mean(), rel=1e-9)


KNN_METRICS = [name for name in METRICS.names() if "k" in METRICS[name].params_model.model_fields]


def test_wide_data_many_blocks_match_sklearn(monkeypatch):
    """The benchmark's shape at a size sklearn can check: 50-d clusters, a 2-d projection, rank
    blocks of a few rows (the Gram path for the data, differences for the embedding)."""
    from lab_assets.dr.metrics import neighbors

    monkeypatch.setattr(neighbors, "_BLOCK", 1500 * 7)
    g = np.random.default_rng(3)
    X = np.repeat(g.normal(scale=6, size=(8, 50)), 190, axis=0)[:1500] + g.normal(size=(1500, 50))
    Z = X @ g.normal(size=(50, 2))
    nb = Neighborhoods(X, Z, k_max=50)
    for k in (15, 50):
        assert abs(METRICS["trustworthiness"](nb, k=k) - sk_trustworthiness(X, Z, n_neighbors=k)) < 1e-9
        assert abs(METRICS["continuity"](nb, k=k) - sk_trustworthiness(Z, X, n_neighbors=k)) < 1e-9


def with_truth(data, k_max):
    """Neighbourhoods with class labels and a latent, so that every kNN metric has a value."""
    from lab_assets.dr.latents import Latent

    X, Z = data
    return GroundTruthNeighborhoods(X, Z, k_max=k_max, labels=(X[:, 0] > 0).astype(np.int64), latent=Latent(X[:, :3]))


def test_sharing_is_exact(data):
    small, large = with_truth(data, 15), with_truth(data, 50)
    for name in KNN_METRICS:
        assert METRICS[name](small, k=15) == METRICS[name](large, k=15), name
    for space in ["embedding", "data"]:
        assert METRICS["lid"](small, k=15, space=space) == METRICS["lid"](large, k=15, space=space)
    assert METRICS["rnx_auc"](small, k_max=15) == METRICS["rnx_auc"](large, k_max=15)


def test_registry_and_param_validation():
    names = METRICS.names()
    for name in ["trustworthiness", "continuity", "knn_preservation", "lid"]:
        assert name in names
        assert METRICS[name].validate({"k": 5})["k"] == 5
        for bad in [0, "x", 2.5]:
            with pytest.raises(pydantic.ValidationError):
                METRICS[name].validate({"k": bad})
    with pytest.raises(pydantic.ValidationError):
        METRICS["lid"].validate({"k": 1})  # the MLE needs two distances
    with pytest.raises(pydantic.ValidationError):
        METRICS["lid"].validate({"k": 5, "space": "latent"})
    assert METRICS["lid"].validate({"k": 5}) == {"k": 5, "space": "embedding"}


def test_clear_errors(data, nb):
    X, Z = data
    with pytest.raises(ValueError, match="k=300 needs at least 301 points, the dataset has 300"):
        Neighborhoods(X, Z, k_max=300)
    bad = X.copy()
    bad[7, 3] = np.nan
    with pytest.raises(ValueError, match=r"X \(data\) has non-finite.*row 7"):
        Neighborhoods(bad, Z, k_max=5)
    with pytest.raises(ValueError, match=r"Z \(embedding\) has non-finite"):
        Neighborhoods(X, np.where(np.arange(300)[:, None] == 3, np.inf, Z), k_max=5)
    with pytest.raises(ValueError, match="300 rows but Z .* has 299"):
        Neighborhoods(X, Z[:-1], k_max=5)
    with pytest.raises(ValueError, match="exceeds k_max=40"):
        METRICS["trustworthiness"](nb, k=41)
    small = Neighborhoods(X[:20], Z[:20], k_max=15)
    with pytest.raises(ValueError, match="k < n/2"):
        METRICS["trustworthiness"](small, k=10)


def test_lid_rejects_duplicates(data):
    X, Z = data
    Z = Z.copy()
    Z[5] = Z[9]
    nb = Neighborhoods(X, Z, k_max=5)
    with pytest.raises(ValueError, match="duplicate points: 2 points of the embedding"):
        METRICS["lid"](nb, k=5)
    assert np.isfinite(METRICS["lid"](nb, k=5, space="data"))


def test_chunking_does_not_change_results(data, monkeypatch):
    import lab_assets.dr.metrics.neighbors as neighbors

    whole = with_truth(data, 15)
    expected = {name: METRICS[name](whole, k=15) for name in KNN_METRICS}
    monkeypatch.setattr(neighbors, "_BLOCK", 1000)  # a few rows per chunk
    chunked = with_truth(data, 15)
    assert {name: METRICS[name](chunked, k=15) for name in KNN_METRICS} == expected
