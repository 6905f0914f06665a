"""Sweep files: validation, grid expansion and partition keys.

A sweep names datasets, methods and metrics with their parameters; any list expands as a grid.
Every (dataset config, seed) becomes a `data` key, every method config a `method` key, and each
key is `<name>-<changed parameters>-<digest of the full parameters>` (core/keys.py) so that an
edited config gets a new key instead of silently overwriting an old result.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

import pydantic
from pydantic import Field

from lab_assets.core import estimator_paths, keys
from lab_assets.core.input_files import InputError, field_name, pydantic_lines, yaml_model
from lab_assets.core.registry import NAME, Entry, Registry, RegistryError, digest
from lab_assets.dr import ground_truth, latents
from lab_assets.dr.datasets import DATASETS
from lab_assets.dr.methods import METHODS, true_latent
from lab_assets.dr.metrics import METRICS

KEY_DIGEST_LENGTH = 6
# Metrics that read class labels: refused at plan time on a sweep whose datasets have none.
LABEL_MEASURES = ("neighborhood_hit",)
RESOURCES = "resources"  # reserved key in a method's entry: compute resources, not a parameter
ESTIMATOR = "estimator"  # reserved key in a method's entry: a class by import path (core/estimator_paths.py)


class SweepError(InputError):
    """A sweep file that cannot be run; the message names the file, the field and the fix."""

    what = "sweep"


def _key(registry: Registry, name: str, params: dict[str, Any], estimator: str | None = None) -> str:
    """`<name>-<changed parameters>-<digest of all of them>` (core/keys.py). A record of an entry
    no longer registered keeps a key (its stem then shows every parameter): reading old records
    must not fail, and nothing can compute such a cell anyway. A class named by import path enters
    the digest (two classes under one name are two keys), not the stem (the name is its label)."""
    if estimator is not None:
        try:
            changed = estimator_paths.entry(estimator).changed(params)
        except RegistryError:
            changed = params
        return keys.config_key(name, changed, digest([name, params, estimator], KEY_DIGEST_LENGTH))
    changed = registry[name].changed(params) if name in registry else params
    return keys.config_key(name, changed, digest([name, params], KEY_DIGEST_LENGTH))


@dataclass(frozen=True)
class DataConfig:
    dataset: str
    params: dict[str, Any]
    seed: int

    # Keys are cached: each is a digest of the parameters, and plans and reports ask for them
    # per cell (the configs are frozen, so a key cannot go out of date).
    @cached_property
    def config_key(self) -> str:
        """The key without its seed: one dataset configuration, all seeds."""
        return _key(DATASETS, self.dataset, self.params)

    @cached_property
    def key(self) -> str:
        return keys.data_key(self.config_key, self.seed)


@dataclass(frozen=True)
class MethodConfig:
    method: str
    params: dict[str, Any]
    # Compute resources ({"gpu": 1, "memory": "16Gi"}): where the cell runs, not what it
    # computes, so they are not part of the key.
    resources: dict[str, Any] = field(default_factory=dict)
    # A class's import path (`mylab.reducers:SparseUMAP`) when `method` is the sweep's name for it
    # rather than a registered method.
    estimator: str | None = None

    @cached_property
    def key(self) -> str:
        return _key(METHODS, self.method, self.params, self.estimator)

    @cached_property
    def entry(self) -> Entry:
        """The registry entry that computes it (or the class's, for an `estimator:`)."""
        return estimator_paths.entry(self.estimator) if self.estimator else METHODS[self.method]

    def record(self) -> dict[str, Any]:
        """What a key record and a sweep record hold (`estimator` only when named: records of
        registered methods stay as they were)."""
        out = asdict(self)
        if self.estimator is None:
            out.pop(ESTIMATOR)
        return out


@dataclass(frozen=True)
class MetricConfig:
    metric: str
    params: dict[str, Any]

    @property
    def column(self) -> str:
        """`trustworthiness@k=15`; several parameters are joined sorted: `lid@k=15,space=data`."""
        args = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.metric}@{args}" if args else self.metric

    @property
    def neighbours(self) -> int:
        """How many nearest neighbours the column reads from the shared search: its `k`, or its
        `k_max` when that is a number (`rnx_auc`). Here, not in `dr/metrics/__init__.py`, which is
        part of every metric's code version."""
        return max((v for p, v in self.params.items() if p in ("k", "k_max") and isinstance(v, int)), default=0)


