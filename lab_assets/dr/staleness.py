"""Why a cell is stale: the rules, stated once. `reasons(old, new)` classifies the differences
between the versions a cell was computed with and the versions it would be computed with now
into {asset: why}. `lab sweep plan` (`defs/freshness.py`: old = what the lab home recorded) and
`lab impact` (`dr/impact.py`: old = a git revision's tree) both name their reasons with it; the
plan still asks Dagster's resolver *what* is stale, this module only says *why*. The first rule
that applies decides (a dataset that changed recomputes everything below it, whatever else
changed). docs/staleness.md's table is `table()`, written by `python -m lab_assets.dr.staleness`.

A version a side cannot know is None: a lab home written before a record existed, or a step
version the plan only knows to differ (Dagster's resolver says so, not what it was). Its rule
then names the coarser reason both sides can stand by."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

DATASET, MODEL, EMBEDDING, METRICS = "dataset", "model", "embedding", "metrics"
# The asset modules whose declared version (`defs/step_versions.py`) is every cell's.
STEP_MODULES = ("datasets.py", "experiments.py", "metrics.py")
NEW_CELL = "sweep file: new cell"


@dataclass(frozen=True)
class Column:
    """A metric column as a cell's row holds it (old) or would (new)."""

    metric: str
    version: str  # what the row records: `specs.column_version`
    code: str | None = None  # the metric's own code version
    shared: Mapping[str, str] | None = None  # {file: digest} of the kNN code every metric shares


@dataclass(frozen=True)
class EntryVersions:
    """A cell's dataset or method: its entry and versions."""

    name: str
    version: str  # its spec version: code, libraries, parameters (a dataset's seed and input file)
    code: str | None = None
    # {library: version} of its `packages=`: an upgrade changes `code` too.
    packages: Mapping[str, str] | None = None


@dataclass(frozen=True)
class CellVersions:
    data: EntryVersions
    method: EntryVersions
    trainable: bool = False
    steps: Mapping[str, str | None] = field(default_factory=dict)  # {asset module: declared version}
    columns: Mapping[str, Column] = field(default_factory=dict)
    # {metric: its columns' version now, None: no longer registered} (new side): a column no sweep
    # asks for any more stales nothing while its metric's code is what computed it.
    metric_versions: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Rule:
    """One row of the table: `applies` gives {asset: why}, {} where it does not apply."""

    change: str  # what differs, in a person's words
    recomputes: str
    says: tuple[str, ...]  # the reasons it gives
    applies: Callable[[CellVersions, CellVersions], dict[str, str]]


def _below(v: CellVersions, *first: str) -> tuple[str, ...]:
    return (*first, *((MODEL,) if v.trainable else ()), EMBEDDING, METRICS)


def _step(module: str, assets: Callable[[CellVersions], tuple[str, ...]]):
    def applies(old: CellVersions, new: CellVersions) -> dict[str, str]:
        if old.steps.get(module, new.steps.get(module)) == new.steps.get(module):
            return {}
        return dict.fromkeys(assets(new), f"asset module {module} changed: every cell")

    return applies


def _entry(kind: str, of: Callable[[CellVersions], EntryVersions], same: str, unknown: str, *first: str):
    """The rule of a dataset's or a method's version: `same`, said when its code is the same,
    `unknown` when either side does not know it."""

    def applies(old: CellVersions, new: CellVersions) -> dict[str, str]:
        was, now = of(old), of(new)
        if was.version == now.version:
            return {}
        if was.packages is not None and now.packages is not None and was.packages != now.packages:
            what = "libraries changed"
        elif was.code is None or now.code is None:
            what = unknown
        else:
            what = "code changed" if was.code != now.code else same
        return dict.fromkeys(_below(new, *first), f"{kind} {now.name}: {what}")

    return applies


def _changed_column(old: Column, new: Column) -> str:
    if old.code is None or new.code is None:
        return f"metric {new.metric}: its code or the shared metric code changed"
    if old.code != new.code:
        return f"metric {new.metric}: code changed"
    if old.shared is None or new.shared is None:
        return "shared metric code changed: every metric"
    files = [f for f, v in new.shared.items() if old.shared.get(f) != v]
    return f"shared metric code changed ({', '.join(files) or 'libraries'}): every metric"


def _columns(old: CellVersions, new: CellVersions) -> dict[str, str]:
    whys = []
    for name, column in new.columns.items():
        was = old.columns.get(name)
        if was is None:
            whys.append(f"metric {column.metric}: new column {name}")
        elif was.version != column.version:
            whys.append(_changed_column(was, column))
    for name, was in old.columns.items():
        if name not in new.columns and new.metric_versions.get(was.metric) != was.version:
            whys.append(f"metric {was.metric}: code changed, column removed: {name}")
    return {METRICS: "; ".join(dict.fromkeys(whys))} if whys else {}


