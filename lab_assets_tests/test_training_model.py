"""The GPT and its training loop on CPU: val_bpb against a direct computation, determinism,
the schedule, fast failure on divergence, and checkpoint/resume in one process."""

import math

import pytest
import torch
import torch.nn.functional as F

from lab_assets.core import backend, storage
from lab_assets.core.checkpoints import Checkpoint
from lab_assets.core.diverged import TrainingDiverged
from lab_assets.training import gpt, train
from lab_assets.training.config import TrainConfig

CPU = backend.Backend("cpu", "cpu", "test CPU", None, False, None)
TINY = dict(depth=1, width=16, heads=2, seq_len=16, batch=4, eval_tokens=512, checkpoint_every=4)


@pytest.fixture(scope="module")
def text():
    data = bytes(range(256)) + b"the quick brown fox jumps over the lazy dog. " * 40
    t = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return t[: len(t) * 9 // 10], t[len(t) * 9 // 10 :]


def test_val_bpb_is_mean_cross_entropy_in_bits(text):
    _, val = text
    model = gpt.build(
        depth=1, width=16, heads=2, seq_len=16, vocab=256, device="cpu", generator=torch.Generator().manual_seed(1)
    )
    got = train.val_bpb(model, val, seq_len=16, max_tokens=10_000, b=CPU, batch=3)
    # Reference: every full 16-byte window, each next byte scored once, nats -> bits.
    nats, count = 0.0, 0
    with torch.no_grad():
        for i in range((len(val) - 1) // 16):
            w = val[i * 16 : i * 16 + 17].long()
            logp = F.log_softmax(model(w[None, :-1])[0], dim=-1)
            nats -= logp[torch.arange(16), w[1:]].sum().item()
            count += 16
    assert got == pytest.approx(nats / count / math.log(2), rel=1e-6)
    assert 7.0 < got < 9.0  # an untrained byte model is near log2(256) = 8 bits


def test_lr_schedule_warmup_flat_cooldown():
    c = TrainConfig(steps=100, warmup_steps=10, cooldown_frac=0.5)
    assert train.lr_factor(0.0, 0, c) == pytest.approx(0.1)
    assert train.lr_factor(0.3, 30, c) == 1.0
    assert train.lr_factor(0.75, 75, c) == pytest.approx(0.5)
    assert train.lr_factor(1.0, 100, c) == 0.0


def test_config_needs_exactly_one_budget():
    with pytest.raises(ValueError, match="exactly one budget"):
        TrainConfig()
    with pytest.raises(ValueError, match="exactly one budget"):
        TrainConfig(steps=3, seconds=1.0)
    with pytest.raises(ValueError, match="divisible by heads"):
        TrainConfig(steps=3, width=30, heads=4)


def test_training_is_deterministic_and_learns(lab, text):
    tr, val = text
    c = TrainConfig(steps=20, lr=1e-2, embedding_lr=3e-2, **TINY)
    a = train.train(c, tr, val, storage.url("a.ckpt"), CPU)
    b = train.train(c, tr, val, storage.url("b.ckpt"), CPU)
    assert a.val_bpb == b.val_bpb and a.steps == b.steps == 20 and a.resumed_from == 0
    assert all(torch.equal(a.state_dict[k], b.state_dict[k]) for k in a.state_dict)
    assert a.val_bpb < 7.5 and a.mfu is None and a.tokens_per_second > 0
    assert a.device == "cpu"  # where the weights were: what the gpt_model's lineage records
    assert not storage.exists(storage.url("a.ckpt"))  # removed once training completed


def test_resume_from_checkpoint_equals_uninterrupted(lab, text):
    tr, val = text
    full = train.train(TrainConfig(steps=10, **TINY), tr, val, storage.url("full.ckpt"), CPU)
    # Interrupt: the same config's first 8 steps, with its checkpoint at step 8 kept.
    ckpt = storage.url("part.ckpt")
    first = TrainConfig(steps=10, **TINY)
    model = gpt.build(
        depth=1, width=16, heads=2, seq_len=16, vocab=256, device="cpu", generator=torch.Generator().manual_seed(0)
    )
    opt = train._optimizer(model, first)
    base = [g["lr"] for g in opt.param_groups]
    for step in range(8):
        for g, lr in zip(opt.param_groups, base):
            g["lr"] = lr * train.lr_factor(step / 10, step, first)
        x, y = train.batch_at(tr, step, first, "cpu")
        F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), first.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
    Checkpoint(ckpt, first.digest, first.checkpoint_every).save(
        {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "step": 8,
            "training_seconds": 0.1,
            "timed_tokens": 512,
        }
    )
    resumed = train.train(first, tr, val, ckpt, CPU)
    assert resumed.resumed_from == 8 and resumed.steps == 10
    assert resumed.val_bpb == full.val_bpb
    assert all(torch.equal(resumed.state_dict[k], full.state_dict[k]) for k in full.state_dict)


def test_a_checkpoint_of_another_config_is_refused(lab, text):
    tr, val = text
    ckpt = storage.url("other.ckpt")
    Checkpoint(ckpt, "something-else", 1).save({"step": 1})
    with pytest.raises(ValueError, match="written for another configuration"):
        train.train(TrainConfig(steps=2, **TINY), tr, val, ckpt, CPU)


def test_diverging_loss_fails_fast_with_a_clear_message(lab, text):
    tr, val = text
    c = TrainConfig(steps=500, lr=1e4, embedding_lr=1e4, grad_clip=0, **TINY)
    with pytest.raises(TrainingDiverged, match=r"gpt: training diverged at step \d+: loss .* lower lr") as e:
        train.train(c, tr, val, storage.url("nan.ckpt"), CPU)
    assert e.value.step < 50  # failed fast, did not burn the budget


def test_weights_are_saved_weights_only(lab, text):
    model = gpt.build(
        depth=1, width=16, heads=2, seq_len=16, vocab=256, device="cpu", generator=torch.Generator().manual_seed(0)
    )
    path = train.save_weights(storage.url("w.pt"), model.state_dict())
    loaded = train.load_tensors(path)
    assert set(loaded) == set(model.state_dict()) and all(
        torch.equal(loaded[k], v) for k, v in model.state_dict().items()
    )
