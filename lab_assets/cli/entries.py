"""`lab list [datasets|methods|metrics]`: every registered entry, built-in and plugin, where it
comes from, its parameters (type, default) and its docstring's first paragraph; `--json`."""

from __future__ import annotations

import argparse
import json
import re
import types
import typing
from typing import Any

KINDS = ("datasets", "methods", "metrics")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "list",
        help="every dataset, method and metric a sweep can name (built-in and the lab's "
        "plugins): parameters, defaults, where it comes from",
    )
    p.add_argument("kind", nargs="?", choices=KINDS, help="only this kind")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(fn=run)


def _registries() -> dict[str, Any]:
    from lab_assets.dr.declarations import REGISTRIES

    return {f"{r.kind}s": r for r in REGISTRIES}


def _text(tp: Any) -> str:
    """A parameter's annotation as a person reads it: `int (ge=1)`, `float | 'auto'`, `'pca' | 'random'`."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _constrained(_text(args[0]), [m for a in args[1:] for m in getattr(a, "metadata", [a])])
    if origin is typing.Literal:
        return " | ".join(map(repr, args))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_text(a) for a in args)
    if tp is type(None):
        return "None"
    if isinstance(tp, type) and not args:
        return tp.__name__
    return re.sub(r"\btyping\.", "", str(tp))


def _constrained(text: str, metadata: list[Any]) -> str:
    bounds = [re.sub(r"^\w+\((.*)\)$", r"\1", str(m)) for m in metadata]  # Ge(ge=1) -> ge=1
    return f"{text} ({', '.join(bounds)})" if bounds else text


def describe(entry: Any) -> dict[str, Any]:
    params = []
    for name, field in entry.params_model.model_fields.items():
        item: dict[str, Any] = {
            "name": name,
            "type": _constrained(_text(field.annotation), field.metadata),
            "required": field.is_required(),
        }
        if not field.is_required():
            item["default"] = json.loads(json.dumps(field.default, default=str))
        params.append(item)
    out = {
        "name": entry.name,
        "origin": entry.origin,
        "doc": " ".join(entry.description.split("\n\n")[0].split()),
        "parameters": params,
    }
    if entry.kind == "metric":
        out["better"] = entry.better
    return out


def listing(kinds: list[str]) -> dict[str, list[dict[str, Any]]]:
    registries = _registries()
    return {kind: [describe(e) for e in registries[kind].entries()] for kind in kinds}


def run(args: argparse.Namespace) -> int:
    found = listing([args.kind] if args.kind else list(KINDS))
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    for kind, entries in found.items():
        print(f"{kind}:")
        for e in entries:
            print(f"  {e['name']}  [{e['origin']}]  {e['doc']}")
            for p in e["parameters"]:
                value = "required" if p["required"] else f"= {json.dumps(p['default'])}"
                print(f"      {p['name']}: {p['type']} {value}")
    return 0
