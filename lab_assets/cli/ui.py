"""`lab ui`: the Dagster webserver and daemon for this project, as `dagster dev` would start
them, except that the daemon is `lab_assets.runtime.daemon` (backfills advanced every few seconds, not
every 30). Both stop together: when one exits, or on Ctrl-C / SIGTERM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from lab_assets.core.settings import dagster_home, project_dir


def add_parser(sub) -> None:
    ui = sub.add_parser("ui", help="start the Dagster UI (webserver + daemon) on this machine only")
    ui.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1, this machine only)")
    ui.add_argument("--port", type=int, default=3000)
    ui.set_defaults(fn=run, writes=True)


def run(args) -> int:
    from lab_assets.runtime.instance import get_instance

    # The instance's tables, created here once: on a fresh lab home the webserver and the daemon
    # would both create the SQLite schedule storage at start, with Dagster's own code that does
    # not take get_instance's lock, and two alembic stamps leave it with two heads.
    get_instance()
    workspace = project_dir() / "workspace.yaml"
    target = ["-w", str(workspace)] if workspace.is_file() else ["-m", "lab_assets.defs.definitions"]
    print(f"lab ui: Dagster UI on http://{args.host}:{args.port} (DAGSTER_HOME={dagster_home()})", flush=True)
    os.chdir(project_dir())
    return serve(args.host, args.port, target)


def serve(host: str, port: int, target: list[str]) -> int:
    """`target`: `-w workspace.yaml` or `-m module`, as for `dagster dev`. Returns the exit code."""
    children = {
        "webserver": subprocess.Popen(
            [sys.executable, "-m", "dagster_webserver", "--host", host, "--port", str(port), *target]
        ),
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
