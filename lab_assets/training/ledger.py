"""A study's ledger: one row per training trial, safe under concurrent writers on any storage.

Files, per study, under `assets/study_ledger/` of the storage root (local disk or an object
store):
- `<study>/<trial>.json`  one object per row, the source of truth, written whole (local: temp +
                          fsync + rename; object stores: one PUT), so a row is never torn and two
                          writers never touch the same object: no lock, nothing to lose;
- `<study>.parquet`, `<study>.tsv`  views of every row, regenerated after each append.

Rows are listed and read back in recording order (`recorded_at`, then the trial key). A row's
status is decided once, when it is written, against the rows recorded before it; two trials
recorded at the same moment do not see each other (each is compared with the best before both).
A trial written again (a retried run) replaces its own row.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

import pandas as pd

from lab_assets.core import storage

ASSET = "study_ledger"
# The columns of the TSV export, in autoresearch's spirit; the Parquet has these plus the rest.
TSV_COLUMNS = [
    "exp",
    "description",
    "val_bpb",
    "peak_mem_gb",
    "tok_sec",
    "mfu",
    "steps",
    "status",
    "git_sha",
    "partition",
    "wall_seconds",
]
COLUMNS = [*TSV_COLUMNS, "study", "trial", "config", "run_id", "error", "recorded_at"]
STATUSES = ("baseline", "keep", "discard", "crash")


class LedgerError(RuntimeError):
    """A ledger row that cannot be read or written (not JSON, no trial key)."""


def path(study: str, suffix: str) -> str:
    return storage.asset_path(ASSET, study, suffix)


def row_path(study: str, trial: str) -> str:
    return storage.url("assets", ASSET, study, f"{trial}.json")


def rows(study: str) -> list[dict[str, Any]]:
    """Every row of the study's ledger, in recording order."""
    names = storage.glob(row_path(study, "*")) or _import_journal(study)
    found = storage.read_many(names)
    out = []
    for where, data in found.items():
        try:
            out.append(json.loads(data))
        except json.JSONDecodeError as e:
            raise LedgerError(f"{where} is not valid JSON ({e}); fix or remove that row") from None
    return sorted(out, key=lambda r: (r["recorded_at"], r["trial"]))


def _import_journal(study: str) -> list[str]:
    """A ledger from before rows were objects (`<study>.jsonl`, a line per row, the latest line
    of a trial winning): its rows become row objects once, so the study goes on where it was;
    the journal stays where it is. Returns the row objects' paths."""
    journal = path(study, ".jsonl")
    if not storage.exists(journal):
        return []
    lines = storage.read_bytes(journal).decode().splitlines()
    for n, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            if n == len(lines):
                break  # a torn last line: an append that never finished
            raise LedgerError(f"{journal} line {n} is not valid JSON ({e}); fix or remove that line") from None
        storage.write_bytes(row_path(study, row["trial"]), json.dumps(row, sort_keys=True, allow_nan=False).encode())
    return storage.glob(row_path(study, "*"))


def decide_status(val_bpb: float, earlier: list[dict[str, Any]], noise: float) -> str:
    """`keep` if better than the best kept result (the baseline or a keep) by more than `noise`,
    else `discard`; the first result with nothing to compare to is the `baseline`."""
    kept = [r["val_bpb"] for r in earlier if r["status"] in ("baseline", "keep") and r["val_bpb"] is not None]
    if not kept:
        return "baseline"
    return "keep" if val_bpb < min(kept) - noise else "discard"


def append(study: str, row: dict[str, Any], noise: float) -> dict[str, Any]:
    """Write one trial's row (status decided here, unless it is a `crash`); returns it as
    written. Then regenerates the Parquet and TSV views."""
    full = {c: row.get(c) for c in COLUMNS}
    if not full["trial"]:
        raise LedgerError(f"a row of study {study!r} without its trial key: {row}")
    earlier = [r for r in rows(study) if r["trial"] != full["trial"]]
    if full["status"] != "crash":
        full["status"] = decide_status(float(full["val_bpb"]), earlier, noise)
    full["recorded_at"] = time.time()
    storage.write_bytes(row_path(study, full["trial"]), json.dumps(full, sort_keys=True, allow_nan=False).encode())
    _write_views(study)
    return full


def frame(all_rows: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(all_rows, columns=COLUMNS)
    return df.astype({"exp": "int64", "steps": "Int64"})


def _cell(value: Any, column: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    formats = {
        "val_bpb": "{:.6f}",
        "peak_mem_gb": "{:.3f}",
        "tok_sec": "{:.0f}",
        "mfu": "{:.2%}",
        "wall_seconds": "{:.1f}",
    }
    if column in formats:
        return formats[column].format(value)
    if column == "git_sha":
        return str(value)[:12]
    return "_".join(str(value).split()) or "-"  # no blanks inside a cell: `column -t` splits on them


def tsv(all_rows: list[dict[str, Any]]) -> str:
    lines = ["\t".join(TSV_COLUMNS)]
    lines += ["\t".join(_cell(r.get(c), c) for c in TSV_COLUMNS) for r in all_rows]
    return "\n".join(lines) + "\n"


def _write_views(study: str) -> None:
    """Write the views of every row, again until no row arrived meanwhile. With concurrent
    writers the views end complete: a row recorded after this writer's last look is another
    writer's, which writes the views after recording it."""
    written = None
    while (current := rows(study)) != written:
        storage.write_parquet(path(study, ".parquet"), frame(current), {"study": study, "rows": row_path(study, "*")})
        storage.write_bytes(path(study, ".tsv"), tsv(current).encode())
        written = current
