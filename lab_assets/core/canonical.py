"""Code versions by meaning: a digest of what a module *does*, not of its bytes.

A module's canonical form is its syntax tree written out by our own walker: each node's type
name and its non-empty fields, constants by value, with no positions, no comments, no
docstrings (a bare string statement computes nothing) and no formatting: quotes, trailing
commas, redundant parentheses, line splits and blank lines are not in the tree, so
`ruff format` (or Black) never changes it. Not `ast.dump`, whose text changes between Python
releases (new fields, new defaults); a field added later is empty in code that does not use it,
and empty fields are left out.

The same walk lists the module's imports (wherever they are: entry modules import their
libraries inside functions), so the modules a piece of code depends on are found, not declared:
`closure(module, roots)` is every module under `roots` that `module` imports, transitively.

Parsing costs ~1-3 ms a module; digests are kept per process (by path, mtime and size) and on
disk by content (`digest cache`), so a cold process pays a hash of each file, not a parse.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path

# Part of every cached digest: a change to what the walker writes must not reuse old digests.
FORMAT = 1
# Fields that formatting or spelling can change without changing the code: a string's `u` prefix
# (`kind`) and type comments.
SKIPPED = frozenset({"kind", "type_comment"})


@dataclass(frozen=True)
class Module:
    digest: str  # of the canonical form
    imports: tuple[str, ...]  # absolute names it may import (`from a import b`: `a.b` and `a`)


def canonical_digest(source: str | bytes) -> str:
    """The digest of `source`'s canonical form (SyntaxError if it does not parse)."""
    return _analyse(source, "")[0]


def _docstring(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _write(node: object, out: list[str]) -> None:
    if isinstance(node, ast.AST):
        out.append(type(node).__name__)
        for name in node._fields:
            value = getattr(node, name, None)
            if name in SKIPPED or value is None or (isinstance(value, list) and not value):
                continue
            out.append(name)
            _write(value, out)
    elif isinstance(node, list):
        out.append("[")
        for item in node:
            if not _docstring(item):
                _write(item, out)
        out.append("]")
    else:  # a constant: by type and value, so 1 != 1.0 != True and "" != b""
        out.append(f"{type(node).__name__}:{node!r}")


def _imports(tree: ast.AST, package: str) -> tuple[str, ...]:
    names: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(dict.fromkeys(a.name for a in node.names))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the importing module's package
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1]) if node.level <= len(parts) else ""
                base = f"{parent}.{base}".strip(".") if base else parent
            if base:
                names.update(dict.fromkeys(f"{base}.{a.name}" for a in node.names if a.name != "*"))
                names[base] = None
    return tuple(names)


def _analyse(source: str | bytes, package: str) -> tuple[str, tuple[str, ...]]:
    tree = ast.parse(source)
    out: list[str] = []
    _write(tree, out)
    return hashlib.sha256("\x1f".join(out).encode()).hexdigest()[:16], _imports(tree, package)


_BY_STAT: dict[tuple[str, int, int], Module] = {}


def module(path: str, package: str) -> Module:
    """The canonical digest and imports of the module at `path` (`package`: the one relative
    imports start from)."""
    st = os.stat(path)
    stat_key = (path, st.st_mtime_ns, st.st_size)
    found = _BY_STAT.get(stat_key)
    if found is None:
        data = Path(path).read_bytes()
        content = f"{FORMAT}:{package}:{hashlib.sha256(data).hexdigest()}"
        cached = _disk().get(content)
        if cached is None:
            digest, imports = _analyse(data, package)
            cached = _disk()[content] = [digest, list(imports)]
            _dirty.append(content)
        found = _BY_STAT[stat_key] = Module(cached[0], tuple(cached[1]))
    return found


def module_file(name: str) -> tuple[str, str] | None:
    """(source file, package) of an importable module, found without importing it (None: not a
    Python source, or not found)."""
    top, _, rest = name.partition(".")
    loaded = sys.modules.get(top)
    if loaded is not None:
        folders, origin = tuple(getattr(loaded, "__path__", None) or ()), getattr(loaded, "__file__", None)
    else:
        try:
            spec = find_spec(top)
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        folders, origin = tuple(spec.submodule_search_locations or ()), spec.origin
    if not rest:
        if origin and origin.endswith(".py"):
            return origin, name if folders else name.rpartition(".")[0]
        return None
    found = _inside(folders, rest)
    return (found[0], name if found[1] else name.rpartition(".")[0]) if found else None


@cache  # by the package's folders: another project's package of the same name is looked up anew
def _inside(folders: tuple[str, ...], rest: str) -> tuple[str, bool] | None:
    """(file, is a package) of the submodule `rest` of the package in `folders`."""
    for folder in folders:
        base = os.path.join(folder, *rest.split("."))
        if os.path.isfile(init := os.path.join(base, "__init__.py")):
            return init, True
        if os.path.isfile(base + ".py"):
            return base + ".py", False
    return None


def _under(name: str, roots: Iterable[str]) -> bool:
    return any(name == r or name.startswith(r + ".") for r in roots)


def closure(start: Iterable[str], roots: tuple[str, ...], exclude: Iterable[str] = ()) -> dict[str, tuple[str, str]]:
    """{module: (source file, canonical digest)} of `start` and every module under `roots` they
    import, transitively (with the packages a module's import runs: `a.b.c` runs `a.b`), except
    the modules of `exclude`, which are not entered."""
    excluded = set(exclude)
    out: dict[str, tuple[str, str]] = {}
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        found = module_file(name)
        if found is None:
            continue
        info = module(*found)
        out[name] = (found[0], info.digest)
        parents = [name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1)]
        todo.extend(m for m in (*info.imports, *parents) if _under(m, roots) and m not in out and m not in excluded)
    _flush()
    return out


# The digest cache: {FORMAT:package:content sha256: [digest, imports]}, one JSON file per user.
_cache: dict[str, list] | None = None
_dirty: list[str] = []


def _cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lab_assets" / "canonical.json"


def _disk() -> dict[str, list]:
    global _cache
    if _cache is None:
        try:
            _cache = json.loads(_cache_file().read_text())
        except (OSError, ValueError):
            _cache = {}
    return _cache


def _flush() -> None:
    """Write the digests parsed since the last write (best effort: a read-only home only costs
    the parse next time)."""
    if not _dirty:
        return
    _dirty.clear()
    path = _cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(_disk()))
        tmp.replace(path)
    except OSError:
        pass
