"""t-SNE (van der Maaten & Hinton): preserves local neighbourhoods, not global distances."""

from typing import Annotated, Literal

from pydantic import Field

from lab_assets.core.registry import Shape
from lab_assets.dr.methods import METHODS

DEFAULT_PERPLEXITY = 30.0


def _limits(params: dict, shape: Shape) -> dict[str, str]:
    """scikit-learn refuses a perplexity of n points or more (n_neighbors gives n_neighbors / 3)."""
    n, k = shape.points, params.get("n_neighbors")
    perplexity = k / 3 if k is not None else params["perplexity"]
    if n is None or perplexity < n:
        return {}
    if k is not None:
        return {
            "n_neighbors": f"n_neighbors={k} is perplexity {perplexity:g}, which needs more points than the data "
            f"has ({n}): n_neighbors < {3 * n}"
        }
    return {"perplexity": f"perplexity={perplexity:g} needs more points than the data has ({n}): less than {n}"}


@METHODS("tsne", packages=["scikit-learn"], slow=True, limits=_limits)
def tsne(
    seed: int,
    *,
    n_components: Annotated[int, Field(ge=1, le=3)] = 2,
    perplexity: Annotated[float, Field(gt=0)] = DEFAULT_PERPLEXITY,
    n_neighbors: Annotated[int, Field(ge=2)] | None = None,
    learning_rate: Annotated[float, Field(gt=0)] | Literal["auto"] = "auto",
    max_iter: Annotated[int, Field(ge=250)] = 1000,
    init: Literal["pca", "random"] = "pca",
):
    """Barnes-Hut t-SNE from scikit-learn, seeded. Give `perplexity` or the `n_neighbors` every
    neighbourhood method shares: perplexity = n_neighbors / 3, since Barnes-Hut t-SNE attends to
    the 3 * perplexity nearest neighbours of each point."""
    from sklearn.manifold import TSNE  # imported on use: registering the entry must stay cheap

    if n_neighbors is not None:
        # Defaults are filled in before this call, so only a non-default perplexity is a conflict.
        if perplexity != DEFAULT_PERPLEXITY:
            raise ValueError(f"tsne: give perplexity ({perplexity}) or n_neighbors ({n_neighbors}), not both")
        perplexity = n_neighbors / 3
    return TSNE(
        n_components=n_components,
        perplexity=perplexity,
        learning_rate=learning_rate,
        max_iter=max_iter,
        init=init,
        random_state=seed,
    )
