"""participation_ratio, spearman_distance_correlation, persistent_homology, silhouette: each
against an independent reference on the same input (numpy, scipy, ripser, sklearn)."""

import numpy as np
import pydantic
import pytest
from ripser import ripser
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import pdist, squareform
from scipy.stats import spearmanr
from sklearn.metrics import silhouette_score

from lab_assets.dr.metrics import METRICS, NotApplicable
from lab_assets.dr.metrics import spearman_distance_correlation as sp_module
from lab_assets.dr.metrics.neighbors import Neighborhoods

NEW = ["participation_ratio", "spearman_distance_correlation", "persistent_homology", "silhouette"]


@pytest.fixture(scope="module")
def blobs():
    """300 points in 3 classes in 10-D, and a random 2-D projection of them."""
    g = np.random.default_rng(0)
    labels = g.integers(0, 3, 300)
    X = 3 * g.normal(size=(3, 10))[labels] + g.normal(size=(300, 10))
    Z = X @ g.normal(size=(10, 2))
    return X, Z, labels


@pytest.fixture(scope="module")
def nb(blobs):
    X, Z, labels = blobs
    # No metric here has a k: the suite's k_max is 0 and no kNN search is made.
    return Neighborhoods(X, Z, k_max=0, labels=labels, seed=0)


def circle(n, seed=0, noise=0.05):
    g = np.random.default_rng(seed)
    s = g.uniform(0, 2 * np.pi, n)
    return np.c_[np.cos(s), np.sin(s)] + g.normal(scale=noise, size=(n, 2))


# ---- participation ratio ------------------------------------------------------------------


def eig_pr(A):
    lam = np.linalg.eigvalsh(np.cov(A, rowvar=False))
    return lam.sum() ** 2 / (lam**2).sum()


@pytest.mark.parametrize("space", ["embedding", "data"])
def test_participation_ratio_matches_eigvalsh(blobs, nb, space):
    X, Z, _ = blobs
    expected = eig_pr(Z if space == "embedding" else X)
    # Traces and Frobenius norms vs an eigendecomposition: only rounding differs (~1e-15).
    assert METRICS["participation_ratio"](nb, space=space) == pytest.approx(expected, rel=1e-10)


def test_participation_ratio_wide_chunked_and_bounds(monkeypatch):
    import lab_assets.dr.metrics.participation_ratio as pr_module

    g = np.random.default_rng(1)
    X = g.normal(size=(20, 50)) * np.linspace(0.1, 3, 50)  # more features than points
    Z = np.c_[g.normal(size=20), np.zeros(20)]  # all variance on one axis
    nb = Neighborhoods(X, Z, k_max=0)
    whole = METRICS["participation_ratio"](nb, space="data")
    assert whole == pytest.approx(eig_pr(X), rel=1e-10)
    monkeypatch.setattr(pr_module, "_BLOCK", 100)  # a few Gram columns per block
    assert METRICS["participation_ratio"](nb, space="data") == pytest.approx(whole, rel=1e-12)
    assert METRICS["participation_ratio"](nb) == pytest.approx(1.0, rel=1e-12)
    iso = Neighborhoods(X, g.normal(size=(20, 4)), k_max=0)
    assert 1 <= METRICS["participation_ratio"](iso) <= 4


def test_participation_ratio_zero_variance():
    nb = Neighborhoods(np.ones((10, 3)), np.zeros((10, 2)), k_max=0)
    with pytest.raises(ValueError, match="all 10 points of the embedding space are identical"):
        METRICS["participation_ratio"](nb)


# ---- spearman distance correlation ---------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 7, 60])
def test_triangle_pair_enumerates_like_pdist(n):
    total = n * (n - 1) // 2
    i, j = sp_module.triangle_pair(np.arange(total), n)
    ei, ej = np.triu_indices(n, 1)  # pdist's order
    np.testing.assert_array_equal(i, ei)
    np.testing.assert_array_equal(j, ej)


