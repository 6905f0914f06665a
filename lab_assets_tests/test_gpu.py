"""CUDA paths, run only where torch sees a CUDA device (`-m gpu` on a GPU host; skipped with the
reason elsewhere, CI included: CI has no GPU): detection, bf16 autocast, torch.compile, peak
memory and MFU from a real training, and resume determinism on the device."""

import pytest
import torch

from lab_assets.core import backend, checkpoints
from lab_assets.training import train as training
from lab_assets.training.config import TrainConfig

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason="needs a CUDA device (torch.cuda.is_available() is False)"
    ),
]

CONFIG = dict(depth=2, width=64, heads=2, seq_len=64, batch=8, checkpoint_every=10, eval_tokens=4096, steps=40)


@pytest.fixture
def tokens():
    g = torch.Generator().manual_seed(0)
    return torch.randint(0, 256, (60_000,), generator=g, dtype=torch.uint8), torch.randint(
        0, 256, (8_000,), generator=g, dtype=torch.uint8
    )


def test_cuda_is_detected_with_bf16_and_compile(monkeypatch):
    monkeypatch.delenv("LAB_DEVICE", raising=False)
    monkeypatch.delenv("LAB_PEAK_FLOPS", raising=False)
    b = backend.detect()
    assert (b.name, b.device, b.device_name) == (
        "rocm" if torch.version.hip else "cuda",
        "cuda",
        torch.cuda.get_device_name(0),
    )
    assert b.autocast_dtype == (torch.bfloat16 if torch.cuda.is_bf16_supported() else None)
    # A CUDA host has Triton (torch's CUDA wheels bring it): compiling is on, never silently eager.
    assert (b.compile, b.compile_mode) == (True, "compiled")
    assert b.peak_flops == (backend.peak_flops(b.device_name) if torch.cuda.is_bf16_supported() else None)
    assert backend.resolve_device("auto") == "cuda"


def test_bf16_autocast_runs_matmuls_in_bf16(monkeypatch):
    monkeypatch.delenv("LAB_DEVICE", raising=False)
    b = backend.detect()
    if b.autocast_dtype is None:
        pytest.skip("this GPU has no bf16")
    a = torch.ones(8, 8, device="cuda")
    with training._autocast(b):
        assert (a @ a).dtype == torch.bfloat16


def test_training_on_cuda_reports_device_peak_memory_and_mfu(monkeypatch, tmp_path, tokens):
    monkeypatch.delenv("LAB_DEVICE", raising=False)
    monkeypatch.setenv("LAB_PEAK_FLOPS", "1e15")  # a known peak: MFU = flops/token x tokens/s / 1e15
    b = backend.detect()
    torch.cuda.reset_peak_memory_stats()
    r = training.train(TrainConfig(**CONFIG), *tokens, str(tmp_path / "c.ckpt.pt"), b)
    assert r.device.startswith("cuda") and r.steps == 40
    assert r.compiled is True and b.describe().endswith(", compiled")  # what ran, not what was asked
    assert 0 < r.peak_memory_gb == pytest.approx(torch.cuda.max_memory_allocated() / 1e9)
    assert r.peak_memory_gb < torch.cuda.get_device_properties(0).total_memory / 1e9
    assert r.mfu == pytest.approx(r.flops_per_token * r.tokens_per_second / 1e15) and 0 < r.mfu < 1


@pytest.mark.parametrize("compile", ["0", "1"])
def test_resume_on_cuda_equals_the_uninterrupted_run(monkeypatch, tmp_path, tokens, compile):
    monkeypatch.delenv("LAB_DEVICE", raising=False)
    monkeypatch.setenv("LAB_TORCH_COMPILE", compile)
    b = backend.detect()
    config = TrainConfig(**CONFIG)
    whole = training.train(config, *tokens, str(tmp_path / "whole.ckpt.pt"), b)
    assert (b.name, whole.device) == ("rocm" if torch.version.hip else "cuda", "cuda:0")
    assert whole.compiled is (compile == "1"), b.compile_mode

    save = checkpoints.Checkpoint.save

    class Killed(Exception):
        pass

    def save_then_die(self, state):
        save(self, state)
        if state["step"] == 20:
            raise Killed

    monkeypatch.setattr(checkpoints.Checkpoint, "save", save_then_die)
    with pytest.raises(Killed):
        training.train(config, *tokens, str(tmp_path / "cut.ckpt.pt"), b)
    monkeypatch.setattr(checkpoints.Checkpoint, "save", save)
    resumed = training.train(config, *tokens, str(tmp_path / "cut.ckpt.pt"), b)
    assert resumed.resumed_from == 20 and resumed.compiled is whole.compiled
    assert resumed.val_bpb == whole.val_bpb
    assert all(torch.equal(resumed.state_dict[k], whole.state_dict[k]) for k in whole.state_dict)
