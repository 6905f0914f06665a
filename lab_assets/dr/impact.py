"""What a change makes stale, per sweep and cell, from the versions of two source trees
(`defs/code_versions.snapshot` of a base revision and of the working tree), without running
anything or reading an instance. Each cell's reasons are `dr/staleness.reasons`, the plan's rules;
the report is stale when a cell is, or when what it shows changed. Recorded wall seconds, where an
instance has them, price the recomputation."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field

from lab_assets.dr import staleness
from lab_assets.dr.staleness import DATASET, EMBEDDING, METRICS, MODEL


@dataclass
class CellImpact:
    cell: str
    data: str
    method: str
    assets: dict[str, str]  # asset -> why it is recomputed
    seconds: float | None = None  # recorded wall seconds of those assets (None: never computed / no instance)
    new: bool = False  # the base declared no such cell: new in this change, not changed by it


@dataclass
class SweepImpact:
    path: str
    name: str
    cells: int  # the head's cells
    stale: list[CellImpact] = field(default_factory=list)  # the cells the change recomputes: new or changed
    report: str = ""  # why the report is recomputed ("" = fresh)
    error: str = ""  # the head cannot parse the file
    cell_keys: list[str] = field(default_factory=list)  # the head's cells
    missing: int | None = None  # of those, never run in the lab home (None: no lab home at hand)

    @property
    def new(self) -> int:
        return sum(c.new for c in self.stale)

    @property
    def changed(self) -> int:
        return len(self.stale) - self.new

    @property
    def reasons(self) -> Counter:
        """{why: number of stale cells it names}."""
        return Counter(why for c in self.stale for why in dict.fromkeys(c.assets.values()))

    @property
    def seconds(self) -> float | None:
        known = [c.seconds for c in self.stale if c.seconds is not None]
        return sum(known) if known else None

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "name": self.name,
            "cells": self.cells,
            "stale_cells": len(self.stale),
            "changed_cells": self.changed,
            "new_cells": self.new,
            "missing_cells": self.missing,
            "report": self.report,
            "error": self.error,
            "reasons": dict(self.reasons),
            "seconds": self.seconds,
            "unpriced_cells": sum(c.seconds is None for c in self.stale),
            "stale": [asdict(c) for c in self.stale],
        }


def _versions(cell: dict, tree: dict, columns: list[str]) -> staleness.CellVersions:
    """A cell's versions as one tree's snapshot holds them (`defs/code_versions.snapshot`)."""
    shared = tree["shared"]
    return staleness.CellVersions(
        data=staleness.EntryVersions(cell["dataset"], cell["data_version"], cell["dataset_code"]),
        method=staleness.EntryVersions(cell["method_name"], cell["method_version"], cell["method_code"]),
        trainable=cell["trainable"],
        steps={m: tree["assets"][m] for m in staleness.STEP_MODULES},
        columns={
            c: staleness.Column(r["metric"], r["version"], r["code"], shared)
            for c in columns
            if (r := tree["columns"].get(c)) is not None
        },
        metric_versions=tree.get("metrics", {}),
    )


def cell_impact(h: dict, b: dict | None, base: dict, head: dict) -> dict[str, str]:
    """{asset: why} for one cell: `h`/`b` its head/base records (b None: no base sweep has it)."""
    old = None if b is None else _versions(b, base, b["columns"])
    return staleness.reasons(old, _versions(h, head, h["columns"]))


def impact(base: dict, head: dict, paths: list[str]) -> list[SweepImpact]:
    """Per sweep file of `paths` (as the head has it): its stale cells and report."""
    known = {cell: rec for s in base["sweeps"].values() for cell, rec in s.get("cells", {}).items()}
    out = []
    for path in paths:
        h = head["sweeps"].get(path, {"error": "no such file in the working tree"})
        if "error" in h:
            out.append(SweepImpact(path, "", 0, error=h["error"]))
            continue
        s = SweepImpact(path, h["name"], len(h["cells"]), cell_keys=list(h["cells"]))
        for cell, rec in h["cells"].items():
            assets = cell_impact(rec, known.get(cell), base, head)
            if assets:
                s.stale.append(CellImpact(cell, rec["data"], rec["method"], assets, new=cell not in known))
        b = base["sweeps"].get(path, {})
        step = staleness.REPORT_MODULE
        s.report = staleness.report_reason(
            bool(s.stale), (b.get("sweep_version"), h["sweep_version"]), (base["assets"][step], head["assets"][step])
        )
        out.append(s)
    return out


def _seconds(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "?"
    return f"{value:.1f} s" if value < 120 else f"{value / 60:.1f} min"


def _summary_line(s: SweepImpact) -> str:
    if s.error:
        return f"sweep {s.path}: cannot be planned: {s.error.splitlines()[0]}"
    cost = f", recorded cost {_seconds(s.seconds)}" if s.seconds is not None else ""
    unpriced = sum(c.seconds is None for c in s.stale)
    if s.seconds is not None and unpriced:
        cost += f" (+{unpriced} cells never computed)"
    report = f"report: {s.report}" if s.report else "report fresh"
    # Not "stale": a cell the base never declared is new, and a cell the change left alone may
    # still never have run here (missing), which is no doing of the change.
    missing = f", {s.missing} missing (never run in this lab home)" if s.missing is not None else ""
    counts = f"{s.changed} of {s.cells} cells changed, {s.new} new in this change{missing}"
    return f"sweep {s.name} ({s.path}): {counts}{cost}; {report}"


def _assets(c: CellImpact) -> str:
    return ", ".join(a for a in (DATASET, MODEL, EMBEDDING, METRICS) if a in c.assets)


def text(impacts: list[SweepImpact], cells: bool = True) -> str:
    lines = []
    for s in impacts:
        lines.append(_summary_line(s))
        for why, n in s.reasons.most_common():
            lines.append(f"  {n:>5} cell{'s' * (n != 1)}  {why}")
        if cells:
            for c in s.stale:
                cost = _seconds(c.seconds) if c.seconds is not None else ""
                lines.append(f"    {c.cell}  {_assets(c)}  {cost}".rstrip())
    return "\n".join(lines)


def _cell_md(cell: str) -> str:
    """A cell key in a Markdown table: its `|` would end the table cell."""
    return cell.replace("|", "\\|")


def markdown(impacts: list[SweepImpact], base: str, cells: bool = True) -> str:
    out = [f"### What this change recomputes (against `{base}`)", ""]
    for s in impacts:
        out += [f"**{_summary_line(s)}**", ""]
        if s.reasons:
            out += ["| why | cells |", "|---|---:|", *(f"| {why} | {n} |" for why, n in s.reasons.most_common()), ""]
        if s.stale and cells:
            priced = s.seconds is not None
            out += [
                "<details><summary>cells this change recomputes</summary>",
                "",
                "| cell | recomputes |" + " recorded cost |" * priced,
                "|---|---|" + "---:|" * priced,
            ]
            out += [f"| `{_cell_md(c.cell)}` | {_assets(c)} |" + f" {_seconds(c.seconds)} |" * priced for c in s.stale]
            out += ["", "</details>", ""]
    return "\n".join(out)
