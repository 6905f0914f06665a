"""`lab`'s warm service: Dagster, the definitions, scikit-learn, numba's kernels, W&B's modules and
matplotlib loaded once per machine, not once per command (issue #15's edit-rerun loop).

Without it, every `lab sweep run` that has work to do pays ~2 s to import and plan, and each of
its workers ~3 s of CPU to warm up: on two cores the first cell of an edited sweep starts ~4 s in
(BENCHMARKS.md, "Fixed costs"). The service is one process that has paid this; a command that
has work to do hands its arguments, folder, environment and terminal (file descriptors 0-2, over a
Unix socket) to it; the service forks a child that runs the command exactly as `lab` would, in its
own process group, and the child's worker pool forks from it too (runner/pool.py), warm. The
client forwards Ctrl-C and other signals to that group and exits with the child's exit code.

What a forked command could inherit wrongly is excluded by construction:
- A service serves one environment and one code: its key is a digest of the environment (less
  the variables a shell changes between commands: `VOLATILE`), the interpreter, the package's
  source files and the installed distributions. A command with another key gets another service;
  a service whose code changed stops taking commands and ends.
- It loads modules only: no instance, no settings, no thread (checked before every fork), so a
  child derives its lab home, instance and storage from its own folder and environment.

On by default when stdin and stderr are terminals (a researcher's loop), off otherwise (scripts,
CI, tests); `LAB_SERVICE=1` or `0` decides explicitly. A service ends after `LAB_SERVICE_IDLE`
seconds (default 1800) without a command; `lab service stop` ends them now. Files: one folder per
user, mode 0700, under $XDG_RUNTIME_DIR or the temp folder.

This module imports only the standard library at module level: the client runs before Dagster
is imported, and a command that the service cannot take runs in the client as before.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gc
import hashlib
import io
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SWITCH = "LAB_SERVICE"  # "1": use it, "0": never; unset: when stdin and stderr are terminals
IDLE = "LAB_SERVICE_IDLE"  # seconds a service waits for a command before it ends
CHILD = "LAB_SERVICE_CHILD"  # set in a command the service runs: it never forwards again
# Variables a shell or terminal changes between two commands without changing what they compute.
VOLATILE = frozenset({"PWD", "OLDPWD", "_", "SHLVL", "COLUMNS", "LINES", "WINDOWID", "TERM_SESSION_ID", "SSH_TTY",
                      "SSH_CLIENT", "SSH_CONNECTION", "TMUX_PANE", "STY", "GPG_TTY", "PS1", "PROMPT_COMMAND",
                      "XDG_SESSION_ID", CHILD, SWITCH, IDLE})
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
START_TIMEOUT_S = 60.0
MESSAGE = 1 << 20  # bytes: a request (argv, folder, environment) fits in one message


def enabled() -> bool:
    choice = os.environ.get(SWITCH, "")
    if os.environ.get(CHILD) or choice == "0":
        return False
    return choice == "1" or (sys.stdin.isatty() and sys.stderr.isatty())


def inside() -> bool:
    """This process is a command the service forked: its modules are loaded, no thread runs."""
    return bool(os.environ.get(CHILD))


def key(env: dict[str, str] | None = None) -> str:
    from lab_assets.core.fingerprint import files, package_sources

    env = os.environ if env is None else env
    stable = sorted((k, v) for k, v in env.items() if k not in VOLATILE)
    # sys.path[0] is the script's folder (`lab`) or the current one (`python -m`): not the code's.
    paths = [p for p in sys.path[1:] if p]
    installed = files(p for p in paths if os.path.isdir(p))
    text = repr((sys.executable, paths, stable, package_sources(), installed))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def folder() -> Path:
    """This user's service folder, created private; refused if someone else owns it or can enter it."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    path = Path(base) / f"lab-assets-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    st = path.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(f"{path}: not private to this user (owner {st.st_uid}, mode {oct(st.st_mode & 0o777)})")
    return path


# ---------------------------------------------------------------- client


def forward(argv: list[str]) -> int | None:
    """Run `lab argv` in the warm service (started if needed) and return its exit code; None if
    the service cannot be used (the caller runs the command itself)."""
    try:
        here = folder()
        k = key()
        sock = _connect(here / f"{k}.sock") or _start(here, k)
    except OSError as e:
        print(f"lab: warm service unavailable ({e}); running without it", file=sys.stderr)
        return None
    if sock is None:
        return None
    with sock:
        return _exchange(sock, argv)


