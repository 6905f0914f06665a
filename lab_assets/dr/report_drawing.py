"""A report's drawn files (its two figures and its HTML page), from the tables the report step has
read (`drawn`): in the command's side process (`core/side_process.py`), which has loaded matplotlib
(~0.45 s on the reference machine) while the command loaded Dagster, or here (`draw`).

For the side process the inputs travel as JSON (`request`: the sweep's record, each table as
Parquet with its index, base64) and so do the files (`draw_request`). The same tables,
drawn by the same code, give the same bytes either way (the figures carry no date).
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Any

from lab_assets.core import side_process

if TYPE_CHECKING:  # nothing heavy at import: a command names this module before it loads pandas
    import pandas as pd

    from lab_assets.dr.sweep import Sweep

# What the side process loads before it is asked to draw (matplotlib, pandas, pyarrow, this).
MODULES = ("lab_assets.dr.figures", "lab_assets.dr.html_report", __name__)


def draw(
    sweep: Sweep,
    table: pd.DataFrame,
    stats: pd.DataFrame,
    comparisons: pd.DataFrame,
    panels: dict[tuple[str, str], pd.DataFrame],
) -> dict[str, bytes]:
    """{file name: bytes} of the figures and the page (`tidy.sweep_table`'s `table`, summary.py's
    `stats` and `comparisons`, `tidy.first_seed_embeddings`' `panels`)."""
    from lab_assets.dr import figures, html_report  # matplotlib: only where a report is drawn

    return {
        "embeddings.png": figures.embeddings_grid(panels),
        "metrics_vs_k.png": figures.metric_curves(table),
        "report.html": html_report.report_html(sweep, table, stats, comparisons, panels).encode(),
    }


def drawn(sweep, table, stats, comparisons, panels) -> dict[str, bytes]:
    """`draw`, in the command's side process where it has one, else here."""
    args = (sweep, table, stats, comparisons, panels)
    answer = side_process.call(draw_request, lambda: request(*args))
    if answer is None:
        return draw(*args)
    return {name: base64.b64decode(data) for name, data in answer.items()}


def warm() -> None:
    """Draw a two-point figure: a process's first figure pays ~0.15 s more than the next (the Agg
    backend, fonts, Pillow's plugins), which the side process pays before it is asked to draw."""
    import pandas as pd

    from lab_assets.dr import figures

    figures.embeddings_grid({("", ""): pd.DataFrame({"z0": [0.0, 1.0], "z1": [1.0, 0.0], "label": [0.0, 1.0]})})


def request(sweep, table, stats, comparisons, panels) -> dict[str, Any]:
    """`draw`'s arguments as JSON."""
    return {
        "sweep": sweep.to_json(),
        "table": _encode(table),
        "stats": _encode(stats),
        "comparisons": _encode(comparisons),
        "panels": [[data, method, _encode(frame)] for (data, method), frame in panels.items()],
    }


def draw_request(request: dict[str, Any]) -> dict[str, str]:
    """What the side process answers: `draw` of a `request`, each file base64."""
    from lab_assets.dr.sweep import Sweep

    files = draw(
        Sweep.from_json(request["sweep"]),
        _decode(request["table"]),
        _decode(request["stats"]),
        _decode(request["comparisons"]),
        {(data, method): _decode(frame) for data, method, frame in request["panels"]},
    )
    return {name: base64.b64encode(data).decode() for name, data in files.items()}


def _encode(frame: pd.DataFrame) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame), buffer)  # the index too: the drawing may align on it
    return base64.b64encode(buffer.getvalue()).decode()


def _decode(text: str) -> pd.DataFrame:
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(base64.b64decode(text))).to_pandas()
