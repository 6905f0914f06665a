"""Gaussian random projection: a near-zero-cost method, so a sweep of it measures the platform
itself (benchmarks' `overhead` and 1,000-cell `scaling` sweeps), not the computation."""

from typing import Annotated

from pydantic import Field

from lab_assets.dr.methods import METHODS


@METHODS("random_projection", packages=["scikit-learn"])
def random_projection(seed: int, *, n_components: Annotated[int, Field(ge=1)] = 2):
    """Projection onto `n_components` random Gaussian directions drawn from the seed."""
    # Imported on use: registering the entry must stay cheap.
    from sklearn.random_projection import GaussianRandomProjection

    return GaussianRandomProjection(n_components=n_components, random_state=seed)
