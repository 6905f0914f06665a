"""Results where researchers look (issue 43): the W&B runs as their offline folders hold them (one
run per cell however often it is materialized, a flat config, the embedding image, artifact
manifests, the sweep's summary Table), `lab gc` and W&B, the notebook API and its example in
docs/, and report.html (self-contained, its numbers those of the metric table)."""

import io
import json
import math
import re
import runpy
import shutil
import sys
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from PIL import Image

from lab_assets.core import keys, side_process, storage, tracking
from lab_assets.dr import report_drawing
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.sweeps import materialize_report, materialize_sweep
from lab_assets.runtime.instance import get_instance
from lab_assets_tests.conftest import REPO, lab_cli

BLOCK = 32768  # the .wandb file is a LevelDB-style log of protobuf records in blocks of this size
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def wandb_records(path: Path) -> list:
    """The records of an offline run's `run-<id>.wandb` file, parsed with W&B's own protobuf
    classes: a 7-byte header (":W&B", 0xBEE1, version), then chunks of (CRC32C, length, type)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    records, pending, pos = [], b"", 7
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:  # a block's tail too short for a chunk header is padding
            pos += left
            continue
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        if kind == 0:
            pos += left
            continue
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (FULL, LAST):
            record = pb.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def offline_run(folder: Path) -> dict:
    """What an offline run folder holds: its config, tags, logged artifacts (name, type, metadata,
    manifest entries) and summary values."""
    out = {"config": {}, "tags": [], "artifacts": [], "summary": {}}
    for record in wandb_records(next(folder.glob("run-*.wandb"))):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            out["config"].update({i.key: json.loads(i.value_json) for i in record.run.config.update})
            out["tags"] = list(record.run.tags)
            out["name"] = record.run.display_name
        elif kind == "config":
            out["config"].update({i.key: json.loads(i.value_json) for i in record.config.update})
        elif kind == "artifact":
            a = record.artifact
            out["artifacts"].append(
                {
                    "name": a.name,
                    "type": a.type,
                    "metadata": json.loads(a.metadata or "{}"),
                    "entries": {e.path: (e.ref, e.digest) for e in a.manifest.contents},
                }
            )
        elif kind == "summary":
            out["summary"].update({i.key: json.loads(i.value_json) for i in record.summary.update})
    return out


def run_folders(lab: Path) -> dict[str, list[Path]]:
    """{run id: its offline folders}: `offline-run-<date>_<time>-<id>`, `-<n>` added to a second
    folder of the id started in the same second."""
    out: dict[str, list[Path]] = {}
    for folder in sorted((lab / ".lab" / "wandb" / "wandb").glob("offline-run-*")):
        out.setdefault(folder.name.split("-")[3], []).append(folder)
    return out


@pytest.fixture(params=["here", "side process"])
def logged_from(request, lab, monkeypatch):
    """Where the runs are logged: in the test's process, or in a side process started by the
    sweep's in-process runs (core/side_process.py); then every run must be logged there and
    every report drawn there (W&B and drawing in the test's process fail)."""
    remote = request.param == "side process"
    monkeypatch.setattr(side_process, "worth_it", lambda modules: remote)
    if remote:

        def here(*args, **kwargs):
            raise AssertionError("logged or drawn in the test's process, not in the side process")

        monkeypatch.setattr(tracking, "track_cell", here)
        monkeypatch.setattr(tracking, "track_sweep", here)
        monkeypatch.setattr(report_drawing, "draw", here)
    yield request.param
    side_process.stop(wait=30)


def test_each_cell_is_one_wandb_run_with_flat_config_image_and_artifacts(lab, logged_from):
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    assert materialize_sweep(sweep, workers=1).ok
    assert (side_process._current is not None) == (logged_from == "side process")
    cells = [keys.cell_key(d, m) for d, m in sweep.cells]
    folders = run_folders(lab)
    assert sorted(folders) == sorted([tracking.run_id("cell", c) for c in cells] + [tracking.run_id("sweep", "tiny")])

    # A metrics-only re-run of one cell (a new metric) writes another folder of the same run.
    (lab / "sweeps" / "tiny.yaml").write_text((lab / "sweeps" / "tiny.yaml").read_text() + "  continuity: {k: [5]}\n")
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    assert materialize_sweep(sweep, workers=1).ok
    again = run_folders(lab)
    assert sorted(again) == sorted(folders)  # one run per cell: `wandb sync` uploads each id as one run
    assert all(len(f) == 2 for run, f in again.items() if run.startswith("cell"))

    table = pq.read_table(lab / ".lab" / "assets" / "metric_table.parquet").to_pandas()
    data = {d.key: d for d in sweep.data}
    for cell in cells:
        latest = again[tracking.run_id("cell", cell)][-1]
        run = offline_run(latest)
        d, m = keys.parse_cell_key(cell)
        config = data[d]
        assert run["name"] == cell and run["tags"] == ["tiny"]
        assert {k: run["config"][k] for k in ("data", "seed", "method", "sweep", "cell")} == {
            "data": config.dataset,
            "seed": config.seed,
            "method": cell.split("|")[1].split("-")[0],
            "sweep": "tiny",
            "cell": cell,
        }
        for name, value in config.params.items():  # flat: data.<param>, never a nested dict
            assert run["config"][f"data.{name}"] == value
        assert not any(isinstance(v, dict) for k, v in run["config"].items() if k != "_wandb")
        row = table[table["partition"] == cell].iloc[0]
        assert run["summary"]["continuity@k=5"] == pytest.approx(row["continuity@k=5"], abs=0)
        assert run["summary"]["trustworthiness@k=10"] == row["trustworthiness@k=10"]

        # The embedding as an image: the UI's thumbnail, as PNG, in the run's media.
        (image,) = (latest / "files" / "media" / "images").glob("embedding_*.png")
        picture = Image.open(image)
        assert (
            picture.size == (162, 162) and len(np.unique(np.asarray(picture.convert("RGB")).reshape(-1, 3), axis=0)) > 3
        )

        # The embedding artifact, by reference to its file, naming the dataset it was made from.
        (artifact,) = run["artifacts"]
        embedding = storage.asset_path("embedding", cell)
        assert artifact["type"] == "embedding"
        assert artifact["metadata"]["url"] == embedding
        assert artifact["metadata"]["dataset"] == storage.asset_path("dataset", d)
        (entry,) = artifact["entries"].items()
        assert entry[0] == "method.parquet" or entry[0].endswith(".parquet")
        assert entry[1][0] == f"file://{embedding}"
        assert entry[1][1]  # the checksum of the referenced file

    # The sweep's run: the summary over seeds as a Table.
    (summary_table,) = (again[tracking.run_id("sweep", "tiny")][-1] / "files" / "media" / "table").glob("*.json")
    logged = json.loads(summary_table.read_text())
    summary = pq.read_table(lab / ".lab" / "reports" / "tiny" / "summary.parquet").to_pandas()
    assert logged["columns"] == list(summary.columns)
    means = [row[logged["columns"].index("mean")] for row in logged["data"]]
    assert means == pytest.approx(summary["mean"].tolist())


def test_wandb_off_writes_nothing(lab, monkeypatch):
    monkeypatch.setenv("LAB_WANDB", "off")
    assert materialize_sweep(load_sweep(lab / "sweeps" / "tiny.yaml"), workers=1).ok
    assert not (lab / ".lab" / "wandb").exists()


@pytest.mark.slow
def test_gc_deletes_local_runs_of_deleted_cells_and_says_what_stays_in_wandb(lab):
    assert materialize_sweep(load_sweep(lab / "sweeps" / "tiny.yaml"), workers=1).ok
    sweep_file = lab / "sweeps" / "tiny.yaml"
    sweep_file.write_text(sweep_file.read_text().replace("  isomap: {n_neighbors: 12}\n", ""))
    sweep = load_sweep(sweep_file)
    assert materialize_sweep(sweep, workers=1).ok
    folders = run_folders(lab)
    isomap = {r for r in folders if r not in {tracking.run_id("cell", keys.cell_key(d, m)) for d, m in sweep.cells}}
    isomap.discard(tracking.run_id("sweep", "tiny"))
    assert len(isomap) == 2
    synced = folders[sorted(isomap)[0]][0]
    (synced / f"run-{sorted(isomap)[0]}.wandb.synced").write_text("")  # as `wandb sync` leaves it

    dry = lab_cli("gc", "--dry-run", "--json", cwd=lab)
    assert dry.returncode == 0, dry.stderr
    listing = json.loads(dry.stdout)
    runs = {i["name"]: i for i in listing["items"] if i["kind"] == "wandb run"}
    assert set(runs) == isomap
    assert listing["left_in_wandb"] == [sorted(isomap)[0]]
    assert all(Path(f).exists() for i in runs.values() for f in i["files"])

    done = lab_cli("gc", cwd=lab)
    assert done.returncode == 0, done.stderr
    assert (
        f"1 of those runs are in a W&B project already and stay there (delete them in the project): {sorted(isomap)[0]}"
        in done.stdout
    )
    assert set(run_folders(lab)) == set(folders) - isomap  # the live cells' runs are kept


def tiny_with_report(lab) -> None:
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    assert materialize_sweep(sweep, workers=1).ok
    assert materialize_report(sweep).ok


def test_the_notebook_example_reads_the_metric_tables_numbers(lab, tmp_path, monkeypatch):
    from lab_assets import results

    sweep_file = lab / "sweeps" / "tiny.yaml"
    sweep_file.write_text(sweep_file.read_text().replace("isomap: {n_neighbors: 12}", "isomap: {n_neighbors: [8, 12]}"))
    monkeypatch.setenv("LAB_WANDB", "off")
    tiny_with_report(lab)
    monkeypatch.setenv("SWEEP", "tiny")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = runpy.run_path(str(REPO / "docs" / "results-notebook.py"))

    table = notebook["table"]
    metric_table = pq.read_table(lab / ".lab" / "assets" / "metric_table.parquet").to_pandas()
    assert len(table) == 6 * 3  # 2 datasets x 3 methods, 3 measures
    for row in table.to_dict("records"):
        cell = metric_table[metric_table["partition"] == row["cell"]].iloc[0]
        assert row["value"] == cell[row["measure"]]
        assert (row["dataset"], row["seed"], row["git_sha"]) == (cell["dataset"], cell["seed"], cell["git_sha"])
        assert re.fullmatch(r"[0-9a-f]{8,}", row["code_version"])
    isomap = table[table["method"] == "isomap"]
    assert sorted(set(isomap["method.n_neighbors"])) == [8, 12]
    assert isomap["method.n_neighbors"].notna().all() and table["data.n_samples"].eq(150).all()

    summary = notebook["summary"]
    for row in summary.to_dict("records"):  # the mean over seeds, computed naively from the metric table
        values = [
            r[row["metric"]]
            for r in metric_table.to_dict("records")
            if r["data"].startswith(row["data_config"]) and r["method"] == row["method"]
        ]
        assert row["mean"] == pytest.approx(sum(values) / len(values))

    points = notebook["points"]
    embedding = pq.read_table(storage.asset_path("embedding", table["cell"].iloc[0])).to_pandas()
    assert points["z0"].tolist() == embedding["z0"].tolist() and points["label"].tolist() == embedding["label"].tolist()
    figure = results.figure("tiny")  # trustworthiness@k=5 and @k=10 against n_neighbors: lid is not ranked
    assert [ax.get_xlabel() for ax in figure.axes] == ["n_neighbors"] * 2

    # From a copy of the lab home, and from its storage URL, the same; the lab home's own files gone.
    copy = tmp_path / "elsewhere"
    shutil.copytree(lab / ".lab", copy, ignore=shutil.ignore_patterns("dagster", "wandb"))
    shutil.rmtree(lab / ".lab" / "assets")
    pd.testing.assert_frame_equal(results.table("tiny", at=copy), table)
    pd.testing.assert_frame_equal(results.table("tiny", at=f"file://{copy}"), table)
    with pytest.raises(storage.UnreadableFileError):
        results.table("tiny")  # the current lab home again, whose files are gone


def test_report_html_is_one_self_contained_file_with_every_number(lab):
    assert materialize_sweep(load_sweep(lab / "sweeps" / "tiny.yaml"), workers=1).ok
    # `lab report --open` hands the file's URL to the browser ($BROWSER: a command that writes it down).
    browser = f"{sys.executable} -c \"import sys; open('opened.txt', 'w').write(sys.argv[1])\" %s"
    out = lab_cli("report", "sweeps/tiny.yaml", "--open", cwd=lab, env={"BROWSER": browser})
    assert out.returncode == 0, out.stderr
    report = lab / ".lab" / "reports" / "tiny" / "report.html"
    assert (lab / "opened.txt").read_text() == report.resolve().as_uri()
    page = report.read_text()
    # Nothing fetched: no script, style, image or font from anywhere but the page itself.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "@import" not in page and "url(http" not in page and "<link" not in page
    summary = pq.read_table(lab / ".lab" / "reports" / "tiny" / "summary.parquet").to_pandas()
    assert page.count("<tr", page.index('id="summary"'), page.index('id="comparisons"')) == len(summary) + 1
    for mean in summary["mean"]:
        assert f'data-v="{mean!r}"' in page
    gallery = page[page.index('id="gallery"') :]
    assert gallery.count('src="data:image/png;base64,') == 4  # 2 datasets x 2 methods, first seed
    metric_table = pq.read_table(lab / ".lab" / "assets" / "metric_table.parquet").to_pandas()
    lineage = page[page.index('id="lineage"') :]
    lid = next(c for c in metric_table.columns if c.startswith("lid@"))
    for row in metric_table.to_dict("records"):
        assert row["partition"] in lineage and row["git_sha"] in lineage
        assert f'data-v="{row[lid]!r}"' in lineage

    # The report's materialization names the file (a browser will not follow a file:// link from the UI).
    record = get_instance().fetch_materializations(dg.AssetKey("report"), limit=1).records[0]
    assert record.asset_materialization.metadata["report_html_path"].value == str(report)


def test_legend_colours_are_the_thumbnails_colours():
    from lab_assets.dr.thumbnail import legend, scatter_png

    labels = pd.Series([0, 0, 1, 1, 2, 2])
    Z = np.array([[0, 0], [0.1, 0], [5, 5], [5.1, 5], [9, 0], [9.1, 0]], dtype=float)
    png = Image.open(io.BytesIO(scatter_png(Z, labels))).convert("RGB")
    entries = legend(labels, names={0: "zero", 1: "one"})
    assert [t for t, _ in entries] == ["zero", "one", "2"]
    pixels = np.asarray(png)[1:-1, 1:-1]  # inside the frame

    def colours(region) -> set[str]:
        found = {"#{:02x}{:02x}{:02x}".format(*c) for c in region.reshape(-1, 3)}
        return found - {"#ffffff"}

    # Class 0 at the bottom left, 1 at the top middle, 2 at the bottom right: each drawn in its legend colour.
    assert colours(pixels[100:, :50]) == {entries[0][1]}
    assert colours(pixels[:60, 50:110]) == {entries[1][1]}
    assert colours(pixels[100:, 110:]) == {entries[2][1]}
    assert len({c for _, c in entries}) == 3
    continuous = legend(pd.Series([0.5, 2.0, 1.0]))
    assert [t for t, _ in continuous] == ["0.5", "2"]
    assert legend(pd.Series([None, None], dtype=float)) == []


def test_parameter_curves_are_means_and_sds_over_seeds():
    from lab_assets.dr.sweep import parse_sweep
    from lab_assets.dr.tidy import parameter_curves

    sweep = parse_sweep(
        """
name: t
data:
  swissroll: {n_samples: 100}
seeds: [0, 1, 2]
methods:
  pca: {}
  isomap: {n_neighbors: [5, 10]}
metrics:
  trustworthiness: {k: [5]}
  lid: {k: [5]}
""",
        "t.yaml",
    )
    rng = np.random.default_rng(0)
    rows = [
        {"partition": keys.cell_key(d.key, m.key), "data": d.key, "method": m.key, "seed": d.seed}
        | {"trustworthiness@k=5": rng.random(), "lid@k=5": rng.random()}
        for d in sweep.data
        for m in sweep.methods
    ]
    cells = pd.DataFrame(rows)
    curves = parameter_curves(sweep, cells)
    assert set(curves["measure"]) == {"trustworthiness@k=5"}  # lid is descriptive
    assert list(curves["x"]) == [5, 10] and set(curves["parameter"]) == {"n_neighbors"}
    for point in curves.to_dict("records"):
        key = next(m.key for m in sweep.methods if m.params.get("n_neighbors") == point["x"])
        values = [r["trustworthiness@k=5"] for r in rows if r["method"] == key]
        mean = sum(values) / 3
        assert point["mean"] == pytest.approx(mean)
        assert point["sd"] == pytest.approx(math.sqrt(sum((v - mean) ** 2 for v in values) / 2))
        assert point["n"] == 3


def test_older_runs_of_a_cell_are_tagged_superseded_online():
    """Online, runs of the cell named by it under another id (written before ids were stable)
    get the `superseded` tag, once; the cell's own run and other cells' runs are left alone."""

    class FakeRun:
        def __init__(self, id, name, tags):
            self.id, self.name, self.tags, self.updates = id, name, tags, 0

        def update(self):
            self.updates += 1

    class FakeApi:
        def __init__(self, runs):
            self.all = runs

        def runs(self, path, filters):
            assert path == "me/lab_assets"
            return [r for r in self.all if r.name == filters["display_name"]]

    keep = tracking.run_id("cell", "a|b")
    runs = [
        FakeRun(keep, "a|b", ["s"]),
        FakeRun("old1", "a|b", ["s"]),
        FakeRun("old2", "a|b", ["s", "superseded"]),
        FakeRun("other", "a|c", ["s"]),
    ]
    assert tracking.supersede(FakeApi(runs), "me/lab_assets", "a|b", keep) == ["old1"]
    assert [(r.tags, r.updates) for r in runs] == [
        (["s"], 0),
        (["s", "superseded"], 1),
        (["s", "superseded"], 0),
        (["s"], 0),
    ]


def test_flat_params_dot_nested_parameters():
    from lab_assets.dr.sweep import DataConfig, MethodConfig
    from lab_assets.dr.tidy import flat_params

    data = DataConfig("swissroll", {"n_samples": 100}, 3)
    method = MethodConfig("m", {"kwargs": {"alpha": 0.5, "inner": {"b": 1}}, "k": 5})
    assert flat_params(data, method) == {
        "data": "swissroll",
        "data.n_samples": 100,
        "seed": 3,
        "method": "m",
        "method.kwargs.alpha": 0.5,
        "method.kwargs.inner.b": 1,
        "method.k": 5,
    }


def test_local_runs_are_found_by_stable_id_whatever_the_folder_suffix(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_HOME", str(tmp_path))
    cell = tracking.run_id("cell", "a|b")
    names = [
        f"offline-run-20260101_000000-{cell}",
        f"offline-run-20260101_000000-{cell}-1",  # a second folder of the id in the same second
        f"run-20260101_000001-{cell}",  # online
        "offline-run-20260101_000000-x1y2z3w4",  # a random id (before ids were stable): not ours to delete
    ]
    for name in names:
        (tmp_path / "wandb" / "wandb" / name).mkdir(parents=True)
    (tmp_path / "wandb" / "wandb" / names[1] / f"run-{cell}.wandb.synced").write_text("")
    found = tracking.local_runs()
    assert list(found) == [cell] and [p.name for p in found[cell]] == sorted(names[:3])
    assert [tracking.in_project(p) for p in found[cell]] == [False, True, True]
