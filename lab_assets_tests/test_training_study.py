"""Study files, proposers (grid, random, optuna replayed from the ledger, an external command),
and the study_loop sensor: propose -> launch -> record, across restarts, without duplicates."""

import json
import sys

import dagster as dg
import pytest

from lab_assets.defs.jobs import CORPUS, TRIAL, job_name
from lab_assets.defs.study_loop import EXP_TAG
from lab_assets.training import ledger, proposers
from lab_assets.training.study import StudyError, parse_study

TINY_STUDY = """
name: tiny
corpus: {max_bytes: 40000}
baseline: {depth: 1, width: 16, heads: 2, seq_len: 16, batch: 4, checkpoint_every: 4, eval_tokens: 1024}
budget: {steps: 6}
search: {proposer: grid, space: {lr: [0.003, 0.01]}, trials: 1, noise: 0.0}
"""


def _study(search: str, source="s.yaml"):
    return parse_study(
        f"""
name: s
baseline: {{depth: 1, width: 16, heads: 2}}
budget: {{steps: 5}}
search: {search}
""",
        source,
    )


def _hist(*items):
    return [
        {"exp": i, "description": "", "config": {"lr": lr, "depth": d, **{}}, "val_bpb": v, "status": s}
        for i, (lr, d, v, s) in enumerate(items)
    ]


@pytest.mark.parametrize(
    "text, message",
    [
        ("name: s\nbaseline: {depht: 2}\nbudget: {steps: 5}", "baseline: unknown or fixed field(s) depht; allowed: "),
        ("name: s\nbaseline: {steps: 5}\nbudget: {steps: 5}", "baseline.steps: the budget goes under `budget:`"),
        ("name: s\nbudget: {}", "budget: give exactly one budget"),
        ("name: s", "budget: required field is missing"),
        ("name: s\nbudget: {steps: 5}\nsearch: {space: {lr: {low: 1, high: 0.1}}}", "low (1.0) must be below high"),
        (
            "name: s\nbudget: {steps: 5}\nsearch: {proposer: grid, space: {lr: {low: 0.1, high: 1}}}",
            "grid proposer needs lists",
        ),
        (
            "name: s\nbudget: {steps: 5}\nsearch: {space: {heads: [2, 3]}}",
            "search.space.heads: width 64 must be divisible by heads 3",
        ),
        ("name: s\nbudget: {steps: 5}\nsearch: {proposer: tpe}", "search.proposer"),
        ("- a list", "expected a mapping with name, budget"),
    ],
)
def test_study_file_errors_name_the_field(text, message):
    with pytest.raises(StudyError) as e:
        parse_study(text, "studies/bad.yaml")
    assert "studies/bad.yaml" in str(e.value) and message in str(e.value)


def test_default_study_file_is_valid():
    from pathlib import Path

    from lab_assets.training.study import load_study

    study = load_study(Path(__file__).parents[1] / "studies" / "default.yaml")
    assert study.name == "default" and study.baseline.steps and study.search.proposer == "optuna"


def test_grid_walks_the_space_then_stops():
    s = _study("{proposer: grid, space: {lr: [0.001, 0.01], depth: [1, 2]}, trials: 9}")
    seen = []
    for _ in range(4):
        p = proposers.propose(s, _hist(*[(x["lr"], x["depth"], 1.0, "discard") for x in seen]))
        seen.append(p)
    assert seen == [
        {"depth": 1, "lr": 0.001},
        {"depth": 1, "lr": 0.01},
        {"depth": 2, "lr": 0.001},
        {"depth": 2, "lr": 0.01},
    ]
    assert proposers.propose(s, _hist(*[(x["lr"], x["depth"], 1.0, "discard") for x in seen])) is None


def test_random_is_seeded_by_history_length():
    s = _study(
        "{proposer: random, space: {lr: {low: 0.001, high: 0.1, log: true}, depth: {low: 1, high: 4, integer: true}}, trials: 5}"
    )
    h = _hist((0.003, 2, 2.0, "baseline"))
    a, b = proposers.propose(s, h), proposers.propose(s, h)
    assert a == b and 0.001 <= a["lr"] <= 0.1 and a["depth"] in (1, 2, 3, 4) and isinstance(a["depth"], int)
    assert proposers.propose(s, h + h) != a


def test_optuna_is_replayed_from_the_ledger():
    s = _study("{proposer: optuna, space: {lr: {low: 0.001, high: 0.1, log: true}, depth: [1, 2, 3]}, trials: 20}")
    h = _hist((0.003, 2, 2.0, "baseline"), (0.01, 1, 1.8, "keep"), (0.05, 3, None, "crash"), (0.002, 2, 2.1, "discard"))
    a = proposers.propose(s, h)
    assert a == proposers.propose(s, h)  # no hidden state: the same ledger, the same proposal
    assert set(a) == {"lr", "depth"} and 0.001 <= a["lr"] <= 0.1 and a["depth"] in (1, 2, 3)
    assert proposers.propose(s, h[:3]) != a


AGENT = """
import json, sys
req = json.load(sys.stdin)
best = min((h for h in req["history"] if h["status"] in ("baseline", "keep")), key=lambda h: h["val_bpb"])
json.dump({"req_exp": req["exp"], "baseline_width": req["baseline"]["width"]}, open("agent_saw.json", "w"))
print(json.dumps({"lr": best["config"]["lr"] * 2}))
"""


