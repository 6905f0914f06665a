"""The text a study trains on: documents split into train/val once, as a Parquet table.

Default source: the running interpreter's standard-library `.py` files, which are real text on
every machine and need no download. `files` reads the user's own files by glob. Tokens are
bytes (vocab 256), so bits per byte is the model's own loss with no tokenizer in between.

Documents, not bytes, are split (whole files go to train or val), chosen in a seeded order until
`max_bytes` is reached: a tiny CPU corpus still sees many files instead of the first few
alphabetically. The table's content hash is the asset's data version.
"""

from __future__ import annotations

import glob as globlib
import hashlib
import sysconfig
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import numpy as np
import pandas as pd
import pydantic
from pydantic import Field

from lab_assets.core.registry import digest
from lab_assets.core.settings import resolve_path

if TYPE_CHECKING:
    import torch

VOCAB_SIZE = 256  # byte-level tokens
# Not training text: third-party packages, and the test suites' generated/binary fixtures.
STDLIB_SKIP = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"}


class CorpusError(ValueError):
    """A corpus that cannot be built (no files matched, too little text)."""


class CorpusConfig(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    source: Literal["stdlib", "files"] = "stdlib"
    glob: str | None = None  # `files`: a glob relative to the project folder (`**` recurses)
    max_bytes: Annotated[int, Field(ge=1024)] = 1_000_000
    val_fraction: Annotated[float, Field(gt=0, lt=1)] = 0.1
    seed: Annotated[int, Field(ge=0)] = 0

    @pydantic.model_validator(mode="after")
    def _glob_for_files(self) -> CorpusConfig:
        if (self.source == "files") != (self.glob is not None):
            raise ValueError("corpus.glob is required with source: files, and only allowed there")
        return self

    @property
    def key(self) -> str:
        return f"{self.source}-{digest(self.model_dump(mode='json'), 6)}"


def stdlib_files() -> list[Path]:
    """The standard library's .py files, sorted by path relative to it: fixed for an interpreter."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = (p for p in root.rglob("*.py") if not STDLIB_SKIP & set(p.relative_to(root).parts[:-1]))
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def source_files(config: CorpusConfig) -> tuple[Path, list[Path]]:
    """(root the paths are shown relative to, the candidate files)."""
    if config.source == "stdlib":
        return Path(sysconfig.get_paths()["stdlib"]), stdlib_files()
    pattern = str(resolve_path(config.glob))
    files = sorted(Path(p) for p in globlib.glob(pattern, recursive=True) if Path(p).is_file())
    if not files:
        raise CorpusError(f"corpus glob {config.glob!r} (resolved to {pattern}) matches no file")
    return resolve_path("."), files


def file_list_digest(root: Path, files: list[Path]) -> str:
    """Hash of the candidate list (names and sizes): which files a corpus was drawn from."""
    listing = "\n".join(
        f"{p.relative_to(root).as_posix() if p.is_relative_to(root) else p}\t{p.stat().st_size}" for p in files
    )
    return hashlib.sha256(listing.encode()).hexdigest()[:16]


def build(config: CorpusConfig) -> pd.DataFrame:
    """One row per document: `doc`, `path`, `split` ("train"/"val"), `text` (raw bytes)."""
    root, files = source_files(config)
    order = np.random.default_rng(config.seed).permutation(len(files))
    chosen, total = [], 0
    for i in order:
        size = files[i].stat().st_size
        if 0 < size <= config.max_bytes - total:
            chosen.append(files[i])
            total += size
    if len(chosen) < 2:
        raise CorpusError(
            f"corpus {config.key}: {len(chosen)} non-empty file(s) fit in max_bytes={config.max_bytes}; "
            "need at least 2 (one for train, one for val): raise max_bytes or add files"
        )
    n_val = min(len(chosen) - 1, max(1, round(config.val_fraction * len(chosen))))
    return pd.DataFrame(
        {
            "doc": np.arange(len(chosen), dtype=np.int64),
            "path": [p.relative_to(root).as_posix() if p.is_relative_to(root) else str(p) for p in chosen],
            "split": ["val"] * n_val + ["train"] * (len(chosen) - n_val),
            "text": [p.read_bytes() for p in chosen],
        }
    )


def content_hash(df: pd.DataFrame) -> str:
    h = hashlib.sha256()
    for path, split, text in zip(df["path"], df["split"], df["text"], strict=True):
        h.update(f"{path}\0{split}\0{len(text)}\0".encode())
        h.update(text)
    return h.hexdigest()[:16]


def tokens(df: pd.DataFrame, split: str) -> torch.Tensor:
    """The split's documents concatenated, as byte tokens (uint8; widened per batch)."""
    import torch  # here, not at the top: the Dagster definitions import this module

    data = b"".join(df.loc[df["split"] == split, "text"])
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)
