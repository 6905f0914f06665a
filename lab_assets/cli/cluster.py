"""`lab cluster up|down`: start or stop the one-machine cluster (`lab_assets/cluster/`: Postgres,
S3, the code server, webserver and daemon, one process per run)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lab_assets.cli.exits import FAILED
from lab_assets.cli.output import group

THROWAWAY = "a throwaway: objects and runs go with it"


def add_parser(sub) -> None:
    cluster = group(
        sub,
        "cluster",
        "the Kubernetes deployment's parts on this machine (Postgres, S3, code server, webserver, daemon, "
        "one process per run)",
    )
    start = cluster.add_parser("up", help="start every part, print the UI address")
    stop = cluster.add_parser("down", help=f"stop every part ({THROWAWAY})")
    for action in (start, stop):
        action.add_argument("--dir", help="the cluster's folder (default: <lab home>/cluster)")
    start.add_argument("--port", type=int, default=None, help="the UI's port (default: a free one)")
    start.add_argument(
        "--s3-endpoint",
        default=None,
        help="an S3-compatible store already running "
        "(http://host:port; credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) "
        "instead of starting moto's server",
    )
    start.set_defaults(fn=run_up)
    stop.set_defaults(fn=run_down)


def _folder(args: argparse.Namespace) -> Path:
    from lab_assets.cluster.deployment import default_folder

    return Path(args.dir) if args.dir else default_folder()


def run_up(args: argparse.Namespace) -> int:
    from lab_assets.cluster import ClusterError
    from lab_assets.cluster.deployment import BUCKET, up

    folder = _folder(args)
    try:
        state = up(folder, ui_port=args.port, s3_endpoint=args.s3_endpoint)
    except ClusterError as e:
        print(f"lab cluster: {e}", file=sys.stderr)
        return FAILED
    print(f"lab cluster: Dagster UI on {state.ui_url}")
    print(
        f"  Postgres 127.0.0.1:{state.pg_port} (database {state.db_name}), S3 {state.s3_endpoint} "
        f"(bucket {BUCKET}), code server 127.0.0.1:{state.grpc_port}; logs in {folder}/logs, runs in {folder}/runs"
    )
    print(f"  use it from a shell: source {folder}/env.sh && lab sweep run sweeps/demo.yaml --submit {state.ui_url}")
    print(f"  stop it: lab cluster down{f' --dir {args.dir}' if args.dir else ''} ({THROWAWAY})")
    return 0


def run_down(args: argparse.Namespace) -> int:
    from lab_assets.cluster.deployment import down

    folder = _folder(args)
    stopped = down(folder)
    print(f"lab cluster: stopped {', '.join(stopped) or 'nothing (no cluster running)'} ({folder})")
    return 0