def test_triangle_pair_large_n_boundaries():
    # Row starts and ends, where the float square root is most likely to round a row off.
    n = 1_000_003
    rows = np.array([0, 1, 2, 500_000, n - 3, n - 2])
    starts = sp_module.start(rows, n)
    for p, row, col in [(starts, rows, rows + 1), (starts + (n - rows - 2), rows, np.full(6, n - 1))]:
        i, j = sp_module.triangle_pair(p, n)
        np.testing.assert_array_equal(i, row)
        np.testing.assert_array_equal(j, col)


def test_triangle_pair_where_the_float_square_root_rounds_a_row_off():
    # n = 2**27 + 1: the float formula alone puts the last pair of rows 0-4 one row too far,
    # and the first pair of these rows one row short (found by search; both corrections needed).
    n = 2**27 + 1
    early, late = np.arange(5), np.array([134206438, 134209422, 134214790, 134215403, 134217294])
    for p, rows, cols in [
        (sp_module.start(early + 1, n) - 1, early, np.full(5, n - 1)),
        (sp_module.start(late, n), late, late + 1),
    ]:
        b = 2 * n - 1
        assert (np.floor((b - np.sqrt(float(b) ** 2 - 8.0 * p)) / 2) != rows).all()  # the premise
        i, j = sp_module.triangle_pair(p, n)
        np.testing.assert_array_equal(i, rows)
        np.testing.assert_array_equal(j, cols)


def test_a_sample_of_all_pairs_but_one_leaves_out_exactly_one():
    n, total = 30, 30 * 29 // 2
    i, j = sp_module.pair_indices(n, total - 1, np.random.default_rng(3))
    assert i.size == total - 1 and (i < j).all() and j.max() < n
    assert len(set(zip(*np.triu_indices(n, 1))) - set(zip(i, j))) == 1


@pytest.mark.parametrize("n_pairs", [40 * 39 // 2, 10**6])
def test_spearman_all_pairs_matches_scipy(blobs, n_pairs):
    X, Z, _ = blobs
    nb = Neighborhoods(X[:40], Z[:40], k_max=0)
    expected = spearmanr(pdist(X[:40]), pdist(Z[:40])).statistic
    # Same pairs, same rank transform; distances computed two ways can differ in the last
    # bit, which could only swap exact near-ties: 1e-12 is ample.
    assert METRICS["spearman_distance_correlation"](nb, n_pairs=n_pairs) == pytest.approx(expected, abs=1e-12)
    i, j = sp_module.pair_indices(40, n_pairs, np.random.default_rng(5))
    assert i.size == 780 and (i < j).all()


def test_spearman_sample(blobs, nb):
    X, Z, _ = blobs
    i, j = sp_module.pair_indices(300, 5000, nb.rng("spearman_distance_correlation"))
    assert i.size == 5000 and (i < j).all() and j.max() < 300
    assert np.unique(i * 300 + j).size == 5000  # distinct pairs
    i1, j1 = sp_module.pair_indices(300, 5000, np.random.default_rng(1))
    assert not (np.array_equal(i, i1) and np.array_equal(j, j1))
    got = METRICS["spearman_distance_correlation"](nb, n_pairs=5000)
    assert nb.sampled == {"pairs": 5000, "of": 44850, "seed": nb.seed}
    assert got == METRICS["spearman_distance_correlation"](nb, n_pairs=5000)  # seeded
    assert got == pytest.approx(spearmanr(pdist(X)[_pos(i, j, 300)], pdist(Z)[_pos(i, j, 300)]).statistic, abs=1e-12)
    # A uniform sample of 5000 of 44850 pairs estimates the full value; the sampling
    # standard error of a correlation this size is ~0.01, so 0.05 is a safe bound.
    assert got == pytest.approx(spearmanr(pdist(X), pdist(Z)).statistic, abs=0.05)


def _pos(i, j, n):
    """pdist position of pair (i, j), i < j, computed by counting (the reference)."""
    return np.array([sum(n - 1 - r for r in range(a)) + (b - a - 1) for a, b in zip(i, j)])


def test_spearman_errors(blobs):
    X, Z, _ = blobs
    with pytest.raises(ValueError, match="all 45 sampled pair distances of the embedding space are equal"):
        METRICS["spearman_distance_correlation"](Neighborhoods(X[:10], np.zeros((10, 2)), k_max=0))
    with pytest.raises(ValueError, match="at least 3 points"):
        METRICS["spearman_distance_correlation"](Neighborhoods(X[:2], Z[:2], k_max=0))


# ---- persistent homology -------------------------------------------------------------------


@pytest.fixture(scope="module")
def ring():
    """A noisy circle (2-D, the 'embedding') and the same circle rotated into 3-D (the 'data')."""
    Z = circle(150)
    Q, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(3, 3)))
    return np.c_[Z, np.zeros(150)] @ Q, Z


