"""The `lab` command as a user runs it: exit codes, error messages, JSON, a killed run."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from lab_assets.dr.methods import METHODS
from lab_assets_tests.conftest import lab_cli


def test_help_lists_every_command_with_its_help(lab):
    import argparse
    import re

    from lab_assets.cli.main import parser

    out = lab_cli("--help", cwd=lab)
    assert out.returncode == 0
    (sub,) = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert {"sweep", "report", "verify", "logs", "query", "study", "ui"} <= set(sub.choices)
    assert " ".join(out.stdout.split()).startswith(f"usage: lab [-h] {{{','.join(sub.choices)}}} ...")  # wrapped
    assert [a.dest for a in sub._choices_actions] == list(sub.choices)  # every command has a help line
    for action in sub._choices_actions:  # each command on its own line with the start of its help
        first_words = " ".join(action.help.split()[:3])
        assert re.search(rf"^    {action.dest}\s+{re.escape(first_words)}", out.stdout, re.M), action.dest


@pytest.mark.parametrize(
    "edit, expected",
    [
        (("pca: {}", "pcaa: {}"), ["methods.pcaa", "unknown method 'pcaa'", "allowed: " + ", ".join(METHODS.names())]),
        (("n_neighbors: 12", "n_neighbors: twelve"), ["methods.isomap.n_neighbors", "valid integer", "'twelve'"]),
        (("n_neighbors: 12", "n_neigbors: 12"), ["methods.isomap.n_neigbors", "allowed: n_components, n_neighbors"]),
        (("k: [5, 10]", "k: [5, 0]"), ["metrics.trustworthiness.k", "greater than or equal to 1"]),
        (("seeds: [0]", "seeds: [0"), ["not valid YAML"]),
    ],
)
def test_bad_sweep_is_refused_with_a_named_error_and_nothing_run(lab, edit, expected):
    path = lab / "sweeps" / "tiny.yaml"
    path.write_text(path.read_text().replace(*edit))
    for action in ("plan", "run"):
        out = lab_cli("sweep", action, "sweeps/tiny.yaml", cwd=lab)
        assert out.returncode == 2, out.stderr
        assert "sweeps/tiny.yaml" in out.stderr
        for text in expected:
            assert text in out.stderr
    assert not (lab / ".lab" / "assets").exists()
    assert not (lab / ".lab" / "keys").exists()


def test_missing_sweep_file(lab):
    out = lab_cli("sweep", "plan", "sweeps/nope.yaml", cwd=lab)
    assert out.returncode == 2 and "sweeps/nope.yaml: cannot read sweep file" in out.stderr


def test_output_piped_into_a_reader_that_stops_early(lab):
    """`lab sweep plan FILE | head -1`: the reader closes the pipe (here before the plan is
    printed, so that a write certainly meets it closed); no traceback, exit 1."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab_assets.cli.main", "sweep", "plan", "sweeps/tiny.yaml"],
        cwd=lab,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
    )
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1 and "Traceback" not in err, err


@pytest.mark.slow
def test_plan_run_plan_report_in_parallel(lab):
    before = json.loads(lab_cli("sweep", "plan", "sweeps/tiny.yaml", "--json", cwd=lab).stdout)
    assert before["counts"] == {"missing": 4, "stale": 0, "damaged": 0, "fresh": 0}
    assert len(before["cells"]) == 4 and all("|" in c["partition"] for c in before["cells"])

    out = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--workers", "2", "--json", cwd=lab)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["materialized"] == {"datasets": 2, "cells": 4, "metric_table": 1, "report": 1}  # by data key

    after = json.loads(lab_cli("sweep", "plan", "sweeps/tiny.yaml", "--json", cwd=lab).stdout)
    assert after["counts"] == {"missing": 0, "stale": 0, "damaged": 0, "fresh": 4}
    assert after["report"]["status"] == "fresh"

    report = lab_cli("report", "sweeps/tiny.yaml", cwd=lab)
    assert report.returncode == 0
    assert "trustworthiness (higher is better)" in report.stdout and "embeddings.png" in report.stdout

    sql = 'SELECT method_name, count(*) AS n, min("trustworthiness@k=5") AS t FROM metric_table GROUP BY 1 ORDER BY 1'
    rows = json.loads(lab_cli("query", sql, "--format", "json", cwd=lab).stdout)
    assert [(r["method_name"], r["n"]) for r in rows] == [("isomap", 2), ("pca", 2)]
    assert all(0 < r["t"] <= 1 for r in rows)
    assert len(json.loads(lab_cli("query", "SELECT * FROM tiny", "--format", "json", cwd=lab).stdout)) == 4
    bad = lab_cli("query", "SELECT * FROM nope", cwd=lab)
    assert bad.returncode == 2 and "views: metric_table, tiny" in bad.stderr


