"""Metric MDS (SMACOF): places points so that their euclidean distances match the data's
pairwise distances, all of them at once. It keeps global geometry (large distances dominate the
stress) rather than local neighbourhoods. Needs the full n x n distance matrix: O(n^2) memory.
"""

from typing import Annotated, Literal

from pydantic import Field

from lab_assets.dr.methods import METHODS, fewer_than_points


@METHODS("mds", slow=True, packages=["scikit-learn"], limits=fewer_than_points("n_components"))
def mds(
    seed: int,
    *,
    n_components: Annotated[int, Field(ge=1)] = 2,
    n_init: Annotated[int, Field(ge=1)] = 4,
    init: Literal["random", "classical_mds"] = "random",
    max_iter: Annotated[int, Field(ge=1)] = 300,
):
    """scikit-learn's metric MDS (SMACOF), the best of `n_init` seeded random starts
    (`init="classical_mds"` starts once from classical MDS instead and ignores `n_init`)."""
    from sklearn.manifold import MDS  # imported on use: registering the entry must stay cheap

    return MDS(
        n_components=n_components,
        metric_mds=True,
        # Passed explicitly: sklearn 1.9 warns that the default changes to "classical_mds" in
        # 1.10, and a library upgrade must not silently change what this entry computes.
        init=init,
        # A classical-MDS start is deterministic, so sklearn runs it once anyway; passing
        # n_init > 1 with it only adds a warning to every cell.
        n_init=1 if init == "classical_mds" else n_init,
        max_iter=max_iter,
        metric="euclidean",
        # Only changes the reported `stress_` (Stress-1, comparable across datasets), not the
        # embedding: for metric MDS it is a monotone function of the raw stress.
        normalized_stress=True,
        # With n_jobs > 1 sklearn draws a different seed per start, so the result would depend
        # on the joblib context; the sweep runner parallelises across cells instead.
        n_jobs=1,
        random_state=seed,
    )
