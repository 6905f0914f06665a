"""Each command's `--json` has one set of keys whichever path answered it (issue 40: one printer per
output): `lab sweep run` run here, answered from the saved no-op answer and run by the warm
service; `lab sweep plan` and `lab report` here and in the warm service. One small lab home and
one warm service for the whole module."""

import fcntl
import json
import shutil
import tempfile
from pathlib import Path

import pytest

from lab_assets.core.processes import alive
from lab_assets.runner import warm_service
from lab_assets_tests.conftest import PACKAGE_EDIT_LOCK, lab_cli, wait_for
from lab_assets_tests.test_noop_answer import saved_answer_marked

SWEEP = """
name: keys
data:
  swissroll: {n_samples: 60}
seeds: [0]
methods:
  pca: {}
metrics:
  trustworthiness: {k: [5]}
"""


def shape(value):
    """The keys of every dict in `value`, recursively; lists by their items' keys (an empty list
    of failures and a full one have one shape), anything else by nothing."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [shape(v) for v in value if isinstance(v, dict | list)]
        return ["items", *sorted({json.dumps(i, sort_keys=True) for i in items})]
    return None


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """{command: {path: its parsed `--json`}}, each path shown to be the one it names."""
    lock = open(PACKAGE_EDIT_LOCK, "a")  # noqa: SIM115 - shared with test_service.py: no package edit meanwhile
    fcntl.flock(lock, fcntl.LOCK_SH)
    runtime = Path(tempfile.mkdtemp(prefix="lk-", dir="/tmp"))  # a socket's path is limited to 107 bytes
    project = tmp_path_factory.mktemp("keys")
    (project / "sweeps").mkdir()
    (project / "sweeps" / "s.yaml").write_text(SWEEP)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_RUNTIME_DIR", str(runtime))
        mp.setenv("WANDB_MODE", "disabled")
        for var in ("LAB_HOME", "DAGSTER_HOME", "LAB_PROJECT_DIR", "LAB_STORAGE_URL", "LAB_EXECUTOR"):
            mp.delenv(var, raising=False)

        def lab(*args, service: bool, **env) -> dict:
            env["LAB_SERVICE"] = "1" if service else "0"
            out = lab_cli(*args, "--json", cwd=project, timeout=600, env=env)
            assert out.returncode == 0, out.stderr
            lab.stderr = out.stderr
            return json.loads(out.stdout)

        try:
            run = ("sweep", "run", "sweeps/s.yaml", "--workers", "1")
            found = {"sweep run": {}, "sweep plan": {}, "report": {}}
            found["sweep run"]["run"] = lab(*run, service=False)
            assert found["sweep run"]["run"]["materialized"]["cells"] == 1
            saved_answer_marked(project)
            found["sweep run"]["saved answer"] = lab(*run, service=False, PYTHONPROFILEIMPORTTIME="1")
            assert found["sweep run"]["saved answer"]["report"] == "from the saved answer"
            imported = {
                line.rsplit("|", 1)[-1].strip() for line in lab.stderr.splitlines() if line.startswith("import time:")
            }
            assert "lab_assets.cli.sweep" in imported and "dagster" not in imported  # the saved answer's point
            (project / "sweeps" / "s.yaml").write_text(SWEEP.replace("seeds: [0]", "seeds: [0, 1]"))  # work to do
            found["sweep run"]["warm service"] = lab(*run, service=True)
            assert found["sweep run"]["warm service"]["materialized"]["cells"] == 1
            for service, path in ((False, "here"), (True, "warm service")):  # one state: the same data keys
                found["sweep plan"][path] = lab("sweep", "plan", "sweeps/s.yaml", service=service)
                found["report"][path] = lab("report", "sweeps/s.yaml", service=service)
            [running] = warm_service.running()
            log = Path(running["log"]).read_text()
            for fn in ("cli.sweep:lab_sweep_run", "cli.sweep:lab_sweep_plan", "cli.report:run"):
                assert f": lab_assets.{fn} " in log, log  # the service ran it, not the client
        finally:
            pids = [s["pid"] for s in warm_service.running() if s["pid"]]
            warm_service.stop_all()
            for pid in pids:
                wait_for(lambda pid=pid: not alive(pid), 30, f"service {pid} to end")
            shutil.rmtree(runtime, ignore_errors=True)
            lock.close()
    return found


@pytest.mark.parametrize("command", ["sweep run", "sweep plan", "report"])
def test_json_keys_are_the_same_on_every_path(outputs, command):
    by_path = {path: shape(out) for path, out in outputs[command].items()}
    first, *others = by_path
    assert len(by_path) == (3 if command == "sweep run" else 2)
    for other in others:
        assert by_path[other] == by_path[first], (command, first, other)


def test_sweep_run_json_says_what_waited_on_every_path(outputs):
    for path, out in outputs["sweep run"].items():
        assert set(out["waited"]) == set(out["materialized"]) == set(out["fresh"]), path
