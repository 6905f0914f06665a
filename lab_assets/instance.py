"""The Dagster instance: embedded SQLite inside the lab home, unless DAGSTER_HOME says otherwise.

The instance's settings live in the project's top-level `dagster.yaml`; it is copied into
`<lab home>/dagster/` (DAGSTER_HOME) so that the run history, event logs and schedules sit
beside the asset files they describe, in one folder that can be deleted to start over.
"""

from __future__ import annotations

import os
import shutil
from functools import cache
from pathlib import Path

from lab_assets.settings import lab_home, project_dir


def prepare_dagster_home() -> Path:
    """Set DAGSTER_HOME (if unset) to <lab home>/dagster with the project's dagster.yaml."""
    if os.environ.get("DAGSTER_HOME"):
        home = Path(os.environ["DAGSTER_HOME"])
        home.mkdir(parents=True, exist_ok=True)
        return home
    home = lab_home() / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    source = project_dir() / "dagster.yaml"
    target = home / "dagster.yaml"
    if source.is_file() and (not target.is_file() or target.read_bytes() != source.read_bytes()):
        shutil.copyfile(source, target)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


@cache
def get_instance():
    import dagster as dg

    prepare_dagster_home()
    return dg.DagsterInstance.get()
