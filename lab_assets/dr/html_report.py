"""`report.html`: one sweep's report as one self-contained file, to open from disk or mail to a
collaborator: no CDN, no server, no request of any kind (plots inline as SVG, embeddings as PNG
data URLs, the sorting script and the style in the page).

Sections: the summary over seeds (every column `summary.summarize` wrote, and any other column a
caller added, sortable by clicking a header), best vs runner-up, each ranked measure against each
numeric method parameter, the embeddings gallery (rows = data, columns = methods, coloured by
label) and the lineage of every number (cell key, seed, git SHA, code version).
"""

from __future__ import annotations

import base64
import html
import math
import numbers

import pandas as pd

from lab_assets.dr import figures, thumbnail, tidy
from lab_assets.dr.sweep import Sweep

# Summary columns that are keys for programs, not for a reader (the labels beside them are).
HIDDEN = {"data_config", "method", "metric_name", "metric_label"}
HEADERS = {
    "dataset_label": "dataset",
    "method_label": "method",
    "metric": "measure",
    "ci_low": "95% CI low",
    "ci_high": "95% CI high",
    "best_label": "best",
    "runner_up_label": "runner-up",
    "mean_difference": "mean difference",
    "p_value": "p",
    "n_pairs": "pairs",
    "code_version": "code version",
    "git_sha": "git SHA",
}
STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; font-size: 12px; }
th, td { padding: 2px 8px; border-bottom: 1px solid #ddd; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; user-select: none; background: #f4f4f4; position: sticky; top: 0; }
th[aria-sort=ascending]::after { content: " \\25B2"; } th[aria-sort=descending]::after { content: " \\25BC"; }
tr.best td { font-weight: 600; }
.gallery td { vertical-align: top; text-align: center; border: none; }
.gallery th { text-align: center; border: none; max-width: 170px; }
.legend span { display: inline-block; margin-right: 8px; font-size: 11px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 3px; }
.note { color: #666; font-size: 12px; }
input.filter { margin: 4px 0; width: 24em; }
code { font-size: 11px; }
"""
# Click a header: sort the rows by that column (numbers by their `data-v`), again: the other way.
SCRIPT = r"""
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var down = th.getAttribute("aria-sort") === "ascending";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", down ? "descending" : "ascending");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      function key(row) {
        var cell = row.cells[col], v = cell.getAttribute("data-v");
        return v === null ? cell.textContent : (v === "" ? NaN : parseFloat(v));
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), missing = (x !== x) - (y !== y);
        if (missing) return missing;  /* n/a last, either way */
        var c = typeof x === "number" ? x - y : String(x).localeCompare(String(y));
        return down ? -c : c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
/* Type in a table's filter box: only the rows containing every word stay. */
document.querySelectorAll("input.filter").forEach(function (box) {
  box.addEventListener("input", function () {
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    var rows = document.getElementById(box.getAttribute("data-table")).tBodies[0].rows;
    Array.prototype.forEach.call(rows, function (row) {
      var text = row.textContent.toLowerCase();
      row.style.display = words.every(function (w) { return text.indexOf(w) >= 0; }) ? "" : "none";
    });
  });
});
"""


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _td(value) -> str:
    """A cell: numbers right-aligned with their exact value in `data-v` (what sorting compares)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return '<td class="num" data-v="">n/a</td>'
    if isinstance(value, bool):
        return f"<td>{'yes' if value else ''}</td>"
    if isinstance(value, numbers.Integral):
        return f'<td class="num" data-v="{value}">{value}</td>'
    if isinstance(value, numbers.Real):
        shown = f"{value:.4f}" if abs(value) < 1000 else f"{value:.0f}"
        return f'<td class="num" data-v="{value!r}">{shown}</td>'
    return f"<td>{_e(value)}</td>"


def table(frame: pd.DataFrame, table_id: str, best: str | None = None) -> str:
    """A sortable HTML table of every column of `frame` (but `HIDDEN`), headers from `HEADERS`;
    rows where column `best` is true are marked."""
    columns = [c for c in frame.columns if c not in HIDDEN]
    head = "".join(f"<th>{_e(HEADERS.get(c, c))}</th>" for c in columns)
    rows = []
    for record in frame.to_dict("records"):
        marked = ' class="best"' if best and record.get(best) is True else ""
        rows.append(f"<tr{marked}>" + "".join(_td(record[c]) for c in columns) + "</tr>")
    body = "".join(rows)
    box = f'<input type="search" class="filter" data-table="{table_id}" placeholder="filter rows: words to match">'
    return f'{box}<table class="sortable" id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _png(data: bytes, alt: str) -> str:
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{base64.b64encode(data).decode()}">'


def gallery(rows: list[tuple[str, list[tuple[str, bytes | None]], list[tuple[str, str]]]]) -> str:
    """Rows of (data label, [(method label, PNG or None)], legend entries (`thumbnail.legend`))."""
    if not rows:
        return '<p class="note">no embedding materialized yet</p>'
    methods = [m for m, _ in rows[0][1]]
    head = "<tr><th></th>" + "".join(f"<th>{_e(m)}</th>" for m in methods) + "</tr>"
    body = []
    for data, panels, legend in rows:
        swatches = "".join(f'<span><i style="background:{c}"></i>{_e(t)}</span>' for t, c in legend)
        cells = "".join(f"<td>{_png(p, f'{data} | {m}') if p else 'missing'}</td>" for m, p in panels)
        body.append(f'<tr><th>{_e(data)}<div class="legend">{swatches}</div></th>{cells}</tr>')
    return f'<table class="gallery" id="gallery">{head}{"".join(body)}</table>'


def render(
    name: str,
    description: str,
    summary: pd.DataFrame,
    comparisons: pd.DataFrame,
    parameters_svg: str,
    gallery_rows: list,
    lineage: pd.DataFrame,
    first_seed: int,
) -> str:
    """The page: `summary` and `comparisons` as summary.py writes them (plus any added columns),
    `parameters_svg` (`figures.parameters_figure`), `gallery_rows` (`gallery`), `lineage` one row
    per number (`tidy.tidy`)."""
    intro = f"<p>{_e(description)}</p>" if description else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(name)}: lab_assets report</title>
