"""Crash safety end to end: `lab study run` SIGKILLed mid-training resumes from its last
checkpoint when started again, and with a `steps` budget ends with exactly the weights and
val_bpb of an uninterrupted run (in another project)."""

import glob
import json
import os
import signal
import subprocess
import sys

import dagster as dg
import pytest
import torch

from lab_assets.defs.study_loop import KIND_TAG
from lab_assets.training import ledger
from lab_assets_tests.conftest import lab_cli

STUDY = """
name: resume
corpus: {max_bytes: 60000}
baseline: {depth: 2, width: 64, heads: 2, seq_len: 64, batch: 8, checkpoint_every: 10, eval_tokens: 4096}
budget: {steps: 120}
"""


def _project(root, env):
    (root / "studies").mkdir(exist_ok=True)
    (root / "studies" / "resume.yaml").write_text(STUDY)
    (root / ".lab" / "dagster").mkdir(parents=True, exist_ok=True)
    (root / ".lab" / "dagster" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    # One thread in both runs: the same arithmetic, so equal weights are a fair expectation.
    return {
        **env,
        "LAB_PROJECT_DIR": str(root),
        "LAB_HOME": str(root / ".lab"),
        "DAGSTER_HOME": str(root / ".lab" / "dagster"),
        "OMP_NUM_THREADS": "1",
    }


def _weights(root):
    (path,) = glob.glob(str(root / ".lab" / "assets" / "gpt_model" / "*" / "*.pt"))
    return torch.load(path, weights_only=True)


# `lab study run` (trials run in its own process) whose process SIGKILLs itself right after the
# checkpoint of step KILL_AT is written: a kill at a known step, no race against the run's end
# (which deletes the checkpoint).
KILL_AT = 30
KILL_AFTER_CHECKPOINT = """
import os, signal, sys
from lab_assets.core import checkpoints

save = checkpoints.Checkpoint.save

def save_then_die(self, state):
    save(self, state)
    if int(state["step"]) == int(sys.argv[1]):
        os.kill(os.getpid(), signal.SIGKILL)

checkpoints.Checkpoint.save = save_then_die
from lab_assets.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow
def test_sigkilled_training_resumes_to_the_uninterrupted_result(lab, tmp_path_factory, monkeypatch):
    env = _project(lab, os.environ.copy())
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    proc = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_CHECKPOINT, str(KILL_AT), "study", "run", "studies/resume.yaml"],
        cwd=lab,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    checkpoints = str(lab / ".lab" / "assets" / "gpt_model" / "*" / "*.ckpt.pt")
    (ckpt,) = glob.glob(checkpoints)
    killed_at = int(torch.load(ckpt, weights_only=True)["step"])
    assert killed_at == KILL_AT and not ledger.rows("resume")

    again = lab_cli("study", "run", "studies/resume.yaml", "--json", cwd=lab)
    assert again.returncode == 0, again.stderr
    (row,) = ledger.rows("resume")
    assert row["status"] == "baseline" and row["steps"] == 120
    assert not glob.glob(checkpoints)  # superseded by the final weights

    from lab_assets.runtime.instance import get_instance

    instance = get_instance()
    meta = instance.get_latest_materialization_event(dg.AssetKey("gpt_model")).asset_materialization.metadata
    assert meta["resumed_from_step"].value == KILL_AT
    runs = instance.get_runs(filters=dg.RunsFilter(tags={KIND_TAG: "trial"}))
    assert [r.status for r in runs] == [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE]
    assert "is gone" in (instance.all_logs(runs[1].run_id)[-1].message or "")

    ref = tmp_path_factory.mktemp("uninterrupted")
    out = subprocess.run(
        [sys.executable, "-m", "lab_assets.cli.main", "study", "run", "studies/resume.yaml", "--json"],
        cwd=ref,
        env=_project(ref, os.environ.copy()),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    (ref_row,) = json.loads(out.stdout)["rows"]
    assert ref_row["val_bpb"] == row["val_bpb"]
    mine, theirs = _weights(lab), _weights(ref)
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
