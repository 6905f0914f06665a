"""The runner (runner/run.py): one accounting of outcomes whatever the target, phases in order,
skips with their reason; the webserver target's errors; the work as the daemon gets it."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pandas as pd
import pytest

from lab_assets.core import keys
from lab_assets.core.keys import cell_key
from lab_assets.defs.jobs import CELLS, CELLS_WITH_DATA, DATASETS, METRIC_TABLE, REPORT, TRIAL, job_name
from lab_assets.defs.partitions import trial_cell_key
from lab_assets.defs.work import Fresh, Phase, Run, Work, requests
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.run import FAILED, FRESH, MATERIALIZED, SKIPPED, Outcome, name, run_work, split
from lab_assets.runner.webserver import SubmitError, WebserverTarget
from lab_assets_tests.conftest import free_port, lab_cli


class Recorder:
    """A target that fails the partitions it is told to, and records what ran with which tags."""

    def __init__(self, failing=()):
        self.failing, self.batches = set(failing), []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def execute(self, runs, tags, on_done):
        self.batches.append([(r.job, name(r.partition), {**tags, **r.tags}) for r in runs])
        outcomes = [
            Outcome(r.job, name(r.partition), FAILED if name(r.partition) in self.failing else MATERIALIZED, "boom")
            for r in runs
        ]
        for o in outcomes:
            on_done(o)
        return outcomes


def _sweep_like_work(recheck=None) -> Work:
    cells = [Run(CELLS, cell_key(d, m), {"t": m}, needs=(DATASETS, d)) for d in ("a", "b") for m in ("x", "y")]
    return Work(
        (
            Phase("datasets", (Run(DATASETS, "a"), Run(DATASETS, "b")), (Fresh(DATASETS, "c"),)),
            Phase("cells", tuple(cells), (Fresh(CELLS, "c|x"),), recheck=True),
            Phase("report", (Run(METRIC_TABLE, None), Run(REPORT, "s", needs=(METRIC_TABLE, None))), in_order=True),
        ),
        {"lab_assets/sweep": "s"},
        recheck,
    )


def test_outcomes_say_materialized_fresh_failed_or_skipped_and_why():
    ticks = []
    result = run_work(
        _sweep_like_work(),
        Recorder(failing={"b"}),
        lambda label, total: lambda o: ticks.append((label, total, o.status)),
    )
    by = {(o.job, o.partition): o for o in result.outcomes}
    assert by[DATASETS, "b"].status == FAILED and by[DATASETS, "a"].status == MATERIALIZED
    assert by[DATASETS, "c"].status == FRESH and by[CELLS, "c|x"].status == FRESH
    assert {p for (j, p), o in by.items() if o.status == SKIPPED} == {"b|x", "b|y"}
    assert {o.why for o in result.skipped} == {"its dataset failed"}
    assert result.count(CELLS) == 2 and result.count(CELLS, FRESH) == 1 and result.count(REPORT) == 1
    # One tick per run of a phase, skipped runs included; a progress total per phase.
    assert [(label, total) for label, total, _ in ticks] == [("datasets", 2)] * 2 + [("cells", 4)] * 4 + [
        ("report", 2)
    ] * 2


def test_phases_run_in_order_with_the_works_tags_and_in_order_phases_one_run_at_a_time():
    target = Recorder()
    run_work(_sweep_like_work(), target)
    assert [[(j, p) for j, p, _ in b] for b in target.batches] == [
        [(DATASETS, "a"), (DATASETS, "b")],
        [(CELLS, "a|x"), (CELLS, "a|y"), (CELLS, "b|x"), (CELLS, "b|y")],
        [(METRIC_TABLE, "")],
        [(REPORT, "s")],
    ]
    assert all(tags["lab_assets/sweep"] == "s" for b in target.batches for _, _, tags in b)
    assert target.batches[1][0][2]["t"] == "x"  # a run's own tags on top of the work's


@pytest.mark.parametrize(
    "status, step, expected",
    [
        (MATERIALIZED, "", [(DATASETS, MATERIALIZED), (CELLS, MATERIALIZED)]),
        (FAILED, "raw_dataset", [(DATASETS, FAILED), (CELLS, SKIPPED)]),  # as two runs would have said
        (FAILED, "model_and_embedding", [(DATASETS, MATERIALIZED), (CELLS, FAILED)]),
        (FAILED, "", [(CELLS, FAILED)]),  # a webserver's run: which steps ran is not known
    ],
)
def test_a_new_cells_run_counts_as_its_dataset_and_the_cell(status, step, expected):
    outcome = Outcome(CELLS_WITH_DATA, "a|x", status, "boom" if status == FAILED else "", 1.0, "run-1", step)
    parts = split(outcome)
    assert [(o.job, o.status) for o in parts] == expected
    assert all(o.partition == "a|x" and o.run_id == "run-1" for o in parts)
    if expected[-1] == (CELLS, SKIPPED):
        assert parts[0].why == "boom" and parts[1].why == "its dataset failed"


def test_one_tick_per_new_cells_run_counted_as_a_cell():
    ticks = []
    work = Work((Phase("cells", (Run(CELLS_WITH_DATA, "a|x"), Run(CELLS_WITH_DATA, "b|x"))),))
    result = run_work(
        work, Recorder(failing={"b|x"}), lambda label, total: lambda o: ticks.append((label, total, o.job))
    )
    assert ticks == [("cells", 2, CELLS)] * 2
    assert result.count(DATASETS) == 1 and result.count(CELLS) == 1 and len(result.failed) == 1


def test_a_report_whose_metric_table_failed_is_skipped():
    result = run_work(_sweep_like_work(), Recorder(failing={""}))
    (skipped,) = result.skipped
    assert (skipped.job, skipped.partition, skipped.why) == (REPORT, "s", "its metric table failed")


def test_recheck_replaces_a_phase_only_after_an_earlier_phase_ran():
    fresh_after_all = Work(
        (
            Phase("datasets", ()),
            Phase("cells", (), (Fresh(CELLS, "a|x", "its dataset did not change"),), recheck=True),
            Phase("report", ()),
        )
    )
    calls = []

    def recheck():
        calls.append(1)
        return fresh_after_all

    result = run_work(_sweep_like_work(recheck), Recorder())
    assert calls == [1] and result.count(CELLS) == 0 and result.count(CELLS, FRESH) == 1
    nothing_ran = Work((Phase("datasets", ()), *_sweep_like_work().phases[1:]), recheck=recheck)
    run_work(nothing_ran, Recorder())
    assert calls == [1]  # no earlier run: the first plan stands


def test_one_run_is_one_run_request_with_its_run_key():
    launch = Run(TRIAL, trial_cell_key("stdlib-abc", "tiny-e000-def"), {"lab_assets/exp": "0"}, run_key="tiny:t:0")
    (request,) = requests(Work.single(launch, {"lab_assets/pid": "h:1"}))
    assert request.job_name == job_name(TRIAL) and request.run_key == "tiny:t:0"
    assert request.partition_key == "stdlib-abc|tiny-e000-def"
    assert request.tags == {"lab_assets/pid": "h:1", "lab_assets/exp": "0"}


def test_an_unreachable_webserver_is_a_submit_error_naming_the_url():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(SubmitError, match=rf"cannot reach the Dagster webserver at {url} \(launching datasets a\)"):
        WebserverTarget(url).execute([Run(DATASETS, "a")], {}, lambda o: None)
    with pytest.raises(SubmitError, match="expected a webserver URL"):
        WebserverTarget("127.0.0.1:3000")


class NoJobsHere(BaseHTTPRequestHandler):
    """A GraphQL endpoint whose workspace has no code location."""

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps(
            {"data": {"repositoriesOrError": {"__typename": "RepositoryConnection", "nodes": []}}}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_webserver_without_the_job_refuses_with_the_url_and_the_reason():
    server = HTTPServer(("127.0.0.1", 0), NoJobsHere)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        with pytest.raises(SubmitError) as e:
            WebserverTarget(url).execute([Run(DATASETS, "a")], {}, lambda o: None)
    finally:
        server.shutdown()
    assert (
        str(e.value)
        == f"{url} refused launching datasets a: JobNotFoundError: No jobs with the name `{job_name(DATASETS)}` exist"
    )


def test_cli_submit_to_an_unreachable_webserver_exits_1_with_the_url(lab):
    url = f"http://127.0.0.1:{free_port()}"
    out = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--submit", url, "--json", cwd=lab)
    assert out.returncode == 1 and f"lab: cannot reach the Dagster webserver at {url}" in out.stderr
    assert not out.stdout


@pytest.mark.slow
def test_cli_reports_a_failed_dataset_and_its_skipped_cells_in_text_and_json(lab):
    pd.DataFrame(np.c_[np.arange(30.0), np.full(30, np.nan)], columns=["a", "b"]).to_csv(
        lab / "broken.csv", index=False
    )
    path = lab / "sweeps" / "tiny.yaml"
    path.write_text(path.read_text().replace("data:\n", "data:\n  file: {path: broken.csv}\n"))
    sweep = load_sweep(path)
    broken = next(d.key for d in sweep.data if d.dataset == "file")
    skipped = sorted(keys.cell_key(broken, m.key) for m in sweep.methods)

    text = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--quiet", cwd=lab)
    assert text.returncode == 1
    # A dataset is partitioned by cell: its run fails in each of its cells.
    assert all(f"FAILED datasets {cell}: BadDataError: data {broken}: " in text.stderr for cell in skipped)
    assert all(f"SKIPPED cells {cell}: its dataset failed" in text.stderr for cell in skipped)
    assert f"4 cells materialized, 0 already fresh, {len(skipped)} failed" in text.stdout

    summary = json.loads(lab_cli("sweep", "run", "sweeps/tiny.yaml", "--json", cwd=lab).stdout)
    assert sorted((o["job"], o["partition"], o["status"]) for o in summary["failed"]) == [
        ("datasets", cell, "failed") for cell in skipped
    ]
    assert sorted(o["partition"] for o in summary["skipped"]) == skipped
    assert {o["why"] for o in summary["skipped"]} == {"its dataset failed"}
    assert summary["materialized"]["cells"] == 0 and summary["fresh"]["cells"] == 4


def test_slow_methods_cells_start_first_and_new_cells_bring_their_dataset(lab):
    from lab_assets.defs.work import sweep_work
    from lab_assets.dr.sweep import parse_sweep
    from lab_assets.runner.sweeps import register_and_plan

    sweep = parse_sweep(
        "name: order\ndata:\n  swissroll: {n_samples: 60}\nseeds: [0, 1]\n"
        "methods:\n  pca: {}\n  tsne: {perplexity: 5}\n  random_projection: {}\nmetrics:\n  trustworthiness: {k: [5]}\n",
        "order.yaml",
    )
    work = sweep_work(register_and_plan(sweep))
    datasets, cells, _ = work.phases
    assert datasets.runs == ()  # new cells: each computes its dataset in its own run
    methods = [keys.parse_cell_key(r.partition)[1].split("-")[0] for r in cells.runs]
    assert methods == ["tsne", "tsne", "pca", "random_projection", "pca", "random_projection"]
    assert {r.job for r in cells.runs} == {CELLS_WITH_DATA}
    assert all(r.assets[:2] == ("raw_dataset", "dataset") and r.needs is None for r in cells.runs)


def test_a_runs_job_is_subset_to_its_assets_once_a_process_and_its_plan_names_them():
    """A run executed here goes through a job of exactly its assets, built once a process (an
    `asset_selection` per run rebuilt it and its parent's snapshot each time); the run carries no
    selection, and what it materializes is read from its plan (inflight claims rely on it)."""
    import dagster as dg

    from lab_assets.runner import local
    from lab_assets.runtime.run_assets import run_assets

    job = local._job(CELLS, ("embedding", "metrics"))
    assert local._job(CELLS, ("embedding", "metrics")) is job
    instance = dg.DagsterInstance.ephemeral()
    for assets in (("embedding", "metrics"), ("metrics",)):
        run = instance.create_run_for_job(local._job(CELLS, assets))
        assert not run.asset_selection
        assert run_assets(instance, run) == {dg.AssetKey(a) for a in assets}  # not `model`
    whole = instance.create_run_for_job(local._job(CELLS_WITH_DATA, ()))
    assert dg.AssetKey("model") in run_assets(instance, whole)
