"""mds, spectral, diffusion_map: shape, seeding, parameter validation, and each against an
independent reference on the same input."""

import numpy as np
import pydantic
import pytest
import scipy.linalg
from scipy.spatial.distance import pdist, squareform

from lab_assets.dr.methods import METHODS
from lab_assets.dr.models.diffusion_map import DiffusionMap
from lab_assets_tests.conftest import swissroll_points

N = 200
pytestmark = pytest.mark.usefixtures("single_threaded")
NEW = ["diffusion_map", "mds", "spectral"]
# Small settings keep the file fast (MDS is O(n^2) per SMACOF iteration, times n_init).
FAST = {"mds": {"n_init": 2, "max_iter": 100}, "spectral": {}, "diffusion_map": {}}
BAD = {
    "mds": [{"n_components": 0}, {"n_init": 0}, {"init": "pca"}, {"max_iter": 0}],
    "spectral": [{"n_components": 0}, {"n_neighbors": 1}, {"eigen_solver": "amg"}],
    "diffusion_map": [
        {"n_components": 0},
        {"n_neighbors": 1},
        {"alpha": 1.5},
        {"alpha": -0.1},
        {"t": -1},
        {"t": 1.5},
        {"epsilon": 0.0},
        {"epsilon": "median"},
    ],
}


@pytest.fixture(scope="module")
def X():
    return swissroll_points(N)


@pytest.fixture(scope="module")
def curve():
    """A noisy helix: a 1-D manifold, so the diffusion and Laplacian spectra have clear gaps
    (eigenvalues ~ 1 - c j^2) and eigenvectors are well defined, not mixed by near-ties."""
    g = np.random.default_rng(3)
    s = np.sort(g.uniform(0, 3 * np.pi, 150))
    return np.c_[np.cos(s), np.sin(s), 0.3 * s] + g.normal(scale=0.02, size=(150, 3))


def embed(name, X, seed=0, **params):
    entry = METHODS[name]
    return entry(seed, **entry.validate({**FAST[name], **params})).fit_transform(X)


@pytest.mark.parametrize("name", NEW)
def test_method(name, X):
    a = embed(name, X, seed=0)
    assert a.shape == (N, 2)
    assert np.isfinite(a).all()
    assert a.std(axis=0).min() > 0
    assert np.array_equal(a, embed(name, X, seed=0))  # same seed, fresh estimator: bit-identical
    a3 = embed(name, X, seed=0, n_components=3)
    assert a3.shape == (N, 3) and np.isfinite(a3).all()

    entry = METHODS[name]
    assert entry.validate({})["n_components"] == 2
    for bad in BAD[name]:
        with pytest.raises(pydantic.ValidationError):
            entry.validate(bad)
    with pytest.raises(pydantic.ValidationError, match="n_component"):
        entry.validate({"n_component": 2})
    with pytest.raises(pydantic.ValidationError):
        entry.validate({"n_components": "2"})


def test_seed_reaches_the_estimator(X):
    # MDS starts from random positions: another seed, another local optimum of the stress.
    assert not np.allclose(embed("mds", X, seed=0), embed("mds", X, seed=1))
    # The spectral methods' seed only picks the eigensolver's start vector: the converged
    # eigenvectors agree (up to solver tolerance), so the seed must reach the solver but
    # must not change the answer.
    for name in ["spectral", "diffusion_map"]:
        assert METHODS[name](7, **METHODS[name].validate({})).random_state == 7
        np.testing.assert_allclose(embed(name, X, seed=0), embed(name, X, seed=1), atol=1e-6)


