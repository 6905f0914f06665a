"""How a `lab` process ends once its work is done: every exit handler runs and the output is
flushed, as in any exit; then the process ends at once, without the interpreter's teardown.

That teardown does nothing a finished command needs, and it costs or hurts:
- its final garbage collections walk every object Dagster, pandas and scikit-learn built:
  0.3-0.6 s for `lab`, 5-7 s for two sweep workers shutting down on a loaded 2-core machine
  (BENCHMARKS.md, issue #15);
- native libraries end their thread pools there. One whose thread is still ending aborts the
  process after the command's output was complete ("terminate called without an active
  exception", exit -6: 5 of 100 runs of a script that reads a Parquet file with pandas and
  exits), and DuckDB (nanobind) prints "leaked instances".
Memory, files and sockets go back to the operating system with the process either way. The warm
service's commands end the same way (runner/warm_service_process.py).
"""

import atexit
import os
import sys

_status: int | None = None


def end_without_teardown(status: int | None = None) -> None:
    """At exit, once the exit handlers registered after this call have run (so: call it first
    thing), end with `status`, or with the one the program gave `exiting`. Without either (an
    exception escaped the program), the interpreter's usual exit and its status."""
    global _status
    _status = status
    atexit.register(_end)


def exiting(status: int) -> int:
    """The program's exit status, for `end_without_teardown`; returned as is."""
    global _status
    _status = status
    return status


def _end() -> None:
    if _status is None:
        return
    if "logging" in sys.modules:  # its exit handler is registered at its import, maybe before ours
        sys.modules["logging"].shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that left, a closed stream: nothing more to say
            pass
    os._exit(_status)
