"""The embedding asset's Partitions page in a real browser against sweep size (issue #15:
"10,000 cells: ... renders in <= 2 s in a real browser").

For each size N, from an empty project (`run_all.project`): a sweep of N trivial cells
(`random_projection` x seeds of a 60-point swissroll; nothing is computed), registered as
`lab sweep run` and the UI's sweep sensor register it (`defs.register.register`: key records,
the `cell` dynamic partitions, spec observations), then one runless materialization of
`embedding` per cell (`instance.report_runless_asset_event`, timed), so every partition reads
as materialized without running N cells; the registration is timed too, first and again with
nothing changed. Then a real `lab ui` (webserver + daemon, the tests'
`conftest.lab_ui`) on a free port, and Debian's Chromium (headless, Playwright, the flags of
`lab_assets_tests/test_browser.py`) opens `/assets/embedding?view=partitions`:

- render time = from navigation start (`performance.timeOrigin`) to the first animation frame
  at which the partitions view shows its content: the status filter reads "Materialized (N)"
  and the partition list shows the first cell's key. Both come from the page's GraphQL
  answers (`PartitionHealthQuery`: the asset's partition keys and their statuses), so the
  time includes fetching them, not only the shell. A load whose first `PartitionHealthQuery` answer arrived after that moment fails the run;
- the first load (new browser profile, and the webserver's first read of the asset's
  partition statuses), REPEATS reloads of that page (a full navigation each; the browser's
  cache holds the UI's bundle), and REPEATS loads in a new browser profile each (nothing
  cached in the browser; the webserver warm); medians of each;
- every GraphQL request of each load, by operation name: start and end offsets and duration
  from the browser's resource timing, bytes received; all of the median reload's, the slowest
  six of the median fresh-profile load and of the first load; then the partition part of
  `PartitionHealthQuery` sent alone (urllib), REPEATS times: the webserver's own time for it.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/ui_partitions.py --cells 100,1000,10000 --repeats 5
Prints one JSON line per size. `--shots DIR` keeps a screenshot per size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402
from run_all import PY, project  # noqa: E402

# cells = seeds (data keys) x random_projection's n_components (method keys).
SHAPES = {100: (10, 10), 1000: (100, 10), 10000: (100, 100)}
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# True (with performance.now()) once the partitions view shows the materialized count and the
# first row of the partition list; polled every animation frame.
RENDERED = """([total, first]) => {
  const text = document.body ? document.body.innerText : "";
  const counted = [String(total), total.toLocaleString("en-US")].some(n => text.includes(`Materialized (${n})`));
  return counted && text.includes(first) ? performance.now() : false;
}"""


# The partition part of the UI's PartitionHealthQuery (its fields for a one-dimension asset), sent
# alone: the webserver's time for the answer without the page's other queries beside it.
HEALTH = """query($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) { ... on AssetNode { id
  partitionKeysByDimension { name type partitionKeys }
  assetPartitionStatuses { ... on DefaultPartitionStatuses { materializedPartitions materializingPartitions failedPartitions } } } } }"""


def sweep_text(cells: int) -> str:
    seeds, components = SHAPES[cells]
    return (
        f"name: uibench\ndata:\n  swissroll: {{n_samples: 60, noise: 0.05}}\nseeds: {list(range(seeds))}\n"
        f"methods:\n  random_projection: {{n_components: {list(range(1, components + 1))}}}\n"
        "metrics:\n  trustworthiness: {k: [5]}\n"
    )


def setup(sweep_file: str) -> None:
    """In the project's environment (a subprocess): register the sweep, then one runless
    materialization of `embedding` per cell. Prints the timings as JSON."""
    import dagster as dg

    from lab_assets.core import keys
    from lab_assets.defs.register import register
    from lab_assets.dr.sweep import load_sweep
    from lab_assets.runtime.instance import get_instance

    sweep = load_sweep(sweep_file)
    instance = get_instance()
    start = time.perf_counter()
    register(instance, sweep)
    registered = time.perf_counter()
    cells = [keys.cell_key(d, m) for d, m in sweep.cells]
    for cell in cells:
        instance.report_runless_asset_event(dg.AssetMaterialization(asset_key="embedding", partition=cell))
    done = time.perf_counter()
    register(instance, sweep)  # again, nothing changed: what every later `lab sweep run` pays
    print(
        json.dumps(
            {
                "register_s": registered - start,
                "reregister_s": time.perf_counter() - done,
                "materialize_s": done - registered,
                "materialize_per_cell_ms": 1000 * (done - registered) / len(cells),
                "first_key": cells[0],
                "partitions": len(instance.get_dynamic_partitions("cell")),
            }
        )
    )


def graphql_timings(page) -> list[dict]:
    """The page's GraphQL requests so far (resource timing): operation, start and end (ms after
    navigation start), duration, bytes received."""
    out = []
    for entry in page.evaluate("""() => performance.getEntriesByType('resource')
        .filter(e => e.name.includes('/graphql'))
        .map(e => ({name: e.name, start: e.startTime, duration: e.duration, bytes: e.transferSize}))"""):
        op = entry["name"].split("op=", 1)[1].split("&")[0] if "op=" in entry["name"] else "?"
        out.append(
            {
                "op": op,
                "start_ms": round(entry["start"]),
                "end_ms": round(entry["start"] + entry["duration"]),
                "ms": round(entry["duration"]),
                "bytes": entry["bytes"],
            }
        )
    return out


def load(page, url: str, total: int, first: str, timeout_ms: float) -> dict:
    page.goto(url, wait_until="commit", timeout=timeout_ms)
    handle = page.wait_for_function(RENDERED, arg=[total, first], polling="raf", timeout=timeout_ms)
    rendered = handle.json_value()
    page.wait_for_timeout(300)  # late requests finish; not counted
    graphql = graphql_timings(page)
    health = [g["end_ms"] for g in graphql if g["op"] == "PartitionHealthQuery"]
    # Honesty check: the view cannot show the statuses before their answer arrived.
    assert health and min(health) <= rendered, (rendered, graphql)
    return {"render_s": rendered / 1000, "health_end_s": min(health) / 1000, "graphql": graphql}


def median_load(loads: list[dict]) -> dict:
    return sorted(loads, key=lambda x: x["render_s"])[len(loads) // 2]


def measure_size(cells: int, repeats: int, shots: Path | None) -> dict:
    import ui_backfill
    from playwright.sync_api import sync_playwright

    out: dict = {"cells": cells, "load_before": [round(x, 2) for x in os.getloadavg()]}
    with project(sweep_text(cells), "uibench") as (folder, env, file):
        env = {**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        start = time.perf_counter()
        made = json.loads(measure.run([PY, __file__, "--setup", file], env, folder, timeout=3600).stdout)
        out |= {k: v for k, v in made.items() if k != "first_key"}
        out["setup_process_s"] = time.perf_counter() - start
        assert made["partitions"] == cells, made
        with ui_backfill.lab_ui(folder, env) as port, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            url = f"http://127.0.0.1:{port}/assets/embedding?view=partitions"
            view = {"viewport": {"width": 1400, "height": 900}}
            try:
                page = browser.new_context(**view).new_page()
                first = load(page, url, cells, made["first_key"], 600_000)
                try:  # Dagster's first-visit newsletter dialog (over the page; the timing is taken)
                    page.get_by_role("button", name="Skip").click(timeout=5_000)
                except Exception:  # noqa: BLE001 - not shown
                    pass
                reloads = [load(page, url, cells, made["first_key"], 600_000) for _ in range(repeats)]
                if shots is not None:
                    shots.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(shots / f"partitions_{cells}.png"))
                fresh = []
                for _ in range(repeats):  # a new browser profile each: no cached bundle, no stored state
                    context = browser.new_context(**view)
                    fresh.append(load(context.new_page(), url, cells, made["first_key"], 600_000))
                    context.close()
                alone = []
                for _ in range(repeats):
                    start = time.perf_counter()
                    node = ui_backfill.graphql(port, HEALTH, {"path": ["embedding"]})["assetNodeOrError"]
                    alone.append(time.perf_counter() - start)
                    assert len(node["assetPartitionStatuses"]["materializedPartitions"]) == cells
                out["health_query_alone_s"] = alone
            finally:
                browser.close()
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    out["first_load_s"] = first["render_s"]
    out["reload_s"] = [x["render_s"] for x in reloads]
    out["median_s"] = statistics.median(out["reload_s"])
    out["fresh_profile_s"] = [x["render_s"] for x in fresh]
    out["fresh_median_s"] = statistics.median(out["fresh_profile_s"])
    out["health_answer_s"] = {
        "first": first["health_end_s"],
        "reload": [x["health_end_s"] for x in reloads],
        "fresh": [x["health_end_s"] for x in fresh],
    }
    out["median_reload_graphql"] = sorted(median_load(reloads)["graphql"], key=lambda g: -g["ms"])
    out["median_fresh_graphql"] = sorted(median_load(fresh)["graphql"], key=lambda g: -g["ms"])[:6]
    out["first_load_graphql"] = sorted(first["graphql"], key=lambda g: -g["ms"])[:6]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cells", default="100,1000,10000", help=f"comma-separated, of {sorted(SHAPES)}")
    p.add_argument("--repeats", type=int, default=3, help="reloads measured after the first load")
    p.add_argument("--shots", type=Path, help="keep a screenshot of each size's page here")
    p.add_argument("--setup", help=argparse.SUPPRESS)  # the subprocess that registers and materializes
    args = p.parse_args()
    if args.setup:
        setup(args.setup)
        return
    for cells in map(int, args.cells.split(",")):
        start = time.perf_counter()
        out = measure_size(cells, args.repeats, args.shots)
        out["part_s"] = round(time.perf_counter() - start, 1)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
