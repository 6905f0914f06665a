"""Step stdout/stderr captured to the instance's log files (the UI's stdout/stderr tabs), without
Dagster's mirroring to the terminal.

Dagster's local compute log manager mirrors each step's output with a `tail -F` process plus a
Python watcher process, started and stopped per step: two process start-ups per step (their cost:
BENCHMARKS.md, "Why") and CPU taken from the other worker, for output nobody reads in a
terminal: `lab sweep run` prints its own progress, and runs launched from the UI are read in the
UI. Output is written to the same files, so the UI shows it as before.
"""

import sys
from collections.abc import Generator, Sequence
from contextlib import contextmanager

from dagster._core.execution.compute_logs import redirect_to_file
from dagster._core.storage.compute_log_manager import CapturedLogContext, ComputeIOType
from dagster._core.storage.local_compute_log_manager import IO_TYPE_EXTENSION, LocalComputeLogManager
from dagster._utils import ensure_file, touch_file


class FileOnlyComputeLogManager(LocalComputeLogManager):
    @classmethod
    def from_config_value(cls, inst_data, config_value) -> "FileOnlyComputeLogManager":
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def capture_logs(self, log_key: Sequence[str]) -> Generator[CapturedLogContext, None, None]:
        out = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDOUT])
        err = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDERR])
        ensure_file(out)
        ensure_file(err)
        with redirect_to_file(sys.stdout, out), redirect_to_file(sys.stderr, err):
            yield CapturedLogContext(log_key)
        touch_file(self.complete_artifact_path(log_key))  # how the UI knows the capture ended
