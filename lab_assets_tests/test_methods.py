"""Method registry entries: output shape, seeded reproducibility, parameter validation."""

import numpy as np
import pydantic
import pytest

from lab_assets.core.registry import Entry, RegistryError
from lab_assets.dr.methods import METHODS
from lab_assets_tests.conftest import swissroll_points

N = 200
pytestmark = pytest.mark.usefixtures("single_threaded")
ALL = ["isomap", "pca", "phate", "tsne", "umap"]
# Small settings so the whole file stays fast (t-SNE's minimum is 250 iterations). t-SNE's
# default PCA init leaves nothing random on a 3-d input, so a random init exercises the seed.
FAST = {"pca": {}, "isomap": {}, "tsne": {"max_iter": 250, "init": "random"}, "umap": {}, "phate": {}}
# Methods whose result must not depend on the seed (documented in their entries).
SEED_FREE = {"pca", "isomap"}
# Per method: a value that must be refused, and the parameter it is for.
BAD = {
    "pca": [{"n_components": 0}, {"whiten": "yes"}],
    "isomap": [{"n_neighbors": 1}, {"n_components": 0}],
    "tsne": [
        {"n_components": 4},
        {"max_iter": 249},
        {"init": "spectral"},
        {"perplexity": 0.0},
        {"n_neighbors": 1},
        {"learning_rate": "fast"},
    ],
    "umap": [{"n_neighbors": 1}, {"min_dist": -0.1}, {"metric": 3}],
    "phate": [{"n_neighbors": 1}, {"decay": 0.0}, {"t": "never"}, {"t": 0}, {"mds_solver": "classic"}],
}


@pytest.fixture(scope="module")
def X():
    return swissroll_points(N)


def embed(name, X, seed=0, **params):
    entry = METHODS[name]
    return entry(seed, **entry.validate({**FAST[name], **params})).fit_transform(X)


@pytest.mark.parametrize("name", ALL)
def test_method(name, X):
    a = embed(name, X, seed=0)
    assert a.shape == (N, 2)
    assert np.isfinite(a).all()
    assert a.std(axis=0).min() > 0  # not collapsed to a point or a line
    # Two fresh estimators with the same seed: bit-identical.
    assert np.array_equal(a, embed(name, X, seed=0))

    # The seed reaches the estimator (or, where documented, does not matter).
    assert np.array_equal(a, embed(name, X, seed=1)) == (name in SEED_FREE)

    a3 = embed(name, X, seed=0, n_components=3)
    assert a3.shape == (N, 3)
    assert np.isfinite(a3).all()

    entry = METHODS[name]
    defaults = entry.validate({})
    assert defaults["n_components"] == 2
    assert entry.validate({"n_components": 3})["n_components"] == 3
    for bad in BAD[name]:
        with pytest.raises(pydantic.ValidationError):
            entry.validate(bad)
    with pytest.raises(pydantic.ValidationError, match="n_component"):
        entry.validate({"n_component": 2})  # a typo is an error, not a silently ignored key
    with pytest.raises(pydantic.ValidationError):
        entry.validate({"n_components": "2"})  # strict: no string coercion


def test_pca_matches_numpy_svd(X):
    """PCA is the baseline: check it is the real thing, up to the sign of each axis."""
    Xc = X - X.mean(axis=0)
    U, S, _ = np.linalg.svd(Xc, full_matrices=False)
    expected = U[:, :2] * S[:2]
    got = embed("pca", X)
    assert got.shape == expected.shape
    # One sign per component (an axis may point either way), never one per point.
    for j in range(expected.shape[1]):
        sign = np.sign(got[:, j] @ expected[:, j])
        assert sign != 0
        np.testing.assert_allclose(got[:, j], sign * expected[:, j], atol=1e-9, err_msg=f"component {j}")


def test_method_parameters_reach_the_estimator():
    tsne = METHODS["tsne"](3, **METHODS["tsne"].validate({"perplexity": 12, "max_iter": 300}))
    assert (tsne.perplexity, tsne.max_iter, tsne.random_state) == (12.0, 300, 3)
    umap = METHODS["umap"](4, **METHODS["umap"].validate({"n_neighbors": 7, "min_dist": 0.5}))
    assert (umap.n_neighbors, umap.min_dist, umap.random_state) == (7, 0.5, 4)
    phate = METHODS["phate"](5, **METHODS["phate"].validate({"n_neighbors": 9, "t": 20}))
    assert (phate.knn, phate.t, phate.random_state) == (9, 20, 5)
    iso = METHODS["isomap"](0, **METHODS["isomap"].validate({"n_neighbors": 6}))
    assert iso.n_neighbors == 6 and iso.eigen_solver == "dense"
    pca = METHODS["pca"](0, **METHODS["pca"].validate({"whiten": True}))
    assert pca.whiten is True and pca.svd_solver == "full"


def test_registry():
    assert set(ALL) <= set(METHODS.names())
    with pytest.raises(RegistryError, match=f"unknown method 'nope'; allowed: {', '.join(METHODS.names())}"):
        METHODS["nope"]
    assert "nope" not in METHODS and "pca" in METHODS

    versions = {name: METHODS[name].code_version for name in ALL}
    assert len(set(versions.values())) == len(ALL)  # every method has its own version
    for name, version in versions.items():
        entry = METHODS[name]
        assert entry.code_version == version
        # A fresh Entry for the same function (no cached value) computes the same version.
        fresh = Entry(kind=entry.kind, name=entry.name, fn=entry.fn, packages=entry.packages)
        assert fresh.code_version == version
        # The libraries' versions are part of it.
        other = Entry(kind=entry.kind, name=entry.name, fn=entry.fn, packages=(*entry.packages, "numpy"))
        assert other.code_version != version

    pca = METHODS["pca"]
    assert pca.version(pca.validate({})) == pca.version(pca.validate({"n_components": 2}))
    assert pca.version(pca.validate({})) != pca.version(pca.validate({"n_components": 3}))
