"""Trust under misuse (issue 17): readable failures and interrupts, plan-time limits, a read-only
`lab query`, a read-only or full lab home."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lab_assets.core import storage
from lab_assets.dr.sweep import SweepError, parse_sweep
from lab_assets_tests.conftest import interrupt_when, lab_cli, missing

TRACEBACK_MARKS = ("Traceback (most recent call last)", "Stack Trace:", "dagster._core.errors")


def _no_traceback(text: str) -> None:
    assert not any(mark in text for mark in TRACEBACK_MARKS), text


# -- item 3: one line per failure, its log through `lab logs`, traces only with --verbose --------


def test_a_failed_partition_is_one_line_with_its_run_and_log_command(lab):
    pd.DataFrame(np.c_[np.arange(30.0), np.full(30, np.nan)], columns=["a", "b"]).to_csv(
        lab / "broken.csv", index=False
    )
    # Only the broken dataset: both its cells fail, and the report of no cell is still drawn (no third line).
    (lab / "sweeps" / "broken.yaml").write_text(
        "name: broken\ndata:\n  file: {path: broken.csv}\nseeds: [0]\nmethods:\n  pca: {}\n  isomap: {}\n"
        "metrics:\n  trustworthiness: {k: [5]}\n"
    )

    out = lab_cli("sweep", "run", "sweeps/broken.yaml", "--workers", "1", cwd=lab)
    assert out.returncode == 1
    _no_traceback(out.stderr)  # Dagster's own step-failure logging no longer reaches the terminal
    # One line per failed run: the broken dataset's partition in each of its two cells.
    lines = [line for line in out.stderr.splitlines() if line.startswith("FAILED ")]
    assert len(lines) == 2
    assert (lab / ".lab" / "reports" / "broken" / "embeddings.png").stat().st_size > 0
    line = lines[0]
    assert "FAILED datasets file-" in line and "BadDataError: data " in line
    assert "[step raw_dataset, run " in line
    run = line.split("full log: lab logs ")[1].rstrip("]")
    assert len(run) == 8

    log = lab_cli("logs", run, cwd=lab)
    assert log.returncode == 0, log.stderr
    assert "STEP_FAILURE" in log.stdout and "BadDataError" in log.stdout and "Stack Trace:" in log.stdout
    assert f"/runs/{run}" in log.stdout  # the UI link
    assert lab_cli("logs", "ffffffff", cwd=lab).returncode == 2

    verbose = lab_cli("sweep", "run", "sweeps/broken.yaml", "--verbose", "--workers", "1", cwd=lab)
    assert verbose.returncode == 1 and "Stack Trace:" in verbose.stderr and "BadDataError" in verbose.stderr


def _wait(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


@pytest.mark.slow
def test_ctrl_c_is_one_sentence_exit_130_no_process_left_and_resumes(lab):
    (lab / "sweeps" / "slow.yaml").write_text(
        "name: slow\ndata:\n  swissroll: {n_samples: 500}\nseeds: [0, 1, 2, 3]\n"
        "methods:\n  tsne: {max_iter: 1000}\nmetrics:\n  trustworthiness: {k: [5]}\n"
    )
    # A terminal's Ctrl-C: SIGINT to the command's whole process group.
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab_assets.cli.main", "sweep", "run", "sweeps/slow.yaml", "--workers", "2"],
        cwd=lab,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    embeddings = Path(storage.asset_path("embedding")).parent / "embedding"
    out, err = interrupt_when(proc, lambda: any(embeddings.rglob("*.parquet")))
    assert proc.returncode == 130, err
    _no_traceback(err)
    assert "of 4 cells done; run again to continue" in err.splitlines()[-1]

    def left() -> list[str]:
        found = subprocess.run(["ps", "-o", "pid=,stat=", "-g", str(proc.pid)], capture_output=True, text=True).stdout
        return [p for p in found.splitlines() if p.strip() and not p.split()[1].startswith("Z")]

    # A process of the group may still be exiting when the command has exited (seen in state R
    # with no command line, on main as well): gone within seconds, or left behind.
    _wait(lambda: not left(), 10)

    import dagster as dg

    from lab_assets.runtime.instance import get_instance

    statuses = {r.status for r in get_instance().get_runs()}
    assert dg.DagsterRunStatus.STARTED not in statuses  # every interrupted run is closed

    again = lab_cli("sweep", "run", "sweeps/slow.yaml", "--workers", "2", "--quiet", cwd=lab)
    assert again.returncode == 0, again.stderr


# -- item 4: what the sweep already determines is checked at plan time -----------------------


def _parse_error(text: str) -> str:
    with pytest.raises(SweepError) as e:
        parse_sweep(text, "sweeps/s.yaml")
    return str(e.value)


@pytest.mark.parametrize(
    "data, methods, metrics, field",
    [
        ("swissroll: {n_samples: 12}", "pca: {}", "trustworthiness: {k: [10]}", "metrics.trustworthiness.k"),
        ("swissroll: {n_samples: 12}", "pca: {}", "continuity: {k: [6]}", "metrics.continuity.k"),
        ("swissroll: {n_samples: 12}", "pca: {}", "knn_preservation: {k: [12]}", "metrics.knn_preservation.k"),
        ("swissroll: {n_samples: 12}", "pca: {}", "lid: {k: [20]}", "metrics.lid.k"),
        ("swissroll: {n_samples: 12}", "umap: {n_neighbors: 15}", "{}", "methods.umap.n_neighbors"),
        ("swissroll: {n_samples: 12}", "isomap: {n_components: 12}", "{}", "methods.isomap.n_components"),
        ("swissroll: {n_samples: 12}", "tsne: {}", "{}", "methods.tsne.perplexity"),
        ("swissroll: {n_samples: 12}", "tsne: {n_neighbors: 40}", "{}", "methods.tsne.n_neighbors"),
        ("swissroll: {n_samples: 100}", "pca: {n_components: 4}", "{}", "methods.pca.n_components"),
        ("gaussian_blobs: {n_samples: 100, n_features: 3}", "pca: {n_components: 5}", "{}", "methods.pca.n_components"),
        ("digits: {n_samples: 20}", "phate: {n_neighbors: 20}", "{}", "methods.phate.n_neighbors"),
    ],
)
def test_limits_known_from_the_sweep_are_refused_with_the_field(data, methods, metrics, field):
    text = f"name: s\ndata:\n  {data}\nmethods:\n  {methods}\n"
    if metrics != "{}":
        text += f"metrics:\n  {metrics}\n"
    assert f"sweeps/s.yaml: {field}: " in _parse_error(text)


def test_limits_at_the_boundary_are_accepted():
    parse_sweep(
        "name: s\ndata:\n  swissroll: {n_samples: 12}\nmethods:\n  pca: {n_components: 3}\n  umap: {n_neighbors: 11}\n"
        "  tsne: {perplexity: 11}\nmetrics:\n  trustworthiness: {k: [5]}\n  lid: {k: [11]}\n",
        "sweeps/s.yaml",
    )


def test_a_file_dataset_is_checked_as_soon_as_its_shape_is_known(lab):
    pd.DataFrame(np.random.default_rng(0).normal(size=(12, 2)), columns=["a", "b"]).to_csv(
        lab / "small.csv", index=False
    )
    pd.DataFrame({"a": [1.0, 2.0, 3.0], "c": ["x", "y", "z"]}).to_csv(lab / "words.csv", index=False)
    small = "name: s\ndata:\n  file: {path: small.csv}\nmethods:\n  pca: {n_components: 3}\nmetrics:\n  trustworthiness: {k: [10]}\n"
    error = _parse_error(small)
    assert "methods.pca.n_components: n_components=3 exceeds min(points, features) = min(12, 2)" in error
    assert "metrics.trustworthiness.k: k=10 needs k < n/2, the data has n=12 points" in error
    assert "data.file.path: file dataset 'words.csv': non-numeric feature columns: c" in _parse_error(
        "name: s\ndata:\n  file: {path: words.csv}\nmethods:\n  pca: {}\n"
    )
    assert "data.file.label_column: " in _parse_error(
        "name: s\ndata:\n  file: {path: small.csv, label_column: y}\nmethods:\n  pca: {}\n"
    )
    assert "data.file.path: file dataset 'nope.csv': no such file" in _parse_error(
        "name: s\ndata:\n  file: {path: nope.csv}\nmethods:\n  pca: {}\n"
    )


def test_the_cli_refuses_a_sweep_that_would_fail_every_cell_and_runs_nothing(lab):
    (lab / "sweeps" / "twelve.yaml").write_text(
        "name: twelve\ndata:\n  swissroll: {n_samples: 12}\nmethods:\n  pca: {}\nmetrics:\n  trustworthiness: {k: [10]}\n"
    )
    for command in ("plan", "run"):
        out = lab_cli("sweep", command, "sweeps/twelve.yaml", cwd=lab)
        assert out.returncode == 2, out.stderr
        assert "sweeps/twelve.yaml: metrics.trustworthiness.k: k=10 needs k < n/2" in out.stderr
        _no_traceback(out.stderr)
    assert not (lab / ".lab" / "assets").exists()


# -- item 5: `lab query` reads the lab's tables and nothing else ------------------------------


@pytest.fixture
def with_table(lab):
    storage.write_parquet(
        storage.asset_path("metric_table"), pd.DataFrame({"method_name": ["pca", "umap"], "x": [1.0, 2.0]})
    )
    (lab / "secret.csv").write_text("a,b\n1,2\n")
    return lab


def test_query_reads_the_lab_tables(with_table):
    from lab_assets.dr.query import run

    assert run("SELECT count(*) AS n FROM metric_table")["n"].tolist() == [2]
    assert run("WITH t AS (SELECT * FROM metric_table) SELECT max(x) AS m FROM t")["m"].tolist() == [2.0]


@pytest.mark.parametrize(
    "sql, said",
    [
        ("COPY (SELECT * FROM metric_table) TO '{out}'", "COPY statements are refused"),
        ("COPY metric_table TO '{out}'", "COPY statements are refused"),
        ("EXPORT DATABASE '{dir}'", "EXPORT statements are refused"),
        ("CREATE TABLE t AS SELECT 1", "CREATE statements are refused"),
        ("SELECT 1; DROP VIEW metric_table", "DROP statements are refused"),
        ("INSERT INTO metric_table VALUES ('x', 1)", "INSERT statements are refused"),
        ("ATTACH '{dir}/x.duckdb' AS x", "ATTACH statements are refused"),
        ("INSTALL httpfs", "statements are refused"),
        ("LOAD httpfs", "statements are refused"),
        ("SET enable_external_access = true", "SET statements are refused"),
        ("SELECT * FROM read_csv('/etc/passwd', sep = ':')", "file system operations are disabled"),
        ("SELECT * FROM read_text('/etc/hostname')", "file system operations are disabled"),
        ("SELECT * FROM read_parquet('{lab}/.lab/assets/*.parquet')", "file system operations are disabled"),
        ("SELECT * FROM glob('/etc/*')", "file system operations are disabled"),
        ("SELECT * FROM '{lab}/secret.csv'", "file system operations are disabled"),
    ],
)
def test_query_refuses_writes_attach_extensions_and_other_files(with_table, tmp_path, sql, said):
    out = tmp_path / "out.csv"
    result = lab_cli("query", sql.format(out=out, dir=tmp_path, lab=with_table), cwd=with_table)
    assert result.returncode == 2
    assert result.stderr.startswith("lab query: refused: ") and said in result.stderr, result.stderr
    _no_traceback(result.stderr)
    assert not out.exists() and not (tmp_path / "x.duckdb").exists()


# -- item 7: a read-only or full lab home ---------------------------------------------------


@pytest.fixture
def mounted(tmp_path):
    """A tmpfs mounted with `options` (root only: skipped elsewhere, a failure under CI=true)."""
    mounts = []

    def mount(options: str) -> Path:
        where = tmp_path / f"mnt{len(mounts)}"
        where.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
        if done.returncode != 0:
            missing(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")
        mounts.append(where)
        return where

    yield mount
    for where in mounts:
        subprocess.run(["umount", str(where)], check=False)


@pytest.mark.parametrize(
    "options, reason", [("ro,size=1m", "Read-only file system"), ("size=256k", "No space left on device")]
)
def test_a_read_only_or_full_lab_home_is_a_clear_error_naming_it(lab, monkeypatch, mounted, options, reason):
    home = mounted(options) / "lab"
    monkeypatch.setenv("LAB_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    for args in (
        ("sweep", "run", "sweeps/tiny.yaml"),
        ("sweep", "plan", "sweeps/tiny.yaml"),
        ("report", "sweeps/tiny.yaml"),
    ):
        out = lab_cli(*args, cwd=lab)
        assert out.returncode == 2, out.stderr
        assert f"{home}: cannot write here: {reason}. Nothing was run." in out.stderr
        _no_traceback(out.stderr)
    # nothing half-written: no key records, assets, instance or probe files
    assert not home.exists() or [p.name for p in home.rglob("*") if p.is_file()] == []


def test_a_lab_home_that_is_a_file_is_a_clear_error(lab, monkeypatch):
    (lab / "occupied").write_text("not a folder")
    monkeypatch.setenv("LAB_HOME", str(lab / "occupied"))
    monkeypatch.setenv("DAGSTER_HOME", str(lab / "occupied" / "dagster"))
    out = lab_cli("sweep", "run", "sweeps/tiny.yaml", cwd=lab)
    assert out.returncode == 2 and f"{lab / 'occupied'}: cannot write here: " in out.stderr
    _no_traceback(out.stderr)