def ref_diagram(A, dim):
    return ripser(A, maxdim=dim)["dgms"][dim]


@pytest.mark.parametrize("space", ["embedding", "data"])
def test_persistent_homology_circle(ring, space):
    X, Z = ring
    nb = Neighborhoods(X, Z, k_max=0, seed=0)
    A = Z if space == "embedding" else X
    ph = lambda **kw: METRICS["persistent_homology"](nb, space=space, **kw)  # noqa: E731
    # One dominant loop: the default threshold (10% of the diameter, ~0.22 here) separates it
    # (persistence ~1.36) from the noise loops (< 0.03).
    assert ph(summary="betti") == 1
    assert ph(dim=0, summary="betti") == 1  # one connected component
    dgm = ref_diagram(A, 1)
    life = dgm[:, 1] - dgm[:, 0]
    # The same ripser call on the same points: the diagram is identical, only the summation
    # order can differ (~1e-16); 1e-6 also allows for a float32 round trip.
    assert ph() == pytest.approx(life.sum(), rel=1e-6)
    assert ph(summary="betti", threshold=0.0) == np.count_nonzero(life > 0)
    assert ph(summary="betti", threshold=0.03) == np.count_nonzero(life > 0.03)


def regular_polygon(n, r):
    t = 2 * np.pi * np.arange(n) / n
    return r * np.c_[np.cos(t), np.sin(t)]


@pytest.mark.parametrize("n", [60, 61, 100])
@pytest.mark.parametrize("space", ["embedding", "data"])
def test_persistent_homology_h1_of_a_regular_polygon_is_known(n, space):
    """Independent of ripser: the Vietoris-Rips complex of n equally spaced points on a circle of
    radius r is the n-cycle from the edge length 2r sin(pi/n) (adjacent points; no triangles yet)
    and stays a circle while the scale joins points fewer than n/3 steps apart; at ceil(n/3)
    steps it has no H1 (Adamaszek & Adams, "The Vietoris-Rips complexes of a circle", 2017).
    So H1 is exactly one bar [2r sin(pi/n), 2r sin(pi ceil(n/3)/n)], r*sqrt(3) when 3 | n."""
    r = 2.0
    Z = regular_polygon(n, r)
    Q, _ = np.linalg.qr(np.random.default_rng(5).normal(size=(3, 3)))
    X = np.c_[Z, np.zeros(n)] @ Q  # the same polygon rotated into 3-D
    nb = Neighborhoods(X, Z, k_max=0)
    birth, death = 2 * r * np.sin(np.pi / n), 2 * r * np.sin(np.pi * int(np.ceil(n / 3)) / n)
    if n % 3 == 0:
        assert death == pytest.approx(r * np.sqrt(3), rel=1e-12)
    # ripser keeps distances in float32 (relative error ~6e-8 each): 1e-5 covers it, while the
    # neighbouring scales (one step more or less) differ by > 1%.
    assert METRICS["persistent_homology"](nb, space=space) == pytest.approx(death - birth, rel=1e-5)
    assert METRICS["persistent_homology"](nb, space=space, summary="betti", threshold=0.0) == 1
    assert METRICS["persistent_homology"](nb, space=space, summary="betti", threshold=0.99 * (death - birth)) == 1
    assert METRICS["persistent_homology"](nb, space=space, summary="betti", threshold=1.01 * (death - birth)) == 0


