"""Runs whose process is gone: a run executed in a `lab` process (not by a launcher that Dagster's
run monitoring watches) is tagged with its owner, `<host>:<pid>`; when that process died (SIGKILL,
power loss) the run still reads as started until someone marks it failed.

`DagsterInstance.report_run_failed` is not marked public by Dagster (docs/ARCHITECTURE.md,
"Private Dagster API"; guarded in lab_assets_tests/test_dagster_guards.py).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable

import dagster as dg

from lab_assets.core.processes import alive


def owner() -> str:
    """This process, as an owner tag's value."""
    return f"{socket.gethostname()}:{os.getpid()}"


def fail_orphans(instance: dg.DagsterInstance, runs: Iterable[dg.DagsterRun], owner_tag: str) -> int:
    """Mark failed the unfinished runs whose owner process (`owner_tag` holds it) on this host is
    gone. Returns how many."""
    failed = 0
    for run in runs:
        who = run.tags.get(owner_tag)
        if run.is_finished or not who:
            continue
        host, pid = who.rsplit(":", 1)
        if host == socket.gethostname() and not alive(int(pid)):
            instance.report_run_failed(run, f"its process {pid} on {host} is gone (killed or crashed)")
            failed += 1
    return failed
