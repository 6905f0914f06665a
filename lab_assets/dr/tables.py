"""The summary (summary.py) and the per-cell table as text for a terminal of a given width, and
as Markdown: one block per metric (its parameter variants side by side while they fit, split
into further blocks where they do not), never one wall of every column."""

from __future__ import annotations

import math
import textwrap

import pandas as pd

from lab_assets.dr.controls import LEGEND
from lab_assets.dr.summary import ALPHA, INTERVAL, MIN_PAIRS, TEST, TIE, TOO_FEW

WIDTH = 100
GAP = "  "
DIRECTION = {"higher": "higher is better", "lower": "lower is better"}


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def _direction(better) -> str:
    return "descriptive, not ranked" if _missing(better) else DIRECTION[better]


def _num(value: float, digits: int = 4) -> str:
    """`digits` significant digits, fixed-point from 0.001 to 999,999, else in e-notation: never a
    nonzero value rounded to 0 (PHATE's variance ratio is ~1e-5)."""
    if _missing(value):
        return "n/a"
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    exponent = math.floor(math.log10(abs(value)))
    if -3 <= exponent <= 5:
        return f"{value:.{max(digits - 1 - exponent, 0)}f}"
    return f"{value:.{digits - 1}e}"


def _signed(value: float) -> str:
    text = _num(value)
    return text if _missing(value) or text.startswith("-") else f"+{text}"


