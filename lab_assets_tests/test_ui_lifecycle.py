"""`lab ui` as a process a person (or a service manager) stops: its webserver and daemon start
together, listen on this machine only, and stop together: on SIGTERM to `lab ui` alone, and when
either child dies. (The `lab_ui` fixture signals the whole process group, so it proves none of it.)"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lab_assets.core.processes import alive
from lab_assets_tests.conftest import free_port, wait_for

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc (Linux)")


def _children(pid: int) -> dict[str, int]:
    """`lab ui`'s direct children by role: {"webserver": pid, "daemon": pid}."""
    kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    roles = {}
    for kid in map(int, kids):
        cmdline = Path(f"/proc/{kid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        roles[
            "webserver" if "dagster_webserver" in cmdline else "daemon" if "runtime.daemon" in cmdline else cmdline
        ] = kid
    return roles


def _listeners(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp* writes them) listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, _remote, state = line.split()[1:4]
            addr, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.add(addr)
    return found


def _start(lab):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab_assets.cli.main", "ui", "--port", str(port)],
        cwd=lab,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )

    def up():
        roles = _children(proc.pid)
        return roles if len(roles) == 2 and _listeners(port) else None

    roles = wait_for(up, 120, "lab ui's webserver listening")
    assert set(roles) == {"webserver", "daemon"}, roles
    return proc, port, roles


def _cleanup(proc):
    """Whatever is left of the session, also children a broken `lab ui` left behind."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


@pytest.mark.slow
def test_sigterm_to_lab_ui_alone_stops_webserver_and_daemon(lab):
    proc, port, roles = _start(lab)
    try:
        assert _listeners(port) == {"0100007F"}  # 127.0.0.1 only, by default
        proc.send_signal(signal.SIGTERM)  # to `lab ui` itself, as systemd or `kill` would
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
        assert not any(alive(pid) for pid in roles.values()), roles
        assert not _listeners(port)
        out, err = proc.communicate()
        assert f"Dagster UI on http://127.0.0.1:{port}" in out and "Traceback" not in err
    finally:
        _cleanup(proc)


@pytest.mark.slow
def test_a_dead_daemon_stops_the_webserver_and_lab_ui_says_so(lab):
    proc, port, roles = _start(lab)
    try:
        os.kill(roles["daemon"], signal.SIGKILL)
        assert proc.wait(timeout=60) == 1
        assert not alive(roles["webserver"]) and not _listeners(port)
        _out, err = proc.communicate()
        assert f"lab ui: the Dagster daemon exited with code {-signal.SIGKILL}" in err
        assert "Traceback" not in err
    finally:
        _cleanup(proc)
