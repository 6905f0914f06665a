"""The field's standard measures (issue 41) against the papers' formulas written naively: full
distance matrices, Python loops over points, O(n^2) or worse, on small data, at several k and on
ties. Nothing here calls the code under test to make its expected value."""

import math

import numpy as np
import pandas as pd
import pytest

from lab_assets.dr.metrics import METRICS, NotApplicable
from lab_assets.dr.metrics.latent_neighborhoods import GroundTruthNeighborhoods
from lab_assets.dr.metrics.neighbors import Neighborhoods

KS = [1, 4, 10, 25]


@pytest.fixture(scope="module")
def data():
    g = np.random.default_rng(7)
    X = g.normal(size=(120, 6))
    Z = X @ g.normal(size=(6, 2)) + 0.3 * g.normal(size=(120, 2))  # keeps some neighbours, loses many
    labels = g.integers(0, 3, size=120)
    return X, Z, labels


@pytest.fixture(scope="module")
def nb(data):
    X, Z, labels = data
    return Neighborhoods(X, Z, k_max=max(KS), labels=labels)


def dist_matrix(A):
    n = len(A)
    return np.array([[math.dist(A[i], A[j]) for j in range(n)] for i in range(n)])


def rank_matrix(A):
    """rank[i][j]: 1 + position of j when i's other points are sorted by distance (no ties here)."""
    D = dist_matrix(A)
    n = len(A)
    rank = np.zeros((n, n), dtype=int)
    for i in range(n):
        others = sorted((D[i][j], j) for j in range(n) if j != i)
        for r, (_, j) in enumerate(others, start=1):
            rank[i][j] = r
    return rank


def naive_q(rx, rz, K):
    n = len(rx)
    kept = sum(
        len({j for j in range(n) if 0 < rx[i][j] <= K} & {j for j in range(n) if 0 < rz[i][j] <= K}) for i in range(n)
    )
    return kept / (K * n)


def naive_rnx(rx, rz, K):
    n = len(rx)
    return ((n - 1) * naive_q(rx, rz, K) - K) / (n - 1 - K)


@pytest.fixture(scope="module")
def ranks(data):
    X, Z, _ = data
    return rank_matrix(X), rank_matrix(Z)


@pytest.mark.parametrize("k", KS)
def test_rnx_and_lcmc_are_the_papers_formulas(nb, ranks, k):
    rx, rz = ranks
    n = len(rx)
    assert METRICS["rnx"](nb, k=k) == pytest.approx(naive_rnx(rx, rz, k), abs=1e-12)
    assert METRICS["lcmc"](nb, k=k) == pytest.approx(naive_q(rx, rz, k) - k / (n - 1), abs=1e-12)


def test_rnx_auc_exact_and_truncated_are_the_papers_formula(data, ranks):
    X, Z, _ = data
    rx, rz = ranks
    n = len(X)

    def auc(top):
        num = sum(naive_rnx(rx, rz, K) / K for K in range(1, top + 1))
        return num / sum(1 / K for K in range(1, top + 1))

    nb = Neighborhoods(X, Z, k_max=30)
    assert METRICS["rnx_auc"](nb, k_max="all") == pytest.approx(auc(n - 2), abs=1e-12)
    for top in (1, 7, 30):
        assert METRICS["rnx_auc"](nb, k_max=top) == pytest.approx(auc(top), abs=1e-12)
    assert METRICS["rnx_auc"].validate({}) == {"k_max": "all"}  # the published AUC by default


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("direction", ["data", "embedding"])
def test_mrre_is_lee_and_verleysens_formula(nb, ranks, k, direction):
    rx, rz = ranks
    n = len(rx)
    total = 0.0
    for i in range(n):
        for j in range(n):
            own, other = (rx[i][j], rz[i][j]) if direction == "data" else (rz[i][j], rx[i][j])
            if 0 < own <= k:
                total += abs(own - other) / own
    worst = n * sum(abs(n - 2 * j) / j for j in range(1, k + 1))
    assert METRICS["mrre"](nb, k=k, direction=direction) == pytest.approx(total / worst, rel=1e-12)