def test_persistent_homology_h1_of_a_dense_circle_sample_dies_near_r_sqrt3():
    """Points drawn at random on a circle of radius r (no noise): every Rips simplex below the
    scale r*sqrt(3) lies in an open half circle (a triangle of circle points around the centre
    has a side >= r*sqrt(3)), so the loop lives at least until r*sqrt(3); it is filled once a
    triangle around the centre exists (fanning each arc into its side), which a sample whose
    largest gap has chord c gives at r*sqrt(3) + c. It is born by the scale c."""
    r, n = 1.5, 400
    t = np.sort(np.random.default_rng(6).uniform(0, 2 * np.pi, n))
    Z = r * np.c_[np.cos(t), np.sin(t)]
    gap = np.max(np.diff(np.r_[t, t[0] + 2 * np.pi]))
    c = 2 * r * np.sin(gap / 2)
    nb = Neighborhoods(Z, Z, k_max=0)
    total = METRICS["persistent_homology"](nb)
    # Lifetime within [r*sqrt(3) - c, r*sqrt(3) + c] (float32 slack 1e-5).
    assert r * np.sqrt(3) - c - 1e-5 <= total <= r * np.sqrt(3) + c + 1e-5
    assert c < 0.15  # dense: the bound is tight (here to about 5% of r*sqrt(3) = 2.6)
    assert METRICS["persistent_homology"](nb, summary="betti") == 1


def test_persistent_homology_h0_is_the_minimum_spanning_tree(ring):
    """Independent reference: H0 deaths of a Rips filtration are the MST's edge lengths, so
    total H0 persistence is the MST's total length."""
    X, Z = ring
    nb = Neighborhoods(X, Z, k_max=0)
    mst = minimum_spanning_tree(squareform(pdist(Z))).sum()
    # ripser stores filtration values as float32 (~1e-7 relative per edge; measured 3e-9 in
    # total here), so 1e-5 is safe while one missing or extra edge would be off by >= 0.1%.
    assert METRICS["persistent_homology"](nb, dim=0) == pytest.approx(mst, rel=1e-5)


def test_persistent_homology_two_clusters():
    g = np.random.default_rng(2)
    Z = np.r_[g.normal(size=(60, 2)) * 0.1, g.normal(size=(60, 2)) * 0.1 + 5]
    nb = Neighborhoods(Z, Z, k_max=0)
    assert METRICS["persistent_homology"](nb, dim=0, summary="betti") == 2
    assert METRICS["persistent_homology"](nb, dim=1, summary="betti") == 0


def test_persistent_homology_subsample():
    Z = circle(300, seed=4)
    X = np.c_[Z, np.zeros(300)]  # the same geometry: both spaces must give the same value
    nb = Neighborhoods(X, Z, k_max=0, seed=3)
    got = METRICS["persistent_homology"](nb, n_points=100)
    assert nb.sampled == {"points": 100, "of": 300, "seed": 3, "stream": "persistent_homology"}
    idx = Neighborhoods(X, Z, k_max=0, seed=3).subsample(100, "persistent_homology")
    assert idx.size == 100 and np.unique(idx).size == 100
    life = np.diff(ref_diagram(Z[idx], 1), axis=1)
    assert got == pytest.approx(life.sum(), rel=1e-6)
    assert got == METRICS["persistent_homology"](nb, n_points=100)  # seeded
    assert got == pytest.approx(METRICS["persistent_homology"](nb, n_points=100, space="data"), rel=1e-6)
    other = Neighborhoods(X, Z, k_max=0, seed=4)
    assert got != METRICS["persistent_homology"](other, n_points=100)  # another subsample
    assert METRICS["persistent_homology"](other, n_points=100, summary="betti") == 1


def test_persistent_homology_threshold_only_for_betti(ring):
    nb = Neighborhoods(*ring, k_max=0)
    with pytest.raises(ValueError, match="threshold applies to summary='betti' only"):
        METRICS["persistent_homology"](nb, threshold=0.1)


# ---- silhouette ----------------------------------------------------------------------------


def direct_silhouette(A, y):
    D = squareform(pdist(A))
    s = []
    for i in range(len(A)):
        own = (y == y[i]) & (np.arange(len(A)) != i)
        a = D[i, own].mean()
        b = min(D[i, y == c].mean() for c in np.unique(y) if c != y[i])
        s.append((b - a) / max(a, b))
    return np.mean(s)


