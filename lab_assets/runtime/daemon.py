"""`dagster-daemon run`, with asset backfills advanced every few seconds instead of every 30.

A backfill of a sweep crosses five waits for the backfill daemon's next iteration (start,
datasets -> cells -> metric table -> report -> done); at Dagster's fixed 30 s (a constant, not a
setting) the cores sit idle for much of a sweep launched from the UI (BENCHMARKS.md, "How the
numbers above moved"). An iteration with nothing to do is one query, so a short interval costs
nothing. The constant is private Dagster API (docs/ARCHITECTURE.md, "Private Dagster API").
"""

BACKFILL_INTERVAL_SECONDS = 3


def main() -> None:
    import dagster._daemon.controller as controller
    from dagster._daemon.cli import main as dagster_daemon

    # Read by the backfill loop when it starts (dagster/_daemon/backfill.py).
    controller.DEFAULT_DAEMON_INTERVAL_SECONDS = BACKFILL_INTERVAL_SECONDS
    dagster_daemon()


if __name__ == "__main__":  # guarded: a warm worker spawned by the daemon re-imports this module
    main()