def start() -> bool:
    """Start this environment's service, if it is not running, and wait until it listens."""
    here, k = folder(), key()
    sock = _connect(here / f"{k}.sock") or _start(here, k)
    if sock is not None:
        sock.close()
    return sock is not None


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(str(path))
        return sock
    except OSError:
        sock.close()
        return None


def _start(here: Path, k: str) -> socket.socket | None:
    """Start the service for key `k` (detached, its own session) and wait until it listens."""
    log = here / f"{k}.log"
    with open(log, "ab") as out:
        process = subprocess.Popen([sys.executable, "-m", "lab_assets.cli.service", k], stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=out, start_new_session=True, env={**os.environ, SWITCH: "0"})
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if (sock := _connect(here / f"{k}.sock")) is not None:
            return sock
        if process.poll() not in (None, 0):  # 0: another command's service holds the key; it will listen
            break
        time.sleep(0.02)
    print(f"lab: the warm service did not start (its log: {log}); running without it", file=sys.stderr)
    return None


def _exchange(sock: socket.socket, argv: list[str]) -> int | None:
    request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    pending: list[int] = []
    child: list[int] = []

    def relay(signum, frame) -> None:
        if child:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child[0], signum)  # the command and its workers, as a terminal's Ctrl-C would
        else:
            pending.append(signum)

    saved = {s: signal.signal(s, relay) for s in FORWARDED}
    try:
        socket.send_fds(sock, [request], [0, 1, 2])
        reply = sock.recv(MESSAGE)
        if not reply:
            return None  # the service refused it (another key, or ending): run here
        child.append(json.loads(reply)["pid"])
        for signum in pending:
            relay(signum, None)
        reply = sock.recv(MESSAGE)
        if not reply:
            print("lab: the warm service ended during the command", file=sys.stderr)
            return 1
        return int(json.loads(reply)["exit"])
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


# ---------------------------------------------------------------- service


def _load() -> None:
    """Everything a command's first run would load, loaded once here. Threads must not start:
    the service forks (W&B's service process, which starts threads, is started by each worker)."""
    from lab_assets.core.threads import SINGLE_THREADED

    os.environ.update(SINGLE_THREADED)  # before NumPy loads: the workers forked later are single-threaded
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401 - the report's figures
    import numpy as np
    import wandb  # noqa: F401
    import wandb.sdk.launch  # noqa: F401

    import lab_assets.cli.main  # noqa: F401
    import lab_assets.runner.local  # noqa: F401
    import lab_assets.runner.sweeps  # noqa: F401
    import lab_assets.runner.webserver  # noqa: F401
    from lab_assets.dr.metrics import METRICS
    from lab_assets.dr.metrics.neighbors import Neighborhoods
    from lab_assets.runner.preload import definitions

    definitions()
    points = np.random.default_rng(0).normal(size=(12, 3))
    METRICS["trustworthiness"](Neighborhoods(points, points[:, ::-1][:, :2], k_max=3), k=3)
    gc.collect()
    gc.freeze()  # the loaded objects stay out of the children's collections: their pages stay shared


def serve(k: str) -> int:
    here, env = folder(), dict(os.environ)  # the key is of the environment before loading
    lock = open(here / f"{k}.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another service has this key
    _load()
    if k != key(env):
        print("lab service: the code or environment changed while loading; ending", flush=True)
        return 1
    (here / f"{k}.pid").write_text(str(os.getpid()))
    path = here / f"{k}.sock"
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a crashed service's
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(path))
    listener.listen(16)
    print(f"lab service {k}: pid {os.getpid()}, listening on {path}", flush=True)
    try:
        return _loop(k, env, listener, path, float(os.environ.get(IDLE, "1800")))
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            if path.exists():
                path.unlink()


