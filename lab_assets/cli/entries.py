"""`lab list [datasets|methods|metrics]`: every registered entry, built-in and plugin, where it
comes from, its parameters (type, default), its docstring's first paragraph and, for a metric, the
column name a sweep's parameters give it, its direction and range; `--json`.

The same description generates docs/sweep-files.md's list of the built-in entries
(`python -m lab_assets.cli.entries --write`; `test_docs.py` fails when it is out of date)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

KINDS = ("datasets", "methods", "metrics")
SWEEP_FILES = Path(__file__).resolve().parents[2] / "docs" / "sweep-files.md"
BEGIN = "<!-- entries:begin (python -m lab_assets.cli.entries --write rewrites this block) -->"
END = "<!-- entries:end -->"


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
        out["valid_range"] = entry.valid_range
        out["column"] = column(entry.name, [p["name"] for p in params])
    return out


def column(metric: str, parameters: list[str]) -> str:
    """The metric's column name with each parameter's value as a placeholder, from the sweep's own
    naming (`MetricConfig.column`): `lid@k=<k>,space=<space>`; every parameter is in it, defaults too."""
    from lab_assets.dr.sweep import MetricConfig

    return MetricConfig(metric, {p: f"<{p}>" for p in parameters}).column


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
            if kind == "metrics":
                print(f"      column: {e['column']}   better: {e['better'] or 'neither'}   range: {e['valid_range']}")
    return 0


def _parameters_md(entry: dict[str, Any]) -> str:
    items = [
        f"`{p['name']}`: {p['type']}" + (" (required)" if p["required"] else f" = `{json.dumps(p['default'])}`")
        for p in entry["parameters"]
    ]
    return _cell("; ".join(items)) or "none"


def _cell(text: str) -> str:
    return text.replace("|", r"\|")


def markdown() -> str:
    """The built-in entries as Markdown tables (plugins are each lab's own: `lab list` shows them)."""
    out = []
    for kind, entries in listing(list(KINDS)).items():
        built_in = [e for e in entries if e["origin"] == "built-in"]
        metrics = kind == "metrics"
        head = f"| {kind[:-1]} | parameters |" + (" column | better | range |" if metrics else "") + " what it is |"
        out += [f"**{kind.capitalize()}**", "", head, "|---|---|" + ("---|---|---|" if metrics else "") + "---|"]
        for e in built_in:
            extra = f" `{e['column']}` | {e['better'] or 'neither'} | `{e['valid_range']}` |" if metrics else ""
            out.append(f"| `{e['name']}` | {_parameters_md(e)} |{extra} {_cell(e['doc'])} |")
        out.append("")
    return "\n".join(out).rstrip("\n")


def rewrite(text: str) -> str:
    """`text` (docs/sweep-files.md) with its generated block replaced by `markdown()`."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + markdown() + "\n" + text[end:]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m lab_assets.cli.entries --write  (rewrites docs/sweep-files.md's list of entries)")
    SWEEP_FILES.write_text(rewrite(SWEEP_FILES.read_text()))