RULES = (
    Rule(
        "the datasets step's declared version (`defs/step_versions.py`)",
        "every cell: dataset and all below",
        ("asset module datasets.py changed: every cell",),
        _step("datasets.py", lambda v: _below(v, DATASET)),
    ),
    Rule(
        "a dataset's code (its module or a science module it imports), its input file, its libraries",
        "that data key's files, then the cells whose data came out different",
        (
            "dataset NAME: code changed",
            "dataset NAME: libraries changed",
            "dataset NAME: libraries or input file changed",
            "dataset NAME: code, libraries or input file changed",
        ),
        _entry(
            "dataset",
            lambda v: v.data,
            "libraries or input file changed",
            "code, libraries or input file changed",
            DATASET,
        ),
    ),
    Rule(
        "the embedding step's declared version",
        "every cell's embedding (model) and metrics",
        ("asset module experiments.py changed: every cell",),
        _step("experiments.py", _below),
    ),
    Rule(
        "a method's code (its module, a science helper it imports, a plugin's helper), its libraries",
        "its cells' embeddings; their metric columns only where the embedding's values changed",
        ("method NAME: code changed", "method NAME: libraries changed", "method NAME: code or libraries changed"),
        _entry("method", lambda v: v.method, "libraries changed", "code or libraries changed"),
    ),
    Rule(
        "the metrics step's declared version",
        "every cell's metrics",
        ("asset module metrics.py changed: every cell",),
        _step("metrics.py", lambda v: (METRICS,)),
    ),
    Rule(
        "a sweep's metrics (a column added); a metric's code; the shared kNN code (`dr/metrics/neighbors.py` "
        "and the rank kernels it imports); a metric taken out whose code changed since",
        "the metrics step alone, those columns only (the others are carried)",
        (
            "metric NAME: new column COLUMN",
            "metric NAME: code changed",
            "shared metric code changed (FILES): every metric",
            "metric NAME: code changed, column removed: COLUMN",
            "metric NAME: its code or the shared metric code changed",
        ),
        _columns,
    ),
)


def reasons(old: CellVersions | None, new: CellVersions) -> dict[str, str]:
    """{asset: why it is recomputed} of one cell ({}: nothing differs); `old` None: a cell the
    old side never declared."""
    if old is None:
        return dict.fromkeys(_below(new, DATASET), NEW_CELL)
    for rule in RULES:
        if found := rule.applies(old, new):
            return found
    return {}


REPORT_MODULE = "reports.py"
REPORT_RULES = (
    ("a cell of the sweep is recomputed", "cells pending"),
    (
        "the sweep's cells (their order), labels or metric columns",
        "the sweep's cells, labels or metric columns changed",
    ),
    ("the reports step's declared version", f"asset module {REPORT_MODULE} changed"),
)


def report_reason(pending: bool, sweep: tuple[str | None, str], step: tuple[str | None, str]) -> str:
    """Why a sweep's report is drawn again ("": not for a difference of versions). `sweep`:
    (old, new) `specs.sweep_version`; `step`: (old, new) declared version of the reports step."""
    found = (pending, sweep[0] != sweep[1], step[0] != step[1])
    return next((said for (_, said), applies in zip(REPORT_RULES, found, strict=True) if applies), "")


def table() -> str:
    """The rules as docs/staleness.md shows them, in the order they are tried."""
    rows = [
        "| what differs (first match decides) | recomputed | `lab sweep plan` and `lab impact` say |",
        "|---|---|---|",
        f"| a cell the base revision did not declare (`lab impact`) | everything | `{NEW_CELL}` |",
    ]
    rows += [f"| {r.change} | {r.recomputes} | {'<br>'.join(f'`{s}`' for s in r.says)} |" for r in RULES]
    rows += [f"| a report: {change} | the sweep's report | `{said}` |" for change, said in REPORT_RULES]
    return "\n".join(rows)


BEGIN, END = "<!-- rules: python -m lab_assets.dr.staleness -->", "<!-- end of rules -->"


def with_table(doc: str) -> str:
    """`doc` with the table between its markers replaced by `table()`."""
    head, rest = doc.split(BEGIN, 1)
    return f"{head}{BEGIN}\n{table()}\n{END}{rest.split(END, 1)[1]}"


if __name__ == "__main__":
    doc = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/staleness.md")
    doc.write_text(with_table(doc.read_text()))
