"""Content hashes of a lab's input files, kept per file state (size, mtime): a sweep over a
multi-GB file is planned without reading it again, and any edit (which moves its mtime) is
hashed anew. Kept in this process and in the lab home (`file_hashes/`), one small JSON per file.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

from lab_assets.core import settings, storage

FOLDER = "file_hashes"


def stamp(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(size, mtime in ns): the file state a hash is kept for."""
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def _record(path: Path) -> Path:
    name = hashlib.sha256(str(path).encode()).hexdigest()[:32]
    return settings.lab_home() / FOLDER / f"{name}.json"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@lru_cache(maxsize=64)
def _digest(path: Path, state: tuple[int, int], record: Path) -> str:
    try:
        kept = json.loads(record.read_text())
        if kept["path"] == str(path) and tuple(kept["state"]) == state:
            return kept["sha256"]
    except (OSError, ValueError, KeyError, TypeError):  # none yet, or unreadable: hash the file
        pass
    digest = _sha256(path)
    if stamp(path) != state:  # written while it was read: hash the next state, keep nothing
        return _digest(path, stamp(path), record)
    text = json.dumps({"path": str(path), "state": list(state), "sha256": digest})
    try:
        storage.atomic_write(record, lambda tmp: tmp.write_text(text))
    except OSError:  # a read-only lab home: this process still remembers it
        pass
    return digest


def file_digest(path: str | os.PathLike[str]) -> str:
    """sha256 of the file's bytes, read once per (size, mtime) state."""
    p = Path(path).resolve()
    return _digest(p, stamp(p), _record(p))