<style>{STYLE}</style></head>
<body>
<h1>Sweep <code>{_e(name)}</code></h1>{intro}
<p class="note">Click a column's header to sort by it (again: the other way); type in a filter box to keep
the rows that contain every word.</p>
<h2 id="summary-title">Summary over seeds</h2>
<p class="note">Per dataset config and method config: mean, sd and 95% t-interval over the seeds (n);
rank per dataset and measure in its direction (1 = best, bold).</p>
{table(summary, "summary", best="best")}
<h2>Best vs runner-up</h2>
<p class="note">Wilcoxon signed-rank test paired over seeds; fewer than 6 pairs cannot reach p &lt; 0.05.</p>
{table(comparisons, "comparisons")}
<h2>Measures against method parameters</h2>
<p class="note">Mean over seeds, error bars one sd; one line per dataset.</p>
<div id="parameters">{parameters_svg}</div>
<h2>Embeddings</h2>
<p class="note">Seed {first_seed}; coloured by label.</p>
{gallery(gallery_rows)}
<h2>Lineage of every number</h2>
<details><summary>{len(lineage)} values, each with the cell (partition key) it came from, the git commit and the
metric's code version</summary>
{table(lineage, "lineage")}
</details>
<script>{SCRIPT}</script>
</body></html>
"""


def gallery_rows(panels: dict[tuple[str, str], pd.DataFrame]) -> list:
    """`gallery`'s rows from {(data label, method label): embedding table}: each embedding drawn
    as the UI's thumbnail (`thumbnail.scatter_png`), each row's legend from its labels."""
    datas = list(dict.fromkeys(d for d, _ in panels))
    methods = list(dict.fromkeys(m for _, m in panels))
    rows = []
    for d in datas:
        present = [panels[(d, m)] for m in methods if (d, m) in panels]
        pictures = [
            (m, thumbnail.scatter_png(tidy.coordinates(panels[(d, m)]).to_numpy(), panels[(d, m)]["label"]))
            if (d, m) in panels
            else (m, None)
            for m in methods
        ]
        first = present[0]
        names = dict(zip(first["label"], first["label_name"])) if "label_name" in first else None
        rows.append((d, pictures, thumbnail.legend(first["label"], names)))
    return rows


def report_html(
    sweep: Sweep,
    cells: pd.DataFrame,
    summary: pd.DataFrame,
    comparisons: pd.DataFrame,
    panels: dict[tuple[str, str], pd.DataFrame],
) -> str:
    """The page of a sweep from its per-cell table (`tidy.sweep_table`), its summary and
    comparisons (summary.py) and its first seed's embeddings (`tidy.first_seed_embeddings`)."""
    curves = figures.svg(figures.parameters_figure(tidy.parameter_curves(sweep, cells)))
    lineage = tidy.tidy(sweep, cells, tidy.code_versions(list(cells["partition"])))[tidy.TIDY_COLUMNS]
    return render(
        sweep.name,
        sweep.description,
        summary.assign(better=summary["better"].fillna("descriptive")),
        comparisons,
        curves,
        gallery_rows(panels),
        lineage,
        min(d.seed for d in sweep.data),
    )
