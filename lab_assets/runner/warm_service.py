"""`lab`'s warm service: Dagster, the definitions, scikit-learn, numba's kernels, W&B's modules and
matplotlib loaded once per machine, not once per command (issue #15's edit-rerun loop).

Without it, every `lab sweep run` that has work to do pays ~2 s to import and plan, and each of
its workers ~3 s of CPU to warm up: on two cores the first cell of an edited sweep starts ~4 s in
(BENCHMARKS.md, "Fixed costs"). The service is one process that has paid this; a command that
has work to do (`lab sweep run` past its no-op answer; `lab sweep plan`, `lab report`, `lab
verify`) hands its parsed arguments, folder, environment and terminal (file descriptors 0-2, over
a Unix socket) to it; the service forks a child that calls the same function the client would have
called next (`cli/main.execute`, named in the request: the runner may not import the CLI), with
those arguments, not the command line again, in its own process group, and the child's warm
workers fork from it too (runner/preload.py), warm. The client forwards Ctrl-C, Ctrl-Z and other
signals to that group and exits with the child's exit code.

What a forked command could inherit wrongly is excluded by construction:
- A service serves one environment and one code: its key is a digest of the environment (less
  the variables a shell changes between commands: `VOLATILE`), the interpreter, the package's
  source files and the installed distributions. A command with another key gets another service;
  a service whose code changed (checked before every command, with the files outside the package
  that registry entries are defined in or name in `sources=`) refuses it, stops taking commands
  and ends.
- It loads modules only: no instance, no settings, no thread (checked before every fork), so a
  child derives its lab home, instance and storage from its own folder and environment.

On by default on Linux when stdin and stderr are terminals (a researcher's loop), off otherwise
(scripts, CI, tests, macOS); `LAB_SERVICE=1` or `0` decides explicitly. A service ends after `LAB_SERVICE_IDLE`
seconds (default 1800) without a command; `lab service stop` ends them now. Files: one folder per
user, mode 0700, under $XDG_RUNTIME_DIR or the temp folder.

This module is the client and what client and service share; it imports only the standard
library and `core/settings`: the client runs before Dagster is imported, and a command that the service cannot take
runs in the client as before. The service's process is `runner/warm_service_process.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lab_assets.core import settings
from lab_assets.core.settings import SERVICE_CHILD_VAR as CHILD
from lab_assets.core.settings import SERVICE_IDLE_VAR as IDLE
from lab_assets.core.settings import SERVICE_VAR as SWITCH

# Variables a shell or terminal changes between two commands without changing what they compute.
VOLATILE = frozenset(
    {
        "PWD",
        "OLDPWD",
        "_",
        "SHLVL",
        "COLUMNS",
        "LINES",
        "WINDOWID",
        "TERM_SESSION_ID",
        "SSH_TTY",
        "SSH_CLIENT",
        "SSH_CONNECTION",
        "TMUX_PANE",
        "STY",
        "GPG_TTY",
        "PS1",
        "PROMPT_COMMAND",
        "XDG_SESSION_ID",
        CHILD,
        SWITCH,
        IDLE,
    }
)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
START_TIMEOUT_S = 60.0
MESSAGE = 1 << 20  # bytes: a request (call, arguments, folder, environment) fits in one message


def enabled() -> bool:
    """LAB_SERVICE=1, or unset on Linux in a terminal. Not by default elsewhere: macOS's system
    libraries are not safe in a child forked without exec (why Python's multiprocessing spawns there)."""
    choice = settings.service_choice()
    if settings.in_service_child() or choice == "0":
        return False
    terminal = all(s is not None and s.isatty() for s in (sys.stdin, sys.stderr))
    return choice == "1" or (terminal and sys.platform.startswith("linux"))


def inside() -> bool:
    """This process is a command the service forked: its modules are loaded, no thread runs."""
    return settings.in_service_child()


def key(env: dict[str, str] | None = None) -> str:
    from lab_assets.core.source_stamps import files, package_sources, plugin_sources

    env = os.environ if env is None else env
    stable = sorted((k, v) for k, v in env.items() if k not in VOLATILE)
    # sys.path[0] is the script's folder (`lab`) or the current one (`python -m`): not the code's.
    paths = [p for p in sys.path[1:] if p]
    installed = files(p for p in paths if os.path.isdir(p))
    # LAB_PLUGINS modules as found from this folder: another project's `plugins` is another service.
    text = repr((sys.executable, paths, stable, package_sources(), installed, plugin_sources(entry_points=False)))
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


def function(path: str):
    """The function at `module:name`."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _path(fn) -> str:
    return f"{fn.__module__}:{fn.__qualname__}"


def encode(entry: str, args: argparse.Namespace) -> dict:
    """A call of the function at `entry` (`module:name`) with `args`, as JSON: each function among
    the arguments (the command's `fn`) by its import path."""
    plain = {k: {"function": _path(v)} if callable(v) else v for k, v in vars(args).items()}
    return {"call": entry, "args": plain}


def call(request: dict) -> int:
    """The call `encode` described, made in this process: its exit code."""
    args = {
        k: function(v["function"]) if isinstance(v, dict) and "function" in v else v for k, v in request["args"].items()
    }
    return function(request["call"])(argparse.Namespace(**args))


def forward(entry: str, args: argparse.Namespace) -> int | None:
    """Call the function at `entry` with `args` in the warm service (started if needed) and return its exit code; None
    if the service cannot be used (the caller goes on itself)."""
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
        return _exchange(sock, encode(entry, args))


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
        process = subprocess.Popen(
            [sys.executable, "-m", "lab_assets.runner.warm_service_process", k],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            env={**os.environ, SWITCH: "0"},
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if (sock := _connect(here / f"{k}.sock")) is not None:
            print(
                f"lab: started the warm service (Dagster and the libraries stay loaded for the next commands; it "
                f"ends after {settings.service_idle_seconds() / 60:g} min idle, on `lab service stop`; "
                f"LAB_SERVICE=0: never use it)",
                file=sys.stderr,
                flush=True,
            )
            return sock
        if process.poll() not in (None, 0):  # 0: another command's service holds the key; it will listen
            break
        time.sleep(0.02)
    print(f"lab: the warm service did not start (its log: {log}); running without it", file=sys.stderr)
    return None


def _exchange(sock: socket.socket, call: dict) -> int | None:
    request = json.dumps({**call, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    pending: list[int] = []
    child: list[int] = []

    def relay(signum, frame) -> None:
        if child:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child[0], signum)  # the command and its workers, as a terminal's Ctrl-C would
        else:
            pending.append(signum)

    def suspend(signum, frame) -> None:
        # Ctrl-Z reaches the client's group only: stop the command's group too, then the client as
        # the terminal would have; the shell's `fg` or `bg` continues the client here. Before the
        # service has said which process runs the command, the stop waits for it (milliseconds):
        # stopping the client alone would leave the command running.
        if not child:
            pending.append(signum)
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child[0], signal.SIGSTOP)
        os.kill(os.getpid(), signal.SIGSTOP)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child[0], signal.SIGCONT)

    saved = {s: signal.signal(s, relay) for s in FORWARDED} | {signal.SIGTSTP: signal.signal(signal.SIGTSTP, suspend)}
    try:
        socket.send_fds(sock, [request], [0, 1, 2])
        reply = json.loads(sock.recv(MESSAGE) or b"{}")
        if "pid" not in reply:  # refused, or the service is ending: run here
            print(
                f"lab: the warm service did not take the command ({reply.get('refused', 'it is ending')}); "
                "running it here",
                file=sys.stderr,
            )
            return None
        child.append(reply["pid"])
        while pending:
            signum = pending.pop(0)
            (suspend if signum == signal.SIGTSTP else relay)(signum, None)
        reply = sock.recv(MESSAGE)
        if not reply:
            print("lab: the warm service ended during the command", file=sys.stderr)
            return 1
        return int(json.loads(reply)["exit"])
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
        for signum in pending:  # the service did not take the command: they were meant for this process
            signal.raise_signal(signum)


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
