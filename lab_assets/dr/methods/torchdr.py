"""GPU-capable t-SNE and UMAP from TorchDR (torch implementations of neighbour embeddings).

Optional: `pip install -e .[gpu]` (the `gpu` extra). On a CUDA machine (`device: auto`) the
affinities and the optimisation run on the GPU, which is what makes them worth having beside the
scikit-learn / umap-learn entries; on CPU they work but are slower than those. Dense torch
backend (no faiss/keops): memory grows as n^2, fine up to a few 10^4 points on a GPU.
"""

from typing import Annotated, Any, Literal

from pydantic import Field

from lab_assets.dr.methods import METHODS, fewer_than_points

Device = Literal["auto", "cpu", "cuda"]


def _torchdr():
    try:
        import torchdr
    except ImportError:
        raise RuntimeError("the torchdr_* methods need TorchDR: pip install -e '.[gpu]'") from None
    return torchdr


def _device(device: str) -> str:
    from lab_assets.core.backend import resolve_device  # torch: only when the method runs

    return resolve_device(device)


@METHODS("torchdr_tsne", slow=True, packages=["torchdr", "torch"], limits=fewer_than_points("n_neighbors"))
def torchdr_tsne(
    seed: int,
    *,
    n_components: Annotated[int, Field(ge=1)] = 2,
    n_neighbors: Annotated[int, Field(ge=2)] = 90,
    max_iter: Annotated[int, Field(ge=1)] = 1000,
    device: Device = "auto",
) -> Any:
    """TorchDR's t-SNE; perplexity = n_neighbors / 3 (as for `tsne`), seeded."""
    return _torchdr().TSNE(
        n_components=n_components,
        perplexity=n_neighbors / 3,
        max_iter=max_iter,
        device=_device(device),
        backend=None,
        random_state=seed,
        verbose=False,
    )


@METHODS(
    "torchdr_umap", slow=True, packages=["torchdr", "torch"], limits=fewer_than_points("n_neighbors", "n_components")
)
def torchdr_umap(
    seed: int,
    *,
    n_components: Annotated[int, Field(ge=1)] = 2,
    n_neighbors: Annotated[int, Field(ge=2)] = 15,
    min_dist: Annotated[float, Field(ge=0)] = 0.1,
    max_iter: Annotated[int, Field(ge=1)] = 1000,
    device: Device = "auto",
) -> Any:
    """TorchDR's UMAP, seeded."""
    return _torchdr().UMAP(
        n_components=n_components,
        n_neighbors=n_neighbors,
        min_dist=min_dist,
        max_iter=max_iter,
        device=_device(device),
        backend=None,
        random_state=seed,
        verbose=False,
    )