def test_parameters_reach_the_estimator():
    mds = METHODS["mds"](3, **METHODS["mds"].validate({"n_init": 2, "init": "classical_mds"}))
    assert (mds.n_init, mds.init, mds.random_state, mds.metric_mds, mds.n_jobs) == (1, "classical_mds", 3, True, 1)
    mds = METHODS["mds"](3, **METHODS["mds"].validate({"n_init": 2}))
    assert (mds.n_init, mds.init, mds.normalized_stress) == (2, "random", True)
    se = METHODS["spectral"](4, **METHODS["spectral"].validate({"n_neighbors": 7}))
    assert (se.n_neighbors, se.eigen_solver, se.affinity, se.random_state) == (7, "arpack", "nearest_neighbors", 4)
    dm = METHODS["diffusion_map"](5, **METHODS["diffusion_map"].validate({"alpha": 0.5, "t": 3, "epsilon": 2}))
    assert (dm.alpha, dm.t, dm.epsilon, dm.random_state) == (0.5, 3, 2.0, 5)
    assert METHODS["diffusion_map"].validate({}) == {
        "n_components": 2,
        "n_neighbors": 10,
        "alpha": 1.0,
        "t": 1,
        "epsilon": "auto",
    }


# What each method calls its neighbourhood size; the sweep file says `n_neighbors` for all of them.
NEIGHBOURHOOD = {
    "isomap": lambda e: e.n_neighbors,
    "umap": lambda e: e.n_neighbors,
    "spectral": lambda e: e.n_neighbors,
    "diffusion_map": lambda e: e.n_neighbors,
    "phate": lambda e: e.knn,
    "tsne": lambda e: 3 * e.perplexity,  # Barnes-Hut t-SNE looks at 3 * perplexity neighbours
    "torchdr_tsne": lambda e: 3 * e.perplexity,
    "torchdr_umap": lambda e: e.n_neighbors,
}


def test_one_n_neighbors_and_n_components_for_every_method():
    for name in METHODS.names():
        fields = METHODS[name].params_model.model_fields
        assert "n_components" in fields, name
        assert ("n_neighbors" in fields) == (name in NEIGHBOURHOOD), name
    for name, own in NEIGHBOURHOOD.items():
        estimator = METHODS[name](0, **METHODS[name].validate({"n_neighbors": 21}))
        assert own(estimator) == 21, name
    with pytest.raises(ValueError, match="give perplexity .* or n_neighbors .*, not both"):
        METHODS["tsne"](0, **METHODS["tsne"].validate({"n_neighbors": 21, "perplexity": 5.0}))


def test_mds_recovers_an_isometric_embedding():
    """Reference: points that *are* 2-D (rotated into 3-D) have a zero-stress 2-D embedding,
    so SMACOF must reproduce every pairwise distance."""
    g = np.random.default_rng(0)
    P = g.uniform(-1, 1, size=(80, 2))
    Q, _ = np.linalg.qr(g.normal(size=(3, 3)))
    X = np.c_[P, np.zeros(80)] @ Q
    est = METHODS["mds"](0, **METHODS["mds"].validate({"init": "classical_mds", "max_iter": 3000}))
    Z = est.fit_transform(X)
    # Classical MDS is exact here and SMACOF stops at eps=1e-6 relative stress decrease;
    # 1e-4 relative is far below any real misplacement (~1e-1) yet above solver tolerance.
    np.testing.assert_allclose(pdist(Z), pdist(X), rtol=1e-4, atol=1e-4)
    assert est.stress_ < 1e-4  # normalised (Stress-1), as the entry asks


def dense_diffusion_map(X, n_neighbors, alpha, t, eps, n_components):
    """Direct dense construction from the definition: the non-symmetric Markov matrix P and
    numpy's general eigensolver (no similarity transform, no sparse algebra, no ARPACK)."""
    D = np.linalg.norm(X[:, None] - X[None], axis=-1)
    n = len(X)
    off = D + np.diag(np.full(n, np.inf))
    nn = np.argsort(off, axis=1)[:, :n_neighbors]
    mask = np.zeros((n, n), dtype=bool)
    mask[np.arange(n)[:, None], nn] = True
    mask |= mask.T
    np.fill_diagonal(mask, True)
    if eps is None:
        eps = np.median(np.take_along_axis(off, nn, 1) ** 2)
    K = np.where(mask, np.exp(-(D**2) / eps), 0.0)
    q = K.sum(axis=1)
    Ka = K / np.outer(q**alpha, q**alpha)
    d = Ka.sum(axis=1)
    P = Ka / d[:, None]
    vals, vecs = np.linalg.eig(P)
    order = np.argsort(-vals.real)[1 : n_components + 1]
    vals, psi = vals.real[order], vecs.real[:, order]
    pi = d / d.sum()
    psi /= np.sqrt((pi[:, None] * psi**2).sum(axis=0))  # sum_i pi_i psi_i^2 = 1
    return vals, psi * vals**t, eps


