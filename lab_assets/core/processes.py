"""Whether a process is still running, for the places that watch one by pid (run owners, the
cluster's services, a run's process, a warm worker)."""

from __future__ import annotations

import os
from pathlib import Path


def alive(pid: int) -> bool:
    """Running: it exists (someone else's counts) and is not a zombie, which has exited and only
    waits for its parent to reap it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):  # no /proc (macOS): existing is all we can tell
        return True
