"""The report's figures lay out their panels with fixed margins (no layout pass): every title,
tick label and axis label must still fall inside the figure and clear of the other panels, with
long labels and many panels included."""

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from lab_assets.dr import figures

LONG_METHOD = "isomap(n_neighbors=10, metric=minkowski, p=3, path_method=D)"
LONG_DATA = "swissroll(n_samples=1500, noise=0.05, hole=True)"


def _curves_table(datasets: list[str], methods: list[str]) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [
        {
            "dataset_label": d,
            "method_label": m,
            "seed": seed,
            **{
                f"{metric}@k={k}": value
                for metric in ("trustworthiness", "continuity", "knn_preservation")
                for k, value in zip((5, 10, 30), 0.99 + 0.0099 * rng.random(3))
            },
        }
        for d in datasets
        for m in methods
        for seed in (0, 1)
    ]
    return pd.DataFrame(rows)


def _embedding(rows: int = 50) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame({"z0": rng.normal(size=rows), "z1": rng.normal(size=rows), "label": rng.integers(0, 3, rows)})


def _assert_laid_out(fig) -> None:
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    page = fig.bbox.padded(0.5)  # half a pixel: antialiased edges
    boxes = [ax.get_tightbbox(renderer) for ax in fig.axes]
    for ax, box in zip(fig.axes, boxes):
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1, (
            f"panel {ax.get_title()!r} reaches outside the figure: {box} not in {fig.bbox}"
        )
    for i, a in enumerate(boxes):
        for j in range(i + 1, len(boxes)):
            assert not a.overlaps(boxes[j]), (
                f"panels {fig.axes[i].get_title()!r} and {fig.axes[j].get_title()!r} overlap"
            )


@pytest.mark.parametrize(
    "datasets, methods",
    [
        (["swissroll", "s_curve"], ["pca", "isomap", "tsne"]),
        ([LONG_DATA, "s_curve", "blobs"], [LONG_METHOD, "pca"]),
    ],
)
def test_metric_curves_fit_the_figure_without_overlap(datasets, methods):
    fig = figures.curves_figure(_curves_table(datasets, methods))
    assert len(fig.axes) == 3 * len(datasets)
    _assert_laid_out(fig)


@pytest.mark.parametrize(
    "datasets, methods",
    [
        (["swissroll", "s_curve"], ["pca", "isomap", "tsne"]),
        ([LONG_DATA, "s_curve"], [LONG_METHOD, "pca", "umap"]),
    ],
)
def test_the_embeddings_grid_fits_the_figure_without_overlap(datasets, methods):
    panels = {(d, m): _embedding() for d in datasets for m in methods}
    del panels[(datasets[-1], methods[-1])]  # a missing cell is drawn as "missing"
    fig = figures.embeddings_figure(panels)
    assert len(fig.axes) == len(datasets) * len(methods)
    _assert_laid_out(fig)


def test_a_long_title_is_wrapped_onto_two_lines_at_most():
    title = figures.CURVES.label(f"knn_preservation | {LONG_DATA} {LONG_DATA}")
    assert 1 < len(title.splitlines()) <= 2 and title.endswith("...")


def test_the_figures_are_pngs_of_the_laid_out_size():
    png = figures.metric_curves(_curves_table(["swissroll", "s_curve"], ["pca"]))
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    fig = figures.curves_figure(_curves_table(["swissroll", "s_curve"], ["pca"]))
    assert (width, height) == tuple(int(v * figures.DPI) for v in fig.get_size_inches())  # no crop, no pad


def test_metrics_at_one_k_draw_no_curves_but_say_so():
    table = _curves_table(["swissroll", "s_curve"], ["pca", "isomap"])
    table = table[[c for c in table.columns if "@k=" not in c or c.endswith("@k=10")]]
    fig = figures.curves_figure(table)
    assert not fig.axes and [t.get_text() for t in fig.texts] == ["one k per metric: no curve to draw"]
    # One metric with two k: its curves are drawn, one panel per (metric, dataset).
    fig = figures.curves_figure(
        _curves_table(["swissroll"], ["pca"]).drop(columns=["continuity@k=5", "continuity@k=30"])
    )
    assert len(fig.axes) == 3
