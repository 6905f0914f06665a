"""docs/settings.md, generated from `core/settings.py`: every variable a reader function there reads
(found in its source, so a new reader is listed without anyone remembering to), the reader's
docstring as the text, the `[tool.lab_assets]` keys of a project's pyproject.toml, and the
variables only the tests read. `lab_assets_tests/test_settings_doc.py` fails when the file is
out of date: `python -m lab_assets.core.settings_doc --write` rewrites it."""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from lab_assets.core import settings

SOURCE = Path(settings.__file__)
DOC = SOURCE.resolve().parents[2] / "docs" / "settings.md"
COMMAND = "python -m lab_assets.core.settings_doc --write"


class UndocumentedError(ValueError):
    """A reader of a variable without a docstring: the generated page would have a hole."""


@dataclass(frozen=True)
class Reader:
    variable: str
    function: str
    doc: str


def governed(name: str) -> bool:
    return name.startswith("LAB_") or name == "DAGSTER_HOME"


def _one_paragraph(doc: str) -> str:
    return " ".join(doc.split("\n\n")[0].split())


def readers(source: str) -> list[Reader]:
    """Each (variable, function) pair where a top-level function of settings.py calls `_get` on it."""
    tree = ast.parse(source)
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    out = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
            continue
        for call in ast.walk(fn):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "_get"):
                continue
            arg = call.args[0]
            name = arg.value if isinstance(arg, ast.Constant) else constants.get(getattr(arg, "id", ""), "")
            if not governed(name):
                continue
            doc = ast.get_docstring(fn)
            if not doc:
                raise UndocumentedError(f"{SOURCE.name}: {fn.name}() reads {name} but has no docstring to document it")
            out.append(Reader(name, fn.name, _one_paragraph(doc)))
    return out


def tool_keys(source: str) -> list[tuple[str, str, str]]:
    """(key, function, docstring) per `_tool_setting("key", ...)` call in a top-level function."""
    out = []
    for fn in ast.parse(source).body:
        if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
            continue
        for call in ast.walk(fn):
            if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "_tool_setting":
                doc = ast.get_docstring(fn)
                if not doc:
                    raise UndocumentedError(
                        f"{SOURCE.name}: {fn.name}() reads a pyproject.toml key but has no docstring"
                    )
                out.append((call.args[0].value, fn.name, _one_paragraph(doc)))
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _without_name(name: str, doc: str) -> str:
    # "LAB_DEVICE: ..." reads twice in a row whose first column is LAB_DEVICE.
    return re.sub(rf"^{re.escape(name)}(=\S+)?:\s*", lambda m: m.group(0) if m.group(1) else "", doc)


def render(source: str | None = None) -> str:
    source = SOURCE.read_text() if source is None else source
    rows: dict[str, list[Reader]] = {}
    for r in readers(source):
        rows.setdefault(r.variable, []).append(r)
    lines = [
        "# Settings: every `LAB_*` variable",
        "",
        f"<!-- generated from lab_assets/core/settings.py by `{COMMAND}`; "
        "lab_assets_tests/test_settings_doc.py fails when it is out of date -->",
        "",
        "The package reads these in `lab_assets/core/settings.py` only (`test_settings.py` fails on a read",
        "elsewhere), each when it is asked for, never at import: a laptop, CI and a cluster pod differ only in",
        "their environment. Unset and empty are the same.",
        "",
        "| variable | read by | what it does, and its default |",
        "|---|---|---|",
    ]
    for name, found in rows.items():
        readers_ = ", ".join(f"`{r.function}()`" for r in found)
        docs = " ".join(dict.fromkeys(_without_name(name, r.doc) for r in found))
        lines.append(f"| `{name}` | {readers_} | {_cell(docs)} |")
    lines += [
        "",
        "## The project's pyproject.toml",
        "",
        "A project names what holds for everyone who runs it in a `[tool.lab_assets]` table of the",
        "pyproject.toml in its folder (`LAB_PROJECT_DIR`); another key there is refused (exit 2).",
        "",
        "| key | read by | what it does |",
        "|---|---|---|",
    ]
    lines += [f"| `{key}` | `{fn}()` | {_cell(doc)} |" for key, fn, doc in tool_keys(source)]
    lines += [
        "",
        "## Read by the tests only",
        "",
        "| variable | what it does |",
        "|---|---|",
    ]
    lines += [f"| `{name}` | {_cell(doc)} |" for name, doc in settings.TESTS_ONLY.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true", help=f"rewrite {DOC} (default: print)")
    args = p.parse_args(argv)
    text = render()
    if args.write:
        DOC.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
