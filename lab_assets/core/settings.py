"""Where things live. Everything is derived from two environment variables, so a laptop, CI and
a cluster pod differ only in their environment, never in code."""

from __future__ import annotations

import os
from pathlib import Path


def project_dir() -> Path:
    """The lab's project folder (sweeps/, relative data paths). Default: the current folder."""
    return Path(os.environ.get("LAB_PROJECT_DIR") or Path.cwd()).resolve()


def lab_home() -> Path:
    """Asset files, key records and the embedded Dagster instance. Default: <project>/.lab."""
    return Path(os.environ.get("LAB_HOME") or project_dir() / ".lab").resolve()


def resolve_path(path: str | os.PathLike[str]) -> Path:
    """A user-given path: absolute as is, relative to the project folder otherwise."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else project_dir() / p
