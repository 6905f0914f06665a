"""The Dagster instance: embedded SQLite inside the lab home, unless DAGSTER_HOME says otherwise.

The instance's settings live in the project's top-level `dagster.yaml`; it is copied into
`<lab home>/dagster/` (DAGSTER_HOME) so that the run history, event logs and schedules sit
beside the asset files they describe, in one folder that can be deleted to start over.
"""

from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import yaml

from lab_assets.core.settings import DAGSTER_FOLDER, DAGSTER_HOME_VAR, dagster_home_chosen, lab_home, project_dir

# Added here, with the instance folder's absolute path, not in the project's dagster.yaml:
# Dagster's YAML cannot say "this instance's folder", and the plain `dagster` CLI, run without
# DAGSTER_HOME, builds a temporary instance from that file (`dagster definitions validate`,
# `dagster dev` outside `lab ui`). Each is added only where the project's file sets none.
INSTANCE_ADDITIONS = {
    # All runs' events in one SQLite database; runs and events through pooled connections
    # (lab_assets/runtime/sqlite_storage.py; what it saves: BENCHMARKS.md, "Why").
    "event_log_storage": """
event_log_storage:
  module: lab_assets.runtime.sqlite_storage
  class: OneEngineSqliteEventLogStorage
  config:
    base_dir: {home}
""",
    "run_storage": """
run_storage:
  module: lab_assets.runtime.sqlite_storage
  class: OneEngineSqliteRunStorage
  config:
    base_dir: {history}
""",
    # Step output to the UI's log files without a tail + watcher process per step.
    "compute_logs": """
compute_logs:
  module: lab_assets.runtime.compute_logs
  class: FileOnlyComputeLogManager
  config:
    base_dir: {storage}
""",
}


def instance_yaml(project_yaml: str, home: Path) -> str:
    """The project's instance settings plus what INSTANCE_ADDITIONS adds where the project sets none
    (a project's `storage:`, Postgres say, sets all storages)."""
    project = set(yaml.safe_load(project_yaml) or {})
    paths = {"home": home, "history": home / "history", "storage": home / "storage"}
    added = [
        block.format(**{k: json.dumps(str(v)) for k, v in paths.items()})
        for key, block in INSTANCE_ADDITIONS.items()
        if key not in project and not (key.endswith("_storage") and "storage" in project)
    ]
    if not added:
        return project_yaml
    return (
        project_yaml
        + "\n# Added by lab_assets/runtime/instance.py (the project's dagster.yaml is the rest of this file)."
        + "".join(added)
    )


def prepare_dagster_home() -> Path:
    """Set DAGSTER_HOME (if unset) to <lab home>/dagster with the project's dagster.yaml (plus
    INSTANCE_ADDITIONS). A DAGSTER_HOME set by the user is used as it is."""
    home = dagster_home_chosen()
    if home is not None:
        home.mkdir(parents=True, exist_ok=True)
        return home
    home = lab_home() / DAGSTER_FOLDER
    home.mkdir(parents=True, exist_ok=True)
    source = project_dir() / "dagster.yaml"
    target = home / "dagster.yaml"
    # No project dagster.yaml (a folder holding just sweeps/): the additions alone, rather than
    # Dagster's "no dagster.yaml found" warnings on every start.
    wanted = instance_yaml(source.read_text() if source.is_file() else "", home)
    if not target.is_file() or target.read_text() != wanted:
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")  # never a half-written dagster.yaml
        tmp.write_text(wanted)
        os.replace(tmp, target)
    os.environ[DAGSTER_HOME_VAR] = str(home)
    return home


@contextmanager
def _one_process_at_a_time(lock: Path):
    try:
        f = open(lock, "a")
    except OSError:  # a read-only DAGSTER_HOME (a pod's mount) holds no SQLite database to race on
        yield
        return
    with f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released when f closes, or when the process dies
        yield


@cache
def get_instance():
    import dagster as dg

    home = prepare_dagster_home()
    # Dagster creates a new SQLite database's tables and stamps its schema version as separate
    # steps. Processes opening a fresh instance at once (two `lab sweep run`s started together,
    # or one command's workers) each stamp it, and from then on every start fails with
    # "alembic_version has more than one head". Opening an existing instance takes ~30 ms, so
    # one process at a time costs little.
    with _one_process_at_a_time(home / ".instance.lock"):
        return dg.DagsterInstance.get()
