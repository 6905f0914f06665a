"""One registry per kind of thing (datasets, methods, metrics).

An entry is one plain function. Its keyword-only parameters *are* its sweep parameters: the
registry turns the signature into a strict pydantic model, so a sweep file is validated against
exactly what the function accepts, with the allowed values in the error. The entry's code
version is a digest of what its code *means* (`core/canonical.py`: no comments, docstrings or
formatting) and of the science modules it imports (under `lab_assets/dr/`, or a plugin's own
package), plus the versions of the libraries it names: editing one method's file, or a helper
only it imports (or upgrading its library), changes only that method's version.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import math
import pkgutil
import re
import sys
import typing
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib import metadata
from typing import Any

import pydantic

from lab_assets.core import canonical, plugins, version_lock

RANGE = re.compile(r"(?P<open>[\[(])(?P<lo>-?(?:inf|[0-9.]+)),(?P<hi>-?(?:inf|[0-9.]+))(?P<close>[\])])")


# Where the project's science code lives (numerical helpers, models, entries): what an entry
# imports from here is part of its code version; the platform's plumbing (core/, defs/) is not.
SCIENCE = "lab_assets.dr"
BETTER = ("higher", "lower", None)  # a metric's direction (Entry.better)
# An entry's name starts its keys (`<name>-<stem>-<digest>`): folder names, partition keys.
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,47}$")


class RegistryError(ValueError):
    """A name or a parameter that the registry does not accept."""


class DeclarationError(RegistryError, plugins.EntryError):
    """An entry whose name is taken or whose function does not have its kind's signature."""


