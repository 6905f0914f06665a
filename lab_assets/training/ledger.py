"""A study's ledger: one row per training trial, crash-safe, safe under concurrent writers.

Files, per study, under `assets/study_ledger/` of the storage root:
- `<study>.jsonl`  the journal, the source of truth: one JSON object per line, appended with a
                   single O_APPEND write + fsync;
- `<study>.parquet` and `<study>.tsv`  views regenerated from the journal after every append,
                   each written atomically (temp + fsync + rename), so they are never torn;
- `<study>.lock`   an fcntl lock held around every read-modify-write, so concurrent writers
                   (two trials, a sensor and the CLI) lose no row.

A writer killed mid-append can leave a last line without its newline. Such a line was never
acknowledged (its fsync had not returned), so the next reader or writer detects it, moves its
bytes to `<study>.jsonl.torn` for inspection, and truncates the journal back to the last
complete line. A malformed line *before* the end is real corruption and is an error, not a repair.

The ledger needs local storage (or a shared filesystem): O_APPEND and fcntl locks do not exist
on object stores.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from lab_assets.core import storage

ASSET = "study_ledger"
# The columns of the TSV export, in autoresearch's spirit; the Parquet has these plus the rest.
TSV_COLUMNS = [
    "exp", "description", "val_bpb", "peak_mem_gb", "tok_sec", "mfu", "steps", "status",
    "git_sha", "partition", "wall_seconds",
]
COLUMNS = [*TSV_COLUMNS, "study", "trial", "config", "run_id", "error", "recorded_at"]
STATUSES = ("baseline", "keep", "discard", "crash")


class LedgerError(RuntimeError):
    """A ledger that cannot be read or written safely (corrupt line, remote storage)."""


def path(study: str, suffix: str) -> str:
    return storage.asset_path(ASSET, study, suffix)


def _local(study: str, suffix: str) -> Path:
    if not storage.is_local():
        raise LedgerError(
            f"the ledger of study {study!r} needs local storage or a shared filesystem "
            f"(LAB_STORAGE_URL={storage.root()!r}): appends and locks do not exist on object stores"
        )
    return Path(storage.filesystem()._strip_protocol(path(study, suffix)))


@contextmanager
def _locked(study: str) -> Iterator[Path]:
    journal = _local(study, ".jsonl")
    journal.parent.mkdir(parents=True, exist_ok=True)
    with open(_local(study, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            _repair(journal)
            yield journal
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _repair(journal: Path) -> None:
    """Drop a torn last line (no newline): keep its bytes beside the journal, truncate."""
    if not journal.exists():
        return
    data = journal.read_bytes()
    if not data or data.endswith(b"\n"):
        return
    keep = data.rfind(b"\n") + 1
    torn = journal.with_name(journal.name + ".torn")
    with open(torn, "ab") as f:
        f.write(data[keep:] + b"\n")
    with open(journal, "r+b") as f:
        f.truncate(keep)
        os.fsync(f.fileno())
    warnings.warn(f"{journal}: dropped a torn last line ({len(data) - keep} bytes, kept in {torn})", stacklevel=2)


def _parse(journal: Path) -> list[dict[str, Any]]:
    if not journal.exists():
        return []
    rows = []
    for n, line in enumerate(journal.read_text().splitlines(), 1):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise LedgerError(f"{journal} line {n} is not valid JSON ({e}); fix or remove that line") from None
    return rows


def rows(study: str) -> list[dict[str, Any]]:
    """Every row of the study's ledger, in append order (repairing a torn last line first)."""
    with _locked(study) as journal:
        return _parse(journal)


def decide_status(val_bpb: float, earlier: list[dict[str, Any]], noise: float) -> str:
    """`keep` if better than the best kept result (the baseline or a keep) by more than `noise`,
    else `discard`; the first result with nothing to compare to is the `baseline`."""
    kept = [r["val_bpb"] for r in earlier if r["status"] in ("baseline", "keep") and r["val_bpb"] is not None]
    if not kept:
        return "baseline"
    return "keep" if val_bpb < min(kept) - noise else "discard"


def append(study: str, row: dict[str, Any], noise: float) -> dict[str, Any]:
    """Append one row (status decided here, under the lock, unless it is a `crash`); returns it
    as written. Then regenerates the Parquet and TSV views."""
    with _locked(study) as journal:
        earlier = _parse(journal)
        full = {c: row.get(c) for c in COLUMNS}
        if full["status"] != "crash":
            full["status"] = decide_status(float(full["val_bpb"]), earlier, noise)
        full["recorded_at"] = time.time()
        line = (json.dumps(full, sort_keys=True, allow_nan=False) + "\n").encode()
        fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)  # one write: a line is whole or torn at the end, never interleaved
            os.fsync(fd)
        finally:
            os.close(fd)
        _write_views(study, [*earlier, full])
    return full


def frame(all_rows: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(all_rows, columns=COLUMNS)
    return df.astype({"exp": "int64", "steps": "Int64"})


def _cell(value: Any, column: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    formats = {"val_bpb": "{:.6f}", "peak_mem_gb": "{:.3f}", "tok_sec": "{:.0f}", "mfu": "{:.2%}", "wall_seconds": "{:.1f}"}
    if column in formats:
        return formats[column].format(value)
    if column == "git_sha":
        return str(value)[:12]
    return "_".join(str(value).split()) or "-"  # no blanks inside a cell: `column -t` splits on them


def tsv(all_rows: list[dict[str, Any]]) -> str:
    lines = ["\t".join(TSV_COLUMNS)]
    lines += ["\t".join(_cell(r.get(c), c) for c in TSV_COLUMNS) for r in all_rows]
    return "\n".join(lines) + "\n"


def _write_views(study: str, all_rows: list[dict[str, Any]]) -> None:
    storage.write_parquet(path(study, ".parquet"), frame(all_rows), {"study": study, "journal": path(study, ".jsonl")})
    storage.write_bytes(path(study, ".tsv"), tsv(all_rows).encode())
