"""The Dagster instance: embedded SQLite inside the lab home, unless DAGSTER_HOME says otherwise.

The instance's settings live in the project's top-level `dagster.yaml`; it is copied into
`<lab home>/dagster/` (DAGSTER_HOME) so that the run history, event logs and schedules sit
beside the asset files they describe, in one folder that can be deleted to start over.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path

from lab_assets.settings import lab_home, project_dir

# All runs' events in one SQLite database in the instance folder, connections reused
# (lab_assets/event_log.py: a cell's platform overhead ~0.7 s -> ~0.3 s). Added here, with the
# folder's absolute path, not in the project's dagster.yaml: Dagster's YAML cannot say "this
# instance's folder", and the plain `dagster` CLI, run without DAGSTER_HOME, builds a temporary
# instance from that file (`dagster definitions validate`, `dagster dev` outside `lab ui`).
EVENT_LOG_STORAGE = """
# Added by lab_assets/instance.py (the project's dagster.yaml is the rest of this file).
event_log_storage:
  module: lab_assets.event_log
  class: OneEngineSqliteEventLogStorage
  config:
    base_dir: {home}
"""


def instance_yaml(project_yaml: str, home: Path) -> str:
    """The project's instance settings plus the one-database event log, unless the project sets one."""
    if "event_log_storage:" in project_yaml:
        return project_yaml
    return project_yaml + EVENT_LOG_STORAGE.format(home=json.dumps(str(home)))


def prepare_dagster_home() -> Path:
    """Set DAGSTER_HOME (if unset) to <lab home>/dagster with the project's dagster.yaml (plus
    the event log storage). A DAGSTER_HOME set by the user is used as it is."""
    if os.environ.get("DAGSTER_HOME"):
        home = Path(os.environ["DAGSTER_HOME"])
        home.mkdir(parents=True, exist_ok=True)
        return home
    home = lab_home() / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    source = project_dir() / "dagster.yaml"
    target = home / "dagster.yaml"
    if source.is_file():
        wanted = instance_yaml(source.read_text(), home)
        if not target.is_file() or target.read_text() != wanted:
            target.write_text(wanted)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


@cache
def get_instance():
    import dagster as dg

    prepare_dagster_home()
    return dg.DagsterInstance.get()