def _lay_out(headers: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return GAP.join(
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    return [line(headers), *(line(r) for r in rows)]


def _blocks(
    title: str, labels: list[list[str]], label_headers: list[str], columns: list[tuple[str, list[str]]], width: int
) -> list[str]:
    """Label columns, then as many value columns as fit in `width` per block (at least one)."""
    label_widths = [
        max(len(h), *(len(r[i]) for r in labels)) if labels else len(h) for i, h in enumerate(label_headers)
    ]
    base = sum(label_widths) + len(GAP) * len(label_widths)
    chunks: list[list[tuple[str, list[str]]]] = [[]]
    used = base
    for header, cells in columns:
        w = max(len(header), *(len(c) for c in cells)) if cells else len(header)
        if chunks[-1] and used + w > width:
            chunks.append([])
            used = base
        chunks[-1].append((header, cells))
        used += w + len(GAP)
    out = []
    for i, chunk in enumerate(chunks):
        part = f" ({i + 1}/{len(chunks)})" if len(chunks) > 1 else ""
        headers = label_headers + [h for h, _ in chunk]
        rows = [lab + [cells[r] for _, cells in chunk] for r, lab in enumerate(labels)]
        right = set(
            range(len(label_headers) - 1 if label_headers[-1] in ("n", "seed") else len(label_headers), len(headers))
        )
        out += ["", title + part, *_lay_out(headers, rows, right)]
    return out


def _row_labels(table: pd.DataFrame, keys: list[str]) -> list[list[str]]:
    """Each row's label cells, a repeated leading label left blank (reads as a group)."""
    out, previous = [], None
    for values in table[keys].itertuples(index=False):
        values = [str(v) for v in values]
        out.append(["" if values[0] == previous else values[0], *values[1:]])
        previous = values[0]
    return out


def _cell(row, n_max: int, markdown: bool = False) -> str:
    if row.n == 0:
        return "n/a"
    text = f"{_num(row.mean)} ± {_num(row.sd, 3)}" if row.n > 1 else _num(row.mean)  # a spread: 3 digits tell it
    if not _missing(row.rank):
        text = f"**{text}** ({row.rank})" if markdown and row.best else f"{text} ({row.rank}){'*' if row.best else ''}"
    if row.n != n_max:
        text += f" n={row.n}"
    scaled = getattr(row, "scaled", None)  # absent from a summary written before controls existed
    if not _missing(scaled):
        text += f" [{scaled:.2f}]"
    return text


def _has_scaled(summary: pd.DataFrame) -> bool:
    return "scaled" in summary and bool(summary["scaled"].notna().any())


def _metric_groups(summary: pd.DataFrame):
    for name in dict.fromkeys(summary["metric_name"]):
        group = summary[summary["metric_name"] == name]
        yield name, group, list(dict.fromkeys(group["metric"]))


def summary_text(summary: pd.DataFrame, comparisons: pd.DataFrame, width: int = WIDTH) -> str:
    lines = textwrap.wrap(
        "mean ± sd over seeds; (rank) per dataset, * = best; 95% t-intervals in summary.md and summary.csv", width
    )
    if _has_scaled(summary):
        lines += textwrap.wrap(LEGEND, width)
    for name, group, variants in _metric_groups(summary):
        first = group[group["metric"] == variants[0]]
        n_max = (
            group.groupby(["data_config", "method"], sort=False)["n"]
            .max()
            .reindex(list(zip(first["data_config"], first["method"])))
            .to_numpy()
        )
        labels = [lab + [str(n)] for lab, n in zip(_row_labels(first, ["dataset_label", "method_label"]), n_max)]
        columns = []
        for v in variants:
            sub = group[group["metric"] == v]
            cells = [_cell(r, n) for r, n in zip(sub.itertuples(index=False), n_max)]
            columns.append((sub["metric_label"].iloc[0] if len(variants) > 1 else name, cells))
        lines += _blocks(
            f"{name} ({_direction(first['better'].iloc[0])})", labels, ["dataset", "method", "n"], columns, width
        )
    lines += ["", *comparison_lines(comparisons, width)]
    return "\n".join(lines)


def _verdict(c) -> str:
    if c.verdict == TIE:
        return "tie: equal on every paired seed"
    if c.verdict == TOO_FEW:
        return f"too few pairs to tell ({c.n_pairs} < {MIN_PAIRS})"
    return f"{c.verdict} (p {'<' if c.verdict == 'lead' else '>='} {ALPHA})"


def too_few_seeds(comparisons: pd.DataFrame) -> str | None:
    """One sentence when no comparison can reach a verdict for want of seeds (every one has fewer
    than MIN_PAIRS pairs, or is a tie); None when at least one can."""
    if (
        comparisons.empty
        or not (comparisons["verdict"] == TOO_FEW).any()
        or not comparisons["verdict"].isin([TOO_FEW, TIE]).all()
    ):
        return None
    most, n = int(comparisons["n_pairs"].max()), len(comparisons)
    counted = "1 comparison has" if n == 1 else f"{n} comparisons have"
    return (
        f"best vs runner-up: not tested: {counted} at most {most} paired seeds; the "
        f"{TEST} test needs at least {MIN_PAIRS} seeds to tell a lead from seed noise at alpha {ALPHA} "
        f"(give the sweep `seeds:` {MIN_PAIRS} or more)"
    )


def comparison_lines(comparisons: pd.DataFrame, width: int = WIDTH) -> list[str]:
    head = (
        f"best vs runner-up per metric: {TEST} test over the same data seeds (two-sided, "
        f"alpha {ALPHA}, not corrected for multiple comparisons; with fewer than {MIN_PAIRS} pairs no "
        f"difference can reach p < {ALPHA}); difference = best - runner-up"
    )
    lines = textwrap.wrap(head, width)
    if comparisons.empty:
        return lines + ["  (no metric with a direction and two methods with values)"]
    if (few := too_few_seeds(comparisons)) is not None:  # every line would say the same: say it once
        return textwrap.wrap(few, width)
    for dc in dict.fromkeys(comparisons["data_config"]):
        group = comparisons[comparisons["data_config"] == dc]
        lines.append(group["dataset_label"].iloc[0])
        for c in group.itertuples(index=False):
            stat = "" if _missing(c.statistic) else f"W={c.statistic:g}, p={c.p_value:.3g}, "
            text = (
                f"{_metric_title(c)}: {c.best_label} vs {c.runner_up_label} {_signed(c.mean_difference)} "
                f"({stat}{c.n_pairs} pairs): {_verdict(c)}"
            )
            lines += textwrap.wrap(text, width, initial_indent="  ", subsequent_indent="      ")
    return lines


def _metric_title(c) -> str:
    return c.metric_name if c.metric_label == c.metric_name else f"{c.metric_name} {c.metric_label}"


def summary_markdown(sweep_name: str, summary: pd.DataFrame, comparisons: pd.DataFrame) -> str:
    out = [
        f"### Summary of `{sweep_name}` over seeds",
        "",
        f"Mean ± sd over seeds (n seeds with a value), {INTERVAL}; (rank) per dataset, **bold** = best.",
        "",
    ]
    if _has_scaled(summary):
        out += [LEGEND + ".", ""]
    for name, group, variants in _metric_groups(summary):
        out += [f"#### {name} ({_direction(group['better'].iloc[0])})", ""]
        first = group[group["metric"] == variants[0]]
        table = pd.DataFrame({"dataset": first["dataset_label"].to_numpy(), "method": first["method_label"].to_numpy()})
        n_max = (
            group.groupby(["data_config", "method"], sort=False)["n"]
            .max()
            .reindex(list(zip(first["data_config"], first["method"])))
            .to_numpy()
        )
        table["n"] = n_max
        for v in variants:
            sub = group[group["metric"] == v]
            head = sub["metric_label"].iloc[0] if len(variants) > 1 else name
            table[head] = [_cell(r, n, markdown=True) for r, n in zip(sub.itertuples(index=False), n_max)]
            table[f"95% CI {head}" if len(variants) > 1 else "95% CI"] = [
                "n/a" if _missing(r.ci_low) else f"[{_num(r.ci_low)}, {_num(r.ci_high)}]{' clipped' * r.ci_clipped}"
                for r in sub.itertuples(index=False)
            ]
        out += [table.to_markdown(index=False), ""]
    out += [
        f"#### Best vs runner-up ({TEST}, paired over data seeds)",
        "",
        " ".join(comparison_lines(comparisons, 10_000)[:1]),
        "",
    ]
    if not comparisons.empty and too_few_seeds(comparisons) is None:
        rows = pd.DataFrame(
            {
                "dataset": comparisons["dataset_label"],
                "metric": [_metric_title(c) for c in comparisons.itertuples(index=False)],
                "best": comparisons["best_label"],
                "runner-up": comparisons["runner_up_label"],
                "mean difference": comparisons["mean_difference"].map(lambda v: f"{v:+.4g}"),
                "W": comparisons["statistic"].map(lambda v: "" if _missing(v) else f"{v:g}"),
                "p": comparisons["p_value"].map(lambda v: "" if _missing(v) else f"{v:.3g}"),
                "pairs": comparisons["n_pairs"],
                "verdict": [_verdict(c) for c in comparisons.itertuples(index=False)],
            }
        )
        out += [rows.to_markdown(index=False), ""]
    return "\n".join(out)


def cells_text(table: pd.DataFrame, metric_columns: list[str], labels: dict[str, str], width: int = WIDTH) -> str:
    """The per-cell table (one row per cell and seed), split by metric like the summary."""
    labels_rows = _row_labels(table, ["dataset_label", "method_label", "seed"])
    lines: list[str] = []
    names = list(dict.fromkeys(c.split("@")[0] for c in metric_columns))
    for name in names:
        cols = [c for c in metric_columns if c.split("@")[0] == name]
        columns = []
        for c in cols:
            label = labels.get(c, c)
            columns.append((label[len(name) :].strip() or name, [_num(v) for v in table[c]]))
        lines += _blocks(name, labels_rows, ["dataset", "method", "seed"], columns, width)
    return "\n".join(lines).lstrip("\n")
