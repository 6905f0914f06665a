"""Ground truth of the synthetic manifolds: each point's latent coordinates, and the true distance
between two points (a closed-form geodesic, or the latent-space distance where none exists).

A dataset with ground truth registers a latent function beside its entry, `LATENTS[name] =
fn(rng, **params) -> Latent`, given the same generator the entry was given: it redraws what the
entry drew, so the entry itself (and its data version) stays as it was. The latent table is a
file beside the dataset's (`latent/<data key>.parquet`, written on first use by the steps that
need it: the `true_latent` embedding and the ground-truth metrics); the dataset table and its
data version never change for it.

Geodesics, per `Latent.geodesic`:
- `euclidean`: the coordinates are an isometric parametrization (the swiss roll unrolled to
  (arc length, height); the S-curve's (t, height), t being arc length already) or, for
  manifolds without a closed form (the saddle), the latent-space distance (documented per dataset);
- `sphere`: unit vectors times a radius; the great-circle distance;
- `tree`: a DLA tree, whose branches all grow from the first one (PHATE's generator): the path
  length along the tree, from each point's `trunk` position (where its branch leaves the first
  branch; its own position on the first branch) and `offset` along its own branch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

GEODESICS = ("euclidean", "sphere", "tree")
# The metrics that compare with the ground truth: refused at plan time on a sweep without latents.
MEASURES = ("geodesic_distance_correlation", "latent_knn_preservation")
# Elements of one block of pair differences (~32 MB), as in metrics/neighbors.py.
_BLOCK = 1 << 22

# {dataset name: fn(rng, **params) -> Latent}, filled by the dataset modules that have ground truth.
LATENTS: dict[str, Callable[..., Latent]] = {}


@dataclass(frozen=True)
class Latent:
    """coords (n, m): what `true_latent` embeds and what `latent_knn_preservation` finds the true
    neighbours in. branch/trunk/offset: the tree's structure (geodesic `tree` only)."""

    coords: np.ndarray
    geodesic: str = "euclidean"
    branch: np.ndarray | None = None
    trunk: np.ndarray | None = None
    offset: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.geodesic not in GEODESICS:
            raise ValueError(f"latent geodesic {self.geodesic!r}; allowed: {', '.join(GEODESICS)}")
        if self.geodesic == "tree" and any(a is None for a in (self.branch, self.trunk, self.offset)):
            raise ValueError("a tree latent needs branch, trunk and offset per point")

    def distances(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """The ground-truth distance of each pair (i[t], j[t])."""
        if self.geodesic == "tree":
            same = self.branch[i] == self.branch[j]
            # Within a side branch: along it. Otherwise: down to the first branch, along it, up.
            along = np.abs(self.offset[i] - self.offset[j])
            across = self.offset[i] + self.offset[j] + np.abs(self.trunk[i] - self.trunk[j])
            return np.where(same & (self.branch[i] != 0), along, across)
        if self.geodesic == "sphere":
            radius = np.linalg.norm(self.coords[0])
            cos = _rowwise(self.coords, i, j, lambda a, b: np.einsum("ij,ij->i", a, b)) / radius**2
            return radius * np.arccos(np.clip(cos, -1.0, 1.0))
        return _rowwise(self.coords, i, j, lambda a, b: np.sqrt(np.einsum("ij,ij->i", a - b, a - b)))

    def table(self):
        """The latent as a table: `t0..t{m-1}`, and `branch`, `trunk`, `offset` for a tree."""
        import pandas as pd

        df = pd.DataFrame(self.coords, columns=[f"t{c}" for c in range(self.coords.shape[1])])
        if self.geodesic == "tree":
            df["branch"], df["trunk"], df["offset"] = self.branch, self.trunk, self.offset
        return df

    @classmethod
    def from_table(cls, df, geodesic: str) -> Latent:
        coords = df[[c for c in df.columns if c.startswith("t") and c[1:].isdigit()]].to_numpy(dtype=np.float64)
        tree = {c: df[c].to_numpy() for c in ("branch", "trunk", "offset")} if geodesic == "tree" else {}
        return cls(coords, geodesic, **tree)


def _rowwise(A: np.ndarray, i: np.ndarray, j: np.ndarray, fn) -> np.ndarray:
    out = np.empty(i.size)
    step = max(1, _BLOCK // A.shape[1])
    for s in range(0, i.size, step):
        out[s : s + step] = fn(A[i[s : s + step]], A[j[s : s + step]])
    return out