@pytest.mark.parametrize("k", KS)
def test_neighborhood_hit_counts_same_class_embedding_neighbours(data, nb, k):
    X, Z, labels = data
    rz = rank_matrix(Z)
    n = len(Z)
    hits = [sum(labels[j] == labels[i] for j in range(n) if 0 < rz[i][j] <= k) / k for i in range(n)]
    assert METRICS["neighborhood_hit"](nb, k=k) == pytest.approx(sum(hits) / n, abs=1e-12)


def test_label_measures_need_class_labels(data):
    X, Z, _ = data
    with pytest.raises(NotApplicable, match="neighborhood_hit needs class labels, but this dataset has no labels"):
        METRICS["neighborhood_hit"](Neighborhoods(X, Z, k_max=5), k=5)
    coordinate = Neighborhoods(X, Z, k_max=5, labels=X[:, 0])
    with pytest.raises(NotApplicable, match="neighborhood_hit needs class labels.*not integers"):
        METRICS["neighborhood_hit"](coordinate, k=5)


def all_pair_distances(A):
    D = dist_matrix(A)
    return np.array([D[i][j] for i in range(len(A)) for j in range(i + 1, len(A))])


def pearson(a, b):
    a, b = a - a.mean(), b - b.mean()
    return float((a * b).sum() / math.sqrt((a * a).sum() * (b * b).sum()))


@pytest.mark.parametrize("scale", [1.0, 0.01, 30.0])
def test_stresses_and_pearson_are_the_formulas(data, scale):
    X, Z, _ = data
    nb = Neighborhoods(X, scale * Z, k_max=0)
    d, e = all_pair_distances(X), all_pair_distances(scale * Z)  # 7,140 pairs: all of them
    assert METRICS["normalized_stress"](nb) == pytest.approx(((d - e) ** 2).sum() / (d**2).sum(), rel=1e-10)
    # Smelser et al.: the stress at the best scale, found here by brute force over the scale.
    alphas = np.linspace(0, 3 / scale, 30001)
    best = min(((d - a * e) ** 2).sum() / (d**2).sum() for a in alphas)
    assert METRICS["scale_normalized_stress"](nb) == pytest.approx(best, rel=1e-6)
    assert METRICS["scale_normalized_stress"](nb) <= best  # the closed form is the minimum
    assert METRICS["pearson_distance_correlation"](nb) == pytest.approx(pearson(d, e), abs=1e-12)


def test_distance_measures_on_tied_distances():
    """A grid: most pair distances are tied. The formulas do not rank, so ties change nothing."""
    grid = np.array([(i, j, (i * j) % 3) for i in range(8) for j in range(8)], dtype=float)
    Z = grid[:, :2]
    nb = Neighborhoods(grid, Z, k_max=0)
    d, e = all_pair_distances(grid), all_pair_distances(Z)
    assert METRICS["normalized_stress"](nb) == pytest.approx(((d - e) ** 2).sum() / (d**2).sum(), rel=1e-10)
    assert METRICS["pearson_distance_correlation"](nb) == pytest.approx(pearson(d, e), abs=1e-12)


def test_co_ranking_measures_on_ties_are_perfect_for_the_data_itself():
    """On a grid every point has many equidistant neighbours. An embedding that is the data (or
    the data times 2, exact in floating point) keeps every neighbourhood, however the ties are
    broken, as long as both spaces break them alike: R_NX = 1, LCMC = 1 - K/(n-1), MRRE = 0."""
    grid = np.array([(i, j) for i in range(9) for j in range(9)], dtype=float)
    n = len(grid)
    for Z in (grid, 2 * grid):
        nb = Neighborhoods(grid, Z, k_max=20)
        for k in (1, 4, 8, 20):
            assert METRICS["rnx"](nb, k=k) == pytest.approx(1.0, abs=1e-12)
            assert METRICS["lcmc"](nb, k=k) == pytest.approx(1 - k / (n - 1), abs=1e-12)
            assert METRICS["mrre"](nb, k=k, direction="data") == 0
            assert METRICS["mrre"](nb, k=k, direction="embedding") == 0
        assert METRICS["rnx_auc"](nb, k_max="all") == pytest.approx(1.0, abs=1e-12)
        assert METRICS["rnx_auc"](nb, k_max=20) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("k", [1, 5, 20])
