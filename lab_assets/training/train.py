"""The training loop: a fixed budget in steps (deterministic) or seconds (training time only),
checkpoints at a fixed interval, resume from the last one, and a fast failure on a diverged loss.

Determinism without saving RNG state: batch `s` is drawn from a generator seeded by
(seed, s), so a resumed run draws exactly the batches an uninterrupted one would have. With a
`steps` budget the final weights are then bitwise those of an uninterrupted run (on CPU; GPU
kernels are deterministic only where torch offers it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from lab_assets.core import backend as backends
from lab_assets.core import checkpoints, storage
from lab_assets.core.checkpoints import Checkpoint
from lab_assets.core.diverged import TrainingDiverged
from lab_assets.training import gpt
from lab_assets.training.config import TrainConfig
from lab_assets.training.corpus import VOCAB_SIZE

# A byte model starts at ln(256) = 5.5 nats; a loss this high means the run has blown up.
EXPLODED_LOSS = 100.0


@dataclass
class TrainResult:
    val_bpb: float
    steps: int
    resumed_from: int  # 0: started fresh
    training_seconds: float
    tokens_per_second: float
    mfu: float | None
    peak_memory_gb: float
    n_params: int
    flops_per_token: float
    final_loss: float
    state_dict: dict[str, torch.Tensor]
    device: str  # where the model's weights were ("cuda:0", "cpu"): what lineage records
    compiled: bool  # the steps went through what torch.compile returned (asked for by `Backend.compile`)


def lr_factor(progress: float, step: int, config: TrainConfig) -> float:
    """Linear warmup over `warmup_steps`, flat, then linear cooldown to 0 over the last
    `cooldown_frac` of the budget (progress in [0, 1]: steps or seconds used)."""
    if step < config.warmup_steps:
        return (step + 1) / config.warmup_steps
    if config.cooldown_frac > 0 and progress > 1 - config.cooldown_frac:
        return max(0.0, (1 - progress) / config.cooldown_frac)
    return 1.0


def batch_at(train: torch.Tensor, step: int, config: TrainConfig, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The (inputs, targets) of step `step`: random windows from a generator seeded by (seed, step)."""
    g = torch.Generator().manual_seed(config.seed * 2**32 + step)
    starts = torch.randint(0, len(train) - config.seq_len - 1, (config.batch,), generator=g)
    windows = train[starts[:, None] + torch.arange(config.seq_len + 1)].long().to(device)
    return windows[:, :-1], windows[:, 1:]


def _autocast(b: backends.Backend):
    return torch.autocast(b.device, dtype=b.autocast_dtype) if b.autocast_dtype else nullcontext()


@torch.no_grad()
def val_bpb(
    model: gpt.GPT, val: torch.Tensor, seq_len: int, max_tokens: int, b: backends.Backend, batch: int = 64
) -> float:
    """Bits per byte on the first `max_tokens` val bytes: mean next-byte cross-entropy (nats)
    over non-overlapping windows, / ln 2. Tokens are bytes, so this is exact, not converted."""
    windows = min((len(val) - 1) // seq_len, max(1, max_tokens // seq_len))
    if windows < 1:
        raise ValueError(f"val split has {len(val)} bytes, fewer than seq_len + 1 = {seq_len + 1}")
    model.eval()
    total, count = 0.0, 0
    for first in range(0, windows, batch):
        idx = torch.arange(first, min(first + batch, windows))[:, None] * seq_len + torch.arange(seq_len + 1)
        chunk = val[idx].long().to(b.device)
        with _autocast(b):
            logits = model(chunk[:, :-1])
        total += F.cross_entropy(logits.float().flatten(0, 1), chunk[:, 1:].flatten(), reduction="sum").item()
        count += chunk[:, 1:].numel()
    model.train()
    return total / count / math.log(2)


def save_weights(path: str, state_dict: dict[str, torch.Tensor]) -> str:
    """Weights only (a dict of tensors), atomically: loadable with torch.load(weights_only=True)."""
    return storage.write_bytes(path, checkpoints.to_bytes({k: v.detach().cpu() for k, v in state_dict.items()}))


def load_tensors(path: str, device: str = "cpu") -> dict[str, Any]:
    return checkpoints.from_bytes(storage.read_bytes(path), device)


@contextmanager
def _deterministic(on: bool):
    before = torch.are_deterministic_algorithms_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(on, warn_only=True)
    # Deterministic mode also writes NaN into every new tensor, to expose reads of uninitialized
    # memory; training reads none, and on a GPU that fill is a kernel and a full write per
    # allocation (every activation and gradient buffer, each step).
    torch.utils.deterministic.fill_uninitialized_memory = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before)
        torch.utils.deterministic.fill_uninitialized_memory = fill


