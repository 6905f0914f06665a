"""The report's figures, as PNG bytes: an embeddings grid coloured by label, and metric-vs-k curves."""

from __future__ import annotations

import io
import re
import textwrap
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from matplotlib.figure import Figure  # no pyplot: no global figure manager, no backend to select

METRIC_AT_K = re.compile(r"^(?P<metric>[a-z_]+)@k=(?P<k>\d+)(?P<rest>(,.*)?)$")
DPI = 110


@dataclass(frozen=True)
class Layout:
    """A grid of equal panels with margins in inches, room for each panel's labels at the font
    sizes used here. Fixed room, not a layout pass: `tight_layout` and `bbox_inches="tight"` each
    measure every text on the figure, half of a report's drawing time (BENCHMARKS.md)."""

    panel: tuple[float, float]  # width, height
    left: float
    right: float
    bottom: float
    top: float  # a title of up to two lines
    wspace: float
    hspace: float
    label_chars: int  # a longer label (a panel's title, a row's y label) is wrapped onto a second line
    legend_chars: int = 32  # the legend sits inside a panel: longer entries are wrapped

    def figure(self, rows: int, cols: int) -> tuple[Figure, np.ndarray]:
        (w, h) = self.panel
        width = self.left + self.right + cols * w + (cols - 1) * self.wspace
        height = self.bottom + self.top + rows * h + (rows - 1) * self.hspace
        fig = Figure(figsize=(width, height), dpi=DPI)
        axes = fig.subplots(rows, cols, squeeze=False)
        fig.subplots_adjust(
            left=self.left / width,
            right=1 - self.right / width,
            bottom=self.bottom / height,
            top=1 - self.top / height,
            wspace=self.wspace / w,
            hspace=self.hspace / h,
        )
        return fig, axes

    def label(self, text: str) -> str:
        return textwrap.fill(text, self.label_chars, max_lines=2, placeholder="...")

    def legend_entry(self, text: str) -> str:
        return textwrap.fill(text, self.legend_chars, max_lines=3, placeholder="...")


# Embeddings: no ticks; a title over the first row, a y label (up to two lines) left of the first column.
EMBEDDINGS = Layout(panel=(2.4, 2.4), left=0.4, right=0.1, bottom=0.1, top=0.4, wspace=0.1, hspace=0.1, label_chars=40)
NAMES_LEGEND_WIDTH = 2.1  # inches right of the grid for a legend of class names (6 pt, ~30 characters)
# Curves: y tick labels (0.9996 at 7 pt), an x label, a title on every panel.
CURVES = Layout(panel=(3.2, 2.6), left=0.55, right=0.1, bottom=0.5, top=0.4, wspace=0.6, hspace=0.85, label_chars=52)


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _note(text: str) -> Figure:
    """A small figure that only says why there is nothing to draw."""
    fig = Figure(figsize=(4, 1), dpi=DPI)
    fig.text(0.5, 0.5, text, ha="center")
    return fig


def embeddings_grid(panels: dict[tuple[str, str], pd.DataFrame]) -> bytes:
    """One panel per (data row, method column), in the order given; `panels[(data, method)]` is
    an embedding table."""
    return _png(embeddings_figure(panels))


def embeddings_figure(panels: dict[tuple[str, str], pd.DataFrame]) -> Figure:
    if not panels:  # every cell failed or none ran yet: the report still says so
        return _note("no cell has an embedding yet")
    rows = list(dict.fromkeys(d for d, _ in panels))
    cols = list(dict.fromkeys(m for _, m in panels))
    # Named classes (cell types: `label_name`) get a legend right of their row: room for it.
    names = {d: list(df["label_name"].cat.categories) for (d, _), df in panels.items() if "label_name" in df}
    layout = replace(EMBEDDINGS, right=NAMES_LEGEND_WIDTH) if names else EMBEDDINGS
    fig, axes = layout.figure(len(rows), len(cols))
    for i, d in enumerate(rows):
        for j, m in enumerate(cols):
            ax = axes[i][j]
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0:
                ax.set_title(EMBEDDINGS.label(m), fontsize=8)
            if j == 0:
                ax.set_ylabel(EMBEDDINGS.label(d), fontsize=7)
            df = panels.get((d, m))
            if df is None:
                ax.text(0.5, 0.5, "missing", ha="center", va="center", transform=ax.transAxes)
                continue
            y = df["z1"] if "z1" in df else 0 * df["z0"]
            if df["label"].notna().any():
                # Named classes: one colour per class id, the same in every panel of the row and the legend.
                scale = {"vmin": 0, "vmax": max(len(names[d]) - 1, 1)} if d in names else {}
                ax.scatter(df["z0"], y, c=df["label"], s=2, cmap="Spectral", linewidths=0, **scale)
            else:
                ax.scatter(df["z0"], y, s=2, linewidths=0)
        if d in names:
            _names_legend(axes[i][-1], names[d])
    return fig