def digest(obj: Any, length: int = 8) -> str:
    """Short, stable hash of a JSON-able object (keys sorted, so dict order never matters)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


@cache  # a metadata lookup scans every installed distribution: tens of ms each time
def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not-installed"


@dataclass(frozen=True)
class Shape:
    """What a sweep already says about a dataset: its points and features (None: not known
    before it is generated)."""

    points: int | None = None
    features: int | None = None


# An entry's plan-time check: {parameter: problem} for these parameters on data of this shape.
Limits = Callable[[dict[str, Any], Shape], dict[str, str]]


@dataclass(frozen=True)
class Entry:
    kind: str
    name: str
    fn: Callable[..., Any]
    packages: tuple[str, ...] = ()
    # Optional: extra identity of the inputs that the parameters alone don't capture
    # (the content hash of a user's file, say). Called with the validated parameters.
    fingerprint: Callable[[dict[str, Any]], str] | None = None
    # Metrics: the mathematically possible values, in interval notation ("[0, 1]", "(0, inf)");
    # the metrics asset's blocking check refuses a value outside it.
    valid_range: str | None = None
    # Metrics: which way is better, "higher" or "lower"; None = descriptive (LID, participation
    # ratio, persistent homology: no direction is better), so the summary ranks and compares
    # methods only on metrics that have one.
    better: str | None = None
    # Methods: the estimator has `inverse_transform` back to data space (reconstruction_error).
    invertible: bool = False
    # Methods: fitting trains weights worth keeping (`fit(X, checkpoint=)`, `weights()`): the
    # cell's `model` asset.
    trainable: bool = False
    # Methods: far slower than a linear projection on the same data (iterative optimisation,
    # all-pairs graphs, training). A sweep starts its slow cells first, so that at its end no
    # core waits on one long cell while the other is idle (longest-first scheduling).
    slow: bool = False
    # Modules besides the entry's own whose source is part of what it computes and that its
    # imports do not name (its imports are followed: `science`).
    sources: tuple[str, ...] = ()
    # The packages whose modules, where the entry's code imports them (transitively), are part of
    # its code version: the project's science code, and a plugin's or a project estimator's own
    # package. Empty: the entry's own module alone (a class of an installed library, whose
    # version is in `packages`).
    science: tuple[str, ...] = (SCIENCE,)
    # Modules every entry of its kind receives (the metrics' shared kNN code): versioned with
    # what they feed (a metric column), so not followed from the entry's imports.
    received: tuple[str, ...] = ()
    # Datasets: the shape these parameters produce, known before generating (n_samples, a
    # file's header). Methods and metrics: `limits(params, shape)` names each parameter that
    # cannot work on data of that shape (n_neighbors >= points, k >= n/2, ...), so a sweep that
    # would fail every cell is refused at plan time.
    shape: Callable[[dict[str, Any]], Shape] | None = None
    limits: Limits | None = None
    description: str = field(default="", compare=False)
    # Where it comes from: "built-in", or a plugin's module and distribution (`lab list`).
    origin: str = field(default=plugins.BUILT_IN, compare=False)
    # The module whose source is the entry's code, when it is not the function's own (a class
    # named by import path in a sweep: `core/estimator_paths.py`).
    module: str | None = None

    def shape_of(self, params: dict[str, Any]) -> Shape:
        return self.shape(params) if self.shape is not None else Shape()

    def problems(self, params: dict[str, Any], shape: Shape) -> dict[str, str]:
        """{parameter: why it cannot work} on data of `shape` (nothing when unknown)."""
        return dict(self.limits(params, shape)) if self.limits is not None else {}

    def _range(self) -> re.Match[str] | None:
        if self.valid_range is None:
            return None
        m = RANGE.fullmatch(self.valid_range.replace(" ", ""))
        if m is None:
            raise RegistryError(
                f"{self.kind} {self.name}: valid_range {self.valid_range!r} is not like '[0, 1]' or '(0, inf)'"
            )
        return m

    def bounds(self) -> tuple[float, float]:
        """(lowest, highest) of `valid_range`, (-inf, inf) without one: what an interval is clipped to."""
        m = self._range()
        return (-math.inf, math.inf) if m is None else (float(m["lo"]), float(m["hi"]))

    def in_range(self, value: float) -> bool:
        """Whether `value` is finite and inside `valid_range` (always True without one)."""
        m = self._range()
        if m is None:
            return True
        lo, hi = float(m["lo"]), float(m["hi"])
        above = value >= lo if m["open"] == "[" else value > lo
        below = value <= hi if m["close"] == "]" else value < hi
        return bool(math.isfinite(value) and above and below)

    @cached_property
    def params_model(self) -> type[pydantic.BaseModel]:
        fields: dict[str, Any] = {}
        hints = typing.get_type_hints(self.fn, include_extras=True)
        for p in inspect.signature(self.fn).parameters.values():
            if p.kind is not inspect.Parameter.KEYWORD_ONLY:
                continue
            annotation = hints.get(p.name, Any)
            default = ... if p.default is inspect.Parameter.empty else p.default
            fields[p.name] = (annotation, default)
        config = pydantic.ConfigDict(extra="forbid", strict=True)
        with warnings.catch_warnings():  # a class's `copy` parameter (estimator:) is a field, whatever BaseModel has
            warnings.filterwarnings("ignore", "Field name .* shadows an attribute", UserWarning)
            return pydantic.create_model(f"{self.kind}_{self.name}", __config__=config, **fields)

    @property
    def own_module(self) -> str:
        """The module of the entry's code: its function's, or the class's an `estimator:` names."""
        # Unwrapped: a wrapper (mutmut's trampoline) lives in another module than the entry's code.
        return self.module or inspect.unwrap(self.fn).__module__

    @cached_property
    def code_modules(self) -> dict[str, tuple[str, str]]:
        """{module: (file, digest by meaning)}: the entry's own module, its `sources=` and the
        science modules they import."""
        return canonical.closure([self.own_module, *self.sources], self.science, exclude=self.received)

    @property
    def source_files(self) -> list[str]:
        """The files its code version digests."""
        return [f for f, _ in self.code_modules.values()]

    @cached_property
    def meaning(self) -> str:
        """The digest of what its modules mean (no library versions)."""
        return digest({m: d for m, (_, d) in self.code_modules.items()}, length=16)

    def _version(self, code: Any) -> str:
        return digest({"source": code, "packages": {p: package_version(p) for p in self.packages}})

    @cached_property
    def code_digest(self) -> str:
        """Its code by meaning and its libraries' versions: the lineage's `code_digest`."""
        return self._version(self.meaning)

    @cached_property
    def code_version(self) -> str:
        """The string its versions carry: `code_digest`, except that while its code means what it
        meant in the release before versions by meaning, that release's byte digest stands for
        the code (`core/version_lock.py`), so its recorded strings stay current."""
        return self._version(version_lock.source(f"{self.kind}/{self.name}", self.meaning))

    def changed(self, params: dict[str, Any]) -> dict[str, Any]:
        """The validated parameters whose values differ from the entry's defaults: what a
        person chose, shown in a key's readable stem (`core/keys.config_key`)."""
        fields = self.params_model.model_fields
        defaults = {n: json.loads(json.dumps(f.default, default=str)) for n, f in fields.items() if not f.is_required()}
        return {p: v for p, v in params.items() if p not in defaults or defaults[p] != v}

    def validate(self, params: dict[str, Any]) -> dict[str, Any]:
        """The full parameter set (defaults filled in), or pydantic.ValidationError."""
        return self.params_model.model_validate(params).model_dump(mode="json")

    def version(self, params: dict[str, Any]) -> str:
        """Identity of what this entry computes for these parameters: code, libraries, inputs."""
        parts = {"code": self.code_version, "params": params}
        if self.fingerprint is not None:
            parts["inputs"] = self.fingerprint(params)
        return digest(parts, length=16)

    def __call__(self, *args: Any, **params: Any) -> Any:
        return self.fn(*args, **params)