# `lab sweep run --workers 1` (cells in this process) with storage.atomic_write hooked: the second
# embedding write stops half-way through its temporary file, says so, and waits to be killed.
KILL_MID_WRITE = """
import sys, time
from pathlib import Path
from lab_assets.core import storage

marker, original, seen = Path(sys.argv[1]), storage.atomic_write, []

def atomic_write(path, write):
    if "embedding" not in Path(path).parts:
        return original(path, write)
    seen.append(path)
    if len(seen) < 2:
        return original(path, write)

    def torn(tmp):
        write(tmp)
        data = tmp.read_bytes()
        tmp.write_bytes(data[: len(data) // 2])  # what a kill in the middle of the write leaves
        marker.write_text(str(tmp) + "\\n" + str(path))
        time.sleep(600)

    return original(path, torn)

storage.atomic_write = atomic_write
from lab_assets.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def test_killed_run_leaves_no_torn_file_and_resumes(lab, tmp_path):
    """SIGKILL in the middle of a write (the second cell's embedding, half written): no final
    path holds a torn file, the finished cell stays as it was, and the re-run computes only the
    unfinished cell. Two one-point-cloud cells of PCA: the default suite's lean variant."""
    (lab / "sweeps" / "two.yaml").write_text(
        "name: two\ndata:\n  swissroll: {n_samples: 100}\nseeds: [0, 1]\nmethods:\n  pca: {}\n"
        "metrics:\n  trustworthiness: {k: [5]}\n"
    )
    marker = tmp_path / "writing"
    run = ("sweep", "run", "sweeps/two.yaml", "--workers", "1")
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_MID_WRITE, str(marker), *run, "--quiet"],
        cwd=lab,
        env=os.environ.copy(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 240
    while time.time() < deadline and not marker.exists() and proc.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), "the hooked write was never reached"
    tmp, target = marker.read_text().splitlines()
    assert Path(tmp).stat().st_size > 0 and not Path(target).exists()  # mid-write: temp only
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()

    # Whatever is at a final path is complete and readable; temporaries are never final paths.
    embeddings = lab / ".lab" / "assets" / "embedding"
    [finished] = list(embeddings.glob("*/*.parquet"))
    for f in (lab / ".lab" / "assets").rglob("*.parquet"):
        assert not f.name.startswith(".")
        pd.read_parquet(f)
    with pytest.raises((OSError, ValueError)):  # pyarrow's ArrowInvalid is a ValueError
        pd.read_parquet(tmp)  # the torn temporary really is torn
    before = (finished.read_bytes(), finished.stat().st_mtime_ns)

    out = lab_cli(*run, "--json", cwd=lab)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert (summary["before"]["fresh"], summary["before"]["missing"]) == (1, 1)  # what the plan found
    assert summary["materialized"]["cells"] == 1 and summary["fresh"]["cells"] == 1  # the finished cell skipped
    assert (finished.read_bytes(), finished.stat().st_mtime_ns) == before  # not rewritten
    assert Path(target).is_file() and len(pd.read_parquet(target)) == 100  # the killed cell's, whole
    table = pd.read_parquet(lab / ".lab" / "reports" / "two" / "metrics.parquet")
    assert len(table) == 2
