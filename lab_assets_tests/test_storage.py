"""Atomic writes: a writer killed mid-file leaves the old file (or none), never a torn one."""

import os
import signal
import subprocess
import sys
import textwrap

import pandas as pd

from lab_assets.core import storage


def test_parquet_round_trip_with_provenance(tmp_path):
    path = tmp_path / "a" / "t.parquet"
    df = pd.DataFrame({"x0": [1.0, 2.0], "label": [0, 1]})
    storage.write_parquet(path, df, {"git_sha": "abc", "seed": 3})
    pd.testing.assert_frame_equal(storage.read_parquet(path), df)
    assert storage.parquet_provenance(path) == {"git_sha": "abc", "seed": 3}
    assert [p.name for p in path.parent.iterdir()] == ["t.parquet"]  # no temporary left behind


def test_reading_a_missing_asset_names_it(tmp_path):
    import pytest

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
