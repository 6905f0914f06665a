"""Autoencoder: an MLP encoder/decoder (torch) trained to reconstruct the standardised data; the
bottleneck is the embedding. The estimator lives in `lab_assets/dr/models/autoencoder.py`; this entry
names it, so that looking the method up never imports torch.
"""

from typing import Annotated, Literal

from pydantic import Field

from lab_assets.dr.methods import METHODS


@METHODS(
    "autoencoder",
    packages=["torch"],
    invertible=True,
    trainable=True,
    slow=True,
    sources=["lab_assets.dr.models.autoencoder", "lab_assets.core.checkpoints"],
)
def autoencoder(
    seed: int,
    *,
    n_components: Annotated[int, Field(ge=1)] = 2,
    width: Annotated[int, Field(ge=1)] = 64,
    depth: Annotated[int, Field(ge=1)] = 2,
    epochs: Annotated[int, Field(ge=1)] = 100,
    batch_size: Annotated[int, Field(ge=1)] = 128,
    lr: Annotated[float, Field(gt=0)] = 1e-3,
    weight_decay: Annotated[float, Field(ge=0)] = 0.0,
    device: Literal["auto", "cpu", "cuda"] = "auto",
    checkpoint_every: Annotated[int, Field(ge=0)] = 10,
):
    """MLP autoencoder (`depth` hidden layers of `width`, SiLU), AdamW on the mean squared
    reconstruction error of standardised features; CUDA when present with device=auto.
    `checkpoint_every` epochs a checkpoint goes to the model's storage (0: none)."""
    from lab_assets.dr.models.autoencoder import Autoencoder  # torch costs seconds to import

    return Autoencoder(seed, n_components, width, depth, epochs, batch_size, lr, weight_decay, device, checkpoint_every)