def test_command_proposer_reads_history_on_stdin(lab):
    (lab / "agent.py").write_text(AGENT)
    s = _study(f"{{proposer: {{command: '{sys.executable} agent.py'}}, trials: 3}}")
    h = _hist((0.003, 1, 2.0, "baseline"), (0.004, 1, 1.5, "keep"), (0.02, 1, 1.9, "discard"))
    assert proposers.propose(s, h) == {"lr": 0.008}
    assert json.loads((lab / "agent_saw.json").read_text()) == {"req_exp": 3, "baseline_width": 16}


@pytest.mark.parametrize(
    "script, message",
    [
        ("import sys; sys.exit('no idea')", "exited with 1: no idea"),
        ("print('try a bigger lr')", "not a JSON object of overrides"),
        ("print('[1, 2]')", "printed a JSON list"),
    ],
)
def test_command_proposer_failures_are_clear(lab, script, message):
    (lab / "agent.py").write_text(script)
    s = _study(f"{{proposer: {{command: '{sys.executable} agent.py'}}, trials: 3}}", source="studies/agent.yaml")
    with pytest.raises(StudyError, match="studies/agent.yaml: search.proposer.command") as e:
        proposers.propose(s, _hist((0.003, 1, 2.0, "baseline")))
    assert message in str(e.value)


def _launch(instance, request: dg.RunRequest) -> dg.ExecuteInProcessResult:
    from lab_assets.defs.definitions import defs

    return defs.resolve_job_def(request.job_name).execute_in_process(
        instance=instance, partition_key=request.partition_key, tags=request.tags, raise_on_error=False
    )


def test_sensor_runs_the_loop_and_survives_restarts(lab):
    from lab_assets.defs.study_sensor import study_loop
    from lab_assets.runtime.instance import get_instance

    (lab / "studies").mkdir()
    (lab / "studies" / "tiny.yaml").write_text(TINY_STUDY)
    instance = get_instance()

    def tick():  # a fresh context each time: as after a restart of the daemon
        return study_loop(dg.build_sensor_context(instance=instance))

    launched = []
    for expected_job in map(job_name, (CORPUS, TRIAL, TRIAL)):
        first, again = tick(), tick()
        assert len(first.run_requests) == 1 and first.run_requests[0].job_name == expected_job
        # Evaluated again before the run exists: the same run key, which Dagster launches once.
        assert again.run_requests[0].run_key == first.run_requests[0].run_key
        launched.append(first.run_requests[0])
        assert _launch(instance, first.run_requests[0]).success
    done = tick()
    assert not done.run_requests and "tiny: done" in done.skip_reason
    assert json.loads(done.cursor)["tiny"]["trials"] == "2/2"

    rows = ledger.rows("tiny")
    assert [(r["exp"], r["description"]) for r in rows] == [(0, "baseline"), (1, "lr=0.01")]
    assert rows[0]["status"] == "baseline" and rows[1]["status"] in ("keep", "discard")
    assert len({r.run_key for r in launched}) == 3
    assert [r.tags[EXP_TAG] for r in launched[1:]] == ["0", "1"]

    # The trial's materialization and its ledger row say the same thing.
    trial_key = dg.MultiPartitionKey(json.loads(json.dumps(launched[2].partition_key.keys_by_dimension)))
    event = instance.get_latest_materialization_event(dg.AssetKey("gpt_model"))
    meta = event.asset_materialization.metadata
    assert event.asset_materialization.partition == str(trial_key)
    assert (
        meta["val_bpb"].value == rows[1]["val_bpb"]
        and meta["steps"].value == 6
        and meta["resumed_from_step"].value == 0
    )
    # Progress as an observation of the study's ledger, with the table in its metadata.
    record = instance.get_latest_data_version_record(dg.AssetKey("study_ledger"), True, "tiny")
    assert record is not None


@pytest.mark.slow
def test_a_study_on_s3_keeps_its_ledger_there(lab, s3):
    """The ledger on shared storage, through real trial runs: `lab study run` with the storage
    root in S3 (moto's server) records one object per trial; `lab study show` reads them back."""
    from lab_assets_tests.conftest import S3_BUCKET, lab_cli

    (lab / "studies").mkdir()
    (lab / "studies" / "tiny.yaml").write_text(TINY_STUDY.replace("trials: 1", "trials: 2"))
    out = lab_cli("study", "run", "studies/tiny.yaml", "--json", cwd=lab)
    assert out.returncode == 0, out.stdout + out.stderr
    stored = [
        o["Key"] for o in s3.list_objects_v2(Bucket=S3_BUCKET, Prefix="lab/assets/study_ledger/").get("Contents", [])
    ]
    assert sorted(k.rsplit("/", 1)[1] for k in stored if k.startswith("lab/assets/study_ledger/tiny/")) == sorted(
        f"{r['trial']}.json" for r in ledger.rows("tiny")
    )
    assert {"lab/assets/study_ledger/tiny.parquet", "lab/assets/study_ledger/tiny.tsv"} <= set(stored)
    show = json.loads(lab_cli("study", "show", "studies/tiny.yaml", "--json", cwd=lab).stdout)
    assert [r["exp"] for r in show["rows"]] == [0, 1] and show["rows"][0]["status"] == "baseline"
    assert not (lab / ".lab" / "assets").exists()  # nothing on the local disk
