"""The autoencoder method's estimator: an MLP encoder/decoder (torch) trained to reconstruct the
standardised data; the bottleneck is the embedding. The cell's `model` asset holds its weights
(checkpointed while training, resumed after a crash), the `embedding` encodes every row with
them, and the decoder makes `reconstruction_error` possible.

Trained on the dataset's train split only, so the test split measures generalisation.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from lab_assets.core import backend, checkpoints
from lab_assets.core.checkpoints import Checkpoint
from lab_assets.core.diverged import TrainingDiverged


def _mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.SiLU()]
    return nn.Sequential(*layers[:-1])  # linear output: the code and the reconstruction are unbounded


class Autoencoder:
    """scikit-learn-style estimator (`fit`, `transform`, `inverse_transform`) over a torch model
    whose whole state (weights and standardisation) is a weights-only `state_dict`."""

    def __init__(
        self, seed, n_components, width, depth, epochs, batch_size, lr, weight_decay, device, checkpoint_every
    ):
        self.seed, self.n_components, self.width, self.depth = seed, n_components, width, depth
        self.epochs, self.batch_size, self.lr, self.weight_decay = epochs, batch_size, lr, weight_decay
        self.checkpoint_every = checkpoint_every
        self.net: nn.Module | None = None
        self.losses: list[float] = []  # mean training loss per epoch
        self.resumed_from = 0  # epochs restored from a checkpoint by the last fit
        self.device_used_: str | None = None  # where the last fit's tensors were ("cuda:0", "cpu")
        self.device = torch.device(backend.resolve_device(device))

    def _build(self, n_features: int) -> None:
        hidden = [self.width] * self.depth
        # Initial weights from the cell's seed, without touching torch's global RNG.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            encoder = _mlp([n_features, *hidden, self.n_components])
            decoder = _mlp([self.n_components, *hidden[::-1], n_features])
        self.net = nn.ModuleDict({"encoder": encoder, "decoder": decoder})
        self.net.register_buffer("mean", torch.zeros(n_features, dtype=torch.float64))
        self.net.register_buffer("scale", torch.ones(n_features, dtype=torch.float64))

    def fit(self, X: np.ndarray, checkpoint: Checkpoint | None = None) -> Autoencoder:
        X = np.asarray(X, dtype=np.float64)
        device = self.device
        self._build(X.shape[1])
        std = X.std(axis=0)
        self.net.mean.copy_(torch.from_numpy(X.mean(axis=0)))
        # A constant column carries no information; dividing by its zero spread would make NaN.
        self.net.scale.copy_(torch.from_numpy(np.where(std > 0, std, 1.0)))
        self.net.to(device)
        data = self._standardise(X).to(device)
        self.device_used_ = str(data.device)  # the index too ("cuda:0"), not the request ("cuda", "auto")
        opt = torch.optim.AdamW(self.net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        start = 0
        state = checkpoint.load() if checkpoint else None
        if state is not None:
            self.net.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
            self.losses, start = list(state["losses"]), int(state["epoch"])
        self.resumed_from = start
        self.net.train()
        for epoch in range(start, self.epochs):
            # Batch order from (seed, epoch) alone: a resumed run draws exactly what it would have.
            order = torch.randperm(len(data), generator=torch.Generator().manual_seed(self.seed * 100_003 + epoch))
            total = 0.0
            for i in range(0, len(data), self.batch_size):
                batch = data[order[i : i + self.batch_size].to(device)]
                loss = nn.functional.mse_loss(self.net["decoder"](self.net["encoder"](batch)), batch)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += loss.item() * len(batch)
            self.losses.append(total / len(data))
            if not np.isfinite(self.losses[-1]):
                # The learning rate is too high or the data is badly scaled.
                raise TrainingDiverged("autoencoder", "epoch", epoch + 1, self.losses[-1], self.lr, "lower lr")
            if checkpoint and checkpoint.due(epoch + 1) and epoch + 1 < self.epochs:
                checkpoint.save(
                    {
                        "model": self.net.state_dict(),
                        "optimizer": opt.state_dict(),
                        "epoch": epoch + 1,
                        "losses": self.losses,
                    }
                )
        self.net.eval().cpu()
        return self

    def _standardise(self, X: np.ndarray) -> torch.Tensor:
        return ((torch.from_numpy(np.asarray(X, dtype=np.float64)) - self.net.mean) / self.net.scale).float()

    def transform(self, X: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self.net["encoder"](self._standardise(X)).double().numpy()

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            out = self.net["decoder"](torch.from_numpy(np.asarray(Z, dtype=np.float32))).double()
        return (out * self.net.scale + self.net.mean).numpy()

    def fit_transform(self, X: np.ndarray) -> np.ndarray:
        return self.fit(X).transform(X)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return self.net.state_dict()

    def weights(self) -> bytes:
        """The state dict as `torch.save` bytes (what the `model` asset stores)."""
        return checkpoints.to_bytes(self.state_dict())

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> Autoencoder:
        self._build(state["mean"].shape[0])
        self.net.load_state_dict(state)
        self.net.eval()
        return self

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.net.parameters())
