"""Artifact fingerprints: size and content hash, recorded when an artifact is written and
checked later, so a truncated, overwritten or deleted file is found before anything trusts it.

Two depths: planning checks presence and size (one stat per artifact, cheap at thousands of
cells); `lab verify` and `--verify` read every byte and compare hashes, which also finds a
corruption that kept the size (flipped bytes).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from lab_assets.core import storage

CHUNK = 1 << 20  # streamed: an artifact is never held in memory whole just to hash it


@dataclass(frozen=True)
class Fingerprint:
    size: int
    digest: str


def _hash():
    return hashlib.blake2b(digest_size=16)


def of_bytes(data: bytes) -> Fingerprint:
    h = _hash()
    h.update(data)
    return Fingerprint(len(data), h.hexdigest())


def of_file(path: str) -> Fingerprint:
    h, size = _hash(), 0
    with storage.filesystem().open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            size += len(chunk)
    return Fingerprint(size, h.hexdigest())


def problem(path: str, recorded: Fingerprint | None, size: int | None, full: bool) -> str | None:
    """Why the file at `path`, of `size` bytes now (None: missing; `storage.sizes`), is not what
    was recorded (None: intact as far as checked). Without a recorded fingerprint (written before
    fingerprints were recorded) only presence is checked; `full` compares content hashes too."""
    if size is None:
        return "missing"
    if recorded is None:
        return None
    if size != recorded.size:
        return f"{size} bytes, {recorded.size} when written"
    if full and of_file(path).digest != recorded.digest:
        return "content changed since written (same size, different blake2b hash)"
    return None
