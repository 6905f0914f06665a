"""Sweep `schedule:` crons (lab_assets/core/cron.py): the same strings valid as for a Dagster
schedule, and the last tick at or before a time."""

from datetime import UTC, datetime

import dagster as dg
import pytest

from lab_assets.core import cron

CRONS = [
    "0 3 * * *",
    "*/5 * * * *",
    "0 3 * * MON",
    "15 */2 1 * *",
    "@daily",
    "0 0 29 2 *",
    "0 3 L * *",
    "* * * * * *",
    "0 0 30 2 *",
    "0 0 31 2 *",
    "60 * * * *",
    "every day",
    "",
    "0 3 * *",
]


def _dagster_accepts(schedule: str) -> bool:
    try:
        dg.ScheduleDefinition(name="s", cron_schedule=schedule, target=dg.AssetSelection.all())
    except Exception:
        return False
    return True


@pytest.mark.parametrize("schedule", CRONS)
def test_valid_exactly_when_dagster_accepts_it_as_a_schedule(schedule):
    assert cron.is_valid(schedule) == _dagster_accepts(schedule)


def _t(*args) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


def test_last_tick_is_at_or_before_now():
    assert cron.last_tick("0 3 * * *", _t(2026, 11, 23, 3, 0)) == _t(2026, 11, 23, 3, 0)  # on the tick: that tick
    assert cron.last_tick("0 3 * * *", _t(2026, 11, 23, 3, 0, 1)) == _t(2026, 11, 23, 3, 0)
    assert cron.last_tick("0 3 * * *", _t(2026, 11, 23, 2, 59, 59)) == _t(2026, 11, 22, 3, 0)
    assert cron.last_tick("*/5 * * * *", _t(2026, 11, 23, 10, 7, 30)) == _t(2026, 11, 23, 10, 5)
