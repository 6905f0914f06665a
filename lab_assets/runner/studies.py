"""`lab study run`: the study loop (defs/study_loop.py) driven from a terminal, each next run
executed in this process through the runner, tagged with this process so that a later `advance`
can tell a killed run from a running one."""

from __future__ import annotations

import time
from collections.abc import Callable

import dagster as dg

from lab_assets.defs.study_loop import PID_TAG, Progress, advance
from lab_assets.defs.work import Work
from lab_assets.runner.local import LocalTarget
from lab_assets.runner.run import run_work
from lab_assets.runtime.orphans import owner
from lab_assets.training.study import Study

POLL_SECONDS = 5.0  # while another process's run of the study is in progress


def run_study(
    instance: dg.DagsterInstance, study: Study, on_progress: Callable[[Progress], None] = lambda p: None
) -> Progress:
    """Advance until finished, executing each launch here as a Dagster run (visible in the UI like
    any other); waits while another process's run is in progress."""
    with LocalTarget(1) as here:
        while True:
            p = advance(instance, study)
            on_progress(p)
            if p.finished:
                return p
            if p.launch is None:
                time.sleep(POLL_SECONDS)
                continue
            if run_work(Work.single(p.launch, {PID_TAG: owner()}), here).interrupted:
                raise KeyboardInterrupt  # Ctrl-C: Dagster failed the trial's run; stop, don't relaunch
