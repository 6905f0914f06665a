"""Isomap (Tenenbaum et al.): MDS on geodesic (shortest-path) distances of the kNN graph."""

from typing import Annotated

from pydantic import Field

from lab_assets.dr.methods import METHODS, fewer_than_points


@METHODS("isomap", packages=["scikit-learn"], limits=fewer_than_points("n_neighbors", "n_components"))
def isomap(
    seed: int,
    *,
    n_components: Annotated[int, Field(ge=1)] = 2,
    n_neighbors: Annotated[int, Field(ge=2)] = 10,
):
    """scikit-learn's Isomap with the dense eigensolver: its ARPACK path draws its start vector
    from NumPy's global RNG (Isomap takes no random_state), which would break reproducibility."""
    from sklearn.manifold import Isomap  # imported on use: registering the entry must stay cheap

    del seed  # deterministic
    return Isomap(n_components=n_components, n_neighbors=n_neighbors, eigen_solver="dense")