@pytest.mark.parametrize("space", ["embedding", "data"])
def test_silhouette_full(blobs, nb, space):
    X, Z, labels = blobs
    A = Z if space == "embedding" else X
    got = METRICS["silhouette"](nb, space=space)
    # Same formula, different distance code paths and summation order: ~1e-15.
    assert got == pytest.approx(silhouette_score(A, labels), rel=1e-10)
    assert got == pytest.approx(direct_silhouette(A, labels), rel=1e-10)


def test_silhouette_subsample(blobs):
    X, Z, labels = blobs
    nb = Neighborhoods(X, Z, k_max=0, labels=labels, seed=2)
    got = METRICS["silhouette"](nb, n_points=100)
    idx = Neighborhoods(X, Z, k_max=0, seed=2).subsample(100, "silhouette")
    assert idx.size == 100 and np.unique(idx).size == 100
    assert got == pytest.approx(silhouette_score(Z[idx], labels[idx]), rel=1e-10)
    assert got == METRICS["silhouette"](nb, n_points=100)
    assert got != METRICS["silhouette"](Neighborhoods(X, Z, k_max=0, labels=labels, seed=3), n_points=100)


def test_silhouette_errors(blobs):
    X, Z, labels = blobs
    from lab_assets.dr.metrics import NotApplicable

    # Not applicable (null + this reason in the cell's metadata), not a failure of the cell.
    with pytest.raises(NotApplicable, match="^silhouette needs class labels, but this dataset has no labels$"):
        METRICS["silhouette"](Neighborhoods(X, Z, k_max=0))
    continuous = Neighborhoods(X, Z, k_max=0, labels=labels.astype(float) + 0.5)
    with pytest.raises(ValueError, match="no class labels: its labels are float64"):
        METRICS["silhouette"](continuous)
    with pytest.raises(ValueError, match="at least 2 classes, the labels have 1"):
        METRICS["silhouette"](Neighborhoods(X, Z, k_max=0, labels=np.zeros(300, dtype=int)))
    with pytest.raises(ValueError, match="labels of shape"):
        METRICS["silhouette"](Neighborhoods(X, Z, k_max=0, labels=labels[:10]))
    with pytest.raises(ValueError, match="fewer classes than points"):
        METRICS["silhouette"](Neighborhoods(X[:5], Z[:5], k_max=0, labels=np.arange(5)))


# ---- registry ------------------------------------------------------------------------------


def test_registry_and_param_validation():
    for name in NEW:
        assert name in METRICS.names()
        with pytest.raises(pydantic.ValidationError):
            METRICS[name].validate({"k": 5})  # none of these has a neighbourhood size
    assert METRICS["participation_ratio"].validate({}) == {"space": "embedding"}
    assert METRICS["spearman_distance_correlation"].validate({}) == {"n_pairs": 20000}
    assert METRICS["persistent_homology"].validate({}) == {
        "dim": 1,
        "n_points": 500,
        "space": "embedding",
        "summary": "total_persistence",
        "threshold": None,
    }
    assert METRICS["persistent_homology"].validate({"threshold": 0})["threshold"] == 0
    assert METRICS["silhouette"].validate({}) == {"space": "embedding", "n_points": 5000}
    bad = {
        "participation_ratio": [{"space": "latent"}],
        "spearman_distance_correlation": [{"n_pairs": 1}, {"n_pairs": 2.5}, {"n_pairs": "many"}],
        "persistent_homology": [
            {"dim": 2},
            {"dim": "1"},
            {"n_points": 2},
            {"summary": "mean"},
            {"threshold": -0.1},
            {"space": "latent"},
        ],
        "silhouette": [{"n_points": 2}, {"space": "latent"}],
    }
    for name, cases in bad.items():
        for params in cases:
            with pytest.raises(pydantic.ValidationError):
                METRICS[name].validate(params)


# ---- reconstruction error -----------------------------------------------------------------


