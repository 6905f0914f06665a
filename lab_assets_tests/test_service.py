"""The warm service (runner/warm_service.py, runner/warm_service_process.py): a command it runs computes what the
same command computes without it, in the folder and environment it was typed in; Ctrl-C, exit
codes and errors reach the terminal as they would; a service serves one environment and ends on
`lab service stop`."""

import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from lab_assets.core.processes import alive
from lab_assets.runner import warm_service
from lab_assets_tests.conftest import PACKAGE_EDIT_LOCK, TINY_SWEEP, lab_cli, wait_for

SLOW = (
    "name: slow\ndata:\n  swissroll: {n_samples: 500}\nseeds: [0, 1, 2, 3]\n"
    "methods:\n  tsne: {max_iter: 1000}\nmetrics:\n  trustworthiness: {k: [5]}\n"
)


@pytest.fixture
def services(monkeypatch, request):
    """A private service folder (short: a socket's path is limited to 107 bytes), every service
    in it stopped after the test; LAB_SERVICE=1. A test marked `edits_package` changes a package
    source, which ends every service on the machine: it holds a lock the other tests share, so
    that under `pytest -n` no other test's service ends mid-test."""
    lock = open(PACKAGE_EDIT_LOCK, "a")  # noqa: SIM115 - held to the end
    fcntl.flock(lock, fcntl.LOCK_EX if request.node.get_closest_marker("edits_package") else fcntl.LOCK_SH)
    request.addfinalizer(lock.close)
    runtime = Path(tempfile.mkdtemp(prefix="ls-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("LAB_SERVICE", "1")
    monkeypatch.setenv("WANDB_MODE", "offline")
    for var in ("LAB_HOME", "DAGSTER_HOME", "LAB_PROJECT_DIR", "LAB_STORAGE_URL", "LAB_EXECUTOR"):
        monkeypatch.delenv(var, raising=False)  # each project's lab home comes from its folder
    yield runtime
    pids = [s["pid"] for s in warm_service.running() if s["pid"]]
    warm_service.stop_all()
    for pid in pids:
        wait_for(lambda: not alive(pid), 30, f"service {pid} to end")
    shutil.rmtree(runtime, ignore_errors=True)


def _project(root: Path, name: str, sweep: str = TINY_SWEEP) -> Path:
    folder = root / name
    (folder / "sweeps").mkdir(parents=True)
    (folder / "sweeps" / "s.yaml").write_text(sweep)
    return folder


def _lab(*args, cwd: Path, **env) -> subprocess.CompletedProcess:
    return lab_cli(*args, cwd=cwd, env=env)


def _table(project: Path) -> pd.DataFrame:
    table = pd.read_parquet(project / ".lab" / "reports" / "tiny" / "metrics.parquet")
    metrics = [c for c in table.columns if c.startswith(("trustworthiness", "lid"))]
    assert metrics, table.columns
    return table.sort_values(list(table.columns[:3])).reset_index(drop=True)[list(table.columns[:3]) + metrics]


@pytest.mark.slow
def test_one_service_runs_sweeps_of_two_projects_each_in_its_own_folder_as_lab_would(tmp_path, services):
    a, b, plain = (_project(tmp_path, n) for n in ("a", "b", "plain"))
    first = _lab("sweep", "run", "sweeps/s.yaml", "--workers", "2", cwd=a)
    assert first.returncode == 0, first.stderr
    [running] = warm_service.running()  # started by the first command, which it then ran
    assert alive(running["pid"])
    status = _lab("service", "status", cwd=b)
    assert f"{running['key']}  pid {running['pid']}  this environment" in status.stdout, status.stdout
    second = _lab("sweep", "run", "sweeps/s.yaml", "--workers", "2", cwd=b)
    assert second.returncode == 0, second.stderr
    assert [s["pid"] for s in warm_service.running()] == [running["pid"]]  # the same service took it
    without = _lab("sweep", "run", "sweeps/s.yaml", "--workers", "2", cwd=plain, LAB_SERVICE="0")
    assert without.returncode == 0, without.stderr
    assert len(warm_service.running()) == 1

    for out in (first, second, without):
        assert "sweep tiny: 2 datasets and 4 cells materialized" in out.stdout, out.stdout
    # Each command wrote to the lab home of its own folder (the service's environment has none).
    for project in (a, b):
        pd.testing.assert_frame_equal(_table(project), _table(plain), check_exact=True)
        with dg.DagsterInstance.from_config(str(project / ".lab" / "dagster")) as instance:
            assert {r.status for r in instance.get_runs()} == {dg.DagsterRunStatus.SUCCESS}
    # The runs of the service's commands are the service's children; none is left.
    wait_for(lambda: not _children(running["pid"]), 10, "the service's commands to be reaped")

    # One worker: the cells run in the command's own process, forked from the service (numba's
    # parallel rank kernels, already run in the service, must survive the fork).
    (b / "sweeps" / "s.yaml").write_text(TINY_SWEEP.replace("seeds: [0]", "seeds: [0, 1]"))
    one = _lab("sweep", "run", "sweeps/s.yaml", "--workers", "1", cwd=b)
    assert one.returncode == 0, one.stderr
    assert "4 cells materialized, 4 already fresh, 0 failed" in one.stdout, one.stdout

    # `lab sweep plan`, `lab report` and `lab verify` go through it too, and say what they say without it.
    for args in (("sweep", "plan", "sweeps/s.yaml"), ("report", "sweeps/s.yaml"), ("verify", "sweeps/s.yaml")):
        warm, cold = _lab(*args, cwd=a), _lab(*args, cwd=a, LAB_SERVICE="0")
        assert warm.returncode == cold.returncode == 0, warm.stderr + cold.stderr
        assert warm.stdout == cold.stdout and warm.stdout, (warm.stdout, cold.stdout)
    assert [s["pid"] for s in warm_service.running()] == [running["pid"]]
    log = Path(running["log"]).read_text()
    # Each ran in the service, in its own folder: the command's function, called with its parsed arguments.
    for fn in ("cli.sweep:lab_sweep_run", "cli.sweep:lab_sweep_plan", "cli.report:run", "cli.verify:run"):
        assert re.search(rf': lab_assets\.{re.escape(fn)} [^\n]*"file": "sweeps/s\.yaml"[^\n]*\(in {a}\)', log), log
    assert '"workers": 2' in log, log

    # A no-op is answered by the client without the service; a bad file is refused with exit 2.
    noop = _lab("sweep", "run", "sweeps/s.yaml", cwd=a)
    assert noop.returncode == 0, noop.stderr
    assert "0 datasets and 0 cells materialized, 4 already fresh" in noop.stdout, noop.stdout
    (a / "sweeps" / "bad.yaml").write_text("name: [\n")
    bad = _lab("sweep", "run", "sweeps/bad.yaml", cwd=a)
    assert bad.returncode == 2 and "lab: invalid sweep" in bad.stderr and "bad.yaml" in bad.stderr, bad.stderr


def _children(pid: int) -> list[str]:
    out = subprocess.run(["ps", "-o", "pid=,stat=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.strip() and not line.split()[1].startswith("Z")]


def _slow_sweep_under_way(tmp_path: Path, *args: str, **popen) -> tuple[Path, dict, subprocess.Popen]:
    """A project with the SLOW sweep, a started service, and `lab sweep run` of it started as its client."""
    project = _project(tmp_path, "p", SLOW)
    assert _lab("service", "start", cwd=project).returncode == 0
    [running] = warm_service.running()
    popen = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **popen}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab_assets.cli.main", "sweep", "run", "sweeps/s.yaml", "--workers", "2", *args],
        cwd=project,
        env=os.environ.copy(),
        **popen,
    )
    return project, running, proc


def test_ctrl_c_on_the_client_interrupts_the_command_in_the_service(tmp_path, services):
    project, running, proc = _slow_sweep_under_way(tmp_path, start_new_session=True)
    try:
        embeddings = project / ".lab"
        wait_for(
            lambda: any(embeddings.rglob("embedding/**/*.parquet")) or proc.poll() is not None, 300, "a first embedding"
        )
        assert proc.poll() is None, proc.communicate()
        os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the client only
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "of 4 cells done; run again to continue" in err.splitlines()[-1], err
    wait_for(lambda: not _children(running["pid"]), 15, "the command and its workers to end")
    with dg.DagsterInstance.from_config(str(project / ".lab" / "dagster")) as instance:
        assert dg.DagsterRunStatus.STARTED not in {r.status for r in instance.get_runs()}
    assert alive(running["pid"])  # the service itself goes on

    again = _lab("sweep", "run", "sweeps/s.yaml", "--workers", "2", "--quiet", cwd=project)
    assert again.returncode == 0, again.stderr


def _group(pgid: int) -> dict[int, str]:
    """{pid: state} of the live processes in process group `pgid`."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,pgid=,stat="], capture_output=True, text=True).stdout
    rows = (line.split() for line in out.splitlines())
    return {int(pid): stat for pid, group, stat in rows if int(group) == pgid and not stat.startswith("Z")}


def _workers(command: int) -> list[int]:
    """The command's worker processes (its Python children in its group; not a `git` it runs)."""
    out = subprocess.run(
        ["ps", "-o", "pid=,pgid=,comm=", "--ppid", str(command)], capture_output=True, text=True
    ).stdout
    rows = (line.split() for line in out.splitlines())
    return [int(pid) for pid, group, comm in rows if int(group) == command and comm.startswith("python")]


def _stop_with_ctrl_z(proc: subprocess.Popen, running: dict) -> int:
    """Ctrl-Z on a client whose command's two workers run; the command's pid once the command,
    its workers and the client are stopped."""
    wait_for(lambda: _children(running["pid"]), 60, "the command to start in the service")
    command = int(_children(running["pid"])[0].split()[0])  # the leader of its own process group
    wait_for(lambda: len(_workers(command)) >= 2, 120, "the command's two workers")
    os.killpg(proc.pid, signal.SIGTSTP)  # a terminal's Ctrl-Z reaches the client's group only

    def stopped() -> bool:
        group = _group(command)
        states = [*group.values(), *_group(proc.pid).values()]
        return command in group and proc.pid in _group(proc.pid) and all(st.startswith("T") for st in states)

    try:
        wait_for(stopped, 30, "the command, its workers and the client to stop")
    except AssertionError as e:
        ps = subprocess.run(["ps", "-e", "-o", "pid,ppid,pgid,stat,args"], capture_output=True, text=True).stdout
        raise AssertionError(f"{e}; client {proc.pid}, command {command}:\n{ps}") from None
    assert len(_group(command)) >= 3  # the command and its two workers
    return command


@pytest.mark.slow
def test_ctrl_z_on_the_client_stops_the_command_and_fg_continues_it(tmp_path, services):
    project, running, proc = _slow_sweep_under_way(tmp_path, "--quiet", start_new_session=True)
    try:
        command = _stop_with_ctrl_z(proc, running)
        time.sleep(1)
        assert all(st.startswith("T") for st in _group(command).values()) and proc.poll() is None
        os.killpg(proc.pid, signal.SIGCONT)  # the shell's `fg`
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert len(pd.read_parquet(project / ".lab" / "reports" / "slow" / "metrics.parquet")) == 4


@pytest.mark.slow
def test_a_stopped_command_whose_client_is_killed_is_interrupted_not_left_stopped(tmp_path, services):
    project, running, proc = _slow_sweep_under_way(tmp_path, "--quiet", start_new_session=True)
    try:
        command = _stop_with_ctrl_z(proc, running)
    finally:
        proc.kill()  # e.g. the terminal closed on a stopped job
        proc.wait()
    wait_for(lambda: not _group(command), 60, "the stopped command and its workers to be interrupted")
    with dg.DagsterInstance.from_config(str(project / ".lab" / "dagster")) as instance:
        assert dg.DagsterRunStatus.STARTED not in {r.status for r in instance.get_runs()}
    assert alive(running["pid"])  # the service goes on, and ends when asked (the fixture stops it)


def test_ctrl_z_before_the_service_names_the_command_stops_the_command_once_it_is_named(tmp_path):
    """The window between the client's request and the service's reply: the stop waits for the
    command's pid, rather than stopping the client alone while its command runs on."""
    path = tmp_path / "s.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(path))
    listener.listen(1)
    client = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket, sys\n"
            "from lab_assets.runner import warm_service\n"
            "s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
            f"s.connect({str(path)!r})\n"
            "sys.exit(warm_service._exchange(s, {'call': 'm:f', 'args': {'file': 'x.yaml'}}))",
        ],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    command = subprocess.Popen(["sleep", "120"], start_new_session=True)  # stands for the forked command
    try:
        conn, _ = listener.accept()
        request, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        for fd in fds:
            os.close(fd)
        assert json.loads(request)["args"] == {"file": "x.yaml"}
        os.kill(client.pid, signal.SIGTSTP)  # Ctrl-Z before the reply
        time.sleep(0.5)
        conn.send(json.dumps({"pid": command.pid}).encode())
        wait_for(lambda: _group(command.pid).get(command.pid, "").startswith("T"), 10, "the command to stop")
        wait_for(lambda: _group(client.pid).get(client.pid, "").startswith("T"), 10, "the client to stop")
        os.kill(client.pid, signal.SIGCONT)  # `fg`: the client continues the command
        wait_for(lambda: _group(command.pid).get(command.pid, "").startswith("S"), 10, "the command to continue")
        conn.send(json.dumps({"exit": 3}).encode())
        assert client.wait(timeout=10) == 3
    finally:
        for process in (client, command):
            process.kill()
            process.wait()
        listener.close()


@pytest.mark.slow
def test_a_command_outlives_its_killed_service_and_reports_its_own_exit_code(tmp_path, services):
    project, running, proc = _slow_sweep_under_way(tmp_path, "--quiet")
    wait_for(lambda: _children(running["pid"]), 60, "the command to start in the service")
    os.kill(running["pid"], signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert len(pd.read_parquet(project / ".lab" / "reports" / "slow" / "metrics.parquet")) == 4
    assert (project / ".lab" / "reports" / "slow" / "summary.md").is_file()  # what the next test looks for
    again = _lab("sweep", "run", "sweeps/s.yaml", "--json", cwd=project)  # a new service, or none: either answers
    assert again.returncode == 0, again.stderr


@pytest.mark.slow
def test_a_killed_client_interrupts_its_command(tmp_path, services):
    project, running, proc = _slow_sweep_under_way(
        tmp_path, "--quiet", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_for(lambda: any((project / ".lab").rglob("embedding/**/*.parquet")), 300, "a first embedding")
    proc.kill()
    proc.wait()
    # Interrupted, not finished: a command that ignored its client's death would go on to the
    # four cells' metrics and the report (each t-SNE cell takes seconds) before its workers end.
    wait_for(lambda: not _children(running["pid"]), 60, "the orphaned command to be interrupted")
    time.sleep(2)  # anything still going on would write now
    with dg.DagsterInstance.from_config(str(project / ".lab" / "dagster")) as instance:
        assert dg.DagsterRunStatus.STARTED not in {r.status for r in instance.get_runs()}
        metrics = instance.fetch_materializations(dg.AssetKey("metrics"), limit=10).records
        assert len(metrics) < 4, "every cell was computed: the command ran to its end"
        assert not instance.fetch_materializations(dg.AssetKey("report"), limit=1).records
    assert not (project / ".lab" / "reports" / "slow" / "summary.md").exists()  # where a finished run writes it


def test_a_service_serves_one_environment_and_code():
    env = {"PATH": "/usr/bin", "LAB_HOME": "/a", "PWD": "/x", "SHLVL": "1"}
    same = {**env, "PWD": "/y", "SHLVL": "2", "OLDPWD": "/x", "LAB_SERVICE": "1"}
    assert warm_service.key(env) == warm_service.key(same)  # what a shell changes between commands
    assert warm_service.key(env) != warm_service.key({**env, "LAB_HOME": "/b"})
    assert warm_service.key(env) != warm_service.key({**env, "OMP_NUM_THREADS": "4"})
    assert warm_service.key(env) != warm_service.key({**env, "WANDB_API_KEY": "x"})


def test_off_unless_asked_or_in_a_terminal(monkeypatch):
    monkeypatch.setenv("LAB_SERVICE", "0")
    assert not warm_service.enabled()
    monkeypatch.setenv("LAB_SERVICE", "1")
    assert warm_service.enabled()
    monkeypatch.setenv("LAB_SERVICE_CHILD", "1")
    assert not warm_service.enabled()  # a command the service runs never forwards again
    monkeypatch.delenv("LAB_SERVICE_CHILD")
    monkeypatch.delenv("LAB_SERVICE")
    assert not warm_service.enabled()  # pytest's stdin/stderr are not both terminals

    class Terminal:
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr(sys, "stderr", Terminal())
    monkeypatch.setattr(sys, "platform", "linux")
    assert warm_service.enabled()  # a researcher's shell
    monkeypatch.setattr(sys, "platform", "darwin")
    assert not warm_service.enabled()  # no fork without exec on macOS unless asked
    monkeypatch.setenv("LAB_SERVICE", "1")
    assert warm_service.enabled()


def test_a_service_folder_others_can_enter_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    (tmp_path / f"lab-assets-{os.getuid()}").mkdir(mode=0o755)
    os.chmod(tmp_path / f"lab-assets-{os.getuid()}", 0o755)
    with pytest.raises(PermissionError, match="not private"):
        warm_service.folder()


@pytest.mark.edits_package
def test_a_service_whose_code_changed_ends_and_the_next_command_starts_a_new_one(tmp_path, services):
    project = _project(tmp_path, "p")
    assert _lab("service", "start", cwd=project).returncode == 0
    [old] = warm_service.running()
    source = Path(warm_service.__file__)
    stat = source.stat()
    try:
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # an edit, as the key sees it
        wait_for(lambda: not alive(old["pid"]), 30, "the service of the old code to end")
        assert not (services / f"lab-assets-{os.getuid()}" / f"{old['key']}.sock").exists()
        out = _lab("sweep", "run", "sweeps/s.yaml", cwd=project)
        assert out.returncode == 0 and "started the warm service" in out.stderr, out.stderr
        [new] = warm_service.running()
        assert new["key"] != old["key"]
    finally:
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