def _loop(k: str, env: dict[str, str], listener: socket.socket, path: Path, idle_s: float) -> int:
    wake_r, wake_w = socket.socketpair()
    wake_r.setblocking(False)
    wake_w.setblocking(False)
    signal.set_wakeup_fd(wake_w.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that the wakeup fd is written
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(wake_r, selectors.EVENT_READ, "wake")
    children: dict[int, socket.socket] = {}
    last = time.monotonic()
    checked = last
    while True:
        for selected, _ in sel.select(timeout=5.0):
            if selected.data == "accept":
                conn, _ = listener.accept()
                pid = _fork(conn, listener, sel, wake_r, wake_w, children)
                if pid is not None:
                    children[pid] = conn
                    sel.register(conn, selectors.EVENT_READ, pid)
            elif selected.data == "wake":
                with contextlib.suppress(BlockingIOError):
                    wake_r.recv(4096)
            else:  # a client went away (killed): its command is interrupted, as by Ctrl-C
                conn = selected.fileobj
                if not conn.recv(1, socket.MSG_PEEK):
                    sel.unregister(conn)
                    _interrupt(selected.data)
        _reap(children, sel)
        now = time.monotonic()
        if children:
            last = now
        if now - checked > 5.0:
            checked = now
            if key(env) != k:  # edited code: commands go to a new service; this one finishes its own
                stopping.append(True)
        if stopping:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            sel.unregister(listener)
            if not children:
                return 0
        elif now - last > idle_s:
            return 0


def _reap(children: dict[int, socket.socket], sel: selectors.BaseSelector) -> None:
    for pid in list(children):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            continue
        conn = children.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError):
            conn.send(json.dumps({"exit": code if code >= 0 else 128 - code}).encode())
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(conn)
        conn.close()


def _fork(conn: socket.socket, *inherited) -> int | None:
    try:
        message, fds, _, _ = socket.recv_fds(conn, MESSAGE, 3)
        request = json.loads(message)
    except (OSError, ValueError):
        conn.close()
        return None
    if threading.active_count() > 1 or len(fds) != 3:  # never fork with a thread running
        for fd in fds:
            os.close(fd)
        conn.close()  # the client runs the command itself
        return None
    pid = os.fork()
    if pid == 0:
        _child(conn, fds, request, inherited)  # never returns
    for fd in fds:
        os.close(fd)
    try:
        conn.send(json.dumps({"pid": pid}).encode())
    except OSError:
        _interrupt(pid)
    return pid


def _interrupt(pid: int) -> None:
    """SIGINT to a command and its workers (before it has its own process group: to it alone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        try:
            os.killpg(pid, signal.SIGINT)
        except ProcessLookupError:
            os.kill(pid, signal.SIGINT)


def _child(conn: socket.socket, fds: list[int], request: dict, inherited: tuple) -> None:
    code = 1
    try:
        os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        for s in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(s, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        listener, sel, wake_r, wake_w, children = inherited
        for s in (listener, wake_r, wake_w, conn, *children.values()):
            s.close()
        sel.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = io.TextIOWrapper(open(0, "rb", closefd=False), encoding=sys.stdin.encoding)
        sys.stdout = io.TextIOWrapper(open(1, "wb", buffering=0, closefd=False), encoding=sys.stdout.encoding,
                                      line_buffering=True, write_through=not os.isatty(1))
        sys.stderr = io.TextIOWrapper(open(2, "wb", buffering=0, closefd=False), encoding=sys.stderr.encoding,
                                      line_buffering=True, write_through=True)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ[CHILD] = "1"
        sys.argv = ["lab", *request["argv"]]
        from lab_assets.cli.main import main

        code = main(request["argv"])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported on the client's terminal, as `lab` would
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            import atexit

            atexit._run_exitfuncs()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code if isinstance(code, int) else 1)


def running() -> list[dict]:
    """This user's services: key, pid, and whether this environment and code would use it."""
    here, mine, found = folder(), key(), []
    for sock_path in sorted(here.glob("*.sock")):
        k = sock_path.stem
        sock = _connect(sock_path)
        if sock is None:
            continue
        sock.close()
        try:
            pid = int((here / f"{k}.pid").read_text())
        except (OSError, ValueError):
            pid = None
        found.append({"key": k, "pid": pid, "this_environment": k == mine, "log": str(here / f"{k}.log")})
    return found


def stop_all() -> int:
    stopped = 0
    for service in running():
        if service["pid"] is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(service["pid"], signal.SIGTERM)
                stopped += 1
    return stopped


if __name__ == "__main__":
    try:
        sys.exit(serve(sys.argv[1]))
    except OSError as e:
        if e.errno != errno.EADDRINUSE:
            raise
        sys.exit(0)
