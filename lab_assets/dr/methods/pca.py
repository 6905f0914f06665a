"""Principal component analysis: the linear baseline every other method is compared with."""

from typing import Annotated

from pydantic import Field

from lab_assets.core.registry import Shape
from lab_assets.dr.methods import METHODS


def _limits(params: dict, shape: Shape) -> dict[str, str]:
    """PCA finds at most min(points, features) components."""
    bound = min((x for x in (shape.points, shape.features) if x is not None), default=None)
    n = params["n_components"]
    if bound is not None and n > bound:
        return {
            "n_components": f"n_components={n} exceeds min(points, features) = "
            f"min({shape.points}, {shape.features}) = {bound}"
        }
    return {}


@METHODS("pca", packages=["scikit-learn"], invertible=True, limits=_limits)
def pca(seed: int, *, n_components: Annotated[int, Field(ge=1)] = 2, whiten: bool = False):
    """Exact PCA (full SVD, so the result does not depend on the seed)."""
    from sklearn.decomposition import PCA  # imported on use: registering the entry must stay cheap

    return PCA(n_components=n_components, whiten=whiten, svd_solver="full", random_state=seed)
