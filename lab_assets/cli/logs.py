"""`lab logs RUN`: a run's full log from the instance (its events, every failure's whole trace,
each step's captured stdout/stderr), the place a one-line failure in `lab sweep run` points to."""

from __future__ import annotations

import datetime
import sys

from lab_assets.cli.exits import BAD_INPUT
from lab_assets.core.settings import dagster_home

UI_URL = "http://127.0.0.1:3000/runs/{run_id}"


def add_parser(sub) -> None:
    logs = sub.add_parser("logs", help="a run's full log: events, failures with their traces, step output")
    logs.add_argument("run", help="a run id, or its first 8 characters (as `lab sweep run` prints them)")
    logs.set_defaults(fn=run)


def run(args) -> int:
    from lab_assets.runtime.instance import get_instance  # Dagster: not for `lab --help`

    try:
        lines = run_log(get_instance(), args.run)
    except UnknownRun as e:
        print(f"lab logs: {e}", file=sys.stderr)
        return BAD_INPUT
    print("\n".join(lines))
    return 0


class UnknownRun(LookupError):
    pass


def resolve(instance, run_id: str) -> str:
    """A full run id from a full id or a unique prefix (the 8 characters the terminal shows)."""
    run_id = run_id.strip()
    if len(run_id) == 36 and instance.get_run_by_id(run_id) is not None:
        return run_id
    found = [r for r in instance.get_run_ids() if r.startswith(run_id)] if len(run_id) >= 4 else []
    if len(found) == 1:
        return found[0]
    if not found:
        raise UnknownRun(f"no run {run_id!r} in the instance at {dagster_home()}")
    raise UnknownRun(f"run id prefix {run_id!r} is ambiguous: {', '.join(sorted(found)[:5])}, ...")


def failure_traces(instance, run_id: str) -> list[str]:
    """Every step failure's (or else the run failure's) whole error: message, stack and causes."""
    traces = []
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None or not (event.is_step_failure or event.event_type_value == "PIPELINE_FAILURE"):
            continue
        data = event.event_specific_data
        error = getattr(data, "error", None)
        if error is not None:
            traces.append(f"{event.step_key or 'run'}: {error.to_string()}")
    return traces


def _when(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts).strftime("%H:%M:%S")


def run_log(instance, run_id: str) -> list[str]:
    run_id = resolve(instance, run_id)
    run = instance.get_run_by_id(run_id)
    partition = run.tags.get("dagster/partition", "")
    lines = [f"run {run_id}: {run.job_name} {partition} {run.status.value}"]
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        kind = event.event_type_value if event else entry.level if isinstance(entry.level, str) else "LOG"
        step = entry.step_key or ""
        message = (entry.user_message or "").strip()
        if event is not None and event.event_specific_data is not None:
            error = getattr(event.event_specific_data, "error", None)
            if error is not None:
                message = f"{message}\n{error.to_string().rstrip()}"
        lines.append(f"{_when(entry.timestamp)} {step:<18} {kind:<22} {message}".rstrip())
    logs = dagster_home() / "storage" / run_id / "compute_logs"
    for path in sorted(logs.glob("*.out")) + sorted(logs.glob("*.err")) if logs.is_dir() else []:
        text = path.read_text(errors="replace").strip()
        if text:
            lines += [f"--- step {'stdout' if path.suffix == '.out' else 'stderr'} ({path})", text]
    lines.append(f"UI (with `lab ui` running): {UI_URL.format(run_id=run_id)}")
    return lines