def test_density_preservation_is_densmaps_radius_correlation(data, nb, k):
    X, Z, _ = data
    rx = rank_matrix(X)
    n = len(X)
    log_rx, log_rz = [], []
    for i in range(n):
        near = [j for j in range(n) if 0 < rx[i][j] <= k]
        log_rx.append(math.log(sum(math.dist(X[i], X[j]) ** 2 for j in near) / k))
        log_rz.append(math.log(sum(math.dist(Z[i], Z[j]) ** 2 for j in near) / k))
    expected = pearson(np.array(log_rx), np.array(log_rz))
    assert METRICS["density_preservation"](nb, k=k) == pytest.approx(expected, abs=1e-10)


def test_density_preservation_refuses_duplicates(data):
    X, Z, _ = data
    X = X.copy()
    X[3] = X[4]
    with pytest.raises(NotApplicable, match="undefined for duplicate points: 2 points of the data space"):
        METRICS["density_preservation"](Neighborhoods(X, Z, k_max=1), k=1)


def naive_lid(A, k):
    D = dist_matrix(A)
    out = []
    for i in range(len(A)):
        t = sorted(D[i][j] for j in range(len(A)) if j != i)[:k]
        out.append((k - 1) / sum(math.log(t[-1] / t[j]) for j in range(k - 1)))
    return np.array(out)


@pytest.mark.parametrize("k", [2, 6, 25])
def test_lid_error_is_the_mean_per_point_difference(data, nb, k):
    X, Z, _ = data
    expected = np.abs(naive_lid(Z, k) - naive_lid(X, k)).mean()
    assert METRICS["lid_error"](nb, k=k) == pytest.approx(expected, rel=1e-10)


def test_participation_ratio_error_from_eigenvalues(data, nb):
    X, Z, _ = data

    def pr(A):
        lam = np.linalg.eigvalsh(np.cov(A, rowvar=False))
        return lam.sum() ** 2 / (lam**2).sum()

    assert METRICS["participation_ratio_error"](nb) == pytest.approx(abs(pr(Z) - pr(X)), rel=1e-10)


def test_k_limits_are_refused_with_the_field_named():
    from lab_assets.core.registry import Shape

    assert METRICS["rnx"].problems({"k": 99}, Shape(100, 3)) == {
        "k": "k=99 needs k <= n - 2, the data has n=100 points (so k <= 98)"
    }
    assert METRICS["rnx"].problems({"k": 98}, Shape(100, 3)) == {}
    assert METRICS["rnx_auc"].problems({"k_max": 99}, Shape(100, 3)) == {
        "k_max": "k_max=99 must be below n - 1: the data has n=100 points (so k_max <= 98)"
    }
    assert METRICS["rnx_auc"].problems({"k_max": 98}, Shape(100, 3)) == {}
    assert "give k_max (e.g. 100)" in METRICS["rnx_auc"].problems({"k_max": "all"}, Shape(5001, 3))["k_max"]
    assert METRICS["rnx_auc"].problems({"k_max": "all"}, Shape(5000, 3)) == {}


def test_shared_search_covers_rnx_auc_k_max():
    from lab_assets.dr.sweep import MetricConfig

    assert MetricConfig("rnx_auc", {"k_max": 100}).neighbours == 100
    assert MetricConfig("rnx_auc", {"k_max": "all"}).neighbours == 0
    assert MetricConfig("lid", {"k": 15, "space": "data"}).neighbours == 15
    assert MetricConfig("spearman_distance_correlation", {"n_pairs": 20000}).neighbours == 0


def spearman(a, b):
    """Pearson of average ranks (ties share their mean rank), without scipy."""
    return pearson(pd.Series(a).rank(method="average").to_numpy(), pd.Series(b).rank(method="average").to_numpy())


