"""The platform's step code is versioned on purpose (defs/step_versions.py): each asset module's
code version is declared, and its digest by meaning (with the modules that shape its outputs) is
pinned under that version, so touching a step fails here until the version changes or the change
is recorded as output-preserving."""

import importlib
import json
import re
import shutil
import subprocess
import sys

from lab_assets.defs import step_versions
from lab_assets_tests.conftest import REPO

RECORD = "python -m lab_assets.defs.step_versions"


def test_every_step_means_what_its_declared_version_was_recorded_for():
    unrecorded = step_versions.unrecorded()
    assert not unrecorded, (
        f"{', '.join(unrecorded)}: changed since its declared version was recorded. If its outputs can "
        f"change, change its version in defs/step_versions.py (STEPS); if they cannot, show it in a test "
        f"(identical outputs), then record it: `{RECORD}` (docs/staleness.md)"
    )


def test_every_asset_module_with_a_code_version_declares_it():
    modules = {
        f"lab_assets.defs.assets.{p.stem}"
        for p in (REPO / "lab_assets" / "defs" / "assets").glob("*.py")
        if re.search(r"^CODE_VERSION = ", p.read_text(), re.MULTILINE)
    }
    assert modules == set(step_versions.STEPS)
    for module in modules:
        assert importlib.import_module(module).CODE_VERSION == step_versions.declared(module)


def _unrecorded(tree) -> dict[str, str]:
    code = "import json; from lab_assets.defs import step_versions as s; print(json.dumps(s.unrecorded()))"
    return json.loads(_python(tree, "-c", code).stdout)


def _python(tree, *args) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "HOME": str(tree)}
    return subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True, check=True)


def test_a_step_edit_fails_until_it_is_a_new_version_or_recorded(tmp_path):
    shutil.copytree(REPO / "lab_assets", tmp_path / "lab_assets", ignore=shutil.ignore_patterns("__pycache__"))
    experiments = tmp_path / "lab_assets" / "defs" / "assets" / "experiments.py"
    declared = tmp_path / "lab_assets" / "defs" / "step_versions.py"
    pins = tmp_path / "lab_assets" / "defs" / "step_versions.json"
    assert _unrecorded(tmp_path) == {}

    experiments.write_text(experiments.read_text() + "\n# a comment\n")
    assert _unrecorded(tmp_path) == {}  # no change of meaning

    experiments.write_text(re.sub(r"\bnotes\b", "library_notes", experiments.read_text()))  # a rename
    (flagged,) = _unrecorded(tmp_path)
    assert flagged == "lab_assets.defs.assets.experiments"
    done = _python(tmp_path, "-m", "lab_assets.defs.step_versions")  # recorded as output-preserving
    assert f"{flagged}: " in done.stdout and f"recorded under version {step_versions.declared(flagged)}" in done.stdout
    assert _unrecorded(tmp_path) == {}
    recorded = json.loads(pins.read_text())[flagged][step_versions.declared(flagged)]
    assert len(recorded) == len(step_versions.pins()[flagged][step_versions.declared(flagged)]) + 1

    # A module that shapes a step's outputs (the report's summary), then a new declared version.
    summary = tmp_path / "lab_assets" / "dr" / "summary.py"
    summary.write_text(summary.read_text() + "\nEDITED = True\n")
    assert set(_unrecorded(tmp_path)) == {"lab_assets.defs.assets.reports"}
    reports = '"lab_assets.defs.assets.reports": ("'
    declared.write_text(declared.read_text().replace(reports, reports + "new-"))
    assert set(_unrecorded(tmp_path)) == {"lab_assets.defs.assets.reports"}
    _python(tmp_path, "-m", "lab_assets.defs.step_versions")
    assert _unrecorded(tmp_path) == {}
    assert (
        f"new-{step_versions.declared('lab_assets.defs.assets.reports')}"
        in json.loads(pins.read_text())["lab_assets.defs.assets.reports"]
    )
