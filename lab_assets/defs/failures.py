"""A failed run's reason in one line: the user's exception, not Dagster's wrappers around it.
What `lab sweep run` prints per failed cell and what the study loop says of a failed corpus or
trial, so a person reads the cause without opening the run's log."""

from __future__ import annotations

import re

import dagster as dg


def root_cause(error) -> str:
    """The innermost cause of a serializable error (a step's or a run's failure)."""
    if error is None:
        return "failed (see the run's logs)"
    while error.cause is not None:
        error = error.cause
    message = error.message.strip()
    if not error.cls_name:
        return message
    # Dagster's message usually starts with the class name already, sometimes fully qualified.
    message = re.sub(rf"^(?:[\w.]+\.)?{re.escape(error.cls_name)}: ", "", message)
    return f"{error.cls_name}: {message}"


def run_failure(instance: dg.DagsterInstance, run_id: str) -> str:
    """The first line of the root cause of the run's first step failure (else of the run's own)."""
    for event_type in (dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.RUN_FAILURE):
        for record in instance.get_records_for_run(run_id, of_type=event_type).records:
            error = getattr(record.event_log_entry.dagster_event.event_specific_data, "error", None)
            if error is not None:
                return root_cause(error).splitlines()[0]
    return "no failure recorded (see the run's log)"