def latent_of(dataset, **params):
    from lab_assets.dr import ground_truth
    from lab_assets.dr.datasets import DATASETS

    params = DATASETS[dataset].validate(params)
    raw = DATASETS[dataset](np.random.default_rng([3, 0]), **params)
    return raw, ground_truth.generate(dataset, np.random.default_rng([3, 0]), params)


def test_swiss_roll_latent_is_arc_length_and_height():
    from scipy.integrate import quad

    raw, latent = latent_of("swissroll", n_samples=60, noise=0.3)
    t = raw.labels  # sklearn's position along the roll, drawn before the noise
    arc = [quad(lambda s: math.sqrt(1 + s * s), 0, ti)[0] for ti in t]
    np.testing.assert_allclose(latent.coords[:, 0], arc, rtol=1e-9)
    clean, _ = latent_of("swissroll", n_samples=60, noise=0.0)
    np.testing.assert_array_equal(clean[0][:, 1], latent.coords[:, 1])  # the height, without noise
    assert latent.geodesic == "euclidean"


def test_s_curve_latent_is_arc_length_and_height():
    raw, latent = latent_of("s_curve", n_samples=80, noise=0.0)
    t = raw.labels
    # The S in the x-z plane: (sin t, sign(t) (cos t - 1)) has unit speed, so t is arc length.
    np.testing.assert_allclose(raw.X[:, 0], np.sin(latent.coords[:, 0]), atol=1e-12)
    np.testing.assert_allclose(raw.X[:, 2], np.sign(t) * (np.cos(t) - 1), atol=1e-12)
    np.testing.assert_array_equal(latent.coords[:, 0], t)
    np.testing.assert_array_equal(latent.coords[:, 1], raw.X[:, 1])


def test_saddle_and_hypersphere_are_their_latents_mapped():
    raw, latent = latent_of("saddle", n_samples=50, curvature=2.0)
    u, v = latent.coords.T
    np.testing.assert_allclose(raw.X, np.c_[u, v, 2.0 * (u**2 - v**2)], atol=1e-12)
    raw, latent = latent_of("hypersphere", n_samples=50, dim=3, n_features=20, noise=0.0)
    assert raw.X.shape == (50, 20) and latent.coords.shape == (50, 4)
    np.testing.assert_allclose(np.linalg.norm(latent.coords, axis=1), 1.0)
    # A rotation into 20 dimensions keeps every distance of the sphere's points.
    np.testing.assert_allclose(all_pair_distances(raw.X), all_pair_distances(latent.coords), atol=1e-12)


@pytest.mark.parametrize("n_dim, n_branch, branch_length", [(10, 5, 30), (3, 30, 3)])
def test_dla_tree_is_phates_generator(n_dim, n_branch, branch_length):
    phate_tree = pytest.importorskip("phate.tree")
    from lab_assets.dr.datasets import DATASETS

    rng = np.random.default_rng([5, 0])
    seed = int(np.random.default_rng([5, 0]).integers(2**32 - 1, dtype=np.uint64))  # sklearn_random_state's draw
    params = {"n_dim": n_dim, "n_branch": n_branch, "branch_length": branch_length}
    raw = DATASETS["dla_tree"](rng, **DATASETS["dla_tree"].validate(params))
    M, C = phate_tree.gen_dla(**params, seed=seed)
    np.testing.assert_array_equal(raw.X, M)
    np.testing.assert_array_equal(raw.labels, C)


def test_tree_geodesic_is_the_shortest_path_along_the_tree():
    from scipy.sparse import lil_matrix
    from scipy.sparse.csgraph import shortest_path

    _, latent = latent_of("dla_tree", n_dim=5, n_branch=4, branch_length=25, sigma=1.0)
    P, n = latent.coords, len(latent.coords)
    graph = lil_matrix((n, n))
    for i in range(n):
        if i % 25:  # consecutive steps of a branch
            graph[i - 1, i] = math.dist(P[i - 1], P[i])
    # Each side branch's first point hangs one step off a point of the first branch: the one
    # nearest to where the step from it lands (the clean tree shows it exactly).
    for b in range(1, 4):
        first = b * 25
        attach = min(range(25), key=lambda j: abs(latent.trunk[first] - latent.trunk[j]))
        graph[attach, first] = math.dist(P[attach], P[first])
    truth = shortest_path(graph.tocsr(), directed=False)
    i, j = np.triu_indices(n, 1)
    np.testing.assert_allclose(latent.distances(i, j), truth[i, j], rtol=1e-10)


