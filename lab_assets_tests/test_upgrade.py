"""Upgrades: a lab home written by the previous release's code (the commit before layout 2's
change, the results cache, checked out with `git archive`) is upgraded by this release's first
`lab sweep run`, which says before running what will recompute and why, recomputes exactly that
(datasets stay), and records the layout version (slow; it needs the repository's history).
The default suite's: the version recorded by a first run, a lab home written before versions
were recorded told what changes, and a lab home of a newer release refused, nothing run."""

import json
import shutil
import subprocess

import pytest

from lab_assets.core import layout
from lab_assets.runtime.instance import get_instance
from lab_assets_tests.conftest import REPO, lab_cli, lab_project, missing, require_tool
from lab_assets_tests.test_results_cache import _cache_metadata

ONE = "name: one\ndata:\n  swissroll: {n_samples: 60}\nseeds: [0]\nmethods:\n  pca: {}\nmetrics:\n  trustworthiness: {k: [5]}\n"
# The file whose addition began layout 2 (core/layout.py, CHANGES[2]): the previous release is the commit before.
LAYOUT_2_BEGAN_WITH = "lab_assets/core/results_cache.py"


def _previous_release(tmp_path):
    """The code of the commit before layout 2's change, unpacked in a folder."""
    git = require_tool("git", "the upgrade test checks out an earlier commit")
    shallow = subprocess.run([git, "rev-parse", "--is-shallow-repository"], cwd=REPO, capture_output=True, text=True)
    if shallow.stdout.strip() == "true":
        missing("a shallow clone lacks the previous release's commit: `git fetch --unshallow` (CI clones whole)")
    added = subprocess.run(
        [git, "log", "-1", "--format=%H", "--diff-filter=A", "--", LAYOUT_2_BEGAN_WITH],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not added:
        pytest.fail(f"{LAYOUT_2_BEGAN_WITH} is not committed: the previous release is the commit before it")
    folder = tmp_path / "previous"
    folder.mkdir()
    archive = subprocess.run([git, "archive", f"{added}^", "lab_assets"], cwd=REPO, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


@pytest.mark.slow
def test_a_lab_home_of_the_previous_release_is_upgraded_recomputing_only_what_changed(lab, tmp_path):
    previous = _previous_release(tmp_path)
    run = ("sweep", "run", "sweeps/tiny.yaml", "--json", "--workers", "1")
    old = lab_cli(*run, cwd=lab, timeout=600, env={"PYTHONPATH": str(previous)})
    assert old.returncode == 0, old.stderr
    assert json.loads(old.stdout)["materialized"]["cells"] == 4
    assert not (lab / ".lab" / "layout.json").exists()  # the previous release recorded none
    # A dataset is stale exactly when the code of its version changed: the dataset asset's module or
    # the tiny sweep's dataset entries (this release's formatter pass touched some of them).
    code = ["defs/assets/datasets.py", "dr/datasets/manifolds.py"]
    data_changed = any(
        (previous / "lab_assets" / f).read_bytes() != (REPO / "lab_assets" / f).read_bytes() for f in code
    )
    shutil.rmtree(previous)

    plan = lab_cli("sweep", "plan", "sweeps/tiny.yaml", "--json", cwd=lab)
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)
    assert {d["status"] for d in planned["datasets"].values()} == {"stale" if data_changed else "fresh"}
    assert all(c["status"] == "stale" for c in planned["cells"]), planned["cells"]

    run = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--json", "--workers", "1", cwd=lab)
    assert run.returncode == 0, run.stderr
    assert f"layout {layout.VERSION}: {layout.CHANGES[layout.VERSION]}" in run.stderr  # said before running
    done = json.loads(run.stdout)["materialized"]
    assert done.get("datasets", 0) == (2 if data_changed else 0) and done["cells"] == 4  # what changed, nothing else
    assert json.loads((lab / ".lab" / "layout.json").read_text()) == {"version": layout.VERSION}

    again = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--json", "--workers", "1", cwd=lab)
    assert again.returncode == 0 and "earlier release" not in again.stderr
    assert not any(json.loads(again.stdout)["materialized"].values())


# The last commit whose code versions were byte digests (docs/staleness.md, "Upgrades").
BEFORE_VERSIONS_BY_MEANING = "171c77e"


@pytest.mark.slow
def test_a_lab_home_of_the_release_before_versions_by_meaning_recomputes_nothing(lab, tmp_path, monkeypatch):
    """Written by 171c77e, planned by this code: every cell and dataset fresh (the version lock and the
    declared step versions emit the strings Dagster recorded); another lab home sharing its results
    cache finds every embedding and metrics row there: 0 misses."""
    git = require_tool("git", "the upgrade test checks out an earlier commit")
    previous = tmp_path / "previous"
    previous.mkdir()
    archive = subprocess.run(
        [git, "archive", BEFORE_VERSIONS_BY_MEANING, "lab_assets"], cwd=REPO, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(previous)], input=archive.stdout, check=True)
    run = ("sweep", "run", "sweeps/tiny.yaml", "--json", "--workers", "1")
    old = lab_cli(*run, cwd=lab, timeout=600, env={"PYTHONPATH": str(previous)})
    assert old.returncode == 0 and json.loads(old.stdout)["materialized"]["cells"] == 4, old.stderr

    plan = lab_cli("sweep", "plan", "sweeps/tiny.yaml", "--json", cwd=lab)
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)
    assert {d["status"] for d in planned["datasets"].values()} == {"fresh"}
    assert {c["status"] for c in planned["cells"]} == {"fresh"}, planned["cells"]

    team = lab_project(tmp_path / "team", monkeypatch)
    shared = str(lab / ".lab" / "results_cache")
    again = lab_cli(*run, cwd=team, timeout=600, env={"LAB_RESULTS_CACHE": shared})
    assert again.returncode == 0, again.stderr
    get_instance.cache_clear()
    for asset in ("embedding", "metrics"):
        found = _cache_metadata(asset)
        assert len(found) == 4 and all(m["computed"] is False for m in found.values()), (asset, found)


