"""Source stamps: cheap "has anything changed" checks on files, (path, mtime, size), no reading
of contents. Not content fingerprints (`core/integrity.py`: size + hash of what was written).

A warm worker is retired when the package's sources change (`runtime/launcher.py`); a cached
no-op answer is dropped when anything it was derived from changes (`runner/noop_answer.py`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # lab_assets/


def stat(path: str | os.PathLike[str]) -> tuple[str, int, int] | tuple[str]:
    """(path, mtime, size), or (path,) for a file that does not exist (its appearing is a change)."""
    try:
        s = os.stat(path)
    except OSError:
        return (str(path),)
    return str(path), s.st_mtime_ns, s.st_size


def files(paths: Iterable[str | os.PathLike[str]]) -> tuple:
    return tuple(stat(p) for p in sorted(map(str, paths)))


def package_sources() -> tuple:
    """Every source file of the package: what a warm worker has imported and a fresh process
    would import anew, and what every code version is a digest of."""
    return files(PACKAGE.rglob("*.py"))


def installed_packages() -> tuple:
    """The folders of the import path: installing, upgrading or removing a distribution adds or
    removes a `*.dist-info` folder, which changes its folder's mtime (library versions are part
    of every registry entry's code version)."""
    return files(p for p in sys.path if p and os.path.isdir(p))


def folder(path: str | os.PathLike[str]) -> tuple:
    """Every file directly in a folder (none if it does not exist)."""
    try:
        return files(e.path for e in os.scandir(path) if e.is_file())
    except OSError:
        return ()


def plugin_sources(entry_points: bool = True) -> tuple:
    """The lab's plugin modules (`core/plugins.py`; without `entry_points`, only those the
    project names: its pyproject.toml and LAB_PLUGINS): code the package's own stamps do not cover,
    found from this process's folder."""
    from lab_assets.core.plugins import module_files

    return files(module_files(entry_points))