def _names_legend(ax, names: list[str]) -> None:
    from matplotlib import colormaps
    from matplotlib.lines import Line2D

    colours = colormaps["Spectral"](np.arange(len(names)) / max(len(names) - 1, 1))
    handles = [Line2D([], [], ls="", marker="o", ms=4, color=c, label=n) for c, n in zip(colours, names)]
    ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=6, frameon=False)


def metric_curves(table: pd.DataFrame) -> bytes:
    """Metric vs k, one panel per (metric, dataset), one line per method: mean over seeds with
    the min-max spread shaded."""
    return _png(curves_figure(table))


def curves_figure(table: pd.DataFrame) -> Figure:
    long = []
    for col in table.columns:
        m = METRIC_AT_K.match(col)
        if m:
            part = table[["dataset_label", "method_label", "seed", col]].rename(
                columns={col: "value", "method_label": "method"}
            )
            long.append(part.assign(metric=m["metric"] + m["rest"], k=int(m["k"])))
    data = pd.concat(long).dropna(subset=["value"]) if long else None
    if data is None or data.empty:
        return _note("no metric with a k parameter has a value yet")
    # A metric at one k is a point per method, not a curve: its values are in the summary table
    # (and drawing the panels was a quarter of a small sweep's report, issue 44).
    if data.groupby("metric")["k"].nunique().max() < 2:
        return _note("one k per metric: no curve to draw")
    metrics, datasets = list(dict.fromkeys(data["metric"])), list(dict.fromkeys(data["dataset_label"]))
    fig, axes = CURVES.figure(len(metrics), len(datasets))
    for i, metric in enumerate(metrics):
        for j, ds in enumerate(datasets):
            ax = axes[i][j]
            sub = data[(data["metric"] == metric) & (data["dataset_label"] == ds)]
            for method, g in sub.groupby("method", sort=False):
                s = g.groupby("k")["value"].agg(["mean", "min", "max"])
                ax.plot(s.index, s["mean"], marker="o", ms=3, label=CURVES.legend_entry(method))
                ax.fill_between(s.index, s["min"], s["max"], alpha=0.2)
            ax.set_title(CURVES.label(f"{metric} | {ds}"), fontsize=8)
            ax.set_xlabel("k", fontsize=8)
            ax.tick_params(labelsize=7)
    axes[0][-1].legend(fontsize=7, loc="best")
    return fig


def parameters_figure(curves: pd.DataFrame) -> Figure:
    """Each ranked measure (rows) against each numeric method parameter (columns), from
    `tidy.parameter_curves`: one line per dataset (mean over seeds, error bars one sd)."""
    if curves.empty:
        fig = Figure(figsize=(4, 1), dpi=DPI)
        fig.text(0.5, 0.5, "no numeric method parameter takes two or more values", ha="center")
        return fig
    measures = list(dict.fromkeys(curves["measure"]))
    panels = list(dict.fromkeys(zip(curves["method"], curves["parameter"])))
    fig, axes = CURVES.figure(len(measures), len(panels))
    for i, measure in enumerate(measures):
        for j, (method, param) in enumerate(panels):
            ax = axes[i][j]
            sub = curves[(curves["measure"] == measure) & (curves["method"] == method) & (curves["parameter"] == param)]
            for line, g in sub.groupby("line", sort=False):
                g = g.sort_values("x")
                ax.errorbar(g["x"], g["mean"], yerr=g["sd"].fillna(0), marker="o", ms=3, capsize=2, label=line)
            label = sub["measure_label"].iloc[0] if len(sub) else measure
            ax.set_title(CURVES.label(f"{label} | {method}"), fontsize=8)
            ax.set_xlabel(param, fontsize=8)
            ax.tick_params(labelsize=7)
            if i == 0 and j == len(panels) - 1:
                handles, names = ax.get_legend_handles_labels()
                ax.legend(handles, [CURVES.legend_entry(n) for n in names], fontsize=7, loc="best")
    return fig


def svg(fig: Figure) -> str:
    """The figure as SVG text, its text as text (not glyph paths) and no date: the same figure,
    the same bytes."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "lab_assets"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()
