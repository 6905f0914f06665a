"""Diffusion maps (Coifman & Lafon): coordinates in which euclidean distance approximates the
diffusion distance after `t` steps of a random walk on the data's kNN graph. Preserves the
connectivity of the manifold at the scale set by `t` (points joined by many short paths stay
close); it is robust to noise but does not keep raw distances or local density (`alpha=1`
removes the density's influence altogether).

The estimator (kNN graph -> Gaussian kernel -> alpha-normalisation -> Markov matrix P; the
embedding is the top non-trivial right eigenvectors of P scaled by eigenvalue^t) lives in
`lab_assets/dr/models/diffusion_map.py`; this entry names it, so that registering the method imports
neither scikit-learn nor SciPy.
"""

from typing import Annotated, Literal

from pydantic import Field

from lab_assets.dr.methods import METHODS, fewer_than_points


@METHODS(
    "diffusion_map",
    packages=["scikit-learn", "scipy", "numpy"],
    sources=["lab_assets.dr.models.diffusion_map"],
    limits=fewer_than_points("n_neighbors", "n_components"),
)
def diffusion_map(
    seed: int,
    *,
    n_components: Annotated[int, Field(ge=1)] = 2,
    n_neighbors: Annotated[int, Field(ge=2)] = 10,
    alpha: Annotated[float, Field(ge=0, le=1)] = 1.0,
    t: Annotated[int, Field(ge=0)] = 1,
    epsilon: Annotated[float, Field(gt=0)] | Literal["auto"] = "auto",
):
    """Diffusion map: kNN Gaussian kernel (`epsilon="auto"`: median squared kNN distance),
    density normalisation `alpha` (0 = graph Laplacian, 1/2 = Fokker-Planck, 1 = Laplace-Beltrami),
    diffusion time `t`. Seeded ARPACK start vector, so deterministic for a seed."""
    from lab_assets.dr.models.diffusion_map import DiffusionMap  # scikit-learn + SciPy: imported on use

    return DiffusionMap(
        n_components=n_components,
        n_neighbors=n_neighbors,
        alpha=alpha,
        t=t,
        epsilon=epsilon,
        random_state=seed,
    )
