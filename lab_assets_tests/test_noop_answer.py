"""A no-op `lab sweep run` answered from the saved answer (lab_assets/runner/noop_answer.py) must
never call a cell fresh that a full run would recompute: after each change (a method's source, a
metric added to the sweep, a materialization record deleted) the next run recomputes exactly the
affected cells, with an answer saved (by the run before) just before the change. `lab` runs from
a copy of the package, so its source can be edited."""

import json
import shutil
import subprocess
import sys

import dagster as dg
import pytest

from lab_assets.defs.jobs import CELLS, job_name
from lab_assets_tests.conftest import REPO, lab_cli


def lab_in(folder, *args) -> dict:
    env = {"PYTHONPATH": str(folder / "pkg")}  # the copied package, not the checkout's
    out = lab_cli(*args, "--workers", "1", "--json", cwd=folder, timeout=600, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def run(folder) -> dict:
    return lab_in(folder, "sweep", "run", "sweeps/tiny.yaml")


def saved_answer_marked(folder) -> None:
    """The saved answer exists (a run after it would print it): marked, to tell it apart."""
    [path] = (folder / ".lab" / "cache").glob("noop-*.json")
    entry = json.loads(path.read_text())
    entry["answer"]["report"] = "from the saved answer"
    path.write_text(json.dumps(entry))


def answered_from_saved(folder, cells: int = 4) -> None:
    """The last run saved its answer, and the next run prints it."""
    saved_answer_marked(folder)
    out = run(folder)
    assert out["report"] == "from the saved answer"
    assert out["materialized"]["cells"] == 0 and out["fresh"]["cells"] == out["before"]["fresh"] == cells


@pytest.mark.slow
def test_a_saved_noop_answer_never_reports_a_changed_cell_fresh(lab):
    shutil.copytree(REPO / "lab_assets", lab / "pkg" / "lab_assets", ignore=shutil.ignore_patterns("__pycache__"))
    assert run(lab)["materialized"]["cells"] == 4
    answered_from_saved(lab)  # saved by the run, after planning again
    for path in (lab / ".lab" / "cache").glob("noop-*.json"):
        path.unlink()
    full = run(lab)
    assert full["materialized"]["cells"] == 0 and full["report"] != "from the saved answer"
    answered_from_saved(lab)  # saved by the no-op

    # A method's code: its cells' code version changes (the package's sources are stamped).
    isomap = lab / "pkg" / "lab_assets" / "dr" / "methods" / "isomap.py"
    isomap.write_text(isomap.read_text() + "\nEDITED = True\n")
    out = run(lab)
    assert out["materialized"]["cells"] == 2 and out["before"]["stale"] == 2
    answered_from_saved(lab)

    # A metric added to the sweep: every cell's metrics are stale.
    sweep = lab / "sweeps" / "tiny.yaml"
    sweep.write_text(sweep.read_text() + "  continuity: {k: [5]}\n")
    out = run(lab)
    assert out["materialized"]["cells"] == 4 and out["before"]["stale"] == 4
    answered_from_saved(lab)

    # A materialization record deleted (the latest cell run, with its events): that cell is recomputed.
    with dg.DagsterInstance.get() as instance:  # the `lab` fixture's DAGSTER_HOME
        [cell_run] = instance.get_run_records(dg.RunsFilter(job_name=job_name(CELLS)), limit=1)
        instance.delete_run(cell_run.dagster_run.run_id)
    out = run(lab)
    assert out["materialized"]["cells"] == 1 and out["before"]["fresh"] == 3
    answered_from_saved(lab)


def test_a_source_edit_right_after_a_saved_noop_recomputes_its_cells(lab):
    """The default suite's real edit through `lab sweep run`: a method's source edited while an
    answer is saved; a state that missed the edit would print that answer (the slow test above
    goes through more kinds of change)."""
    shutil.copytree(REPO / "lab_assets", lab / "pkg" / "lab_assets", ignore=shutil.ignore_patterns("__pycache__"))
    (lab / "sweeps" / "tiny.yaml").write_text(
        "name: tiny\ndata:\n  swissroll: {n_samples: 100}\nseeds: [0]\nmethods:\n  pca: {}\n"
        "  isomap: {n_neighbors: 10}\nmetrics:\n  trustworthiness: {k: [5]}\n"
    )
    assert run(lab)["materialized"]["cells"] == 2
    answered_from_saved(lab, cells=2)  # saved by that run: a run of the unchanged tree prints it (no Dagster)
    isomap = lab / "pkg" / "lab_assets" / "dr" / "methods" / "isomap.py"
    isomap.write_text(isomap.read_text() + "\nEDITED = True\n")  # a comment would change no meaning
    out = run(lab)
    assert out["report"] != "from the saved answer"
    assert out["materialized"]["cells"] == 1 and out["before"]["stale"] == 1 and out["before"]["fresh"] == 1


@pytest.mark.slow
def test_a_sweep_reading_an_input_file_is_never_answered_from_a_saved_answer(lab):
    """A `file` dataset's version digests the file's content, which no source stamp covers."""
    rows = "\n".join(f"{i},{i * i % 7},{i % 5}" for i in range(40))
    (lab / "points.csv").write_text("a,b,c\n" + rows + "\n")
    (lab / "sweeps" / "tiny.yaml").write_text(
        "name: tiny\ndata:\n  file: {path: points.csv}\nseeds: [0]\n"
        "methods:\n  pca: {}\nmetrics:\n  trustworthiness: {k: [5]}\n"
    )
    (lab / "pkg").symlink_to(REPO)  # `lab_in` runs this checkout's package here
    assert run(lab)["materialized"]["cells"] == 1
    assert run(lab)["fresh"]["cells"] == 1
    assert not list((lab / ".lab" / "cache").glob("noop-*.json"))
    (lab / "points.csv").write_text("a,b,c\n" + rows.replace("3,", "4,") + "\n")
    assert run(lab)["materialized"]["cells"] == 1


# `lab sweep run`'s route in a process like `lab`'s own (a test process's import path differs, and
# the saved answer's state covers it), with `warm_workers` refusing to start any worker.
ROUTE = """
import json, os, sys

sys.path[0] = os.getcwd()  # as `python -m lab_assets.cli.main` has it
from lab_assets.runner import commands
from lab_assets.runner.noop_answer import NoopAnswer

answer = NoopAnswer(sys.argv[1], open(sys.argv[1], "rb").read(), 100)
print(json.dumps([answer.load() is None, answer.cells_if_metrics_alone_changed()]), flush=True)


def refuse(count, fork):
    sys.exit(f"{count} workers started")


commands.warm_workers = refuse
ran = commands.route_sweep_run(sys.argv[1], hand_over=lambda: None, workers=2)
summary = ran.summary()
print(json.dumps([ran.result.ok, summary.materialized["cells"], summary.metrics_only]))
"""


def test_a_metric_added_since_the_saved_answer_runs_here_without_starting_workers(lab):
    """`NoopAnswer.cells_if_metrics_alone_changed`: when the sweep file's `metrics:` alone changed
    since the saved answer, `lab sweep run` starts no workers before its plan (they would only
    compete with it: issue 44) and the metrics steps run in this process; after any other change
    since the answer (here a seed added) it cannot tell, and the workers start first as usual."""
    assert lab_cli("sweep", "run", "sweeps/tiny.yaml", "--workers", "1", cwd=lab).returncode == 0
    sweep = lab / "sweeps" / "tiny.yaml"
    first = sweep.read_text()
    sweep.write_text(first.replace("seeds: [0]", "seeds: [0, 1]") + "  continuity: {k: [5]}\n")
    route = subprocess.run([sys.executable, "-c", ROUTE, str(sweep)], cwd=lab, capture_output=True, text=True)
    assert json.loads(route.stdout) == [True, None]
    assert (route.returncode, route.stderr.strip().splitlines()[-1]) == (1, "2 workers started")

    sweep.write_text(first + "  continuity: {k: [5]}\n")
    route = subprocess.run([sys.executable, "-c", ROUTE, str(sweep)], cwd=lab, capture_output=True, text=True)
    assert route.returncode == 0, route.stderr
    assert [json.loads(line) for line in route.stdout.splitlines()] == [[True, 4], [True, 4, 4]]
