"""Cron strings of sweep `schedule:` fields: validity and the last tick, with croniter (the library
Dagster itself vendors for its schedules), so the domain layers check a schedule without Dagster."""

from __future__ import annotations

from datetime import UTC, datetime


def is_valid(schedule: str) -> bool:
    """What Dagster accepts as a schedule's cron string: five fields (no seconds), and not a day
    that never comes (30 or 31 February)."""
    from croniter import croniter

    if not croniter.is_valid(schedule):
        return False
    fields = croniter.expand(schedule)[0]
    if len(fields) != 5:
        return False
    day, month = fields[2], fields[3]
    return not (month == [2] and len(day) == 1 and day[0] in (30, 31))


def last_tick(schedule: str, now: float) -> float:
    """The latest tick at or before `now` (a Unix time), in UTC."""
    from croniter import croniter

    previous = croniter(schedule, datetime.fromtimestamp(now, UTC)).get_prev(float)
    following = croniter(schedule, datetime.fromtimestamp(previous, UTC)).get_next(float)
    return following if following <= now else previous
