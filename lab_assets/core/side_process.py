"""A command's side process: W&B logging and a report's drawing on the other core, for a command
that runs cells and reports in its own process (a re-run that only adds metrics, `--workers 1`,
`lab report`). Done in the command, W&B's import, its service's start and a process's first run
cost it ~1.3-1.6 s on the reference machine, in its first cell, and matplotlib's import ~0.45 s in
its report (issue 44). Started before the command imports Dagster (`start`), the side process does
that on the other core meanwhile (`_rehearse`, and the modules it was named, with their `warm()`);
the command's steps hand it their W&B runs (`track_cell`, `track_sweep`) and the report's drawing
(`call`).

Each request waits for its answer, which is what doing it here gives: a W&B run's id, its folder
or the error; a function's result. So a cell's metadata, its run's files, the order in which runs
are written and a report's bytes are the same either way. Where there is no such process (none
started, started by another process, or gone) or it fails, the work is done here.

Not started where it saves nothing: W&B off or already loaded (the warm service's commands) and
the named modules loaded already, or one core (the two processes would share it). Requests and
answers are JSON lines over the process's stdin and stdout (no pickle); a function is named by
its module and name, and only in a module the process was started with.
"""

from __future__ import annotations

import atexit
import base64
import importlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab_assets.core import gc_thresholds, tracking
from lab_assets.core.warm_workers import default_workers

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
MODULES_FIRST = "--modules-first"
# A 1x1 grey PNG: the rehearsal's image.
REHEARSAL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNoAAAAggCBd81ytgAAAABJRU5ErkJggg=="


class SideProcess:
    """The process (`python -m lab_assets.core.side_process <module>...`), started now; it loads
    `modules` after W&B's rehearsal (before it: `modules_first`). `call` sends it a request and
    waits for its answer (None once the process is gone)."""

    def __init__(self, modules: tuple[str, ...], modules_first: bool = False) -> None:
        env = dict(os.environ)
        # The child imports this package from where this process did, installed or not.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH")) if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, *([MODULES_FIRST] if modules_first else []), *modules],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # W&B's messages: as quiet as a cell's run in this process (silent, its output captured).
            stderr=subprocess.DEVNULL,
            env=env,
            # A terminal's Ctrl-C is for the command; the process ends when the command closes its stdin.
            start_new_session=True,
        )

    def call(self, line: bytes) -> dict[str, Any] | None:
        """The answer to one request (a JSON line)."""
        try:
            self._process.stdin.write(line)
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        except (OSError, ValueError):  # a broken pipe, a closed one
            return None
        return json.loads(line) if line else None

    def close(self, wait: float | None = None) -> None:
        """Close its stdin (it ends once its last run is finished); `wait`: seconds to wait for that."""
        try:
            self._process.stdin.close()
        except OSError:
            pass
        if wait is not None:
            try:
                self._process.wait(wait)
            except subprocess.TimeoutExpired:
                self._process.kill()


def _context() -> tuple:
    """What a run's logging depends on beside its request: the process (a forked child logs its
    own runs), the folder it runs in and the variables that place and shape runs (the lab home,
    W&B's mode and project: `LAB_*`, `WANDB_*`)."""
    return os.getpid(), os.getcwd(), sorted(i for i in os.environ.items() if i[0].startswith(("LAB_", "WANDB_")))


_current: tuple[tuple, SideProcess] | None = None  # (the context it was started in, it)


def worth_it(modules: tuple[str, ...]) -> bool:
    wandb = tracking.mode() != "disabled" and "wandb" not in sys.modules
    return (wandb or any(m not in sys.modules for m in modules)) and default_workers() > 1


def start(modules: tuple[str, ...] = (), modules_first: bool = False) -> None:
    """Start this process's side process, loading `modules` (those of the functions it will be
    `call`ed with), unless it has one or it would not pay (above). W&B's rehearsal comes first,
    unless `modules_first` (`lab report`, which draws before it logs): a re-run's first W&B run
    comes before its report, and rehearsing W&B later slows the command's own start (measured)."""
    global _current
    if _current is not None and _current[0] == _context():
        return
    stop()
    if worth_it(modules):
        _current = (_context(), SideProcess(modules, modules_first))
        atexit.unregister(stop)  # once, however often a long-lived process starts one
        atexit.register(stop)


def stop(wait: float | None = None) -> None:
    """Let this process's side process end (`wait`: seconds to wait for it); later runs are
    logged here."""
    global _current
    current, _current = _current, None
    if current is not None and current[0][0] == os.getpid():
        current[1].close(wait)


def _remote(request: dict[str, Any]) -> dict[str, Any] | None:
    global _current
    if _current is None:
        return None
    if _current[0] != _context():  # started for another lab home, say: this run is logged here
        stop()
        return None
    try:
        line = json.dumps(request, default=_plain).encode() + b"\n"
    except (TypeError, ValueError):  # not JSON (a lab's own config type): W&B here takes it as it is
        return None
    answer = _current[1].call(line)
    if answer is None:  # the process is gone: this run and the later ones are logged here
        _current = None
    return answer


