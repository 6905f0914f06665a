"""Dagster's run queue, polled every fraction of a second instead of every whole second.

A sweep launched from the UI is two runs per cell (the backfill daemon launches `metrics` after
`embedding` has materialized), each started only at the queue's next look: at Dagster's
smallest setting (1 s, an integer) the warm workers idled ~0.7 s between runs, ~50 s of a 200 s
backfill of dr_benchmark. A look at the queue is two small SQLite queries.
"""

from __future__ import annotations

import dagster as dg



class RunQueue(dg.QueuedRunCoordinator):
    """QueuedRunCoordinator whose `dequeue_interval_seconds` may be a fraction."""

    def __init__(self, dequeue_interval_seconds: float | None = None, **kwargs):
        super().__init__(**kwargs)
        self._interval = dequeue_interval_seconds or super().dequeue_interval_seconds

    @property
    def dequeue_interval_seconds(self) -> float:  # ty: ignore[invalid-method-override]
        return self._interval

    @classmethod
    def config_type(cls):
        fields = dict(super().config_type())
        fields["dequeue_interval_seconds"] = dg.Field(
            float, is_required=False, description="Seconds between looks at the queue (fractions allowed)."
        )
        return fields
