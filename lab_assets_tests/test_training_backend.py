"""Backend detection, the peak-FLOP/s table and the MFU/FLOPs arithmetic (checked by hand)."""

import pytest
import torch

from lab_assets.core import backend
from lab_assets.training import gpt


def test_cpu_is_detected_without_accelerator_features(monkeypatch):
    monkeypatch.delenv("LAB_PEAK_FLOPS", raising=False)
    monkeypatch.setenv("LAB_DEVICE", "cpu")  # the same answer with or without a GPU present
    b = backend.detect()
    assert (b.name, b.device, b.autocast_dtype, b.compile, b.peak_flops) == ("cpu", "cpu", None, False, None)
    assert "float32, eager" in b.describe()


def test_detect_refuses_an_unknown_forced_device(monkeypatch):
    monkeypatch.setenv("LAB_DEVICE", "tpu")
    with pytest.raises(ValueError, match="LAB_DEVICE='tpu'"):
        backend.detect()


@pytest.mark.parametrize(
    "name, flops",
    [
        ("NVIDIA H100 80GB HBM3", 989.5e12),
        ("NVIDIA H100 PCIe", 756.0e12),
        ("NVIDIA H200", 989.5e12),
        ("NVIDIA A100-SXM4-80GB", 312e12),
        ("NVIDIA A10G", 70e12),
        ("NVIDIA GeForce RTX 4090", 165.2e12),
        ("AMD Instinct MI300X", 1307.4e12),
        ("Some Future GPU", None),
    ],
)
def test_peak_flops_table(monkeypatch, name, flops):
    monkeypatch.delenv("LAB_PEAK_FLOPS", raising=False)
    assert backend.peak_flops(name) == flops


def test_peak_flops_override(monkeypatch):
    monkeypatch.setenv("LAB_PEAK_FLOPS", "1e15")
    assert backend.peak_flops("Some Future GPU") == 1e15


def test_mfu_formula_by_hand():
    # 1e9 FLOPs/token x 300k tokens/s = 3e14 FLOP/s achieved, of a 1e15 peak: 30 %.
    assert backend.mfu(1e9, 3e5, 1e15) == pytest.approx(0.3)
    assert backend.mfu(1e9, 3e5, None) is None


def test_flops_per_token_by_hand():
    # depth 1, width 8, seq 4, vocab 256. Linear weights: qkv 8x24=192, proj 8x8=64,
    # fc 8x32=256, out 32x8=256, head 8x256=2048 -> 2816. 6*2816 + 12*1*8*4 = 16896 + 384.
    model = gpt.build(
        depth=1, width=8, heads=2, seq_len=4, vocab=256, device="cpu", generator=torch.Generator().manual_seed(0)
    )
    assert model.matmul_params() == 2816
    assert gpt.flops_per_token(model, depth=1, width=8, seq_len=4) == 17280
    # plus the embeddings: 256*8 tokens + 4*8 positions
    assert gpt.param_count(model) == 2816 + 2048 + 32


def test_peak_memory_is_reported_on_cpu():
    assert 0.01 < backend.peak_memory_gb(backend.detect()) < 64


@pytest.mark.parametrize(
    "env, triton, expected",
    [
        ("1", True, (True, "compiled")),
        ("1", False, (False, "eager (torch.compile needs Triton, which is not installed)")),
        ("0", True, (False, "eager (LAB_TORCH_COMPILE=0)")),
    ],
)
def test_a_gpu_without_triton_says_it_trains_eager(monkeypatch, env, triton, expected):
    # The CUDA branch of detect() on any machine: torch's answers about the device are stubbed,
    # the compile decision is the real one.
    monkeypatch.delenv("LAB_DEVICE", raising=False)
    monkeypatch.setenv("LAB_TORCH_COMPILE", env)
    monkeypatch.setattr(backend, "_triton_installed", lambda: triton)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    b = backend.detect()
    assert (b.name, b.compile, b.compile_mode) == ("rocm" if torch.version.hip else "cuda", *expected)
    assert b.describe().endswith(f"bfloat16, {expected[1]}")


def test_training_reports_whether_its_steps_ran_compiled(monkeypatch, tmp_path):
    from lab_assets.training import train
    from lab_assets.training.config import TrainConfig

    g = torch.Generator().manual_seed(0)
    tokens = (
        torch.randint(0, 256, (4_000,), generator=g, dtype=torch.uint8),
        torch.randint(0, 256, (600,), generator=g, dtype=torch.uint8),
    )
    config = TrainConfig(
        depth=1, width=16, heads=2, seq_len=16, batch=2, checkpoint_every=100, eval_tokens=256, steps=2
    )
    cpu = backend.Backend("cpu", "cpu", "test CPU", None, False, None)
    assert train.train(config, *tokens, str(tmp_path / "eager.pt"), cpu).compiled is False
    # A backend that compiles: torch.compile is replaced by a wrapper that counts its calls (compiling
    # on a CPU needs a C++ toolchain and takes longer than this test), so the result must say
    # the steps went through it.
    calls = []

    def compiled(step_loss):
        def counted(x, y):
            calls.append(x.shape)
            return step_loss(x, y)

        return counted

    monkeypatch.setattr(torch, "compile", compiled)
    compiling = backend.Backend("cpu", "cpu", "test CPU", None, True, None, "compiled")
    assert train.train(config, *tokens, str(tmp_path / "compiled.pt"), compiling).compiled is True
    assert len(calls) == 2  # both steps
    # Asked to compile, but a torch.compile that hands the model back unchanged: the steps ran
    # eager, and the result says so rather than echo the backend's flag.
    monkeypatch.setattr(torch, "compile", lambda step_loss: step_loss)
    assert train.train(config, *tokens, str(tmp_path / "eager-again.pt"), compiling).compiled is False


def test_cpu_training_keeps_the_per_tensor_optimizer_that_its_recorded_weights_came_from():
    """The training step's version was kept when GPUs got the fused AdamW (defs/step_versions.py):
    that holds only while a CPU trains with the per-tensor optimizer it always used."""
    from lab_assets.training import gpt, train
    from lab_assets.training.config import TrainConfig

    model = gpt.build(depth=1, width=16, heads=2, seq_len=16, vocab=256, device="cpu", generator=torch.Generator())
    defaults = train._optimizer(model, TrainConfig(steps=1)).defaults
    assert (defaults["foreach"], defaults["fused"]) == (False, None)
