"""What every registry entry must declare, checked for a lab's CI (`lab check`): a docstring
(errors and docs show it), parameters the registry can turn into a model, sources and
libraries that exist (its code version is their digest), and what its kind asks for: a method's
`n_components`, a metric's readable `valid_range`. Entries added by any module or plugin are
covered: the registries are walked, not a list of names."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import dataclass

from lab_assets.core.registry import Entry, Registry, RegistryError, package_version
from lab_assets.dr.datasets import DATASETS
from lab_assets.dr.methods import METHODS
from lab_assets.dr.metrics import METRICS

REGISTRIES: tuple[Registry, ...] = (DATASETS, METHODS, METRICS)


@dataclass(frozen=True)
class Declaration:
    """A missing or broken declaration of one entry: where its function is, and which field."""

    file: str
    line: int | None
    field: str
    problem: str


def _where(entry: Entry) -> tuple[str, int | None]:
    try:
        return inspect.getsourcefile(entry.fn) or "?", inspect.getsourcelines(entry.fn)[1]
    except (OSError, TypeError):
        return "?", None


def _problems(entry: Entry) -> Iterator[tuple[str, str]]:
    if not entry.description.strip():
        yield "docstring", "missing: it is what errors and the docs show for this entry"
    try:
        fields = entry.params_model.model_fields
    except Exception as e:  # noqa: BLE001 - any failure to build the model is the declaration's problem
        yield "parameters", f"cannot become a parameter model: {e}"
        fields = None
    try:
        entry.code_version  # noqa: B018 - reads every source file it names
    except Exception as e:  # noqa: BLE001
        yield "sources", f"its code version cannot be read: {e}"
    for package in entry.packages:
        if package_version(package) == "not-installed":
            yield "packages", f"{package!r} is not installed (its version is part of the entry's code version)"
    if entry.kind == METHODS.kind and fields is not None and "n_components" not in fields:
        yield "n_components", "every method takes n_components (the embedding's dimension)"
    if entry.kind == METRICS.kind:
        try:
            entry.in_range(0.0)
        except RegistryError as e:
            yield "valid_range", str(e)


def declaration_problems(registries: tuple[Registry, ...] = REGISTRIES) -> list[Declaration]:
    """Every problem of every entry of `registries`, one per (entry, field)."""
    out = []
    for registry in registries:
        for name in registry.names():
            entry = registry[name]
            file, line = _where(entry)
            out += [
                Declaration(file, line, f"{entry.kind} {name}: {field}", problem) for field, problem in _problems(entry)
            ]
    return out
