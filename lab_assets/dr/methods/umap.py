"""UMAP (McInnes et al.): fuzzy-graph layout, the usual fast alternative to t-SNE."""

from typing import Annotated, Any

from pydantic import Field

from lab_assets.dr.methods import METHODS, fewer_than_points


@METHODS(
    "umap",
    slow=True,
    packages=["umap-learn", "pynndescent", "numba"],
    limits=fewer_than_points("n_neighbors", "n_components"),
)
def umap(
    seed: int,
    *,
    n_components: Annotated[int, Field(ge=1)] = 2,
    n_neighbors: Annotated[int, Field(ge=2)] = 15,
    min_dist: Annotated[float, Field(ge=0)] = 0.1,
    metric: str = "euclidean",
) -> Any:
    """umap-learn, seeded (which also makes it single-threaded: the sweep runner parallelises
    across cells instead)."""
    import umap as umap_learn  # imported here: numba compilation makes the import cost seconds

    return umap_learn.UMAP(
        n_components=n_components,
        n_neighbors=n_neighbors,
        min_dist=min_dist,
        metric=metric,
        random_state=seed,
        n_jobs=1,
    )
