"""Principal component analysis: the linear baseline every other method is compared with."""

from typing import Annotated

from pydantic import Field

from lab_assets.dr.methods import METHODS


@METHODS("pca", packages=["scikit-learn"], invertible=True)
def pca(seed: int, *, n_components: Annotated[int, Field(ge=1)] = 2, whiten: bool = False):
    """Exact PCA (full SVD, so the result does not depend on the seed)."""
    from sklearn.decomposition import PCA  # imported on use: registering the entry must stay cheap

    return PCA(n_components=n_components, whiten=whiten, svd_solver="full", random_state=seed)
