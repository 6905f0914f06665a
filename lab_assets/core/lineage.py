"""Provenance recorded with every materialization: enough to trace a number in a report back to
the code, configuration, machine and time that produced it."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

from lab_assets.core.plugins import module_files
from lab_assets.core.registry import package_version
from lab_assets.core.settings import lab_plugins, project_dir
from lab_assets.core.source_stamps import PACKAGE

KEY_PACKAGES = ("lab_assets", "dagster", "numpy", "pandas", "pyarrow", "scikit-learn", "scipy")


def git_state() -> tuple[str, bool]:
    """(commit SHA of the project folder, dirty?); ("unknown", False) outside a git checkout.
    Dirty when a source a cell's versions read differs from what is committed: a tracked file of
    the project modified, or a `.py` of the package or of a plugin module (LAB_PLUGINS or an entry
    point; `plugins/` new in the working tree) untracked or modified in whichever repository holds
    it. Cached per project folder and LAB_PLUGINS (once per process, not once per asset)."""
    return _git_state(str(project_dir()), tuple(lab_plugins()))


@cache
def _git_state(folder: str, plugins: tuple[str, ...]) -> tuple[str, bool]:
    def git(where: str, *args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=where, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()

    def changed(where: str, *paths: str) -> bool:
        """Whether `paths` of the repository holding `where` are untracked or modified; a folder in
        no repository (an installed copy) cannot tell, and counts as clean."""
        try:
            return bool(git(where, "status", "--porcelain", "--untracked-files=all", "--", *paths))
        except (OSError, subprocess.SubprocessError):
            return False

    try:
        sha = git(folder, "rev-parse", "HEAD")
        dirty = bool(git(folder, "status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return "unknown", False
    by_folder: dict[str, list[str]] = {}
    for f in module_files():  # `plugins` is in the key: module_files reads LAB_PLUGINS itself
        if os.path.isfile(f):
            by_folder.setdefault(os.path.dirname(f), []).append(os.path.basename(f))
    # A pathspec's `*` matches across folders: every `.py` under the package, none of its caches.
    dirty = dirty or changed(str(PACKAGE), "*.py") or any(changed(d, *names) for d, names in by_folder.items())
    return sha, dirty


@cache
def host() -> str:
    """The machine: architecture and cores."""
    return f"{platform.machine()}, {os.cpu_count()} cores"


def device_used(estimator: object) -> str:
    """The device a fitted estimator computed on, as torch names it ("cuda:0", "mps:0", "cpu").

    What the computation used, never what was asked for: an estimator that computes with torch
    reports where its tensors were as `device_used_` (the autoencoder: its weights), or keeps its
    result as a tensor in `embedding_` (TorchDR); anything else (scikit-learn, numpy) ran on the CPU."""
    reported = getattr(estimator, "device_used_", None)
    if reported is not None:
        return str(reported)
    result = getattr(estimator, "embedding_", None)
    if type(result).__module__.startswith("torch"):
        return str(result.device)
    return "cpu"


@dataclass
class Timing:
    wall_seconds: float = 0.0
    compute_seconds: float = 0.0


@contextmanager
def timed() -> Iterator[Timing]:
    """Wall time and this process's CPU time (all its threads) for the enclosed block."""
    t = Timing()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield t
    finally:
        t.wall_seconds = time.perf_counter() - wall
        t.compute_seconds = time.process_time() - cpu


def provenance(
    config: dict[str, Any],
    seed: int | None,
    code_version: str,
    packages: tuple[str, ...] = (),
    device: str = "cpu",
    code_digest: str = "",
) -> dict[str, Any]:
    """The plain-JSON provenance stored both in Dagster metadata and in the Parquet footer.
    `device`: what the computation ran on (`device_used`, a trainer's report), "cpu" by default.
    `code_digest`: the science code's digest by meaning (`Entry.code_digest`), beside the commit:
    the same digest names the same computation in any checkout, formatted or not."""
    sha, dirty = git_state()
    return {
        "config": config,
        "seed": seed,
        "git_sha": sha,
        "git_dirty": dirty,
        "code_digest": code_digest,
        "code_version": code_version,
        "packages": {p: package_version(p) for p in (*KEY_PACKAGES, *packages)},
        "device": device,
        "host": host(),
    }
