"""The side process (core/side_process.py): a command's W&B runs logged and its report drawn on the
other core answer what doing it in the command would, and where it cannot (gone, another lab home,
a value JSON cannot carry, a failure there) the work is done in the command itself, never lost and
never failing a cell. What the runs hold either way: test_results.py (`logged_from`)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab_assets.core import side_process, tracking
from lab_assets.dr import keystore, report_drawing
from lab_assets_tests.conftest import lab_cli


@pytest.fixture
def remote(lab, monkeypatch):
    """A side process started for the `lab` project, as a command starts it; stopped at the end."""
    monkeypatch.setattr(side_process, "worth_it", lambda modules: True)
    side_process.start(report_drawing.MODULES)
    assert side_process._current is not None
    yield side_process._current[1]
    side_process.stop(wait=30)


def folders(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "wandb" / "wandb").glob("offline-run-*"))


def log(cell: str, **config) -> dict:
    return side_process.track_cell(cell, ["tiny"], {"cell": cell, **config}, {"trustworthiness@k=5": 0.5})


def test_a_run_logged_there_is_answered_as_here_and_a_lost_process_falls_back(lab, remote):
    answer = log("a")
    assert answer["wandb_mode"] == "offline" and answer["wandb_run_id"] == tracking.run_id("cell", "a")
    assert Path(answer["wandb_run"]).is_dir() and str(lab / ".lab" / "wandb") in answer["wandb_run"]
    assert folders(lab / ".lab") == [f"{Path(answer['wandb_run']).parent.name}"]

    # Killed (out of memory, say): the next run is logged here and the process is forgotten.
    remote._process.kill()
    remote._process.wait()
    again = log("b")
    assert again["wandb_run_id"] == tracking.run_id("cell", "b") and Path(again["wandb_run"]).is_dir()
    assert sorted(again) == sorted(answer)  # the same metadata, logged here
    assert side_process._current is None
    assert len(folders(lab / ".lab")) == 2


def test_another_lab_home_or_a_value_json_cannot_carry_is_logged_here(lab, remote, monkeypatch, tmp_path):
    # A config value JSON cannot carry: W&B in this process takes it as it would have.
    seen = []
    monkeypatch.setattr(tracking, "track_cell", lambda *args, **kwargs: seen.append(args[0]) or {"here": True})
    assert log("a", shape={1, 2}) == {"here": True} and seen == ["a"]
    assert side_process._current is not None  # still there for the next run
    assert log("b")["wandb_run_id"] == tracking.run_id("cell", "b") and seen == ["a"]

    # Started for one lab home, asked from another: logged here, and the process is let go.
    monkeypatch.setenv("LAB_HOME", str(tmp_path / "other"))
    assert log("c") == {"here": True} and seen == ["a", "c"]
    assert side_process._current is None
    remote._process.wait(30)  # it ends once its stdin is closed


def test_a_forked_child_logs_its_own_runs(lab, remote):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's side process is not its own
        os.close(read)
        answer = side_process._remote({"kind": "cell"})
        os.write(write, b"none" if answer is None else b"remote")
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 16) == b"none"
    assert side_process._current is not None  # the parent's own is untouched


def test_a_report_drawn_there_is_byte_for_byte_the_one_drawn_here(lab, monkeypatch):
    from lab_assets.defs.assets.reports import report_files

    assert lab_cli("sweep", "run", "sweeps/tiny.yaml", "--quiet", cwd=lab).returncode == 0
    sweep = keystore.sweep("tiny")
    here = report_files(sweep)
    monkeypatch.setattr(side_process, "worth_it", lambda modules: True)
    side_process.start(report_drawing.MODULES)
    try:
        drawn_here = []
        monkeypatch.setattr(report_drawing, "draw", lambda *args: drawn_here.append(args) or {})
        there = report_files(sweep)
        assert not drawn_here, "the report was drawn in the test's process"
        assert sorted(there) == sorted(here) and {"embeddings.png", "report.html"} <= set(there)
        assert all(there[name] == here[name] for name in here), [n for n in here if there[n] != here[n]]

        # A failure there (a request its function cannot take) is answered, not fatal: None, and
        # the caller does the work itself; so is a function of a module it was not started with.
        assert side_process.call(report_drawing.draw_request, lambda: {"sweep": "not a sweep"}) is None
        assert side_process.call(keystore.sweep, lambda: {}) is None
        assert side_process.call(report_drawing.draw_request, lambda: [][0]) is None  # a request not built
        assert side_process._current is not None  # still serving
        assert sorted(report_files(sweep)) == sorted(here) and not drawn_here
    finally:
        side_process.stop(wait=30)


def tracking_children(pid: int) -> list[int]:
    """Processes whose parent is `pid` running `python -m lab_assets.core.side_process`."""
    out = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            ppid = next(int(line.split()[1]) for line in status.read_text().splitlines() if line.startswith("PPid:"))
            cmdline = (status.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, StopIteration):  # ended meanwhile
            continue
        if ppid == pid and b"lab_assets.core.side_process" in cmdline:
            out.append(int(status.parent.name))
    return out


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: no side process")
def test_a_metrics_only_rerun_without_a_terminal_logs_its_runs_from_a_side_process(lab):
    assert lab_cli("sweep", "run", "sweeps/tiny.yaml", "--quiet", cwd=lab).returncode == 0
    before = folders(lab / ".lab")
    sweep = lab / "sweeps" / "tiny.yaml"
    sweep.write_text(sweep.read_text() + "  continuity: {k: [5]}\n")
    command = subprocess.Popen(
        [sys.executable, "-m", "lab_assets.cli.main", "sweep", "run", "sweeps/tiny.yaml", "--quiet"],
        cwd=lab,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    seen: set[int] = set()
    while command.poll() is None:
        seen.update(tracking_children(command.pid))
        time.sleep(0.01)
    out, err = command.communicate()
    assert command.returncode == 0, err
    assert len(seen) == 1, "the re-run ran its cells in its own process: one side process, started by it"
    (helper,) = seen
    assert b"wandb" not in err.lower()  # W&B's messages stay as quiet as in the command
    # Every run of the re-run was logged: one more folder per cell, one for the sweep's run.
    new = sorted(f.rsplit("-", 1)[1] for f in folders(lab / ".lab") if f not in before)
    assert new == sorted({f.rsplit("-", 1)[1] for f in before})
    # It ends with the command: closing its stdin ends it once W&B has closed its runs.
    deadline = time.monotonic() + 30
    while Path(f"/proc/{helper}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert time.monotonic() < deadline, "the side process outlived its command by 30 s"
