"""random_projection: the trivial method the benchmarks use to measure platform overhead."""

import numpy as np
import pydantic
import pytest

from lab_assets.dr.methods import METHODS
from lab_assets_tests.conftest import swissroll_points


def test_random_projection_is_a_seeded_linear_map():
    X = swissroll_points(100)
    entry = METHODS["random_projection"]
    Z = entry(0, **entry.validate({})).fit_transform(X)
    assert Z.shape == (100, 2) and np.isfinite(Z).all()
    # Linear: the projection of the data is the data times one fixed matrix.
    W, *_ = np.linalg.lstsq(X, Z, rcond=None)
    np.testing.assert_allclose(X @ W, Z, atol=1e-9)
    assert np.array_equal(Z, entry(0).fit_transform(X))
    assert not np.array_equal(Z, entry(1).fit_transform(X))
    assert entry(0, n_components=3).fit_transform(X).shape == (100, 3)
    with pytest.raises(pydantic.ValidationError):
        entry.validate({"n_components": 0})
