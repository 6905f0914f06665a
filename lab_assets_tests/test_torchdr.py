"""TorchDR's GPU-capable t-SNE and UMAP (the `gpu` extra), exercised on CPU with few iterations."""

import numpy as np
import pytest
import torch
from sklearn.manifold import trustworthiness

from lab_assets.dr.methods import METHODS
from lab_assets_tests.conftest import swissroll_points


@pytest.mark.slow
@pytest.mark.parametrize("name", ["torchdr_tsne", "torchdr_umap"])
def test_torchdr_method_is_seeded_and_embeds(name):
    X = swissroll_points(200)
    entry = METHODS[name]

    def embed(seed):
        return np.asarray(
            entry(seed, **entry.validate({"n_neighbors": 15, "max_iter": 100, "device": "cpu"})).fit_transform(X)
        )

    Z = embed(0)
    assert Z.shape == (200, 2) and np.isfinite(Z).all()
    assert np.array_equal(Z, embed(0))
    assert trustworthiness(X, Z, n_neighbors=10) > 0.7  # a neighbour embedding (noise: ~0.5)


def test_cuda_request_without_cuda_is_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(RuntimeError, match="device='cuda' was asked for"):
        METHODS["torchdr_umap"](0, **METHODS["torchdr_umap"].validate({"device": "cuda"}))
