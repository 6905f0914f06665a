"""`lab check`: the project's definitions, sweep and study files and registry entries, for a
lab's CI (`runner/project_check.py`). One line per problem naming the file and the field; exit 0, or 2
with the count. `--format github` writes GitHub's workflow annotations instead, so each problem
shows on the pull request's diff at its line."""

from __future__ import annotations

import argparse
import sys

from lab_assets.cli.exits import BAD_INPUT


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check",
        help="CI: the definitions load (dg check defs), every sweep and study file passes "
        "the plan-time checks, every registry entry has its declarations; exit 2 with the count",
    )
    p.add_argument(
        "--format",
        choices=["text", "github"],
        default="text",
        help="github: `::error file=...,line=...::...` workflow annotations",
    )
    p.add_argument("--no-dg", action="store_true", help="skip `dg check defs` (the definitions are still loaded)")
    p.set_defaults(fn=run)


def _escape(text: str, prop: bool = False) -> str:
    """GitHub's workflow-command escaping (data; properties also escape ':' and ',')."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def annotation(problem) -> str:
    props = f"file={_escape(problem.file, True)}" + (f",line={problem.line}" if problem.line else "")
    props += f",title={_escape('lab check: ' + (problem.field or 'file'), True)}"
    return f"::error {props}::{_escape(problem.text())}"


def run(args: argparse.Namespace) -> int:
    from lab_assets.runner.project_check import check_project

    problems = check_project(with_dg=not args.no_dg)
    for p in problems:
        print(annotation(p) if args.format == "github" else p.text())
    if problems:
        print(f"lab check: {len(problems)} problem{'s' * (len(problems) != 1)}", file=sys.stderr)
        return BAD_INPUT
    print("lab check: definitions, sweep and study files, registry entries: no problem", file=sys.stderr)
    return 0
