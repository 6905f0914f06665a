"""t-SNE (van der Maaten & Hinton): preserves local neighbourhoods, not global distances."""

from typing import Annotated, Literal

from pydantic import Field
from sklearn.manifold import TSNE

from lab_assets.methods import METHODS


@METHODS("tsne", packages=["scikit-learn"])
def tsne(
    seed: int,
    *,
    n_components: Annotated[int, Field(ge=1, le=3)] = 2,
    perplexity: Annotated[float, Field(gt=0)] = 30.0,
    learning_rate: Annotated[float, Field(gt=0)] | Literal["auto"] = "auto",
    max_iter: Annotated[int, Field(ge=250)] = 1000,
    init: Literal["pca", "random"] = "pca",
) -> TSNE:
    """Barnes-Hut t-SNE from scikit-learn, seeded."""
    return TSNE(
        n_components=n_components,
        perplexity=perplexity,
        learning_rate=learning_rate,
        max_iter=max_iter,
        init=init,
        random_state=seed,
    )
