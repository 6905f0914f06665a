"""`lab ui`: the Dagster webserver and daemon for this project, as `dagster dev` would start
them, except that the daemon is `lab_assets.daemon` (backfills advanced every few seconds, not
every 30). Both stop together: when one exits, or on Ctrl-C / SIGTERM.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time


def serve(host: str, port: int, target: list[str]) -> int:
    """`target`: `-w workspace.yaml` or `-m module`, as for `dagster dev`. Returns the exit code."""
    children = [
        subprocess.Popen([sys.executable, "-m", "dagster_webserver", "--host", host, "--port", str(port), *target]),
        subprocess.Popen([sys.executable, "-m", "lab_assets.daemon", "run", *target]),
    ]

    def stop(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    code = 0
    try:
        while all(child.poll() is None for child in children):
            time.sleep(0.5)
        failed = [c for c in children if c.returncode]
        if failed:
            name = "webserver" if failed[0] is children[0] else "daemon"
            print(f"lab ui: the Dagster {name} exited with code {failed[0].returncode}", file=sys.stderr)
            code = 1
    except (KeyboardInterrupt, SystemExit) as e:
        code = 0 if isinstance(e, KeyboardInterrupt) else e.code
    finally:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGINT)  # what Ctrl-C sends: both shut down cleanly
        for child in children:
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
    return code