def test_reconstruction_error_per_split_matches_sklearn_r2(blobs):
    """PCA fitted on the train rows (as the autoencoder trains): each split's error against
    scikit-learn's variance-weighted R^2 of the reconstruction on those rows (1 - R^2 = the summed
    squared error over the rows' summed variance), the test split by default."""
    from sklearn.decomposition import PCA
    from sklearn.metrics import mean_squared_error, r2_score

    X, _, _ = blobs
    split = np.where(np.random.default_rng(1).random(len(X)) < 0.7, "train", "test")
    pca = PCA(n_components=2).fit(X[split == "train"])
    Z = pca.transform(X)
    X_hat = pca.inverse_transform(Z)
    nb = Neighborhoods(X, Z, 0, split=split, reconstruction=((X_hat - X) ** 2).sum(axis=1))
    recon = METRICS["reconstruction_error"]
    for name, rows in (("test", split == "test"), ("train", split == "train"), ("all", np.ones(len(X), bool))):
        expected = 1 - r2_score(X[rows], X_hat[rows], multioutput="variance_weighted")
        assert recon(nb, split=name) == pytest.approx(expected, rel=1e-9)
        assert recon(nb, split=name, normalized=False) == pytest.approx(
            X.shape[1] * mean_squared_error(X[rows], X_hat[rows]), rel=1e-9
        )
    assert recon(nb) == recon(nb, split="test") > recon(nb, split="train")  # unseen rows reconstruct worse
    with pytest.raises(ValueError, match=r"^reconstruction_error: the dataset has no 'test' rows$"):
        recon(Neighborhoods(X, Z, 0, split=np.full(len(X), "train"), reconstruction=nb.reconstruction))
    same = np.ones_like(X)
    with pytest.raises(
        ValueError, match=r"^reconstruction_error: the 'test' rows are all identical, so normalized error is 0/0$"
    ):
        recon(Neighborhoods(same, Z, 0, split=split, reconstruction=nb.reconstruction))
    assert recon(Neighborhoods(same, Z, 0, split=split, reconstruction=nb.reconstruction), normalized=False) > 0
    with pytest.raises(
        NotApplicable, match=r"^reconstruction_error needs a method that can invert its embedding \(pca, autoencoder\)$"
    ):
        recon(Neighborhoods(X, Z, 0, split=split))


# ---- what mutation testing found unchecked (docs/mutation-testing.md) ---------------------


def test_each_metric_reads_the_space_it_is_asked_for():
    """Data and embedding of different shapes (a circle vs a blob): `space` picks which one, and
    the default is the embedding."""
    X, Z = np.c_[circle(80, seed=7), np.zeros(80)], np.random.default_rng(8).normal(size=(80, 2))
    labels = (np.arange(80) % 2).astype(int)
    nb = Neighborhoods(X, Z, k_max=0, labels=labels)
    for space, A in (("data", X), ("embedding", Z)):
        life = np.diff(ref_diagram(A, 1), axis=1)
        assert METRICS["persistent_homology"](nb, space=space) == pytest.approx(life.sum(), rel=1e-6)
        assert METRICS["silhouette"](nb, space=space) == pytest.approx(silhouette_score(A, labels), rel=1e-10)
    assert METRICS["persistent_homology"](nb) == METRICS["persistent_homology"](nb, space="embedding")
    assert METRICS["silhouette"](nb) == METRICS["silhouette"](nb, space="embedding")


def test_the_default_subsample_sizes():
    """One point more than each default: the sample is the default size (a default is part of
    every column's meaning, `persistent_homology` = `persistent_homology@n_points=500`)."""
    g = np.random.default_rng(9)
    nb = Neighborhoods(g.normal(size=(501, 3)), g.normal(size=(501, 2)), k_max=0)
    METRICS["persistent_homology"](nb, dim=0)
    assert nb.sampled == {"points": 500, "of": 501, "seed": 0, "stream": "persistent_homology"}
    nb = Neighborhoods(g.normal(size=(5001, 2)), g.normal(size=(5001, 2)), k_max=0, labels=np.arange(5001) % 3)
    METRICS["silhouette"](nb)
    assert nb.sampled == {"points": 5000, "of": 5001, "seed": 0, "stream": "silhouette"}
    nb = Neighborhoods(g.normal(size=(201, 2)), g.normal(size=(201, 2)), k_max=0)  # 20,100 pairs
    METRICS["spearman_distance_correlation"](nb)
    assert nb.sampled == {"pairs": 20000, "of": 20100, "seed": 0}


