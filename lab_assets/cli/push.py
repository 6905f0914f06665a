"""`lab push --to URL`: copy this lab home's results cache (`core/results_cache.py`) to a shared
store, so the team's instance records those cells instead of computing them again."""

from __future__ import annotations

import argparse
import json


def add_parser(sub) -> None:
    push = sub.add_parser(
        "push",
        help="copy this lab home's results cache to a shared store (e.g. the team's S3): "
        "a cell computed here is then recorded, not computed, wherever that cache is used",
    )
    push.add_argument("--to", required=True, metavar="URL", help="the shared cache, e.g. s3://team-bucket/lab-cache")
    push.add_argument(
        "--options",
        default=None,
        metavar="JSON",
        help="fsspec options of that store, e.g. "
        '\'{"endpoint_url": "http://minio:9000"}\' (default: LAB_RESULTS_CACHE_OPTIONS)',
    )
    push.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    from lab_assets.core import results_cache, settings
    from lab_assets.core.input_files import InputError

    try:
        options = json.loads(args.options) if args.options is not None else settings.results_cache_options()
    except json.JSONDecodeError as e:
        raise InputError(f"--options: not JSON ({e})") from None
    source = results_cache.open_cache()
    if source is None:
        raise InputError("LAB_RESULTS_CACHE is off: this lab home keeps no results cache to push")
    counts = results_cache.push(source, results_cache.open_cache(args.to, options))
    print(
        f"lab push: {counts['copied']} entries copied to {args.to}, {counts['present']} already there"
        + (f", {counts['damaged']} damaged ones left out" if counts["damaged"] else "")
    )
    return 0
