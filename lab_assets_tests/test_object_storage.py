"""Asset storage on a real S3-compatible server (moto's server mode on 127.0.0.1): a tiny sweep
end to end, and a run killed mid-way that leaves no object a later run would read as valid."""

import io
import json
import os
import signal
import subprocess
import sys

import dagster as dg
import pandas as pd
import pytest

from lab_assets.core import keys, storage
from lab_assets.defs.freshness import FRESH, plan_sweep
from lab_assets.dr.sweep import load_sweep
from lab_assets.runner.local import definitions
from lab_assets.runner.sweeps import materialize_sweep
from lab_assets.runtime.instance import get_instance
from lab_assets_tests.conftest import S3_BUCKET

BUCKET = S3_BUCKET  # the `s3` fixture (conftest.py)


def objects(client, prefix: str) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def test_tiny_sweep_on_s3(lab, s3):
    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    result = materialize_sweep(sweep, workers=1)
    assert not result.failed and result.count("cells") == 4

    stored = objects(s3, "lab/")
    cells = [f"{d}/{m}" for d, m in sweep.cells]
    for asset in ("embedding", "metrics"):
        assert [k for k in stored if k.startswith(f"lab/assets/{asset}/")] == sorted(
            f"lab/assets/{asset}/{c}.parquet" for c in cells
        )
    assert "lab/assets/metric_table.parquet" in stored
    # The report: one version folder, named by the pointer object written last.
    version = s3.get_object(Bucket=BUCKET, Key="lab/reports/tiny/.current")["Body"].read().decode()
    report = [k for k in stored if k.startswith("lab/reports/")]
    assert report == sorted(
        [
            "lab/reports/tiny/.current",
            *(
                f"lab/reports/tiny/{version}/{n}"
                for n in (
                    "metrics.md",
                    "metrics.csv",
                    "metrics.parquet",
                    "embeddings.png",
                    "metrics_vs_k.png",
                    "report.html",
                    "summary.md",
                    "summary.csv",
                    "summary.parquet",
                    "comparisons.csv",
                    "comparisons.parquet",
                )
            ),
        ]
    ), report
    # Key records: the data and method keys, the sweep, and the one metric suite its cells share.
    assert sum(k.startswith("lab/keys/") for k in stored) == len(sweep.data) + len(sweep.methods) + 1 + 1
    assert sum(k.startswith("lab/keys/metric_suite/") for k in stored) == 1
    assert not (lab / ".lab" / "assets").exists()  # nothing went to the local disk

    body = s3.get_object(Bucket=BUCKET, Key="lab/assets/metric_table.parquet")["Body"].read()
    table = pd.read_parquet(io.BytesIO(body))
    assert sorted(table["partition"]) == sorted(keys.cell_key(d, m) for d, m in sweep.cells)
    assert plan_sweep(sweep, get_instance(), definitions().resolve_asset_graph()).counts[FRESH] == 4
    # W&B: the embedding artifact refers to the object by its URL (nothing read from the cell), no error.
    records = get_instance().fetch_materializations(dg.AssetKey("metrics"), limit=10).records
    assert [r.asset_materialization.metadata["wandb_mode"].value for r in records] == ["offline"] * 4
    assert not any("wandb_error" in r.asset_materialization.metadata for r in records)


