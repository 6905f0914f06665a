"""A method named by a class's import path instead of a registered entry.

A sweep's method may say `estimator: "mylab.reducers:SparseUMAP"`: any scikit-learn-compatible
class (`fit_transform`). It becomes a method `Entry` like a registered one: its parameters are
its `__init__`'s keyword parameters (unknown names refused at plan time), the cell's seed goes to
`random_state` or `seed` when the class takes one, and its code version is its module by meaning
(with its package's modules it imports, for a class of the project) plus its distribution's version.
"""

from __future__ import annotations

import importlib
import inspect
import typing
from functools import cache
from typing import Any

from lab_assets.core import plugins
from lab_assets.core.registry import SCIENCE, Entry, RegistryError

SEED_PARAMETERS = ("random_state", "seed")  # the first the class takes receives the cell's seed


def resolve(path: str) -> type:
    """The class at `module:Class` (or `module.Class`), or RegistryError saying why not."""
    module, sep, name = path.partition(":") if ":" in path else path.rpartition(".")
    if not module or not name or not sep:
        raise RegistryError(f"{path!r} is not an import path like 'mylab.reducers:SparseUMAP'")
    try:
        with plugins.project_on_path():
            obj: Any = importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - whatever the lab's module raises, said in one line
        raise RegistryError(
            f"{path!r} does not resolve: module {module!r} does not import: {type(e).__name__}: {e}"
        ) from None
    for part in name.split("."):
        if not hasattr(obj, part):
            raise RegistryError(f"{path!r} does not resolve: module {module!r} has no {name!r}")
        obj = getattr(obj, part)
    if not inspect.isclass(obj) or not callable(getattr(obj, "fit_transform", None)):
        raise RegistryError(f"{path!r} is not a scikit-learn-compatible class: it has no fit_transform")
    return obj


@cache
def entry(path: str) -> Entry:
    """The method entry of the class at `path` (RegistryError if it does not resolve)."""
    cls = resolve(path)
    init = inspect.signature(cls.__init__)
    try:
        hints = typing.get_type_hints(cls.__init__, include_extras=True)
    except Exception:  # noqa: BLE001 - annotations that do not evaluate: the parameters are unchecked in type
        hints = {}
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    taken = [p for p in list(init.parameters.values())[1:] if p.kind in keyword]
    seeded = next((p.name for p in taken if p.name in SEED_PARAMETERS), None)
    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in taken if p.name != seeded]

    def make(seed: int, **chosen: Any) -> Any:
        return cls(**chosen, **({seeded: seed} if seeded else {}))

    make.__signature__ = inspect.Signature(
        [inspect.Parameter("seed", inspect.Parameter.POSITIONAL_OR_KEYWORD), *params]
    )
    make.__annotations__ = {p.name: hints[p.name] for p in params if p.name in hints}
    origin, distribution = plugins.origin(cls.__module__)
    return Entry(
        kind="method",
        name=path,
        fn=make,
        packages=(distribution,) if distribution else (),
        description=(inspect.getdoc(cls) or "").split("\n\n")[0],
        origin=origin,
        module=cls.__module__,
        # A class of the project (no distribution): its package's modules are its code too; an
        # installed library's class: its module, and its distribution's version.
        science=() if distribution else (cls.__module__.partition(".")[0], SCIENCE),
    )