def test_a_betti_number_counts_bars_longer_than_the_threshold_not_equal_to_it():
    # Points at 0, 1 and 3 on a line: H0 bars of length 1, 2 and the infinite one.
    nb = Neighborhoods(np.array([[0.0], [1.0], [3.0]]), np.array([[0.0], [1.0], [3.0]]), k_max=0)
    assert METRICS["persistent_homology"](nb, dim=0, summary="betti", threshold=1.0) == 2
    assert METRICS["persistent_homology"](nb, dim=0, summary="betti", threshold=0.5) == 3
    with pytest.raises(ValueError, match=r"^persistent_homology: threshold applies to summary='betti' only$"):
        METRICS["persistent_homology"](nb, threshold=0.1)


def test_silhouette_of_two_classes_and_the_one_class_messages(blobs):
    X, Z, labels = blobs
    two = labels % 2
    assert METRICS["silhouette"](Neighborhoods(X, Z, k_max=0, labels=two)) == pytest.approx(
        silhouette_score(Z, two), rel=1e-10
    )
    one = np.zeros(300, dtype=int)
    with pytest.raises(ValueError, match=r"^silhouette needs at least 2 classes, the labels have 1$"):
        METRICS["silhouette"](Neighborhoods(X, Z, k_max=0, labels=one))
    rare = one.copy()
    rare[0] = 1  # a second class that a 50-point sample (seed 0) misses
    nb = Neighborhoods(X, Z, k_max=0, labels=rare)
    assert 0 not in nb.subsample(50, "silhouette")
    with pytest.raises(
        ValueError, match=r"^silhouette needs at least 2 classes, the labels have 1 among the 50 subsampled points$"
    ):
        METRICS["silhouette"](nb, n_points=50)


def test_spearman_at_three_points_and_what_a_sample_records(blobs):
    X, Z, _ = blobs
    x, z = X[:3], Z[:3]
    assert METRICS["spearman_distance_correlation"](Neighborhoods(x, z, k_max=0)) == pytest.approx(
        spearmanr(pdist(x), pdist(z)).statistic
    )
    with pytest.raises(ValueError, match=r"^spearman_distance_correlation needs at least 3 points \(2 pairs\), got 2$"):
        METRICS["spearman_distance_correlation"](Neighborhoods(X[:2], Z[:2], k_max=0))
    n, total = 100, 4950
    for n_pairs, sampled in (
        (total, None),
        (total + 1, None),
        (total - 1, total - 1),
        (total // 3 + 1, total // 3 + 1),
    ):
        nb = Neighborhoods(X[:n], Z[:n], k_max=0, seed=5)
        METRICS["spearman_distance_correlation"](nb, n_pairs=n_pairs)
        expected = None if sampled is None else {"pairs": sampled, "of": total, "seed": 5}
        assert nb.sampled == expected
        assert expected is None or type(nb.sampled["of"]) is int  # a count, never 4950.0


def test_a_subsample_as_large_as_the_data_is_every_point_and_records_no_sample(blobs):
    X, Z, _ = blobs
    nb = Neighborhoods(X, Z, k_max=0)
    assert np.array_equal(nb.subsample(len(X), "any"), np.arange(len(X))) and nb.sampled is None
    assert nb.subsample(len(X) - 1, "any").size == len(X) - 1 and nb.sampled["points"] == len(X) - 1


def test_spearman_names_the_space_whose_distances_are_all_equal(blobs):
    X, Z, _ = blobs
    for data, emb, space in ((np.zeros((10, 3)), Z[:10], "data"), (X[:10], np.ones((10, 2)), "embedding")):
        with pytest.raises(
            ValueError,
            match=rf"^spearman_distance_correlation is undefined: all 45 sampled pair distances of the {space} space are equal \(0\)$",
        ):
            METRICS["spearman_distance_correlation"](Neighborhoods(data, emb, k_max=0))