def _optimizer(model: gpt.GPT, config: TrainConfig) -> torch.optim.Optimizer:
    embeddings = [model.tok.weight, model.pos.weight]
    ids = {id(p) for p in embeddings}
    matrices = [p for p in model.parameters() if id(p) not in ids]
    return torch.optim.AdamW(
        [
            {"params": matrices, "lr": config.lr, "weight_decay": config.weight_decay},
            {"params": embeddings, "lr": config.embedding_lr, "weight_decay": 0.0},
        ],
        betas=(0.9, 0.95),
        # One code path per device, so a resumed run's arithmetic is the uninterrupted one's. On a
        # GPU the fused kernel: the per-tensor loop is hundreds of small launches a step.
        **({"fused": True} if model.head.weight.is_cuda else {"foreach": False}),
    )


def train(
    config: TrainConfig,
    train_tokens: torch.Tensor,
    val_tokens: torch.Tensor,
    checkpoint: str,
    b: backends.Backend,
    log: Callable[[str], None] = lambda message: None,
) -> TrainResult:
    """Train to the budget, resuming from `checkpoint` if one exists; the checkpoint is written
    every `checkpoint_every` steps and removed once training completes."""
    if len(train_tokens) < config.seq_len + 2:
        raise ValueError(f"train split has {len(train_tokens)} bytes, fewer than seq_len + 2 = {config.seq_len + 2}")
    with _deterministic(config.steps is not None):
        model = gpt.build(
            depth=config.depth,
            width=config.width,
            heads=config.heads,
            seq_len=config.seq_len,
            vocab=VOCAB_SIZE,
            device=b.device,
            generator=torch.Generator().manual_seed(config.seed),
        )
        optimizer = _optimizer(model, config)
        base_lrs = [g["lr"] for g in optimizer.param_groups]
        step, seconds, timed_tokens, resumed_from = 0, 0.0, 0, 0
        ckpt = Checkpoint(checkpoint, config.digest, config.checkpoint_every)
        state = ckpt.load(b.device, strict=True)
        if state is not None:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            step = resumed_from = int(state["step"])
            seconds, timed_tokens = float(state["training_seconds"]), int(state["timed_tokens"])
            log(f"resumed from step {step} ({checkpoint})")

        def step_loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return F.cross_entropy(model(x).float().flatten(0, 1), y.flatten())

        # The loss compiled with the model, so the float logits are never written out whole.
        loss_of = torch.compile(step_loss) if b.compile else step_loss
        flops = gpt.flops_per_token(model, config.depth, config.width, config.seq_len)
        loss_f, first = float("nan"), True

        def done() -> bool:
            return step >= config.steps if config.steps is not None else seconds >= config.seconds

        while not done():
            progress = step / config.steps if config.steps is not None else seconds / config.seconds
            factor = lr_factor(progress, step, config)
            for group, base in zip(optimizer.param_groups, base_lrs, strict=True):
                group["lr"] = base * factor
            x, y = batch_at(train_tokens, step, config, b.device)
            t0 = time.perf_counter()
            with _autocast(b):
                loss = loss_of(x, y)
            loss.backward()
            if config.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            loss_f = loss.item()  # also waits for the device, so the step's time is real
            if not math.isfinite(loss_f) or loss_f > EXPLODED_LOSS:
                raise TrainingDiverged(
                    "gpt",
                    "step",
                    step,
                    loss_f,
                    optimizer.param_groups[0]["lr"],
                    "lower lr/embedding_lr, add warmup_steps or keep grad_clip on",
                    limit=EXPLODED_LOSS,
                )
            step += 1
            # Compilation happens in a process's first step: not training time (as autoresearch).
            if not (first and b.compile):
                seconds += time.perf_counter() - t0
                timed_tokens += config.batch * config.seq_len
            first = False
            if ckpt.due(step) and not done():
                ckpt.save(
                    {
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "step": step,
                        "training_seconds": seconds,
                        "timed_tokens": timed_tokens,
                    }
                )
                log(f"step {step}: loss {loss_f:.4f}, checkpoint written")
        bpb = val_bpb(model, val_tokens, config.seq_len, config.eval_tokens, b)
    tok_s = timed_tokens / seconds if seconds > 0 else 0.0
    ckpt.remove()  # the final weights supersede it; a rerun starts fresh
    return TrainResult(
        val_bpb=bpb,
        steps=step,
        resumed_from=resumed_from,
        training_seconds=seconds,
        tokens_per_second=tok_s,
        mfu=backends.mfu(flops, tok_s, b.peak_flops),
        peak_memory_gb=backends.peak_memory_gb(b),
        n_params=gpt.param_count(model),
        flops_per_token=flops,
        final_loss=loss_f,
        state_dict={k: v.detach().cpu() for k, v in model.state_dict().items()},
        device=str(next(model.parameters()).device),
        compiled=loss_of is not step_loss,  # what the steps went through, not what the backend asked for
    )
