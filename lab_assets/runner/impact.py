"""`lab impact --base REF`: what the change between a git revision and the working tree makes
stale, without running anything and without the revision's instance. REF's tree is extracted
(`git archive`) to a temporary folder; each tree's versions are read by a fresh interpreter that
imports that tree's package (`defs/code_versions.py`'s source, run with the tree first on the
import path), and `dr/impact.py` compares them. With an instance at hand, each stale cell is
priced by the wall seconds its assets last took (`defs/recorded_cost.py`)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from lab_assets.core.input_files import InputError
from lab_assets.core.settings import (
    DAGSTER_HOME_VAR,
    HOME_VAR,
    PLUGINS_VAR,
    PROJECT_DIR_VAR,
    dagster_home,
    lab_plugins,
    project_dir,
    resolve_path,
)
from lab_assets.defs import code_versions
from lab_assets.dr.impact import SweepImpact, impact

PROBE_TIMEOUT = 600  # seconds: one interpreter per tree, importing Dagster and the registries


class ImpactError(InputError):
    """A revision that is not one, a folder that is not in a git repository, a tree whose
    versions cannot be read."""

    what = "revision"


def _git(folder: Path, *args: str, binary: bool = False):
    done = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=not binary)
    if done.returncode != 0:
        err = done.stderr if not binary else done.stderr.decode(errors="replace")
        raise ImpactError(f"{folder}: git {' '.join(args)}: {err.strip() or f'exit {done.returncode}'}")
    return done.stdout


def extract(ref: str, dest: Path) -> Path:
    """REF's tree of the project's repository under `dest`; returns the project folder in it."""
    project = project_dir()
    root = Path(_git(project, "rev-parse", "--show-toplevel").strip())
    try:
        commit = _git(project, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except ImpactError:
        raise ImpactError(f"--base {ref}: not a revision of the repository at {root}") from None
    with tarfile.open(fileobj=io.BytesIO(_git(root, "archive", "--format=tar", commit, binary=True))) as tar:
        tar.extractall(dest, filter="data")
    return dest / project.relative_to(root)


def sweep_paths(tree: Path) -> list[str]:
    return sorted(str(p.relative_to(tree)) for p in (tree / "sweeps").glob("*.yaml"))


def plugins_of(tree: Path) -> str:
    """LAB_PLUGINS as `tree` has them: a module of the project folder that `tree` lacks (a change
    that adds a lab's first `plugins/`) is left out, as the base had no such plugin (its cells are
    new in the change); modules of the environment are kept."""
    project = project_dir()

    def files(module: str) -> list[str]:
        stem = module.replace(".", "/")
        return [f"{stem}.py", f"{stem}/__init__.py"]

    return ",".join(
        m
        for m in lab_plugins()
        if not any((project / f).is_file() for f in files(m)) or any((tree / f).is_file() for f in files(m))
    )


def probe(tree: Path, paths: list[str], scratch: Path) -> dict:
    """Every version a plan compares, as `tree`'s own code computes them."""
    env = dict(os.environ)  # the tree's package first; plugins and the rest of the import path as they are
    env |= {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")])),
        PLUGINS_VAR: plugins_of(tree),
        PROJECT_DIR_VAR: str(tree),
        HOME_VAR: str(scratch / "lab"),
        DAGSTER_HOME_VAR: str(scratch / "dagster"),
    }
    done = subprocess.run(
        [sys.executable, "-c", Path(code_versions.__file__).read_text(), *paths],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT,
    )
    if done.returncode != 0:
        raise ImpactError(f"{tree}: its versions cannot be read: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def price(impacts: list[SweepImpact]) -> None:
    """Where the lab home has an instance: each affected cell's recorded wall seconds, and how
    many of each sweep's cells never ran there (missing)."""
    if not (dagster_home() / "dagster.yaml").exists():
        return
    from lab_assets.defs.recorded_cost import never_run, recorded_seconds
    from lab_assets.runtime.instance import get_instance

    instance = get_instance()
    missing = never_run(instance, [c for s in impacts for c in s.cell_keys])
    for s in impacts:
        if not s.error:
            s.missing = sum(c in missing for c in s.cell_keys)
    cells = [c.cell for s in impacts for c in s.stale]
    if not cells:
        return
    seconds = recorded_seconds(instance, cells)
    for s in impacts:
        for c in s.stale:
            recorded = seconds.get(c.cell, {})
            if any(a in recorded for a in c.assets):
                c.seconds = round(sum(recorded.get(a, 0.0) for a in c.assets), 4)


def change_impact(ref: str, sweeps: list[str] | None = None) -> list[SweepImpact]:
    project = project_dir()
    with tempfile.TemporaryDirectory(prefix="lab-impact-") as tmp:
        tmp = Path(tmp)
        base_tree = extract(ref, tmp / "base")
        base_files, head_files = sweep_paths(base_tree), sweep_paths(project)
        wanted = [os.path.relpath(resolve_path(s).resolve(), project) for s in sweeps] if sweeps else head_files
        base = probe(base_tree, sorted({*base_files, *(w for w in wanted if (base_tree / w).exists())}), tmp)
        head = probe(project, sorted({*head_files, *(w for w in wanted if (project / w).exists())}), tmp)
    impacts = impact(base, head, wanted)
    price(impacts)
    return impacts
