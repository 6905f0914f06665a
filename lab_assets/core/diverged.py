"""The one error of a training run whose loss blew up (the GPT trainer, the autoencoder method)."""

from __future__ import annotations

import math


class TrainingDiverged(RuntimeError):
    """NaN, inf or exploding training loss: the run fails fast instead of burning its budget, and
    the message says what to change."""

    def __init__(self, model: str, unit: str, step: int, loss: float, lr: float, advice: str, limit: float = math.inf):
        self.step = step
        self.loss = loss
        kind = "NaN" if math.isnan(loss) else "inf" if math.isinf(loss) else f"{loss:.4g} > {limit:g}"
        super().__init__(f"{model}: training diverged at {unit} {step}: loss {kind} (lr {lr:.3g}); {advice}")
