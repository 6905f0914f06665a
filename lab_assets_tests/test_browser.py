"""The newcomer's path through the Dagster UI, in a real browser (Debian's Chromium driven by
Playwright; no browser download): open the asset graph and a sweep's cells, launch the sweep's
missing cells from the UI, see exactly those materialize, read the report's seed-aggregated
summary and a cell's scatter plot. Screenshots land in the test's temporary folder
(or $LAB_SCREENSHOTS); the README's docs/screenshots/ are refreshed only with
LAB_UPDATE_SCREENSHOTS=1, so a test run never dirties the repository."""

import math
import os
import subprocess
from pathlib import Path
from urllib.parse import quote

import dagster as dg
import pytest

from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.sweeps import materialize_sweep, register_and_plan
from lab_assets.runtime.instance import get_instance
from lab_assets_tests.conftest import REPO, lab_ui, require_tool, wait_for

CHROMIUM = "/usr/bin/chromium"
# Flags for a root container with a closed network: no sandbox (root), no background calls
# to Google's services (they would be refused, many at a time).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def browser():
    require_tool(CHROMIUM, "Debian's chromium drives the UI test (.ci/run installs it: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def screenshots_dir(tmp_path: Path, env=os.environ) -> Path:
    """Where the screenshots go: docs/screenshots/ (tracked, the README's) only when
    LAB_UPDATE_SCREENSHOTS=1; else $LAB_SCREENSHOTS, else the test's temporary folder."""
    if env.get("LAB_UPDATE_SCREENSHOTS") == "1":
        return REPO / "docs" / "screenshots"
    return Path(env.get("LAB_SCREENSHOTS") or tmp_path / "screenshots")


def test_screenshots_go_to_the_repository_only_when_asked(tmp_path):
    docs = REPO / "docs" / "screenshots"
    assert screenshots_dir(tmp_path, {}) == tmp_path / "screenshots"
    assert screenshots_dir(tmp_path, {"LAB_UPDATE_SCREENSHOTS": "0"}) == tmp_path / "screenshots"
    assert screenshots_dir(tmp_path, {"LAB_SCREENSHOTS": "/x/y"}) == Path("/x/y")
    assert screenshots_dir(tmp_path, {"LAB_UPDATE_SCREENSHOTS": "1", "LAB_SCREENSHOTS": "/x/y"}) == docs


def materialized(asset: str) -> list[str]:
    records = get_instance().fetch_materializations(dg.AssetKey(asset), limit=1000).records
    return [r.asset_materialization.partition for r in records]


def show_markdown(page, entry: str):
    """Open a metadata entry's [Show Markdown] dialog (the entry's own row: others come first)."""
    row = page.locator("tr").filter(has=page.get_by_text(entry, exact=True)).first
    row.scroll_into_view_if_needed()
    row.get_by_text("[Show Markdown]").click()
    page.get_by_role("dialog").last.wait_for(timeout=30_000)
    page.wait_for_timeout(1000)  # the dialog fades in: a screenshot earlier catches it half drawn


@pytest.mark.slow
def test_a_person_launches_one_sweeps_missing_cells_and_reads_the_report(lab, browser, tmp_path):
    shots = screenshots_dir(tmp_path)
    tracked = {p.name: p.stat().st_mtime_ns for p in (REPO / "docs" / "screenshots").glob("*.png")}
    shots.mkdir(parents=True, exist_ok=True)
    path = lab / "sweeps" / "tiny.yaml"
    materialize_sweep(load_sweep(path), workers=1)
    # A second configuration of PCA makes two of the sweep's cells missing; another sweep (the
    # same methods and metrics on other data), registered and never run, has missing cells that
    # the launch must leave alone.
    text = path.read_text()
    path.write_text(text.replace("pca: {}", "pca: {whiten: [false, true]}"))
    sweep = load_sweep(path)
    other = lab / "sweeps" / "other.yaml"
    other.write_text(
        text.replace("name: tiny", "name: other").replace("gaussian_blobs:", "torus: {n_samples: 150}\n  #")
    )
    register_and_plan(load_sweep(other))
    missing = {c.partition for c in register_and_plan(sweep).pending_cells()}
    assert len(missing) == 2
    before = materialized("embedding")

    with lab_ui(lab) as port:
        base = f"http://127.0.0.1:{port}"
        page = browser.new_page(viewport={"width": 1400, "height": 900})

        page.goto(f"{base}/asset-groups", wait_until="networkidle", timeout=120_000)
        try:  # Dagster's first-visit newsletter dialog
            page.get_by_role("button", name="Skip").click(timeout=10_000)
        except Exception:  # noqa: BLE001 - absent once dismissed
            pass
        for group in ("datasets", "experiments", "reports", "specs", "sweeps"):
            page.get_by_text(group, exact=True).first.wait_for(timeout=30_000)
        page.screenshot(path=str(shots / "asset_graph.png"))

        # The sweep's cells: one partition per declared cell, keys that read as parameters.
        page.goto(f"{base}/assets/embedding?view=partitions", wait_until="networkidle", timeout=60_000)
        page.wait_for_timeout(2000)
        page.screenshot(path=str(shots / "partitions.png"))

        # Launch the sweep: Materialize its partition of the `sweep` asset.
        page.goto(f"{base}/assets/sweep", wait_until="networkidle", timeout=60_000)
        page.get_by_role("button", name="Materialize").first.click()
        page.get_by_text("Select a partition or create one").first.click()
        page.get_by_text("tiny", exact=True).first.click()
        page.get_by_text("Launch runs to materialize sweep").click()  # closes the partition list
        launch = page.get_by_role("button", name="Launch 1 run")
        launch.wait_for(timeout=30_000)
        page.wait_for_timeout(1000)  # the partition list fades out
        page.screenshot(path=str(shots / "launch_sweep.png"))
        launch.click()
        wait_for(lambda: "tiny" in materialized("sweep"), 120, "the UI-launched run of sweep[tiny]")

        # The sensor's backfill computes exactly the sweep's missing cells, then its report.
        wait_for(lambda: materialized("report").count("tiny") > 1, 300, "the sweep's backfill, its report last")
        new = [p for p in materialized("embedding")]
        for p in before:
            new.remove(p)
        assert sorted(new) == sorted(missing)  # each once, nothing of demo, nothing fresh again

        page.goto(f"{base}/assets/sweep?partition=tiny", wait_until="networkidle", timeout=60_000)
        show_markdown(page, "cells")
        page.get_by_text("whiten=true", exact=False).first.wait_for(timeout=30_000)
        page.screenshot(path=str(shots / "sweep_cells.png"))
        page.keyboard.press("Escape")

        # The report: the seed-aggregated summary, then a cell's scatter plot.
        page.goto(f"{base}/assets/report", wait_until="networkidle", timeout=60_000)
        show_markdown(page, "summary")
        page.get_by_text("mean", exact=False).first.wait_for(timeout=30_000)
        page.screenshot(path=str(shots / "report_summary.png"))
        page.keyboard.press("Escape")

        cell = sorted(missing)[0]
        page.goto(f"{base}/assets/embedding?partition={quote(cell)}", wait_until="networkidle", timeout=60_000)
        show_markdown(page, "scatter")
        figure = page.locator("img[src^='data:image/png']").first
        figure.wait_for(timeout=30_000)
        assert figure.evaluate("img => img.naturalWidth") > 50  # a real, decoded image
        page.screenshot(path=str(shots / "cell_scatter.png"))
    # lab_ui stopped `lab ui` and everything it started: nothing listens on the port.
    assert f":{port} " not in subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
    names = (
        "asset_graph.png",
        "partitions.png",
        "launch_sweep.png",
        "sweep_cells.png",
        "report_summary.png",
        "cell_scatter.png",
    )
    assert all((shots / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for n in names)
    if shots != REPO / "docs" / "screenshots":  # the tracked ones untouched
        assert {p.name: p.stat().st_mtime_ns for p in (REPO / "docs" / "screenshots").glob("*.png")} == tracked


def test_report_html_opens_from_disk_offline_sorts_and_shows_the_gallery(lab, browser, tmp_path, monkeypatch):
    """report.html as a collaborator gets it: opened from disk with the network off, every
    request refused but the file itself; sorting a column by clicking its header."""
    from lab_assets.runner.sweeps import materialize_report

    monkeypatch.setenv("LAB_WANDB", "off")
    sweep_file = lab / "sweeps" / "tiny.yaml"
    text = sweep_file.read_text().replace("isomap: {n_neighbors: 12}", "isomap: {n_neighbors: [8, 12]}")
    sweep_file.write_text(text.replace("seeds: [0]", "seeds: [0, 1]"))  # a spread over seeds to show
    sweep = load_sweep(sweep_file)
    assert materialize_sweep(sweep, workers=1).ok and materialize_report(sweep).ok
    report = lab / ".lab" / "reports" / "tiny" / "report.html"
    shots = screenshots_dir(tmp_path)
    shots.mkdir(parents=True, exist_ok=True)

    context = browser.new_context(offline=True, viewport={"width": 1100, "height": 900})
    requested = []

    def refuse(route):
        requested.append(route.request.url)
        if route.request.url == report.as_uri():
            route.continue_()
        else:
            route.abort()

    context.route("**/*", refuse)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report.as_uri())
    assert requested == [report.as_uri()] and not errors

    def means() -> list[float]:
        cells = page.locator("#summary tbody tr td:nth-child(6)")  # dataset, method, measure, better, n, mean
        return [float(v) if v else math.nan for v in cells.evaluate_all("tds => tds.map(td => td.dataset.v)")]

    header = page.locator("#summary th:text-is('mean')")
    assert header.inner_text().strip() == "mean"
    before = means()
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    ascending = means()
    numbers = [v for v in before if not math.isnan(v)]
    assert ascending[: len(numbers)] == sorted(numbers) and ascending != before
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    assert means()[: len(numbers)] == sorted(numbers, reverse=True)

    page.locator('input[data-table="summary"]').fill("blobs isomap")  # rows containing both words
    visible = page.locator("#summary tbody tr:visible")
    assert visible.count() == 2 * 3  # isomap n_neighbors=8 and 12, three measures, on gaussian_blobs
    assert all("gaussian_blobs" in t and "isomap" in t for t in visible.all_inner_texts())
    page.locator('input[data-table="summary"]').fill("")
    assert page.locator("#summary tbody tr:visible").count() == len(before)

    gallery = page.locator("#gallery")
    assert gallery.locator("img").count() == 6  # 2 datasets x 3 methods, the first seed of two
    assert page.locator("#parameters svg").count() == 1
    gallery.screenshot(path=str(shots / "report_gallery.png"))
    page.locator("#summary").screenshot(path=str(shots / "report_html_summary.png"))
    assert requested == [report.as_uri()]
    context.close()
