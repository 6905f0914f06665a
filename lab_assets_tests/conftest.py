"""Every test gets its own project folder, lab home and Dagster instance (a real SQLite one)."""

import os
import sys
from pathlib import Path

import pytest

from lab_assets import instance

REPO = Path(__file__).resolve().parents[1]
TINY_SWEEP = """
name: tiny
data:
  swissroll: {n_samples: 150, noise: 0.05}
  gaussian_blobs: {n_samples: 150, n_features: 5, centers: 3}
seeds: [0]
methods:
  pca: {}
  isomap: {n_neighbors: 12}
metrics:
  trustworthiness: {k: [5, 10]}
  lid: {k: [10]}
"""


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """An empty lab project in tmp_path: LAB_PROJECT_DIR, LAB_HOME and DAGSTER_HOME inside it."""
    monkeypatch.setenv("LAB_PROJECT_DIR", str(tmp_path))
    for var in ("LAB_STORAGE_URL", "LAB_STORAGE_OPTIONS", "LAB_EXECUTOR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LAB_HOME", str(tmp_path / ".lab"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / ".lab" / "dagster"))
    (tmp_path / ".lab" / "dagster").mkdir(parents=True)
    (tmp_path / ".lab" / "dagster" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "sweeps" / "tiny.yaml").write_text(TINY_SWEEP)
    instance.get_instance.cache_clear()
    yield tmp_path
    instance.get_instance.cache_clear()


def lab_cli(*args, cwd, timeout=300):
    """Run the real `lab` entry point in a subprocess (same interpreter, same environment)."""
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "lab_assets.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
    )