def test_sphere_geodesic_is_the_great_circle():
    _, latent = latent_of("hypersphere", n_samples=30, dim=2, n_features=5)
    i, j = np.triu_indices(30, 1)
    expected = [math.acos(max(-1.0, min(1.0, float(np.dot(latent.coords[a], latent.coords[b]))))) for a, b in zip(i, j)]
    np.testing.assert_allclose(latent.distances(i, j), expected, atol=1e-12)


@pytest.mark.parametrize("dataset", ["swissroll", "dla_tree"])
def test_geodesic_distance_correlation_is_spearman_of_true_and_embedded_distances(dataset):
    params = {"n_samples": 150} if dataset == "swissroll" else {"n_dim": 5, "n_branch": 3, "branch_length": 50}
    raw, latent = latent_of(dataset, **params)
    Z = raw.X[:, :2]  # a poor embedding: a projection
    nb = GroundTruthNeighborhoods(raw.X, Z, k_max=10, latent=latent)
    i, j = np.triu_indices(len(Z), 1)  # 11,175 pairs: all of them
    expected = spearman(latent.distances(i, j), all_pair_distances(Z))
    assert METRICS["geodesic_distance_correlation"](nb) == pytest.approx(expected, abs=1e-12)


def test_geodesic_correlation_with_tied_true_distances():
    """Latents on a grid: many true distances tie; Spearman gives ties their mean rank."""
    from lab_assets.dr.latents import Latent

    grid = np.array([(a, b) for a in range(10) for b in range(10)], dtype=float)
    g = np.random.default_rng(0)
    Z = grid + 0.4 * g.normal(size=grid.shape)
    nb = GroundTruthNeighborhoods(grid, Z, k_max=5, latent=Latent(grid))
    expected = spearman(all_pair_distances(grid), all_pair_distances(Z))
    assert METRICS["geodesic_distance_correlation"](nb) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("k", [1, 5, 20])
def test_latent_knn_preservation_counts_true_neighbours_kept(k):
    raw, latent = latent_of("saddle", n_samples=120, noise=0.1)
    Z = raw.X[:, [0, 2]]
    nb = GroundTruthNeighborhoods(raw.X, Z, k_max=20, latent=latent)
    rt, rz = rank_matrix(latent.coords), rank_matrix(Z)
    n = len(Z)
    kept = [
        len({j for j in range(n) if 0 < rt[i][j] <= k} & {j for j in range(n) if 0 < rz[i][j] <= k}) for i in range(n)
    ]
    assert METRICS["latent_knn_preservation"](nb, k=k) == pytest.approx(sum(kept) / (k * n), abs=1e-12)


def test_ground_truth_measures_are_null_with_the_reason_without_latents(data):
    X, Z, _ = data
    nb = Neighborhoods(X, Z, k_max=5)
    for name, params in [("geodesic_distance_correlation", {}), ("latent_knn_preservation", {"k": 5})]:
        with pytest.raises(NotApplicable, match=f"{name} needs ground-truth latent coordinates.*swissroll"):
            METRICS[name](nb, **params)


def test_exact_counts_do_not_depend_on_the_block_size(data, monkeypatch):
    from lab_assets.dr.metrics import coranking

    X, Z, _ = data
    whole = coranking.exact_co_neighbours(X, Z)
    monkeypatch.setattr(coranking, "_BLOCK", 3 * len(X))  # three rows a block
    np.testing.assert_array_equal(coranking.exact_co_neighbours(X, Z), whole)
    assert whole[-1] == len(X) * (len(X) - 1)  # at K = n - 1 every point is everyone's neighbour