def test_a_first_run_records_the_layout_and_an_unversioned_lab_home_is_told_what_changes(lab):
    (lab / "sweeps" / "one.yaml").write_text(ONE)
    first = lab_cli("sweep", "run", "sweeps/one.yaml", "--json", "--workers", "1", cwd=lab)
    assert first.returncode == 0, first.stderr
    assert json.loads((lab / ".lab" / "layout.json").read_text()) == {"version": layout.VERSION}
    assert "earlier release" not in first.stderr  # an empty lab home: nothing to upgrade

    # Written before versions were recorded (no layout.json, sweeps registered): version 1. (Its
    # no-op answers, if any, were saved by that release's code: never this one's.)
    (lab / ".lab" / "layout.json").unlink()
    shutil.rmtree(lab / ".lab" / "cache", ignore_errors=True)
    again = lab_cli("sweep", "run", "sweeps/one.yaml", "--json", "--workers", "1", cwd=lab)
    assert again.returncode == 0, again.stderr
    told = [line for line in again.stderr.splitlines() if "earlier release" in line]
    assert told == [
        f"lab: this lab home was written by an earlier release; layout {v}: {layout.CHANGES[v]}"
        for v in range(2, layout.VERSION + 1)
    ]
    assert json.loads((lab / ".lab" / "layout.json").read_text()) == {"version": layout.VERSION}


def test_a_lab_home_of_a_newer_release_is_refused_in_one_line_and_nothing_runs(lab):
    (lab / "sweeps" / "one.yaml").write_text(ONE)
    newer = {"version": layout.VERSION + 1}
    (lab / ".lab" / "layout.json").write_text(json.dumps(newer))
    done = lab_cli("sweep", "run", "sweeps/one.yaml", "--workers", "1", cwd=lab)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "lab: invalid lab home",
        f"{lab / '.lab' / 'layout.json'}: layout {layout.VERSION + 1} was written by a newer release than this one "
        f"(layout {layout.VERSION}); upgrade lab_assets, or point LAB_HOME at another lab home",
    ]
    assert not (lab / ".lab" / "assets").exists()  # nothing ran
    assert json.loads((lab / ".lab" / "layout.json").read_text()) == newer  # nothing lost
