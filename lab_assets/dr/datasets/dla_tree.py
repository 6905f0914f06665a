"""PHATE's DLA tree (Moon et al. 2019, `phate.tree.gen_dla`): branches of a random walk in
`n_dim` dimensions, each new branch growing from a random point of the first one, plus Gaussian
noise; the label is the branch.

The same draws as `phate.tree.gen_dla(seed=s)` when given a generator whose legacy RandomState is
seeded with s (the test checks it), but from the cell's generator instead of numpy's global state,
and keeping what the ground truth needs: the clean tree and where each branch leaves the first.
"""

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.core.registry import Shape
from lab_assets.dr.datasets import DATASETS, Raw
from lab_assets.dr.datasets.raw import sklearn_random_state
from lab_assets.dr.latents import LATENTS, Latent


def grow(
    rs: np.random.RandomState, n_dim: int, n_branch: int, branch_length: int, rand_multiplier: float, sigma: float
):
    """(noisy points, clean points, attachment index per side branch): gen_dla's draws, in its order."""
    M = np.cumsum(-1 + rand_multiplier * rs.rand(branch_length, n_dim), 0)
    attach = []
    for _ in range(n_branch - 1):
        ind = rs.randint(branch_length)
        branch = np.cumsum(-1 + rand_multiplier * rs.rand(branch_length, n_dim), 0)
        M = np.concatenate([M, branch + M[ind, :]])
        attach.append(ind)
    return M + rs.normal(0, sigma, M.shape), M, np.array(attach, dtype=np.int64)


def tree_latent(clean: np.ndarray, attach: np.ndarray, branch_length: int) -> Latent:
    """Each point's branch, the arc length along the first branch where its branch leaves it (its
    own, on the first branch) and its arc length along its own branch from there."""
    n_branch = clean.shape[0] // branch_length
    branch = np.repeat(np.arange(n_branch), branch_length)
    steps = clean.reshape(n_branch, branch_length, -1)
    # A side branch's first point is one step from its attachment point on the first branch; the
    # first branch starts at its own first point (a first hop of 0).
    starts = np.concatenate([steps[:1, :1], clean[attach][:, None]])
    hops = np.linalg.norm(np.diff(np.concatenate([starts, steps], axis=1), axis=1), axis=2)
    arc = np.cumsum(hops, axis=1)
    trunk_arc = arc[0]
    trunk = np.concatenate([trunk_arc, np.repeat(trunk_arc[attach], branch_length)])
    offset = np.concatenate([np.zeros(branch_length), arc[1:].ravel()])
    return Latent(clean, geodesic="tree", branch=branch, trunk=trunk, offset=offset)


def dla_tree(
    rng: np.random.Generator,
    *,
    n_dim: Annotated[int, Field(ge=2, le=10_000)] = 100,
    n_branch: Annotated[int, Field(ge=1, le=1000)] = 20,
    branch_length: Annotated[int, Field(ge=2, le=100_000)] = 100,
    rand_multiplier: Annotated[float, Field(gt=0)] = 2.0,
    sigma: Annotated[float, Field(ge=0)] = 4.0,
) -> Raw:
    """n_branch * branch_length points in n_dim dimensions (gen_dla's defaults); the label is the branch."""
    X, _, _ = grow(sklearn_random_state(rng), n_dim, n_branch, branch_length, rand_multiplier, sigma)
    return Raw(X, np.repeat(np.arange(n_branch, dtype=np.int64), branch_length))


def dla_tree_latent(
    rng: np.random.Generator,
    *,
    n_dim: int = 100,
    n_branch: int = 20,
    branch_length: int = 100,
    rand_multiplier: float = 2.0,
    sigma: float = 4.0,
) -> Latent:
    """The clean tree's points; geodesics along the tree."""
    _, clean, attach = grow(sklearn_random_state(rng), n_dim, n_branch, branch_length, rand_multiplier, sigma)
    return tree_latent(clean, attach, branch_length)


dla_tree = DATASETS("dla_tree", shape=lambda p: Shape(p["n_branch"] * p["branch_length"], p["n_dim"]))(dla_tree)
LATENTS["dla_tree"] = dla_tree_latent
