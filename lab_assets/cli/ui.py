"""`lab ui`: the Dagster webserver and daemon for this project, as `dagster dev` would start
them, except that the daemon is `lab_assets.runtime.daemon` (backfills advanced every few seconds, not
every 30). Both stop together: when one exits, or on Ctrl-C / SIGTERM.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time


def serve(host: str, port: int, target: list[str]) -> int:
    """`target`: `-w workspace.yaml` or `-m module`, as for `dagster dev`. Returns the exit code."""
    children = {
        "webserver": subprocess.Popen([sys.executable, "-m", "dagster_webserver", "--host", host, "--port", str(port), *target]),
        "daemon": subprocess.Popen([sys.executable, "-m", "lab_assets.runtime.daemon", "run", *target]),
    }

    def stop(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    code = 0
    try:
        while all(child.poll() is None for child in children.values()):
            time.sleep(0.5)
        for name, child in children.items():
            if child.returncode:
                print(f"lab ui: the Dagster {name} exited with code {child.returncode}", file=sys.stderr)
                code = 1
    except (KeyboardInterrupt, SystemExit) as e:
        code = 0 if isinstance(e, KeyboardInterrupt) else e.code
    finally:
        for child in children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGINT)  # what Ctrl-C sends: both shut down cleanly
        for child in children.values():
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
    return code
