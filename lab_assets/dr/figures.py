"""The report's figures, as PNG bytes: an embeddings grid coloured by label, and metric-vs-k curves."""

from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

METRIC_AT_K = re.compile(r"^(?P<metric>[a-z_]+)@k=(?P<k>\d+)(?P<rest>(,.*)?)$")


def _png(fig: plt.Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def embeddings_grid(panels: dict[tuple[str, str], pd.DataFrame]) -> bytes:
    """One panel per (data row, method column), in the order given; `panels[(data, method)]` is
    an embedding table."""
    rows = list(dict.fromkeys(d for d, _ in panels))
    cols = list(dict.fromkeys(m for _, m in panels))
    fig, axes = plt.subplots(len(rows), len(cols), figsize=(2.4 * len(cols), 2.4 * len(rows)), squeeze=False)
    for i, d in enumerate(rows):
        for j, m in enumerate(cols):
            ax = axes[i][j]
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0:
                ax.set_title(m, fontsize=8)
            if j == 0:
                ax.set_ylabel(d, fontsize=7)
            df = panels.get((d, m))
            if df is None:
                ax.text(0.5, 0.5, "missing", ha="center", va="center", transform=ax.transAxes)
                continue
            y = df["z1"] if "z1" in df else 0 * df["z0"]
            if df["label"].notna().any():
                ax.scatter(df["z0"], y, c=df["label"], s=2, cmap="Spectral", linewidths=0)
            else:
                ax.scatter(df["z0"], y, s=2, linewidths=0)
    return _png(fig)


def metric_curves(table: pd.DataFrame) -> bytes:
    """Metric vs k, one panel per (metric, dataset), one line per method: mean over seeds with
    the min-max spread shaded."""
    long = []
    for col in table.columns:
        m = METRIC_AT_K.match(col)
        if m:
            part = table[["dataset_label", "method_label", "seed", col]].rename(columns={col: "value", "method_label": "method"})
            long.append(part.assign(metric=m["metric"] + m["rest"], k=int(m["k"])))
    if not long:
        fig = plt.figure(figsize=(4, 1))
        fig.text(0.5, 0.5, "no metric with a k parameter", ha="center")
        return _png(fig)
    data = pd.concat(long).dropna(subset=["value"])
    metrics, datasets = list(dict.fromkeys(data["metric"])), list(dict.fromkeys(data["dataset_label"]))
    fig, axes = plt.subplots(len(metrics), len(datasets), figsize=(3.2 * len(datasets), 2.6 * len(metrics)), squeeze=False)
    for i, metric in enumerate(metrics):
        for j, ds in enumerate(datasets):
            ax = axes[i][j]
            sub = data[(data["metric"] == metric) & (data["dataset_label"] == ds)]
            for method, g in sub.groupby("method", sort=False):
                s = g.groupby("k")["value"].agg(["mean", "min", "max"])
                ax.plot(s.index, s["mean"], marker="o", ms=3, label=method)
                ax.fill_between(s.index, s["min"], s["max"], alpha=0.2)
            ax.set_title(f"{metric} | {ds}", fontsize=8)
            ax.set_xlabel("k", fontsize=8)
            ax.tick_params(labelsize=7)
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return _png(fig)
