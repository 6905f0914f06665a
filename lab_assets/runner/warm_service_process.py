"""The warm service's process (runner/warm_service.py says what it is for and how a command reaches
it): load everything once (`_load`, `_rehearse`), listen on the key's Unix socket, fork one child
per command, which makes the call the client handed over (`warm_service.call`: the same function
with the same parsed arguments), reap it and send its exit code back; end when idle, stopped, or
the code changes. Not a command (it runs the CLI's own function by name), so not in `cli/`.

    python -m lab_assets.runner.warm_service_process KEY    (started by `lab`, detached, in its own session)
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import importlib
import io
import json
import os
import selectors
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

from lab_assets.core.settings import PER_LAB_HOME, PROJECT_DIR_VAR, service_idle_seconds
from lab_assets.core.warm_workers import CodeWatch, freeze_loaded, prepare_to_fork, running_threads
from lab_assets.runner.commands import ENTRY, PARSER
from lab_assets.runner.warm_service import CHILD, MESSAGE, call, folder, function, key


def _load() -> None:
    """Everything a command's first run would load, loaded once here (`preload.load`: a warm
    worker's warm-up and W&B's modules, plus what a command itself loads). Threads must not start:
    the service forks (W&B's service process, which starts threads, is started by each worker's first cell)."""
    prepare_to_fork()  # before NumPy and numba load
    import matplotlib.backends.backend_agg  # noqa: F401 - what the report's figures are drawn with

    import lab_assets.runner.local  # noqa: F401
    import lab_assets.runner.sweeps  # noqa: F401
    import lab_assets.runner.webserver  # noqa: F401
    from lab_assets.dr import report_drawing
    from lab_assets.runner import preload

    # What drawing a report loads: loaded here, so a command starts no side process to load it.
    for module in report_drawing.MODULES:
        importlib.import_module(module)
    preload.load()
    # The CLI's modules (every command's, and their printing), by name: the runner may not import them.
    function(ENTRY)
    _rehearse()
    freeze_loaded()


# The rehearsal's sweep: one tiny cell, a metric with k, so that the report draws both figures.
REHEARSAL = """name: rehearsal
data:
  swissroll: {n_samples: 40}
methods:
  pca: {}
metrics:
  trustworthiness: {k: [3, 5]}
