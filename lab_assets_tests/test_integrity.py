"""Integrity (issue 17, "What to build" 1): a damaged or deleted artifact of a finished sweep is
found, named with the command that repairs it, and recomputed by the next run, alone; a report
is replaced as a whole or not at all."""

import json
from pathlib import Path

import pandas as pd
import pytest

from lab_assets.core import storage
from lab_assets_tests.conftest import lab_cli
from lab_assets_tests.test_trust import _no_traceback


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _flip_bytes(path: Path) -> None:
    """Corrupt the middle of a file without changing its size."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 8] = bytes(b ^ 0xFF for b in data[middle : middle + 8])
    path.write_bytes(bytes(data))


@pytest.fixture
def finished(lab):
    """The tiny sweep run to the end: 2 data keys x 2 methods = 4 cells and a report."""
    out = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--workers", "1", "--quiet", cwd=lab)
    assert out.returncode == 0, out.stderr
    return lab


def _cell_file(asset: str, data_prefix: str, method_prefix: str) -> Path:
    [path] = Path(storage.url("assets", asset)).glob(f"{data_prefix}-*/{method_prefix}-*.parquet")
    return path


def test_a_truncated_or_deleted_artifact_is_damaged_named_and_recomputed_alone(finished):
    lab = finished
    embedding = _cell_file("embedding", "gaussian_blobs", "isomap")
    metrics = _cell_file("metrics", "swissroll", "pca")
    [raw] = Path(storage.url("assets", "raw_dataset")).glob("swissroll-*.parquet")
    original = pd.read_parquet(embedding)
    report = lab / ".lab" / "reports" / "tiny"
    report_before = _files(report)

    with open(embedding, "r+b") as f:  # the finding: truncated to 100 bytes
        f.truncate(100)
    metrics.unlink()
    raw.unlink()

    plan = json.loads(lab_cli("sweep", "plan", "sweeps/tiny.yaml", "--json", cwd=lab).stdout)
    assert plan["counts"] == {"missing": 0, "stale": 0, "damaged": 3, "fresh": 1}
    swissroll = next(k for k in plan["datasets"] if k.startswith("swissroll"))
    assert plan["datasets"][swissroll]["status"] == "damaged"
    assert f"{raw}: missing" in plan["datasets"][swissroll]["reason"]
    cells = {c["partition"]: c for c in plan["cells"]}
    blobs_isomap = cells[f"{embedding.parent.name}|{embedding.stem}"]
    assert blobs_isomap["status"] == "damaged"
    assert f"{embedding}: 100 bytes, " in blobs_isomap["reason"] and blobs_isomap["reason"].endswith(" when written")
    assert plan["report"]["status"] == "stale"

    verify = lab_cli("verify", "sweeps/tiny.yaml", cwd=lab)
    assert verify.returncode == 1
    lines = verify.stdout.splitlines()
    assert len(lines) == 3, verify.stdout
    for path in (raw, embedding, metrics):
        [line] = [line for line in lines if f": {path}: " in line]
        assert line.startswith("DAMAGED ") and line.endswith("; to recompute it: lab sweep run sweeps/tiny.yaml")

    # Reading the damaged file names it and the repair, in one line; the old report stays whole.
    out = lab_cli("report", "sweeps/tiny.yaml", cwd=lab)
    assert out.returncode == 1
    _no_traceback(out.stderr)
    assert "<Buffer>" not in out.stderr
    [failed] = [line for line in out.stderr.splitlines() if line.startswith("FAILED report tiny: ")]
    assert (
        f"{embedding} is damaged: not a readable Parquet file (100 bytes); "
        "to recompute it: lab sweep run sweeps/tiny.yaml" in failed
    )
    assert _files(report) == report_before

    again = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--workers", "1", "--json", cwd=lab)
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["before"]["damaged"] == 3
    # The dataset (one data key; a partition per cell that reads it), rebuilt with the same
    # content, leaves its intact cell fresh: exactly the two damaged cells are recomputed.
    assert summary["materialized"] == {"datasets": 1, "cells": 2, "metric_table": 1, "report": 1}
    assert summary["fresh"]["cells"] == 2
    pd.testing.assert_frame_equal(pd.read_parquet(embedding), original)
    assert lab_cli("verify", "sweeps/tiny.yaml", cwd=lab).returncode == 0
    assert json.loads(lab_cli("sweep", "plan", "sweeps/tiny.yaml", "--json", cwd=lab).stdout)["counts"]["fresh"] == 4


@pytest.mark.slow
def test_verify_finds_a_same_size_corruption_and_run_with_verify_repairs_it(finished):
    lab = finished
    embedding = _cell_file("embedding", "swissroll", "isomap")
    original = pd.read_parquet(embedding)
    _flip_bytes(embedding)
    summary_csv = lab / ".lab" / "reports" / "tiny" / "summary.csv"
    summary_before = summary_csv.read_bytes()
    _flip_bytes(summary_csv)

    # Planning stats files only (no hashing): a same-size change is not seen there...
    assert json.loads(lab_cli("sweep", "plan", "sweeps/tiny.yaml", "--json", cwd=lab).stdout)["counts"]["fresh"] == 4
    verify = lab_cli("verify", "sweeps/tiny.yaml", cwd=lab)
    assert verify.returncode == 1
    changed = (
        "content changed since written (same size, different blake2b hash); "
        "to recompute it: lab sweep run sweeps/tiny.yaml --verify"
    )
    assert verify.stdout.splitlines() == [
        f"DAMAGED embedding {embedding.parent.name}|{embedding.stem}: {embedding}: {changed}",
        f"DAMAGED report tiny: {summary_csv}: {changed}",  # the report's files are checked too
    ]
    # ...and the command it names recomputes exactly that cell.
    run = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--verify", "--workers", "1", "--json", cwd=lab)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["materialized"]["cells"] == 1
    pd.testing.assert_frame_equal(pd.read_parquet(embedding), original)
    assert summary_csv.read_bytes() == summary_before
    assert lab_cli("verify", "sweeps/tiny.yaml", cwd=lab).returncode == 0


def test_a_report_is_replaced_as_a_whole_or_not_at_all(lab, monkeypatch):
    folder = storage.url("reports", "s")
    storage.replace_folder(folder, {"table.csv": b"v1", "figure.png": b"v1"})
    storage.replace_folder(folder, {"table.csv": b"v2", "figure.png": b"v2"})
    assert _files(Path(folder)) == {"figure.png": b"v2", "table.csv": b"v2"}
    # the previous version is gone; nothing but the link and the current version is left
    assert len(list(Path(folder).parent.iterdir())) == 2

    real, calls = storage.atomic_write, []

    def second_write_fails(path, write):  # a full disk half-way through the new version
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(path, write)

    monkeypatch.setattr(storage, "atomic_write", second_write_fails)
    with pytest.raises(OSError):
        storage.replace_folder(folder, {"table.csv": b"v3", "figure.png": b"v3"})
    assert _files(Path(folder)) == {"figure.png": b"v2", "table.csv": b"v2"}
    assert len(list(Path(folder).parent.iterdir())) == 2  # the half-written version is removed


def test_an_older_plain_report_folder_is_replaced_too(lab):
    folder = Path(storage.url("reports", "s"))
    folder.mkdir(parents=True)
    (folder / "stale.png").write_bytes(b"old")
    storage.replace_folder(str(folder), {"table.csv": b"new"})
    assert folder.is_symlink() and _files(folder) == {"table.csv": b"new"}
    assert len(list(folder.parent.iterdir())) == 2


def test_reading_a_damaged_parquet_file_names_it(lab):
    path = storage.asset_path("dataset", "x")
    storage.write_bytes(path, b"PAR1" + b"\0" * 96)
    with pytest.raises(
        storage.DamagedFileError, match=rf"^{path} is damaged: not a readable Parquet file \(100 bytes\)$"
    ):
        storage.read_parquet(path)


def test_a_damaged_table_read_by_a_command_is_one_line_naming_it(lab):
    path = storage.asset_path("metric_table")
    storage.write_bytes(path, b"PAR1" + b"\0" * 96)
    out = lab_cli("query", "SELECT count(*) FROM metric_table", cwd=lab)
    assert out.returncode == 1
    assert (
        out.stderr == f"lab: {path} is damaged: not a readable Parquet file (100 bytes); `lab verify <sweep file>` "
        "names every damaged file and the command that recomputes it\n"
    )


@pytest.mark.slow
def test_the_metric_table_names_a_damaged_cell_file_and_its_repair(finished):
    """The metric table reads every cell's metrics file at once (storage.read_parquets): a
    damaged one fails the table with the file and the command that recomputes it, not pyarrow's
    message, and the table's previous file stays as it was."""
    lab = finished
    metrics = _cell_file("metrics", "swissroll", "pca")
    table = Path(storage.asset_path("metric_table"))
    before = table.read_bytes()
    with open(metrics, "r+b") as f:
        f.truncate(100)

    out = lab_cli("report", "sweeps/tiny.yaml", cwd=lab)
    assert out.returncode == 1
    _no_traceback(out.stderr)
    [failed] = [line for line in out.stderr.splitlines() if line.startswith("FAILED metric_table")]
    assert (
        f"{metrics} is damaged: not a readable Parquet file (100 bytes); "
        "to recompute it: lab sweep run sweeps/tiny.yaml" in failed
    )
    assert table.read_bytes() == before