@pytest.mark.slow
def test_killed_run_on_s3_leaves_only_complete_objects(lab, s3, monkeypatch):
    """The run is killed while its second embedding PUT is half sent (a proxy forwards the request's
    headers and half its body, then holds): the store must show no object under that key, the
    first embedding and everything else complete, and a re-run completes the sweep. (A writer
    that put a placeholder or a part first would leave it visible under the first key.)"""
    from lab_assets_tests.tcp_proxy import TcpProxy

    moto_port = int(json.loads(os.environ["LAB_STORAGE_OPTIONS"])["endpoint_url"].rsplit(":", 1)[1])
    proxy = TcpProxy(moto_port, trip=f"PUT /{BUCKET}/lab/assets/embedding/".encode(), let_through=1)
    env = {**os.environ, "LAB_STORAGE_OPTIONS": json.dumps({"endpoint_url": proxy.url})}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab_assets.cli.main", "sweep", "run", "sweeps/tiny.yaml", "--workers", "1", "--quiet"],
        cwd=lab,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert proxy.tripped.wait(120), "the run never uploaded an embedding"
        os.killpg(proc.pid, signal.SIGKILL)  # mid-PUT: the server has half of the body
        proc.wait()
    finally:
        proxy.close()
    torn_key = proxy.tripped_request.split()[1].decode().split("?")[0].removeprefix(f"/{BUCKET}/")
    assert torn_key.startswith("lab/assets/embedding/") and torn_key.endswith(".parquet")
    written = objects(s3, "lab/")
    assert torn_key not in written
    assert len([k for k in written if k.startswith("lab/assets/embedding/")]) == 1  # the first one
    for key in written:  # every object that exists is complete
        body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        if key.endswith(".parquet"):
            pd.read_parquet(io.BytesIO(body))
        elif key.endswith(".json"):
            json.loads(body)

    sweep = load_sweep(lab / "sweeps" / "tiny.yaml")
    result = materialize_sweep(sweep, workers=1)
    assert not result.failed
    assert plan_sweep(sweep, get_instance(), definitions().resolve_asset_graph()).counts[FRESH] == 4
    assert len(storage.read_parquet(f"{storage.current(storage.url('reports', 'tiny'))}/metrics.parquet")) == 4
    from lab_assets.dr import query  # `lab query` reads the report's current version too

    assert len(query.run("SELECT * FROM tiny")) == 4


def test_a_report_on_s3_is_replaced_whole_through_its_pointer(lab, s3, monkeypatch):
    """Every look through the pointer while a new version uploads (and after an upload that
    failed half way) reads one whole version; a report written before pointers (flat files) is
    read until the first swap and then removed; two versions are kept, older ones removed."""
    folder, names = storage.url("reports", "s"), ("a.csv", "b.csv", "c.png")
    for n in names:  # the layout before pointers
        storage.write_bytes(f"{folder}/{n}", b"0")

    def look() -> set[bytes]:
        at = storage.current(folder)
        return {storage.read_bytes(f"{at}/{n}") for n in names}

    assert look() == {b"0"}
    fs, pipe = storage.filesystem(), storage.filesystem().pipe
    looks: list[set[bytes]] = []

    def one_put_at_a_time(files: dict, fail_after: int | None = None):
        for i, (path, data) in enumerate(files.items()):
            if i == fail_after:
                raise OSError("connection reset")
            pipe({path: data})
            looks.append(look())

    monkeypatch.setattr(fs, "pipe", one_put_at_a_time)
    storage.replace_folder(folder, {n: b"1" for n in names})
    assert looks == [{b"0"}] * 3 and look() == {b"1"}
    assert not [
        k for k in objects(s3, "lab/reports/s/") if k.rsplit("/", 1)[1] in names and k.count("/") == 3
    ]  # flat ones gone

    monkeypatch.setattr(fs, "pipe", lambda files: one_put_at_a_time(files, fail_after=2))
    with pytest.raises(OSError, match="connection reset"):  # the upload's failure reaches the caller
        storage.replace_folder(folder, {n: b"2" for n in names})
    assert look() == {b"1"}  # the failed upload's files are in a folder nobody points to

    monkeypatch.setattr(fs, "pipe", one_put_at_a_time)
    looks.clear()
    for v in (b"3", b"4"):
        storage.replace_folder(folder, {n: v for n in names})
    assert looks == [{b"1"}] * 3 + [{b"3"}] * 3 and look() == {b"4"}
    versions = {k.split("/")[3] for k in objects(s3, "lab/reports/s/")} - {".current"}
    assert len(versions) == 2  # the current one and the one before (a reader that just read the pointer)
