"""A small scatter plot of one embedding (its first two coordinates) as PNG bytes, for the
embedding's UI metadata: a few KB, coloured by label where there are labels.

Drawn straight into a pixel grid with NumPy and encoded as a palette PNG by Pillow, not with
matplotlib: it runs inside every cell, and a matplotlib figure costs 15-30 ms per cell (plus a
~0.8 s import per worker) against a per-cell platform overhead of ~0.12 s (BENCHMARKS.md); this
costs a few ms. The report's figures (figures.py) are matplotlib.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

SIZE = 160  # pixels, square
DOT = 2  # a point is DOT x DOT pixels
# ColorBrewer "Spectral" (11 classes, as matplotlib's cmap of that name, which the report uses):
# continuous labels are interpolated along it; class labels take evenly spaced colours from it.
SPECTRAL = np.array(
    [
        (158, 1, 66),
        (213, 62, 79),
        (244, 109, 67),
        (253, 174, 97),
        (254, 224, 139),
        (255, 255, 191),
        (230, 245, 152),
        (171, 221, 164),
        (102, 194, 165),
        (50, 136, 189),
        (94, 79, 162),
    ],
    dtype=np.float64,
)
# matplotlib's "tab10": up to 10 classes get distinct colours (Spectral's pale middle would
# vanish on white).
TAB10 = np.array(
    [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ],
    dtype=np.uint8,
)
FRAME = (200, 200, 200)
LEVELS = 32  # colours in the palette for continuous labels
MAX_CLASSES = 200  # integer labels with more distinct values are coloured as continuous
NO_LABEL = (31, 119, 180)
# The colour key of a dataset whose classes have names (cell types): one line per class.
KEY_WIDTH, KEY_LINE, KEY_CHARS, KEY_LINES = 190, 12, 28, 40


def _palette(n: int) -> np.ndarray:
    """n colours along Spectral, as uint8 RGB."""
    t = np.linspace(0, len(SPECTRAL) - 1, n) if n > 1 else np.array([0.0])
    lo = np.floor(t).astype(int)
    hi = np.minimum(lo + 1, len(SPECTRAL) - 1)
    frac = (t - lo)[:, None]
    return np.round(SPECTRAL[lo] * (1 - frac) + SPECTRAL[hi] * frac).astype(np.uint8)


def _colour_index(labels: pd.Series | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per point, an index into the returned palette (uint8 RGB rows)."""
    if labels is None or labels.isna().all():
        return np.zeros(n, dtype=np.int64), np.array([NO_LABEL], dtype=np.uint8)
    values = labels.to_numpy()
    if pd.api.types.is_integer_dtype(labels):
        classes, index = np.unique(values, return_inverse=True)
        if len(classes) <= len(TAB10):
            return index, TAB10[: len(classes)]
        if len(classes) <= MAX_CLASSES:
            return index, _palette(len(classes))
    values = pd.to_numeric(labels, errors="coerce").to_numpy(dtype=np.float64)
    finite = np.isfinite(values)
    lo, hi = (values[finite].min(), values[finite].max()) if finite.any() else (0.0, 0.0)
    scaled = (values - lo) / (hi - lo) if hi > lo else np.zeros_like(values)
    index = np.clip(np.nan_to_num(scaled) * (LEVELS - 1), 0, LEVELS - 1).round().astype(np.int64)
    return index, _palette(LEVELS)


def scatter_png(Z: np.ndarray, labels: pd.Series | None = None, optimize: bool = True) -> bytes:
    """A (SIZE + 2)-pixel square palette PNG (with its frame) of the points (z0, z1) (z1 = 0 for a
    1-d embedding), each point coloured by its label; white background, later points drawn over earlier ones."""
    from PIL import Image  # imported on use (Pillow: matplotlib's own PNG writer)

    Z = np.asarray(Z, dtype=np.float64)
    xy = Z[:, :2] if Z.shape[1] >= 2 else np.column_stack([Z[:, 0], np.zeros(len(Z))])
    index, palette = _colour_index(labels, len(xy))
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    # Same scale on both axes would waste pixels on a long thin embedding; each axis is
    # stretched to the frame, as a scatter plot's autoscale does.
    cells = SIZE - DOT
    col = np.round((xy[:, 0] - lo[0]) / span[0] * (cells - 1)).astype(np.int64)
    row = np.round((1 - (xy[:, 1] - lo[1]) / span[1]) * (cells - 1)).astype(np.int64)
    image = np.zeros((SIZE + 2, SIZE + 2), dtype=np.uint8)  # palette entry 0: white
    image[[0, -1], :] = image[:, [0, -1]] = 1  # entry 1: a light frame
    for dy in range(DOT):
        for dx in range(DOT):
            image[row + dy + 1, col + dx + 1] = index + 2
    rgb = np.vstack([np.array([[255, 255, 255], FRAME], dtype=np.uint8), palette])
    picture = Image.fromarray(image)  # "L"; putpalette makes it a palette ("P") image
    picture.putpalette(rgb.tobytes())
    buffer = io.BytesIO()
    # `optimize` (the smallest file, for metadata stored with every materialization) is most of the
    # drawing time; W&B stores its copy once per run.
    picture.save(buffer, format="PNG", optimize=optimize)
    return buffer.getvalue()


def legend(labels: pd.Series | None, names: dict | None = None) -> list[tuple[str, str]]:
    """What the colours of `scatter_png` mean, as (text, "#rrggbb"): one entry per class (its
    name from `names`, else the label value), or the two ends of a continuous label's scale; []
    without labels. The one place label values become legend text."""
    if labels is None or labels.isna().all():
        return []
    index, palette = _colour_index(labels, len(labels))
    names = names or {}

    def colour(i: int) -> str:
        return "#{:02x}{:02x}{:02x}".format(*palette[i])

    if not pd.api.types.is_integer_dtype(labels) or labels.nunique() > MAX_CLASSES:
        values = pd.to_numeric(labels, errors="coerce")
        return [(f"{values.min():.3g}", colour(0)), (f"{values.max():.3g}", colour(LEVELS - 1))]
    first = pd.Series(labels.to_numpy()).groupby(index).first()
    return [(str(names.get(value, value)), colour(i)) for i, value in first.items()]


def colour_key_png(labels: pd.Series, names: list[str]) -> bytes | None:
    """The colour key of every scatter of these class ids (`scatter_png`'s colours): per class
    present, a swatch and its name (`names[id]`), at most KEY_LINES lines. None where the scatter
    shades classes along a gradient (more than 200) instead of one colour each."""
    from PIL import Image, ImageDraw

    classes = np.unique(labels.to_numpy())
    _, palette = _colour_index(labels, len(labels))
    if len(palette) != len(classes):
        return None
    shown = classes if len(classes) <= KEY_LINES else classes[: KEY_LINES - 1]
    lines = len(shown) + (len(shown) < len(classes))
    picture = Image.new("P", (KEY_WIDTH, 4 + lines * KEY_LINE), 0)
    picture.putpalette(np.vstack([[[255, 255, 255], [0, 0, 0]], palette]).astype(np.uint8).tobytes())
    draw = ImageDraw.Draw(picture)  # palette entries: 0 white, 1 the text, 2 + i class i's colour
    for i, c in enumerate(shown):
        top = 2 + i * KEY_LINE
        draw.rectangle([4, top + 2, 11, top + 9], fill=i + 2)
        draw.text((16, top), names[int(c)][:KEY_CHARS], fill=1)
    if len(shown) < len(classes):
        draw.text((16, 2 + len(shown) * KEY_LINE), f"+{len(classes) - len(shown)} more", fill=1)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()
