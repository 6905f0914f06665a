"""The newcomer's path through the Dagster UI, in a real browser (Debian's Chromium driven by
Playwright; no browser download): open the asset graph, materialize one partition of a sweep
from the UI, and see the report's figure inline. Screenshots land in the test's temporary folder
(or $LAB_SCREENSHOTS); the README's docs/screenshots/ are refreshed only with
LAB_UPDATE_SCREENSHOTS=1, so a test run never dirties the repository."""

import os
import subprocess
from pathlib import Path

import pytest

import dagster as dg
from lab_assets.core import keys
from lab_assets.runner.sweeps import run_sweep
from lab_assets.runtime.instance import get_instance
from lab_assets.dr.sweep import load_sweep
from lab_assets_tests.conftest import REPO, lab_ui, require_tool, wait_for

CHROMIUM = "/usr/bin/chromium"
# Flags for a root container with a closed network: no sandbox (root), no background calls
# to Google's services (they would be refused, many at a time).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


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


def embedding_count(partition: str) -> int:
    records = get_instance().fetch_materializations(dg.AssetKey("embedding"), limit=1000).records
    return sum(r.asset_materialization.partition == partition for r in records)


def test_newcomer_materializes_a_partition_and_sees_the_report(lab, browser, tmp_path):
    shots = screenshots_dir(tmp_path)
    tracked = {p.name: p.stat().st_mtime_ns for p in (REPO / "docs" / "screenshots").glob("*.png")}
    shots.mkdir(parents=True, exist_ok=True)
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    run_sweep(sweep, workers=1)
    data, method = sweep.data[0].key, sweep.methods[0].key
    before = embedding_count(keys.cell_key(data, method))

    with lab_ui(lab) as port:
        base = f"http://127.0.0.1:{port}"
        page = browser.new_page(viewport={"width": 1400, "height": 900})

        page.goto(f"{base}/asset-groups", wait_until="networkidle", timeout=120_000)
        try:  # Dagster's first-visit newsletter dialog
            page.get_by_role("button", name="Skip").click(timeout=10_000)
        except Exception:  # noqa: BLE001 - absent once dismissed
            pass
        for group in ("datasets", "experiments", "reports", "specs"):
            page.get_by_text(group, exact=True).first.wait_for(timeout=30_000)
        page.screenshot(path=str(shots / "asset_graph.png"))

        # Materialize one (data, method) partition of `embedding` from its asset page.
        page.goto(f"{base}/assets/embedding", wait_until="networkidle", timeout=60_000)
        page.get_by_role("button", name="Materialize").first.click()
        # Dagster warns that the upstream `model` was never materialized: true, and harmless,
        # for methods without one (only trainable methods have a model).
        page.get_by_text("have not been materialized yet").wait_for(timeout=30_000)
        page.get_by_role("button", name="Confirm").click()
        for key in (data, method):
            page.get_by_text("Select a partition or create one").first.click()
            page.get_by_text(key, exact=True).first.click()
            page.keyboard.press("Escape")
        launch = page.get_by_role("button", name="Launch 1 run")
        launch.wait_for(timeout=30_000)
        page.screenshot(path=str(shots / "launch_partition.png"))
        launch.click()
        wait_for(lambda: embedding_count(keys.cell_key(data, method)) > before, 240, "the UI-launched run")

        page.goto(f"{base}/assets/embedding?view=partitions", wait_until="networkidle", timeout=60_000)
        page.wait_for_timeout(2000)
        page.screenshot(path=str(shots / "partitions.png"))

        # The report's figures are inline in its materialization metadata.
        page.goto(f"{base}/assets/report", wait_until="networkidle", timeout=60_000)
        # The `embeddings` entry's own [Show Markdown] (the summary and the table come first).
        entry = page.locator("tr").filter(has=page.get_by_text("embeddings", exact=True)).first
        entry.scroll_into_view_if_needed()
        entry.get_by_text("[Show Markdown]").click()
        figure = page.locator("img[src^='data:image/png']").first
        figure.wait_for(timeout=30_000)
        assert figure.evaluate("img => img.naturalWidth") > 100  # a real, decoded image
        page.screenshot(path=str(shots / "report_figure.png"))
    # lab_ui stopped `lab ui` and everything it started: nothing listens on the port.
    assert f":{port} " not in subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
    names = ("asset_graph.png", "launch_partition.png", "partitions.png", "report_figure.png")
    assert all((shots / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for n in names)
    if shots != REPO / "docs" / "screenshots":  # the tracked ones untouched
        assert {p.name: p.stat().st_mtime_ns for p in (REPO / "docs" / "screenshots").glob("*.png")} == tracked
