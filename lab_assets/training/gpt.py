"""A small GPT: byte embeddings + learned positions, pre-norm blocks (causal self-attention and a
GELU MLP), an untied output head. Deliberately plain: the study loop searches over its sizes
and optimizer settings, not over architecture code.

Weights are initialized from an explicit torch.Generator (never the global RNG), on the meta
device first so nothing is drawn twice.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

INIT_STD = 0.02


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.proj = nn.Linear(width, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.attn = Attention(width, heads)
        self.fc = nn.Linear(width, 4 * width, bias=False)
        self.out = nn.Linear(4 * width, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Parameter-free RMSNorm (as in autoresearch): one less thing to tune or decay.
        x = x + self.attn(F.rms_norm(x, (x.size(-1),)))
        return x + self.out(F.gelu(self.fc(F.rms_norm(x, (x.size(-1),)))))


class GPT(nn.Module):
    def __init__(self, *, depth: int, width: int, heads: int, seq_len: int, vocab: int):
        super().__init__()
        if width % heads:
            raise ValueError(f"width {width} is not divisible by heads {heads}")
        self.seq_len = seq_len
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(seq_len, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits (batch, time, vocab) for byte ids (batch, time)."""
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1), device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(F.rms_norm(x, (x.size(-1),)))

    def matmul_params(self) -> int:
        """Parameters used in matrix multiplies (every Linear): the 6N of the FLOPs estimate.
        Embedding lookups are gathers, not FLOPs."""
        return sum(m.weight.numel() for m in self.modules() if isinstance(m, nn.Linear))


def build(
    *, depth: int, width: int, heads: int, seq_len: int, vocab: int, device: str, generator: torch.Generator
) -> GPT:
    """The model on `device`, initialized from `generator` (a CPU generator: same weights on
    every device)."""
    with torch.device("meta"):
        model = GPT(depth=depth, width=width, heads=heads, seq_len=seq_len, vocab=vocab)
    model.to_empty(device="cpu")
    # Residual projections scaled by depth (GPT-2), so the residual stream's variance does not
    # grow with the number of blocks.
    residual = INIT_STD / math.sqrt(2 * depth)
    for name, p in model.named_parameters():
        std = residual if name.endswith(("attn.proj.weight", "out.weight")) else INIT_STD
        with torch.no_grad():
            nn.init.normal_(p, 0.0, std, generator=generator)
    return model.to(device)


def flops_per_token(model: GPT, depth: int, width: int, seq_len: int) -> float:
    """Training FLOPs per token (forward + backward): 6 per matmul parameter, plus attention's
    12 * depth * width * seq_len for QK^T and AV (PaLM appendix B; nanoGPT's estimate)."""
    return 6 * model.matmul_params() + 12 * depth * width * seq_len


def param_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