@pytest.mark.parametrize("alpha,t,epsilon", [(1.0, 1, "auto"), (0.0, 0, "auto"), (0.5, 3, 0.05), (1.0, 2, 0.5)])
def test_diffusion_map_matches_dense_reference(curve, alpha, t, epsilon):
    est = DiffusionMap(n_components=3, n_neighbors=8, alpha=alpha, t=t, epsilon=epsilon, random_state=0)
    Z = est.fit_transform(curve)
    vals, ref, eps = dense_diffusion_map(curve, 8, alpha, t, None if epsilon == "auto" else epsilon, 3)
    assert est.epsilon_ == pytest.approx(eps, rel=1e-12)  # sklearn's kNN distances vs exact ones
    # Eigenvalues and eigenvectors from two different solvers (ARPACK on the symmetric
    # conjugate vs LAPACK geev on P): agreement to ~1e-10 is expected; 1e-8 leaves margin
    # while any normalisation, alpha or kNN-union slip would show up at 1e-2 or more.
    np.testing.assert_allclose(est.eigenvalues_, vals, atol=1e-8)
    signs = np.sign((Z * ref).sum(axis=0))  # eigenvectors are defined up to sign
    np.testing.assert_allclose(Z, ref * signs, atol=1e-8)
    # The trivial eigenvalue 1 is dropped; the rest lie in (-1, 1).
    assert (np.abs(est.eigenvalues_) < 1).all()


def test_diffusion_map_errors_and_warnings(curve):
    with pytest.raises(ValueError, match="n_neighbors=150 needs more than 150 points"):
        DiffusionMap(n_neighbors=150).fit(curve)
    with pytest.raises(ValueError, match="n_components=9 needs more than 10 points"):
        DiffusionMap(n_components=9, n_neighbors=3).fit(curve[:10])
    with pytest.raises(ValueError, match="duplicate points"):
        DiffusionMap(n_neighbors=2).fit(np.zeros((10, 2)))
    two = np.r_[curve, curve + 100.0]
    with pytest.warns(RuntimeWarning, match="2 connected components"):
        Z = DiffusionMap(n_neighbors=5, random_state=0).fit_transform(two)
    assert np.isfinite(Z).all()


def test_spectral_matches_generalised_eigenproblem(curve):
    """Reference: Laplacian eigenmaps from the definition, L f = lambda D f with L = D - W,
    W the symmetrised kNN graph (sklearn counts the point itself among its n_neighbors, hence
    n_neighbors - 1 others), solved densely by scipy.linalg.eigh."""
    k = 8
    D = squareform(pdist(curve)) + np.diag(np.full(len(curve), np.inf))
    C = np.zeros(D.shape)
    C[np.arange(len(curve))[:, None], np.argsort(D, axis=1)[:, : k - 1]] = 1
    W = 0.5 * (C + C.T)
    deg = np.diag(W.sum(axis=1))
    _, f = scipy.linalg.eigh(deg - W, deg)
    ref = f[:, 1:3]
    Z = embed("spectral", curve, n_neighbors=k)
    # Compare directions only: sklearn scales each eigenvector differently (by degree terms).
    unit = lambda A: A / np.linalg.norm(A, axis=0)  # noqa: E731
    got, ref = unit(Z), unit(ref)
    # Shift-invert ARPACK at tol=0 vs LAPACK: ~1e-10 apart; 1e-6 catches any wrong graph.
    np.testing.assert_allclose(got, ref * np.sign((got * ref).sum(axis=0)), atol=1e-6)
