"""Training throughput on a CUDA GPU: float32 eager (the baseline, measured in the same run)
against bf16 autocast eager and bf16 autocast with torch.compile, the three modes
`core/backend.py` can choose. Prints tokens/s, MFU, peak memory and each mode's speed-up.

    python benchmarks/gpu_training.py [--repeats 3] [--steps 60] [--batch 32] [--json OUT]

Needs torch with CUDA and the package's domain code (no Dagster): on a bare GPU host,
`PYTHONPATH=. python3 benchmarks/gpu_training.py` with pydantic installed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
from pathlib import Path

import torch

from lab_assets.core import backend as backends
from lab_assets.training import train as training
from lab_assets.training.config import TrainConfig


def tokens(n: int, seed: int) -> torch.Tensor:
    return torch.randint(0, 256, (n,), generator=torch.Generator().manual_seed(seed), dtype=torch.uint8)


def modes(detected: backends.Backend) -> dict[str, backends.Backend]:
    fp32 = dataclasses.replace(detected, autocast_dtype=None, compile=False)
    bf16 = dataclasses.replace(detected, autocast_dtype=torch.bfloat16, compile=False)
    return {"fp32 eager": fp32, "bf16 eager": bf16, "bf16 compiled": dataclasses.replace(bf16, compile=True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch", type=int, default=32, help="sequences a step (the model is the same)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    detected = backends.detect()
    if detected.device != "cuda":
        raise SystemExit(f"needs a CUDA device; detected {detected.describe()}")
    if detected.peak_flops is None:  # MFU is the point of this benchmark
        raise SystemExit(
            f"{detected.device_name}: no bf16 peak known (no bf16, or a GPU core/backend.py's table lacks: "
            "set LAB_PEAK_FLOPS, in FLOP/s)"
        )
    config = TrainConfig(
        depth=8,
        width=768,
        heads=12,
        seq_len=512,
        batch=args.batch,
        steps=args.steps,
        checkpoint_every=10_000,
        eval_tokens=8192,
    )
    train_tokens, val_tokens = tokens(4_000_000, 0), tokens(64_000, 1)
    print(f"device: {detected.device_name}, torch {torch.__version__}, peak bf16 {detected.peak_flops:.3g} FLOP/s")
    print(
        f"model: depth {config.depth}, width {config.width}, seq {config.seq_len}, batch {config.batch}, "
        f"{args.steps} steps x {args.repeats} repeats (median)"
    )
    results = {}
    for name, b in modes(detected).items():
        runs = []
        for _ in range(args.repeats):
            torch.cuda.reset_peak_memory_stats()
            with tempfile.TemporaryDirectory() as d:
                runs.append(training.train(config, train_tokens, val_tokens, f"{d}/c.ckpt.pt", b))
        tok_s = statistics.median(r.tokens_per_second for r in runs)
        results[name] = {
            "tokens_per_second": tok_s,
            "mfu": backends.mfu(runs[0].flops_per_token, tok_s, detected.peak_flops),
            "peak_memory_gb": max(r.peak_memory_gb for r in runs),
            "val_bpb": statistics.median(r.val_bpb for r in runs),
            "n_params": runs[0].n_params,
        }
    base = results["fp32 eager"]["tokens_per_second"]
    print(f"{'mode':<15}{'tokens/s':>12}{'MFU':>8}{'peak GB':>9}{'val bpb':>9}{'vs fp32':>9}")
    for name, r in results.items():
        r["speedup_vs_fp32_eager"] = r["tokens_per_second"] / base
        print(
            f"{name:<15}{r['tokens_per_second']:>12,.0f}{r['mfu']:>8.1%}{r['peak_memory_gb']:>9.2f}"
            f"{r['val_bpb']:>9.3f}{r['speedup_vs_fp32_eager']:>8.2f}x"
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "device": detected.device_name,
                    "torch": torch.__version__,
                    "config": config.model_dump(),
                    "results": results,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
