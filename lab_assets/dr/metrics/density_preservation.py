"""Density preservation (densMAP, Narayan et al. 2021): the correlation of each point's log local
radius in the data and in the embedding. Do dense regions stay dense, sparse ones sparse?

The local radius of point i is the mean squared distance to its k nearest data neighbours, in the
data and (the same neighbours) in the embedding: densMAP's R_i with uniform weights on the kNN
graph in place of UMAP's fuzzy ones. Pearson correlation of log R over points. Range [-1, 1];
higher is better.
"""

from typing import Annotated

import numpy as np
from pydantic import Field

from lab_assets.dr.metrics import METRICS, NotApplicable, k_below_points
from lab_assets.dr.metrics.neighbors import Neighborhoods
from lab_assets.dr.metrics.spearman_distance_correlation import refuse_constant

# Elements of one block of neighbour differences (~32 MB), as in neighbors.py.
_BLOCK = 1 << 22


def local_radii(nb: Neighborhoods, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean squared distance to the k nearest data neighbours, in the data and in the embedding."""
    nb.check_k(k)
    idx = nb.data_idx[:, :k]
    data = (nb.data_dist[:, :k] ** 2).mean(axis=1)
    emb = np.empty(nb.n)
    step = max(1, _BLOCK // (k * nb.Z.shape[1]))
    for s in range(0, nb.n, step):
        diff = nb.Z[idx[s : s + step]] - nb.Z[s : s + step, None, :]
        emb[s : s + step] = np.einsum("ijk,ijk->ij", diff, diff).mean(axis=1)
    return data, emb


def density_preservation(nb: Neighborhoods, *, k: Annotated[int, Field(ge=1)] = 15) -> float:
    """Pearson correlation of log local radii (data vs embedding) over points."""
    radii = local_radii(nb, k)
    for r, space in zip(radii, ("data", "embedding")):
        if not r.all():
            raise NotApplicable(
                f"density_preservation is undefined for duplicate points: {int((r == 0).sum())} points "
                f"of the {space} space have all {k} neighbours at distance 0"
            )
    logs = [np.log(r) for r in radii]
    for log, space in zip(logs, ("data", "embedding")):
        refuse_constant(log, space, "density_preservation", "log local radii")
    return float(np.corrcoef(*logs)[0, 1])


density_preservation = METRICS(
    "density_preservation",
    packages=["numpy", "scikit-learn"],
    valid_range="[-1, 1]",
    better="higher",
    limits=k_below_points,
)(density_preservation)