_REGISTRIES: list[Registry] = []


class Registry:
    """Name -> Entry, filled by the `@REGISTRY("name")` decorator in the package's modules and in
    the lab's plugins (`core/plugins.py`). `first`: the one positional parameter of the kind's
    functions (`seed`, `rng`, `nb`); every sweep parameter is keyword-only. `receives`: modules
    whose code every entry is handed (not part of each entry's code version: `Entry.received`)."""

    def __init__(self, kind: str, package: str, first: str, receives: tuple[str, ...] = ()):
        self.kind = kind
        self.package = package
        self.first = first
        self.receives = receives
        self._entries: dict[str, Entry] = {}
        self._discovered = False
        _REGISTRIES.append(self)

    def __call__(
        self,
        name: str,
        *,
        packages: Iterable[str] = (),
        fingerprint: Callable[[dict[str, Any]], str] | None = None,
        valid_range: str | None = None,
        better: str | None = None,
        invertible: bool = False,
        trainable: bool = False,
        slow: bool = False,
        sources: Iterable[str] = (),
        shape: Callable[[dict[str, Any]], Shape] | None = None,
        limits: Limits | None = None,
    ) -> Callable[[Callable[..., Any]], Entry]:
        if better not in BETTER:
            raise DeclarationError(f"{self.kind} {name!r}: better={better!r}; allowed: 'higher', 'lower', None")
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise DeclarationError(f"{self.kind} {name!r}: a name is a letter, then letters, digits or _ (at most 48)")

        def register(fn: Callable[..., Any]) -> Entry:
            origin, distribution = plugins.origin(fn.__module__)
            if name in self._entries:
                taken = self._entries[name].origin
                other = (
                    f"built-in {self.kind} {name!r}"
                    if taken == plugins.BUILT_IN
                    else f"{self.kind} {name!r} of {taken}"
                )
                raise DeclarationError(f"{self.kind} {name!r} of {origin} clashes with the {other}")
            self._check_signature(name, fn)
            entry = Entry(
                kind=self.kind,
                name=name,
                fn=fn,
                packages=(*packages, *([distribution] if distribution else [])),
                fingerprint=fingerprint,
                valid_range=valid_range,
                better=better,
                invertible=invertible,
                trainable=trainable,
                slow=slow,
                sources=tuple(sources),
                science=(SCIENCE,) if origin == plugins.BUILT_IN else (fn.__module__.partition(".")[0], SCIENCE),
                received=self.receives,
                shape=shape,
                limits=limits,
                description=inspect.getdoc(fn) or "",
                origin=origin,
            )
            if origin != plugins.BUILT_IN:
                try:  # a lab's annotations are checked when it loads, not when a sweep first names it
                    entry.params_model  # noqa: B018
                except Exception as e:  # noqa: BLE001 - a NameError, a type pydantic refuses: said as one line
                    raise DeclarationError(
                        f"{self.kind} {name!r}: its parameters' annotations: {type(e).__name__}: {e}"
                    ) from None
            self._entries[name] = entry
            return entry

        return register

    def _check_signature(self, name: str, fn: Callable[..., Any]) -> None:
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError) as e:
            raise DeclarationError(f"{self.kind} {name!r}: not a function with a signature: {e}") from None
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        if (
            not params
            or params[0].kind not in positional
            or any(p.kind is not inspect.Parameter.KEYWORD_ONLY for p in params[1:])
        ):
            where = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)}"
            raise DeclarationError(
                f"{self.kind} {name!r} ({where}): signature {inspect.signature(fn)} is not "
                f"({self.first}, *, <parameters>): one positional argument, then keyword-only parameters"
            )

    def _builtins(self) -> None:
        # Import every module of the package once, so that adding an entry is adding a file.
        if self._discovered:
            return
        self._discovered = True
        pkg = sys.modules[self.package]
        for info in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"{self.package}.{info.name}")

    def _discover(self) -> None:
        self._builtins()
        plugins.load(lambda: [r._builtins() for r in list(_REGISTRIES)])

    def entries(self) -> list[Entry]:
        """Every entry, built-in and plugin, by name."""
        return [self[name] for name in self.names()]

    def names(self) -> list[str]:
        self._discover()
        return sorted(self._entries)

    def __getitem__(self, name: str) -> Entry:
        self._discover()
        try:
            return self._entries[name]
        except KeyError:
            allowed = ", ".join(self.names())
            # The name may be one of the lab's own that no loaded plugin provides: say how they load.
            raise RegistryError(
                f"unknown {self.kind} {name!r}; allowed: {allowed}; {plugins.loaded_summary()}; {plugins.HOW_TO_LOAD}"
            ) from None

    def __contains__(self, name: str) -> bool:
        self._discover()
        return name in self._entries
