"""A lab's own datasets, methods and metrics, from its own package: no edit to lab_assets.

A plugin is a module whose functions register with the same decorators as the built-in entries
(`@METHODS("name")`). It is found through the `lab_assets.plugins` entry-point group of the
installed distributions, or named by the project: `[tool.lab_assets] plugins = [...]` in its
pyproject.toml, or `LAB_PLUGINS` (comma-separated; both importable from the project folder or the
environment). Plugins are imported once per process, right after the
built-in entries, so a name that clashes with a built-in is the plugin's fault, said as such.

A plugin that cannot be loaded fails every command that reads a registry, before anything runs:
one line per bad module (its exception, or what is wrong with its declaration), exit 2.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path

from lab_assets.core.input_files import InputError
from lab_assets.core.settings import PYPROJECT, TOOL_TABLE, env_plugins, project_dir, project_plugins

GROUP = "lab_assets.plugins"
PROJECT = f"{PYPROJECT} [{TOOL_TABLE}]"
# What an error about an unknown entry name adds: the three ways a lab's own entries are loaded.
HOW_TO_LOAD = (
    f"a lab's own entries load from the modules named in {PROJECT} plugins, in LAB_PLUGINS, or by a "
    f"{GROUP!r} entry point (docs/your-own-code.md)"
)
BUILT_IN = "built-in"
OWN_PACKAGE = "lab_assets"


class PluginError(InputError):
    """Plugins that cannot be loaded: one line per module."""

    what = "plugin"


class EntryError(ValueError):
    """An entry declared wrongly (its name taken, its signature not the kind's): said as the
    plugin's own line when a plugin declares it."""


@dataclass(frozen=True)
class Plugin:
    module: str
    via: str  # how it was found: "entry point <name> of <distribution>", PROJECT or "LAB_PLUGINS"
    distribution: str | None = None


def declared() -> list[Plugin]:
    """Every plugin module: the entry points of installed distributions, then the project's, then LAB_PLUGINS."""
    out = [
        Plugin(ep.value.partition(":")[0].strip(), f"entry point {ep.name!r} of {ep.dist.name}", ep.dist.name)
        for ep in metadata.entry_points(group=GROUP)
    ]
    out += named_by_project()
    once: dict[str, Plugin] = {}
    for plugin in out:  # a module named twice loads once, as the first that names it
        once.setdefault(plugin.module, plugin)
    return list(once.values())


def named_by_project() -> list[Plugin]:
    """The plugins the project names itself (its pyproject.toml, then LAB_PLUGINS), found from its folder."""
    return [Plugin(m, PROJECT) for m in project_plugins()] + [Plugin(m, "LAB_PLUGINS") for m in env_plugins()]


def loaded_summary() -> str:
    """The plugin modules loaded and how, for an error about a name none of them provides."""
    names = [f"{p.module} ({p.via})" for p in declared()]
    return f"plugins loaded: {', '.join(names)}" if names else "no plugin is loaded"


@contextmanager
def project_on_path() -> Iterator[None]:
    """LAB_PLUGINS modules and `estimator:` classes may live in the project folder (`lab new` writes
    `plugins/` there). It is on the import path while they load, not after: the warm service compares its import path
    with its client's to know it still runs the same code."""
    folder = str(project_dir())
    added = folder not in sys.path
    if added:
        sys.path.append(folder)
    try:
        yield
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)


_loaded: list[bool] = []
_failed: list[PluginError] = []


def load(builtins: Callable[[], None]) -> None:
    """Import every plugin once, after `builtins()` registered the built-in entries; raise the
    PluginError of a failed load on every call (a half-loaded registry must not be used)."""
    if _failed:
        raise _failed[0]
    if _loaded:
        return
    _loaded.append(True)
    builtins()
    lines = []
    for plugin in declared():
        try:
            with project_on_path():
                importlib.import_module(plugin.module)
        except EntryError as e:
            lines.append(f"plugin {plugin.module} ({plugin.via}): {e}")
        except Exception as e:  # noqa: BLE001 - any failure of a lab's module is reported as its line
            what = f"{type(e).__name__}: {e}".strip().splitlines()[0] if str(e) else type(e).__name__
            lines.append(f"plugin {plugin.module} ({plugin.via}) does not import: {what}")
    if lines:
        _failed.append(PluginError("\n".join(lines)))
        raise _failed[0]


def origin(module: str) -> tuple[str, str | None]:
    """(where an entry comes from, its distribution or None): "built-in", or the module and its
    distribution's name and version."""
    if module == OWN_PACKAGE or module.startswith(OWN_PACKAGE + "."):
        return BUILT_IN, None
    dist = distribution_of(module)
    return (f"{module} ({dist} {metadata.version(dist)})" if dist else module), dist


@cache
def distribution_of(module: str) -> str | None:
    """The installed distribution that provides a module (its entry point's, one named like its
    top-level package, else the one whose files hold it: `sklearn` is scikit-learn's), or None (a
    module of the project folder, or of no distribution)."""
    top = module.partition(".")[0]
    for p in declared():
        if p.distribution and p.module.partition(".")[0] == top:
            return p.distribution
    file = getattr(sys.modules.get(top), "__file__", None)
    if file and Path(file).resolve().is_relative_to(project_dir()) and "site-packages" not in Path(file).parts:
        return None
    for name in dict.fromkeys((top, top.replace("_", "-"))):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        provided = (dist.read_text("top_level.txt") or top).split()
        if top in provided:
            return dist.metadata["Name"]
    names = _distributions().get(top, [])
    return names[0] if len(names) == 1 else None


@cache
def _distributions() -> dict[str, list[str]]:
    return metadata.packages_distributions()  # every installed distribution's files: ~0.3 s, once, only if needed


def module_files(entry_points: bool = True) -> list[str]:
    """The source files of the plugin modules (every `.py` of a plugin package; without `entry_points`,
    only those the project names), found without importing them: what a warm process must compare to
    see a plugin edited or replaced."""
    plugins = declared() if entry_points else named_by_project()
    out: set[str] = set()
    for plugin in plugins:
        spec = _find(plugin.module)
        if spec is None or not spec.origin:
            out.add(plugin.module)  # not found: its appearing is a change
            continue
        out.add(spec.origin)
        for folder in spec.submodule_search_locations or ():
            out.update(str(p) for p in Path(folder).rglob("*.py"))
    return sorted(out)


def _find(module: str) -> ModuleSpec | None:
    """A module's spec from the import path (an editable install's finder included) or the project
    folder, importing nothing: a dotted name is looked for inside its parent's folders."""
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top) or PathFinder.find_spec(top, [str(project_dir())])
    except (ImportError, ValueError):
        return None
    for i in range(len(rest)):
        if spec is None or not spec.submodule_search_locations:
            return None
        spec = PathFinder.find_spec(".".join([top, *rest[: i + 1]]), list(spec.submodule_search_locations))
    return spec