def track_cell(cell, sweeps, config, values, image=None, uses=(), logs=()) -> dict[str, Any]:
    """`tracking.track_cell` (its arguments), in the side process if this process started one."""
    if _current is not None and tracking.mode() != "disabled":  # a sweep's workers have none: no request
        request = {
            "kind": "cell",
            "cell": cell,
            "sweeps": sweeps,
            "config": config,
            "values": values,
            "image": None if image is None else base64.b64encode(image).decode(),
            "uses": [vars(r) for r in uses],
            "logs": [vars(r) for r in logs],
        }
        if (answer := _remote(request)) is not None:
            return answer
    return tracking.track_cell(cell, sweeps, config, values, image, uses, logs)


def track_sweep(sweep: str, summary) -> dict[str, Any]:
    """`tracking.track_sweep` of the sweep's summary (a DataFrame), in the side process if this
    process started one."""
    columns, rows = tracking.table_rows(summary)
    if tracking.mode() != "disabled":
        answer = _remote({"kind": "sweep", "sweep": sweep, "columns": columns, "rows": rows})
        if answer is not None:
            return answer
    return tracking.track_sweep(sweep, columns, rows)


def call(function: Callable[[dict], Any], request: Callable[[], dict[str, Any]]) -> Any | None:
    """`function(request())` in the side process (`function`: in a module it was started with;
    `request`: built only where there is one), or None: there is none, or it failed there (the
    caller then does it here, and sees its error, if any, for itself)."""
    if _current is None:
        return None
    try:
        args = request()
    except Exception:  # noqa: BLE001 - what cannot be sent (a type pyarrow cannot write, say) is done here
        return None
    answer = _remote({"kind": "call", "function": f"{function.__module__}:{function.__name__}", "args": args})
    return None if answer is None or "error" in answer else answer["result"]


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (a value, a config entry)."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _answer(request: dict[str, Any], modules: tuple[str, ...]) -> dict[str, Any]:
    if request["kind"] == "call":
        module, name = request["function"].split(":")
        if module not in modules:
            return {"error": f"{module} is not a module this process was started with"}
        try:
            return {"result": getattr(importlib.import_module(module), name)(request["args"])}
        except Exception as e:  # noqa: BLE001 - answered: the caller does it again and sees it fail
            return {"error": f"{type(e).__name__}: {e}"}
    if request["kind"] == "sweep":
        return tracking.track_sweep(request["sweep"], request["columns"], request["rows"])
    image = request["image"]
    return tracking.track_cell(
        request["cell"],
        request["sweeps"],
        request["config"],
        request["values"],
        None if image is None else base64.b64decode(image),
        tuple(tracking.Reference(**r) for r in request["uses"]),
        tuple(tracking.Reference(**r) for r in request["logs"]),
    )


def _rehearse() -> None:
    """One offline run in a temporary folder, as a cell's run goes (an artifact by reference, an
    image): W&B's service starts, and the ~640 modules a process's first run loads (pandas,
    requests, OpenTelemetry; ~0.4 s) load here, not while the first cell waits."""
    import wandb

    tracking.warm()
    with tempfile.TemporaryDirectory() as folder:
        png = Path(folder) / "rehearsal.png"
        png.write_bytes(base64.b64decode(REHEARSAL_PNG))
        run = wandb.init(
            project="lab_assets-rehearsal",
            mode="offline",
            dir=folder,
            reinit="finish_previous",
            settings=wandb.Settings(**tracking.SETTINGS),
        )
        artifact = wandb.Artifact("rehearsal", type="rehearsal")
        artifact.add_reference(png.as_uri(), name=png.name, checksum=True)
        run.log_artifact(artifact)
        run.log({"embedding": wandb.Image(str(png))})
        run.finish()


def _load(modules: tuple[str, ...]) -> None:
    for name in modules:
        module = importlib.import_module(name)
        if hasattr(module, "warm"):
            module.warm()


def main(modules: tuple[str, ...], modules_first: bool) -> None:
    """Load what the command will ask for, then serve requests until stdin closes, then end (W&B's
    own exit handlers included)."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # whatever W&B prints cannot garble an answer
    steps = [_rehearse] if tracking.mode() != "disabled" else []
    steps.insert(0 if modules_first else len(steps), lambda: _load(modules))
    for step in steps:
        try:
            step()
        except Exception:  # noqa: BLE001 - loading only saves time; the requests say what fails
            pass
    for line in sys.stdin:
        try:
            answer = _answer(json.loads(line), modules)
        except Exception as e:  # noqa: BLE001 - a bad request is answered, never the end of the process
            answer = {"wandb_mode": tracking.mode(), "wandb_error": f"{type(e).__name__}: {e}"}
        answers.write(json.dumps(answer, default=str) + "\n")
        answers.flush()


if __name__ == "__main__":
    gc_thresholds.raise_for_a_large_stack()
    first = sys.argv[1:2] == [MODULES_FIRST]
    main(tuple(sys.argv[2 if first else 1 :]), first)
