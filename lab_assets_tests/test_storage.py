"""Atomic writes: a writer killed mid-file leaves the old file (or none), never a torn one."""

import os
import signal
import subprocess
import sys
import textwrap

import pandas as pd
import pyarrow.parquet as pq
import pytest

from lab_assets.core import storage


def test_parquet_round_trip_with_provenance(tmp_path):
    path = tmp_path / "a" / "t.parquet"
    df = pd.DataFrame({"x0": [1.0, 2.0], "label": [0, 1]})
    storage.write_parquet(path, df, {"git_sha": "abc", "seed": 3})
    pd.testing.assert_frame_equal(storage.read_parquet(path), df)
    assert storage.parquet_provenance(path) == {"git_sha": "abc", "seed": 3}
    assert [p.name for p in path.parent.iterdir()] == ["t.parquet"]  # no temporary left behind


def test_many_tables_read_as_one_match_pandas_concat(tmp_path, monkeypatch):
    """`read_parquets` (the metric table's read of every cell) against pandas reading each file
    and concatenating: same rows, columns unioned, dtypes promoted, in path order."""
    monkeypatch.setenv("LAB_STORAGE_URL", str(tmp_path))
    frames = {
        "a.parquet": pd.DataFrame({"cell": ["a", "b"], "seed": [0, 1], "t@k=5": [0.5, 0.25]}),
        "b.parquet": pd.DataFrame(
            {"cell": ["c"], "seed": [2], "t@k=5": [1], "c@k=5": [0.125]}
        ),  # int metric, extra column
        "c.parquet": pd.DataFrame({"cell": ["d"], "seed": [3]}),
    }
    for name, df in frames.items():
        storage.write_parquet(storage.url(name), df, {"cells": 1})
    paths = storage.glob(storage.url("*.parquet"))
    # The reference reads each file with pyarrow itself, not with the project's reader.
    expected = pd.concat([pq.read_table(p).to_pandas() for p in paths], ignore_index=True)
    pd.testing.assert_frame_equal(storage.read_parquets(paths), expected)
    assert expected["t@k=5"].tolist()[:3] == [0.5, 0.25, 1.0] and expected["c@k=5"].isna().sum() == 3

    storage.write_bytes(paths[1], b"PAR1" + b"\0" * 96)
    with pytest.raises(storage.DamagedFileError, match=rf"^{paths[1]} is damaged: not a readable Parquet file") as e:
        storage.read_parquets(paths)
    assert e.value.path == paths[1]


def test_reading_a_missing_asset_names_it(tmp_path):
    with pytest.raises(storage.MissingAssetError, match="materialize its partition first"):
        storage.read_parquet(tmp_path / "nope.parquet")


def test_writer_killed_mid_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "t.parquet"
    old = pd.DataFrame({"v": [1.0, 2.0, 3.0]})
    storage.write_parquet(path, old)
    script = textwrap.dedent(f"""
        import os, sys, time
        from pathlib import Path
        from lab_assets.core import storage

        def slow_write(tmp):
            with open(tmp, "wb") as f:
                f.write(b"PAR1 half a file")
                f.flush()
                print("writing", flush=True)
                time.sleep(60)

        storage.atomic_write(Path({str(path)!r}), slow_write)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    pd.testing.assert_frame_equal(storage.read_parquet(path), old)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "t.parquet"]
    assert leftovers and all(n.startswith(".t.parquet.") and n.endswith(".tmp") for n in leftovers)


def test_failed_write_removes_its_temporary(tmp_path):
    import pytest

    def broken(tmp):
        tmp.write_bytes(b"partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        storage.atomic_write(tmp_path / "x.parquet", broken)
    assert list(tmp_path.iterdir()) == []