@dataclass(frozen=True)
class Sweep:
    name: str
    source: str
    data: list[DataConfig]
    methods: list[MethodConfig]
    metrics: list[MetricConfig]
    schedule: str | None = None
    description: str = ""
    cells: list[tuple[str, str]] = field(init=False)

    def __post_init__(self) -> None:
        undeclared = set(self.undeclared)
        cells = [(d.key, m.key) for d in self.data for m in self.methods if (d.key, m.key) not in undeclared]
        object.__setattr__(self, "cells", cells)

    @cached_property
    def undeclared(self) -> list[tuple[str, str]]:
        """The grid's cells that are not cells: the positive control `true_latent` on a dataset
        without ground-truth latents (nothing to embed), in a sweep whose other datasets have them."""
        controls = [m.key for m in self.methods if m.method == true_latent.NAME and m.estimator is None]
        if not controls:
            return []
        return [(d.key, m) for d in self.data if not ground_truth.has_latents(d.dataset) for m in controls]

    def contains(self, data_key: str, method_key: str) -> bool:
        """Whether (data_key, method_key) is one of the cells: the grid is every data key with
        every method key (less the undeclared controls), so set lookups, not a scan of the cells."""
        return (
            data_key in self._data_keys
            and method_key in self._method_keys
            and (data_key, method_key) not in self.undeclared
        )

    @cached_property
    def _data_keys(self) -> frozenset[str]:
        return frozenset(d.key for d in self.data)

    @cached_property
    def _method_keys(self) -> frozenset[str]:
        return frozenset(m.key for m in self.methods)

    @property
    def labels(self) -> dict[str, str]:
        """Readable label per data config key (`DataConfig.config_key`), method key and metric
        column: the name plus the parameters that vary within this sweep (`swissroll
        noise=0.05`, `umap n_neighbors=15`, `trustworthiness k=15`); just the name where nothing
        varies."""
        return readable_labels([self])

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("cells")
        out["methods"] = [m.record() for m in self.methods]
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Sweep:
        return cls(
            name=obj["name"],
            source=obj["source"],
            data=[DataConfig(**d) for d in obj["data"]],
            methods=[MethodConfig(**m) for m in obj["methods"]],
            metrics=[MetricConfig(**m) for m in obj["metrics"]],
            schedule=obj.get("schedule"),
            description=obj.get("description", ""),
        )


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def varying_labels(configs: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """`name p=v ...` per (name, params), with the parameters whose values differ among the
    configs of the same name (in the order the entry declares them); just `name` otherwise."""
    seen: dict[str, dict[str, set[str]]] = {}
    for name, params in configs:
        values = seen.setdefault(name, {})
        for p in params:
            values.setdefault(p, set())
    for name, params in configs:
        for p, vs in seen[name].items():
            vs.add(_value(params.get(p)))
    labels = []
    for name, params in configs:
        varying = [p for p, vs in seen[name].items() if len(vs) > 1]
        labels.append(" ".join([name, *(f"{p}={_value(params.get(p))}" for p in varying)]))
    return labels


def readable_labels(sweeps: list[Sweep]) -> dict[str, str]:
    """Label per data config key, method key and metric column over these sweeps together (a
    cell in two sweeps is labelled by what varies in either)."""
    out: dict[str, str] = {}
    for kind in ("data", "methods", "metrics"):
        items: dict[str, tuple[str, dict[str, Any]]] = {}
        for s in sweeps:
            for c in getattr(s, kind):
                if kind == "data":
                    items[c.config_key] = (c.dataset, c.params)
                elif kind == "methods":
                    items[c.key] = (c.method, c.params)
                else:
                    items[c.column] = (c.metric, c.params)
        out.update(zip(items, varying_labels(list(items.values()))))
    return out


Params = dict[str, Any] | None


class SweepFile(pydantic.BaseModel):
    """The file's shape; entry parameters are checked against each registry entry afterwards."""

    model_config = pydantic.ConfigDict(extra="forbid")

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
    description: str = ""
    data: Annotated[dict[str, Params], Field(min_length=1)]
    seeds: Annotated[list[Annotated[int, Field(ge=0, le=2**31 - 1)]], Field(min_length=1)] = [0]
    methods: Annotated[dict[str, Params], Field(min_length=1)]
    metrics: dict[str, Params] = {}
    schedule: str | None = None

    @pydantic.field_validator("seeds")
    @classmethod
    def _unique_seeds(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds must be unique, got {seeds}")
        return seeds

    @pydantic.field_validator("schedule")
    @classmethod
    def _cron(cls, schedule: str | None) -> str | None:
        from lab_assets.core import cron

        if schedule is not None and not cron.is_valid(schedule):
            raise ValueError(f"not a valid cron string: {schedule!r} (e.g. '0 3 * * *')")
        return schedule


def _grid(params: dict[str, Any]) -> list[dict[str, Any]]:
    """{'k': [15, 50], 'x': 1} -> [{'k': 15, 'x': 1}, {'k': 50, 'x': 1}] (Hydra --multirun)."""
    axes = [[(name, v) for v in (value if isinstance(value, list) else [value])] for name, value in params.items()]
    return [dict(combo) for combo in itertools.product(*axes)]


def _resources(where: str, params: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    """Pop and check a `resources:` request (see lab_assets/core/k8s_resources.py for what it becomes)."""
    from lab_assets.core.k8s_resources import k8s_tags

    resources = params.pop(RESOURCES, None) or {}
    try:
        k8s_tags(resources)
    except ValueError as e:
        errors.append(f"{where}.{RESOURCES}: {e}")
    return resources


def _entry(section: str, name: str, params: dict[str, Any], registry: Registry) -> tuple[Entry, str | None]:
    """The entry a sweep's item names, and the class path when it names one (`estimator:`, methods
    only); RegistryError otherwise."""
    if section != "methods" or ESTIMATOR not in params:
        return registry[name], None
    path = params.pop(ESTIMATOR)
    if name in registry:
        raise RegistryError(f"{name!r} is a registered method's name: name the class's entry otherwise")
    if not NAME.fullmatch(name):
        raise RegistryError(
            f"{name!r}: the name of a class's entry is a letter, then letters, digits or _ (at most 48)"
        )
    if not isinstance(path, str):
        raise RegistryError(f"expected an import path like 'mylab.reducers:SparseUMAP', got {path!r}")
    return estimator_paths.entry(path), path


def _expand(
    section: str, entries: dict[str, Params], registry: Registry, errors: list[str]
) -> list[tuple[str, dict, dict, Entry, str | None]]:
    """(name, validated params, resources, entry, class path) per grid point; `resources` only
    where allowed, a class path only for methods."""
    out = []
    for name, params in entries.items():
        params = dict(params or {})
        where = f"{section}.{field_name(name)}" + (
            f".{ESTIMATOR}" if section == "methods" and ESTIMATOR in params else ""
        )
        try:
            entry, estimator = _entry(section, name, params, registry)
        except RegistryError as e:
            errors.append(f"{where}: {e}")
            continue
        resources = _resources(f"{section}.{name}", params, errors) if section == "methods" else {}
        allowed = sorted(entry.params_model.model_fields)
        for combo in _grid(params):
            try:
                out.append((name, entry.validate(combo), resources, entry, estimator))
            except pydantic.ValidationError as e:
                errors.extend(pydantic_lines(f"{section}.{name}", e, allowed))
                break  # one report per entry, not one per grid point
    return out


def parse_sweep(text: str, source: str) -> Sweep:
    """Validate a sweep file's text; every problem found is listed in one SweepError."""
    spec = yaml_model(text, source, SweepFile, SweepError)

    errors: list[str] = []
    data = _expand("data", spec.data, DATASETS, errors)
    methods = _expand("methods", spec.methods, METHODS, errors)
    metrics = _expand("metrics", spec.metrics, METRICS, errors)
    if not errors:
        errors += _limits(data, methods, metrics)
        errors += _ground_truth(data, methods, metrics)
    if errors:
        raise SweepError(f"{source}: " + f"\n{source}: ".join(errors))
    return Sweep(
        name=spec.name,
        source=source,
        description=spec.description,
        data=_unique([DataConfig(name, params, seed) for name, params, *_ in data for seed in spec.seeds]),
        methods=_unique(
            [MethodConfig(name, params, resources, estimator) for name, params, resources, _, estimator in methods]
        ),
        metrics=_unique([MetricConfig(name, params) for name, params, *_ in metrics]),
        schedule=spec.schedule,
    )


def _limits(data: list, methods: list, metrics: list) -> list[str]:
    """What the sweep already determines about every cell: each dataset's shape (from its
    parameters or its file) against each method's and metric's parameters (each registry entry's
    `limits`). One line per (field, problem), naming the data it concerns."""
    lines: list[str] = []
    for name, params, _, entry, _ in data:
        shape = entry.shape_of(params)
        on = f"data {name} {_brief(params)}"
        if shape.points is not None:
            on += f": {shape.points} points" + (f" x {shape.features} features" if shape.features else "")
        problems = entry.problems(params, shape)
        lines += [f"data.{name}.{field}: {why}" for field, why in problems.items()]
        if problems:  # its shape means nothing yet
            continue
        for section, entries in (("methods", methods), ("metrics", metrics)):
            for other, other_params, _, other_entry, _ in entries:
                for name, why in other_entry.problems(other_params, shape).items():
                    lines.append(f"{section}.{other}.{name}: {why} ({on})")
    return list(dict.fromkeys(lines))


def _ground_truth(data: list, methods: list, metrics: list) -> list[str]:
    """What needs what the sweep's datasets do not have: ground truth (`true_latent`, the latent
    metrics) when none of them has latents, class labels (`neighborhood_hit`) when none has labels.
    Where some have them, the others' cells are not declared (`true_latent`) or their values are
    null with the reason (metrics), as for any metric that does not apply to a cell."""
    lines = []
    if not any(ground_truth.has_latents(name) for name, *_ in data):
        names = ", ".join(dict.fromkeys(name for name, *_ in data))
        why = f"needs ground-truth latent coordinates, and no dataset of the sweep ({names}) has them"
        known = f"datasets with them: {', '.join(ground_truth.with_latents())}"
        lines += [f"methods.{n}: {why} ({known})" for n, _, _, _, e in methods if n == true_latent.NAME and e is None]
        lines += [f"metrics.{n}: {why} ({known})" for n, *_ in metrics if n in latents.MEASURES]
    if all(name == "file" and params.get("label_column") is None for name, params, *_ in data):
        lines += [
            f"metrics.{n}: needs class labels, and no dataset of the sweep has labels (give a file "
            "dataset `label_column:`)"
            for n, *_ in metrics
            if n in LABEL_MEASURES
        ]
    return list(dict.fromkeys(lines))


def _brief(params: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in params.items() if v is not None) + "}"


def _unique(items: list) -> list:
    seen, out = set(), []
    for item in items:
        ident = digest(asdict(item))
        if ident not in seen:
            seen.add(ident)
            out.append(item)
    return out


def load_sweep(path: str | os.PathLike[str]) -> Sweep:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise SweepError(f"{path}: cannot read sweep file: {e.strerror}") from None
    return parse_sweep(text, str(path))
