"""`lab service status|start|stop`: the warm service (runner/warm_service.py; its process:
runner/warm_service_process.py)."""

from __future__ import annotations

from lab_assets.cli.exits import FAILED
from lab_assets.runner import warm_service


def add_parser(sub) -> None:
    service = sub.add_parser(
        "service",
        help="the warm service that runs `lab sweep plan|run`, `lab report` and "
        "`lab verify` with Dagster and the libraries already loaded (on by default in a "
        "terminal; LAB_SERVICE=0/1)",
    )
    service.add_argument("action", choices=["status", "start", "stop"])
    service.set_defaults(fn=run)


def run(args) -> int:
    if args.action == "stop":
        print(f"lab service: {warm_service.stop_all()} stopped")
        return 0
    if args.action == "start":
        started = warm_service.start()
        print(f"lab service: {'ready' if started else 'did not start'}")
        return 0 if started else FAILED
    found = warm_service.running()
    for s in found:
        whose = "this environment" if s["this_environment"] else "another environment or code"
        print(f"{s['key']}  pid {s['pid']}  {whose}  log {s['log']}")
    if not found:
        print("lab service: none running")
    return 0
