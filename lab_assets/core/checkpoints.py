"""Training checkpoints in asset storage: weights-only, atomic, tied to what they were trained for.

A checkpoint is a dict of tensors and plain values written with `torch.save` and read back with
`torch.load(weights_only=True)`, so loading one never runs code. It records the `version` of the
configuration it belongs to; a checkpoint of another version (an edited method, new data) is
never resumed, so a resumed run always equals an uninterrupted one: it is ignored, or with
`strict` refused with an error. Used by the autoencoder (epochs) and the GPT trainer (steps).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from lab_assets.core import storage


@dataclass(frozen=True)
class Checkpoint:
    path: str  # under the storage root
    version: str  # identity of the run it belongs to (method + data versions)
    every: int  # save every `every` epochs/steps (0: never)

    def load(self, device: str = "cpu", strict: bool = False) -> dict[str, Any] | None:
        """The saved state if one exists for this version, else None (ValueError if `strict`
        and the saved state belongs to another version)."""
        if not storage.exists(self.path):
            return None
        state = from_bytes(storage.read_bytes(self.path), device)
        if state.get("version") == self.version:
            return state
        if strict:
            raise ValueError(f"{self.path} was written for another configuration; delete it to start over")
        return None

    def due(self, done: int) -> bool:
        return self.every > 0 and done % self.every == 0

    def save(self, state: dict[str, Any]) -> None:
        storage.write_bytes(self.path, to_bytes({**state, "version": self.version}))

    def remove(self) -> None:
        storage.remove(self.path)


# torch is imported where it is used: the asset modules import this one, and loading the
# definitions must not cost torch's seconds of import time.
def to_bytes(state: dict[str, Any]) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def from_bytes(data: bytes, device: str = "cpu") -> dict[str, Any]:
    """Tensors and plain values only: `weights_only` refuses anything that would run code."""
    import torch

    return torch.load(io.BytesIO(data), map_location=device, weights_only=True)
