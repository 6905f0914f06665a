"""A trial's training configuration: model size, optimizer, schedule, budget, seed. Kept free of
torch so that loading the Dagster definitions (and validating a study file) stays light."""

from __future__ import annotations

from typing import Annotated

import pydantic
from pydantic import Field

from lab_assets.core.registry import digest

Positive = Annotated[float, Field(gt=0)]


class TrainConfig(pydantic.BaseModel):
    """Everything one trial's training depends on (its partition key is a digest of this)."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    depth: Annotated[int, Field(ge=1)] = 2
    width: Annotated[int, Field(ge=8)] = 64
    heads: Annotated[int, Field(ge=1)] = 2
    seq_len: Annotated[int, Field(ge=8)] = 64
    batch: Annotated[int, Field(ge=1)] = 8
    lr: Positive = 3e-3  # matrices (attention, MLP, head)
    embedding_lr: Positive = 1e-2  # token and position embeddings (no weight decay)
    warmup_steps: Annotated[int, Field(ge=0)] = 0
    cooldown_frac: Annotated[float, Field(ge=0, le=1)] = 0.4  # last fraction of the budget: lr -> 0
    weight_decay: Annotated[float, Field(ge=0)] = 0.0
    grad_clip: Annotated[float, Field(ge=0)] = 1.0  # 0: off
    steps: Annotated[int, Field(ge=1)] | None = None
    seconds: Positive | None = None
    checkpoint_every: Annotated[int, Field(ge=1)] = 50  # steps
    eval_tokens: Annotated[int, Field(ge=1)] = 65_536  # val bytes scored for val_bpb
    seed: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0

    @pydantic.model_validator(mode="after")
    def _one_budget(self) -> TrainConfig:
        if (self.steps is None) == (self.seconds is None):
            raise ValueError("give exactly one budget: steps (deterministic) or seconds (training time)")
        if self.width % self.heads:
            raise ValueError(f"width {self.width} must be divisible by heads {self.heads}")
        return self

    @property
    def digest(self) -> str:
        return digest(self.model_dump(mode="json"), 16)