"""


def _rehearse() -> None:
    """`lab sweep run` of a one-cell sweep on a throwaway lab home, W&B off, in this process:
    what a command's instance, registration, plan, runs, metric table and report load on the
    way (Dagster's storage and execution modules, the figures' fonts) is loaded here once, not
    in every command and worker (profiled: ~0.35 s of instance imports in a command, ~0.4 s
    extra in each worker's first run). Its instance is disposed and its caches cleared: a
    command builds its own from its own folder and environment."""
    from lab_assets.core import storage
    from lab_assets.runtime.instance import get_instance

    saved = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="lab-service-") as tmp:
        for var in PER_LAB_HOME:
            os.environ.pop(var, None)
        os.environ.update({PROJECT_DIR_VAR: tmp, "WANDB_MODE": "disabled"})
        Path(tmp, "rehearsal.yaml").write_text(REHEARSAL)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                argv = ["sweep", "run", f"{tmp}/rehearsal.yaml", "--workers", "1", "--quiet"]
                function(ENTRY)(function(PARSER)().parse_args(argv))  # as a command: its printing too
        except Exception as e:  # noqa: BLE001 - an optimisation: the command that needs it fails and says why
            print(f"lab service: the rehearsal failed ({e!r}); commands load what it would have", flush=True)
        finally:
            if get_instance.cache_info().currsize:
                get_instance().dispose()
            get_instance.cache_clear()
            storage.filesystem_cache_clear()
            os.environ.clear()
            os.environ.update(saved)


def serve(k: str) -> int:
    here, env = folder(), dict(os.environ)  # the key is of the environment before loading
    lock = open(here / f"{k}.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another service has this key
    _load()
    code = code_watch(k, env)
    if code.changed():
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
        exit_code = _loop(code, listener, path, service_idle_seconds())
    finally:
        listener.close()
        for name in (f"{k}.sock", f"{k}.pid", f"{k}.lock"):
            with contextlib.suppress(FileNotFoundError):
                (here / name).unlink()
    (here / f"{k}.log").unlink(missing_ok=True)  # kept only if the service failed (it holds the traceback)
    return exit_code


def code_watch(k: str, env: dict[str, str]) -> CodeWatch:
    """What the service loaded: the key's code and environment, and the files outside the
    package that registry entries are defined in or name in `sources=` (a plugin, a user's
    estimator module: part of a code version, not of the key, which the client computes without
    loading the registry)."""
    from lab_assets.core.source_stamps import files
    from lab_assets.runner.noop_answer import sources_outside_the_package

    outside = sorted(sources_outside_the_package())
    return CodeWatch(lambda: (key(env), files(outside)), seen=(k, files(outside)))  # k: the key before loading


def _loop(code: CodeWatch, listener: socket.socket, path: Path, idle_s: float) -> int:
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
                if code.changed():  # edited since the last look: never run old code
                    stopping.append(True)
                    _refuse(conn, "its code changed since it started")
                    continue
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
            if code.changed():  # edited code: commands go to a new service; this one finishes its own
                stopping.append(True)
        if stopping:
            if listener.fileno() in sel.get_map():  # stop taking commands, once
                sel.unregister(listener)
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
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
    threads = running_threads()
    if threads or len(fds) != 3:  # never fork with a thread running: its locks would be copied held
        for fd in fds:
            os.close(fd)
        _refuse(conn, f"threads running in the service: {threads}" if threads else "no terminal given")
        return None
    pid = os.fork()
    if pid == 0:
        try:
            _child(conn, fds, request, inherited)  # never returns
        finally:
            os._exit(1)  # nor does a signal that escaped it carry the child into the service's loop
    for fd in fds:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # as the child does first thing: a signal relayed at once reaches its group
    args = dict(request["args"])
    fn = args.pop("fn", {}).get("function", request["call"])
    print(f"{time.strftime('%H:%M:%S')} pid {pid}: {fn} {json.dumps(args)} (in {request['cwd']})", flush=True)
    try:
        conn.send(json.dumps({"pid": pid}).encode())
    except OSError:
        _interrupt(pid)
    return pid


def _refuse(conn: socket.socket, why: str) -> None:
    """The client runs the command itself, and says why."""
    with contextlib.suppress(OSError):
        conn.send(json.dumps({"refused": why}).encode())
    conn.close()


def _interrupt(pid: int) -> None:
    """SIGINT to a command and its workers (before it has its own process group: to it alone),
    then SIGCONT, as a shell's `kill` does to a stopped job: a command stopped by its client's
    Ctrl-Z, whose client is then killed, is interrupted, not left stopped with the service
    waiting for it."""
    for signum in (signal.SIGINT, signal.SIGCONT):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            try:
                os.killpg(pid, signum)
            except ProcessLookupError:
                os.kill(pid, signum)


def _child(conn: socket.socket, fds: list[int], request: dict, inherited: tuple) -> None:
    code = 1
    try:
        os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        for s in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(s, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        listener, sel, wake_r, wake_w, children = inherited
        for s in (listener, wake_r, wake_w, *children.values()):
            s.close()
        sel.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = io.TextIOWrapper(open(0, "rb", closefd=False), encoding=sys.stdin.encoding)
        sys.stdout = io.TextIOWrapper(
            open(1, "wb", buffering=0, closefd=False),
            encoding=sys.stdout.encoding,
            line_buffering=True,
            write_through=not os.isatty(1),
        )
        sys.stderr = io.TextIOWrapper(
            open(2, "wb", buffering=0, closefd=False),
            encoding=sys.stderr.encoding,
            line_buffering=True,
            write_through=True,
        )
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ[CHILD] = "1"
        code = call(request)
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
        code = code if isinstance(code, int) else 1
        # Done: the client hangs up once it has the exit code, and the service then interrupts
        # this process, whose SIGINT must not land now.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with contextlib.suppress(OSError):
            # The exit code from here, not only from the service once it reaps this process: a
            # service killed meanwhile must not turn a finished command into a failure.
            conn.send(json.dumps({"exit": code}).encode())
        os._exit(code)


if __name__ == "__main__":
    try:
        sys.exit(serve(sys.argv[1]))
    except OSError as e:
        if e.errno != errno.EADDRINUSE:
            raise
        sys.exit(0)
