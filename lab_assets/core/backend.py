"""Which accelerator trains the model, decided in one place: CUDA, ROCm, MPS or CPU, and what
each supports (bf16 autocast, torch.compile), plus the peak FLOP/s that MFU is measured against.

MFU = achieved model FLOP/s / the device's peak dense bf16 FLOP/s. The peak numbers are the
vendors' dense (no sparsity) bf16 tensor-core figures; a device not in the table (and every CPU
and MPS device) has no MFU rather than a made-up one. `LAB_PEAK_FLOPS` overrides the table for a
device it does not know.
"""

from __future__ import annotations

import importlib.util
import platform
from dataclasses import dataclass

import torch

from lab_assets.core import settings

# Substring of torch.cuda.get_device_name() -> peak dense bf16 FLOP/s. Order matters: the first
# match wins, so more specific names come first ("H100 PCIe" before "H100").
PEAK_BF16_FLOPS: tuple[tuple[str, float], ...] = (
    ("H200", 989.5e12),
    ("H100 PCIe", 756.0e12),
    ("H100", 989.5e12),  # SXM / HBM3
    ("GH200", 989.5e12),
    ("B200", 2250e12),
    ("A100", 312e12),
    ("L40S", 362e12),
    ("L4", 121e12),
    ("A10G", 70e12),
    ("A10", 125e12),
    ("RTX 4090", 165.2e12),
    ("RTX 3090", 71e12),
    ("MI300X", 1307.4e12),
    ("MI250X", 383e12),
)


@dataclass(frozen=True)
class Backend:
    name: str  # "cuda", "rocm", "mps" or "cpu"
    device: str  # what torch.device() takes
    device_name: str
    autocast_dtype: torch.dtype | None  # None: train in float32
    compile: bool
    peak_flops: float | None  # None: MFU is not reported
    compile_mode: str = "eager"  # "compiled", or "eager (<why>)": recorded with every training

    def describe(self) -> str:
        dtype = str(self.autocast_dtype).removeprefix("torch.") if self.autocast_dtype else "float32"
        return f"{self.name} ({self.device_name}), {dtype}, {self.compile_mode}"


def peak_flops(device_name: str) -> float | None:
    """Peak dense bf16 FLOP/s of a device, by name; LAB_PEAK_FLOPS wins when set."""
    override = settings.peak_flops_override()
    if override is not None:
        return override
    for needle, flops in PEAK_BF16_FLOPS:
        if needle.lower() in device_name.lower():
            return flops
    return None


def _triton_installed() -> bool:
    return importlib.util.find_spec("triton") is not None


def compile_choice() -> tuple[bool, str]:
    """Whether a GPU compiles, and the mode in words. torch.compile on GPUs needs Triton; without
    it training runs eager, and says so (`Backend.compile_mode`, the model's metadata) rather
    than silently. LAB_TORCH_COMPILE=0 turns it off (debugging, or a driver where Inductor
    misbehaves)."""
    if not settings.torch_compile_allowed():
        return False, "eager (LAB_TORCH_COMPILE=0)"
    if not _triton_installed():
        return False, "eager (torch.compile needs Triton, which is not installed)"
    return True, "compiled"


def detect() -> Backend:
    """The best device present, in the order CUDA/ROCm (both are torch.cuda), MPS, CPU.
    `LAB_DEVICE=cpu` forces the CPU (tests, or sharing a GPU box)."""
    forced = settings.forced_device()
    if forced not in ("", "cpu"):
        raise ValueError(f"LAB_DEVICE={forced!r}: allowed values are 'cpu' or unset (auto-detect)")
    if forced != "cpu" and torch.cuda.is_available():
        name = torch.cuda.get_device_name(0)
        bf16 = torch.cuda.is_bf16_supported()
        compiles, mode = compile_choice()
        return Backend(
            name="rocm" if torch.version.hip else "cuda",
            device="cuda",
            device_name=name,
            autocast_dtype=torch.bfloat16 if bf16 else None,
            compile=compiles,
            peak_flops=peak_flops(name) if bf16 else None,
            compile_mode=mode,
        )
    if forced != "cpu" and torch.backends.mps.is_available():
        # Eager float32: Inductor's MPS backend and bf16 autocast are not dependable there yet.
        return Backend("mps", "mps", "Apple GPU", None, False, None, "eager (MPS)")
    # CPU: float32 eager. bf16 autocast on CPUs without AMX is slower, and compiling needs a C++
    # toolchain and takes longer than the tiny models trained here.
    name = f"{platform.machine()} CPU, {torch.get_num_threads()} threads"
    return Backend("cpu", "cpu", name, None, False, None, "eager (CPU)")


def resolve_device(device: str) -> str:
    """A method's `device` option: "auto" is the detected backend's device (so LAB_DEVICE=cpu
    holds there too); an explicit "cuda" without CUDA is an error, not a silent CPU run."""
    if device == "auto":
        return detect().device
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device='cuda' was asked for but torch sees no CUDA device")
    return device


def mfu(flops_per_token: float, tokens_per_second: float, peak: float | None) -> float | None:
    """Model FLOPs utilization in [0, 1]; None without a known peak."""
    if peak is None or peak <= 0:
        return None
    return flops_per_token * tokens_per_second / peak


def peak_memory_gb(backend: Backend) -> float:
    """Peak memory of the training: the accelerator's allocator on CUDA/ROCm, else the process's
    peak resident set size (the only honest number on CPU and MPS's unified memory)."""
    if backend.device == "cuda":
        return torch.cuda.max_memory_allocated() / 1e9
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (rss if platform.system() == "Darwin" else rss * 1024) / 1e9  # bytes on macOS, KiB elsewhere
