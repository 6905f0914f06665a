"""Laplacian eigenmaps (Belkin & Niyogi): the bottom eigenvectors of the kNN graph's normalised
Laplacian. Preserves local neighbourhoods (graph-adjacent points land close); global distances
and the density along the manifold are not preserved.
"""

from typing import Annotated, Literal

from pydantic import Field

from lab_assets.dr.methods import METHODS, fewer_than_points


@METHODS("spectral", packages=["scikit-learn", "scipy"], limits=fewer_than_points("n_neighbors", "n_components"))
def spectral(
    seed: int,
    *,
    n_components: Annotated[int, Field(ge=1)] = 2,
    n_neighbors: Annotated[int, Field(ge=2)] = 10,
    eigen_solver: Literal["arpack", "lobpcg"] = "arpack",
):
    """scikit-learn's SpectralEmbedding on a symmetrised kNN connectivity graph, seeded."""
    from sklearn.manifold import SpectralEmbedding  # imported on use: registering the entry must stay cheap

    return SpectralEmbedding(
        n_components=n_components,
        affinity="nearest_neighbors",
        # sklearn's default (n/10) would tie the graph, and so the key's meaning, to the size.
        n_neighbors=n_neighbors,
        # Named rather than left to sklearn's default, so the key records it; both solvers draw
        # their start vectors from `random_state`, so the seed fixes the result.
        eigen_solver=eigen_solver,
        random_state=seed,
        n_jobs=1,
    )
