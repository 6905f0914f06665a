"""Dagster's run queue, polled every fraction of a second instead of every whole second.

A sweep launched from the UI is two runs per cell (the backfill daemon launches `metrics` after
`embedding` has materialized), each started only at the queue's next look; at Dagster's smallest
setting (1 s: the config field is an integer) the warm workers sit idle between runs. A look at
the queue is two small SQLite queries. Kept over Dagster's own coordinator because of the
measurement in BENCHMARKS.md, "Run queue" (`benchmarks/queue_gap.py`).

It relies on the queue daemon reading this property as its interval (docs/ARCHITECTURE.md,
"Private Dagster API"; guarded in lab_assets_tests/test_dagster_guards.py).
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
