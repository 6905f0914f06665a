"""W&B logging in a process of its own, for a command that runs cells and reports in its own
process (a re-run that only adds metrics, `lab report`). Logged there, W&B's import, its service's
start and a process's first run cost that process ~1.3-1.6 s on the reference machine, in its
first cell (issue 44). Started before the command imports Dagster (`start`), the tracking process
does all that on the other core meanwhile (`_rehearse`); the command's cells hand it their runs
(`track_cell`, `track_sweep`).

Each call waits until its W&B run is finished and returns what logging it here would: the run id,
its folder, or the error. So a cell's metadata, its run's files and the order in which runs are
written are the same either way. Where there is no such process (none started, started by
another process, or gone), the run is logged here (`core/tracking.py`).

Not started where logging here costs no more: W&B off, W&B loaded already (the warm service's
commands), or one core (the two processes would share it). Requests and answers are JSON lines
over the process's stdin and stdout (no pickle).
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from lab_assets.core import tracking
from lab_assets.core.warm_workers import default_workers

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
# A 1x1 grey PNG: the rehearsal's image.
REHEARSAL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNoAAAAggCBd81ytgAAAABJRU5ErkJggg=="


class TrackingProcess:
    """The process (`python -m lab_assets.core.tracking_process`), started now; `call` sends it a
    request and waits for its answer (None once the process is gone)."""

    def __init__(self) -> None:
        env = dict(os.environ)
        # The child imports this package from where this process did, installed or not.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH")) if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__],
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


_current: tuple[tuple, TrackingProcess] | None = None  # (the context it was started in, it)


def worth_it() -> bool:
    return tracking.mode() != "disabled" and "wandb" not in sys.modules and default_workers() > 1


def start() -> None:
    """Start this process's tracking process, unless it has one or it would not pay (above)."""
    global _current
    if _current is not None and _current[0] == _context():
        return
    stop()
    if worth_it():
        _current = (_context(), TrackingProcess())
        atexit.unregister(stop)  # once, however often a long-lived process starts one
        atexit.register(stop)


def stop(wait: float | None = None) -> None:
    """Let this process's tracking process end (`wait`: seconds to wait for it); later runs are
    logged here."""
    global _current
    current, _current = _current, None
    if current is not None and current[0][0] == os.getpid():
        current[1].close(wait)


def _remote(request: dict[str, Any]) -> dict[str, Any] | None:
    global _current
    if _current is None or tracking.mode() == "disabled":
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
    """`tracking.track_cell` (its arguments), in the tracking process if this process started one."""
    if _current is not None:  # a sweep's workers have none: they build no request
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
    """`tracking.track_sweep` of the sweep's summary (a DataFrame), in the tracking process if this
    process started one."""
    columns, rows = tracking.table_rows(summary)
    answer = _remote({"kind": "sweep", "sweep": sweep, "columns": columns, "rows": rows})
    if answer is not None:
        return answer
    return tracking.track_sweep(sweep, columns, rows)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (a value, a config entry)."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _answer(request: dict[str, Any]) -> dict[str, Any]:
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


def main() -> None:
    """Serve requests until stdin closes, then end (W&B's own exit handlers included)."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # whatever W&B prints cannot garble an answer
    if tracking.mode() != "disabled":
        try:
            _rehearse()
        except Exception:  # noqa: BLE001 - a rehearsal only saves time; the runs say what fails
            pass
    for line in sys.stdin:
        try:
            answer = _answer(json.loads(line))
        except Exception as e:  # noqa: BLE001 - a bad request is answered, never the end of the process
            answer = {"wandb_mode": tracking.mode(), "wandb_error": f"{type(e).__name__}: {e}"}
        answers.write(json.dumps(answer, default=str) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
