"""A no-op `lab sweep run` answered without Dagster.

Re-running a sweep whose every partition is fresh used to cost the whole of a run's fixed costs
(importing Dagster and the definitions, the instance, registering, one stale-status resolution
per cell: 2.2 s at 12 cells, 9 s at 1,000). When a `lab sweep run` finds nothing to do, or has
just made everything fresh (planned again after its runs), it saves what a no-op prints here
under a *state*: a digest of everything that answer was derived from, taken before the plan it
came from. The next `lab sweep run` of the same file computes the state again (stat calls and
three SQLite aggregates, no Dagster) and, if it is equal, prints the saved answer.

The state covers what decides freshness (and what the answer prints):
- the sweep file's content (as parsed) and the terminal width of the printed tables;
- every source file of the package and the folders of the import path (code versions: module
  digests and library versions), the project's `dagster.yaml`;
- the plugins named: LAB_PLUGINS, and the project's `pyproject.toml` by its stamp (any edit of it
  ends the shortcut; parsing its `[tool.lab_assets]` would cost more than the rest of the answer);
- where things live: project, lab home, Dagster home, storage root;
- the instance's head (`runtime/freshness/instance_head.py`): any event stored or deleted, any asset
  wiped, any dynamic partition added or removed;
- every key record (what other sweeps ask for: the metric suite);
- files the answer names (the report's tables), as listed when it was saved.
A sweep using an input file (a `file` dataset: its content is part of the data version) is
never saved. Anything else (a remote storage root, a Postgres instance): no state, no shortcut.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from lab_assets.core import source_stamps
from lab_assets.core.settings import (
    CACHE_FOLDER,
    PYPROJECT,
    dagster_home,
    env_plugins,
    executor,
    lab_home,
    project_dir,
    storage_options,
    storage_url,
)
from lab_assets.runtime.freshness.instance_head import head

if TYPE_CHECKING:
    from lab_assets.dr.sweep import Sweep

FORMAT = 1  # of the saved entries: a change here drops every saved answer


def _storage_root() -> Path | None:
    url = storage_url()
    if "://" in url:
        return None  # key records and reports on an object store: not stat-able cheaply
    return Path(url).resolve() if url else lab_home()


class NoopAnswer:
    """The saved no-op answer of one sweep file, parsed from `text`."""

    def __init__(self, sweep_file: str | os.PathLike[str], text: bytes, width: int):
        self.sweep_file = Path(sweep_file).resolve()
        self._sweep = (str(self.sweep_file), hashlib.sha256(text).hexdigest(), width)
        self._text = text
        self.path = (
            lab_home() / CACHE_FOLDER / f"noop-{hashlib.sha256(str(self.sweep_file).encode()).hexdigest()[:16]}.json"
        )
        self._marked: tuple[str, str | None] | None = None
        self._seen: tuple[dict, dict] | None = None  # `load`'s out-of-date entry and the parts it was compared with

    def state(self) -> str | None:
        """The digest described above, or None where no shortcut is possible."""
        parts = self._parts()
        return None if parts is None else _digest(parts)

    def _parts(self) -> dict | None:
        root = _storage_root()
        instance_head = head(dagster_home())
        if root is None or instance_head is None:
            return None
        return {
            "format": FORMAT,
            "python": [sys.executable, sys.version],
            "sweep": self._sweep,
            "places": [str(p) for p in (project_dir(), lab_home(), dagster_home(), root)],
            "env": {"storage_options": storage_options(), "executor": executor(), "plugins": env_plugins()},
            "project_config": source_stamps.files([project_dir() / PYPROJECT]),
            "code": source_stamps.package_sources(),
            "libraries": source_stamps.installed_packages(),
            "instance_config": source_stamps.files([project_dir() / "dagster.yaml", dagster_home() / "dagster.yaml"]),
            "head": instance_head,
            "keys": [source_stamps.folder(root / "keys" / kind) for kind in ("sweep", "data", "method")],
        }

    @cached_property
    def _cells(self) -> str | None:
        # Parsed once, and only when a state is marked or a saved answer is out of date.
        return _without_metrics(self._text)

    def _cells_state(self, parts: dict) -> str | None:
        """The state with the sweep file less its `metrics:` (what its cells are), or None if the
        file does not parse here (`load_sweep` then says why)."""
        return None if self._cells is None else _digest({**parts, "sweep": (self._sweep[0], self._cells)})

    def load(self) -> dict | None:
        """The saved answer, if the state is what it was when it was saved."""
        try:
            entry = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None
        if entry.get("format") != FORMAT or entry.get("files") != list(
            map(list, source_stamps.files(entry.get("paths", [])))
        ):
            return None
        parts = self._parts()
        if parts is not None and entry.get("state") == _digest(parts):
            return entry["answer"]
        if parts is not None:
            self._seen = entry, parts
        return None

    def cells_if_metrics_alone_changed(self) -> int | None:
        """After `load` found the saved answer out of date: its number of cells if nothing but the
        sweep file's `metrics:` changed since (the cells and everything they were computed from
        as they were, all fresh then), so that at most metrics steps and the tables can run; else
        None. Decides where the runs go, never what runs."""
        if self._seen is None:
            return None
        entry, parts = self._seen
        cells = entry.get("cells_state")
        return entry["answer"]["cells"] if cells is not None and cells == self._cells_state(parts) else None

    def mark(self) -> None:
        """Take the state now: called once the sweep is registered and before it is planned, so
        that a saved answer never describes a later state than the one it was planned from."""
        parts = self._parts()
        self._marked = None if parts is None else (_digest(parts), self._cells_state(parts))

    def save(self, sweep: Sweep, answer: dict, paths: Iterable[str]) -> None:
        """Save `answer` (JSON), the no-op of `sweep`, under the marked state; `paths`: files it
        was read from."""
        if self._marked is None or _reads_input_files(sweep):
            return
        paths = sorted({*map(str, paths), *sources_outside_the_package(sweep)})
        entry = {
            "format": FORMAT,
            "state": self._marked[0],
            "cells_state": self._marked[1],
            "paths": paths,
            "files": list(map(list, source_stamps.files(paths))),
            "answer": answer,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entry))
        os.replace(tmp, self.path)  # a reader sees the old entry or this one, never half of it


def _digest(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def _without_metrics(text: bytes) -> str | None:
    """A digest of the sweep file's content less its `metrics:` key, or None if it is not a YAML mapping."""
    import yaml

    try:
        spec = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(spec, dict):
        return None
    spec.pop("metrics", None)
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()


def _reads_input_files(sweep: Sweep) -> bool:
    """A dataset or method whose version digests an input file's content (a `file` dataset): an
    edit of that file changes nothing the state covers, so such a sweep is never answered here."""
    from lab_assets.dr.datasets import DATASETS

    return any(DATASETS[d.dataset].fingerprint for d in sweep.data) or any(m.entry.fingerprint for m in sweep.methods)


def sources_outside_the_package(sweep: Sweep | None = None) -> set[str]:
    """Modules that registry entries are defined in or name in `sources=` (part of their code
    versions) and that live outside the package (a plugin, a user's estimator module; with
    `sweep`, the classes its methods name by import path): checked like the answer's files."""
    from lab_assets.dr.declarations import REGISTRIES

    entries = [e for r in REGISTRIES for e in r.entries()]
    entries += [m.entry for m in sweep.methods if m.estimator] if sweep is not None else []
    files = {f for e in entries for f in e.source_files}
    return {f for f in files if not Path(f).resolve().is_relative_to(source_stamps.PACKAGE)}
