"""Portable results: a sweep run on a laptop lab home, pushed to an S3 store (moto), is recorded,
not computed, by another lab home and instance that uses that store as its results cache: no
embedding or metrics computation, the same metric files bit for bit, the origin in the metadata.
A damaged entry is never trusted: its cell is computed again."""

import json

import dagster as dg
import pandas as pd
import pytest

from lab_assets.core import results_cache
from lab_assets.runtime.instance import get_instance
from lab_assets_tests.conftest import S3_BUCKET, lab_cli, lab_project

CACHE = f"s3://{S3_BUCKET}/team-cache"
TWO = "name: two\ndata:\n  swissroll: {n_samples: 100}\nseeds: [0, 1]\nmethods:\n  pca: {}\nmetrics:\n  trustworthiness: {k: [5]}\n"


def _second_home(lab, monkeypatch, name: str, endpoint: str):
    """Another lab project, lab home and Dagster instance (a team member's, the team's), whose
    results cache is the shared store."""
    folder = lab_project(lab / name, monkeypatch)
    monkeypatch.setenv("LAB_RESULTS_CACHE", CACHE)
    monkeypatch.setenv("LAB_RESULTS_CACHE_OPTIONS", json.dumps({"endpoint_url": endpoint}))
    return folder


def _cache_metadata(asset: str) -> dict[str, dict]:
    """{cell: the `results_cache` metadata of its latest materialization of `asset`}."""
    inst = get_instance()
    out = {}
    for cell in inst.get_dynamic_partitions("cell"):
        wanted = dg.AssetRecordsFilter(dg.AssetKey(asset), asset_partitions=[cell])
        [record] = inst.fetch_materializations(wanted, limit=1).records
        out[cell] = record.asset_materialization.metadata["results_cache"].value
    return out


def _metric_files(folder) -> dict[str, bytes]:
    top = folder / ".lab" / "assets" / "metrics"
    return {str(p.relative_to(top)): p.read_bytes() for p in top.rglob("*.parquet")}


@pytest.mark.slow
def test_a_sweep_pushed_from_a_laptop_is_recorded_not_computed_elsewhere(lab, s3, monkeypatch):
    endpoint = s3.meta.endpoint_url
    monkeypatch.delenv("LAB_STORAGE_URL")  # the laptop: everything on local disk
    monkeypatch.delenv("LAB_STORAGE_OPTIONS")
    run = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--json", "--workers", "1", cwd=lab)
    assert run.returncode == 0, run.stderr
    laptop_runs = {r.dagster_run.run_id for r in get_instance().get_run_records()}
    laptop_metadata = _cache_metadata("embedding")
    assert all(m == {"computed": True} for m in laptop_metadata.values()) and len(laptop_metadata) == 4
    laptop_metrics = _metric_files(lab)
    laptop_table = (lab / ".lab" / "assets" / "metric_table.parquet").read_bytes()

    pushed = lab_cli("push", "--to", CACHE, "--options", json.dumps({"endpoint_url": endpoint}), cwd=lab)
    assert pushed.returncode == 0, pushed.stderr
    assert "8 entries copied" in pushed.stdout  # an embedding and a metrics row per cell
    again = lab_cli("push", "--to", CACHE, "--options", json.dumps({"endpoint_url": endpoint}), cwd=lab)
    assert "0 entries copied" in again.stdout and "8 already there" in again.stdout

    team = _second_home(lab, monkeypatch, "team", endpoint)
    run = lab_cli("sweep", "run", "sweeps/tiny.yaml", "--json", "--workers", "1", cwd=team)
    assert run.returncode == 0, run.stderr
    for asset in ("embedding", "metrics"):  # not one computation: every value recorded from the cache
        found = _cache_metadata(asset)
        assert len(found) == 4 and all(m["computed"] is False for m in found.values()), found
        assert all(m["origin"]["run_id"] in laptop_runs and m["origin"]["host"] for m in found.values())
        assert all(CACHE.removeprefix("s3://") in m["entry"] for m in found.values())
    assert _metric_files(team) == laptop_metrics  # bit for bit
    team_table = (team / ".lab" / "assets" / "metric_table.parquet").read_bytes()
    from lab_assets.core.storage import parquet_frame

    assert parquet_frame(team_table).equals(parquet_frame(laptop_table))


def test_an_entry_is_trusted_only_intact_and_for_its_identity(tmp_path):
    cache = results_cache.open_cache(str(tmp_path / "cache"), {})
    identity = {"asset": "embedding", "code_version": "c1", "seed": 0}
    origin = {"host": "laptop", "run_id": "r1", "git_sha": "abc", "computed_at": "t"}
    assert results_cache.lookup(identity, cache) is None
    assert results_cache.store(identity, {"embedding.parquet": b"value"}, origin, cache)
    hit = results_cache.lookup(identity, cache)
    assert hit.files == {"embedding.parquet": b"value"} and hit.origin == origin
    assert results_cache.lookup({**identity, "seed": 1}, cache) is None  # another identity: another entry
    # The first computation stays the origin.
    assert not results_cache.store(identity, {"embedding.parquet": b"value"}, {**origin, "host": "team"}, cache)
    assert results_cache.lookup(identity, cache).origin["host"] == "laptop"

    stored = tmp_path / "cache" / results_cache.key(identity) / "embedding.parquet"
    stored.write_bytes(b"valuf")  # same size, other content: never trusted
    assert results_cache.lookup(identity, cache) is None
    stored.unlink()
    assert results_cache.lookup(identity, cache) is None
    (stored.parent / "entry.json").write_text("{not json")
    assert results_cache.lookup(identity, cache) is None
    # The computation that follows a miss writes the entry again.
    assert results_cache.store(identity, {"embedding.parquet": b"value"}, {**origin, "host": "team"}, cache)
    assert results_cache.lookup(identity, cache).origin["host"] == "team"


def test_a_damaged_cache_entry_is_recomputed_never_trusted(lab, monkeypatch):
    """End to end through `lab sweep run`, lean for the default suite: a cache in a local folder
    (the S3 store's path is the first test's), two cells."""
    cache_url = str(lab / "team-cache")
    monkeypatch.setenv("LAB_RESULTS_CACHE", cache_url)  # the laptop writes the shared cache directly
    monkeypatch.setenv("LAB_RESULTS_CACHE_OPTIONS", "{}")
    (lab / "sweeps" / "two.yaml").write_text(TWO)
    assert lab_cli("sweep", "run", "sweeps/two.yaml", "--workers", "1", cwd=lab).returncode == 0
    cache = results_cache.open_cache()
    names = results_cache.entries(cache)
    assert len(names) == 4  # an embedding and a metrics row per cell
    embeddings = [n for n in names if cache.fs.exists(f"{cache.root}/{n}/embedding.parquet")]
    damaged = embeddings[0]
    path = f"{cache.root}/{damaged}/embedding.parquet"
    data = bytearray(cache.fs.cat_file(path))
    data[len(data) // 2] ^= 0xFF  # same size, other content
    cache.fs.pipe_file(path, bytes(data))

    team = lab_project(lab / "team", monkeypatch)
    (team / "sweeps" / "two.yaml").write_text(TWO)
    assert lab_cli("sweep", "run", "sweeps/two.yaml", "--workers", "1", cwd=team).returncode == 0
    found = _cache_metadata("embedding")
    computed = [c for c, m in found.items() if m["computed"]]
    assert len(computed) == 1 and sum(not m["computed"] for m in found.values()) == 1
    # The recomputation wrote the entry again: intact, and equal to the laptop's embedding.
    entry = json.loads(cache.fs.cat_file(f"{cache.root}/{damaged}/entry.json"))
    assert results_cache.lookup(entry["identity"], cache) is not None
    data_key, method_key = computed[0].split("|")
    laptop, recomputed = (
        pd.read_parquet(home / ".lab" / "assets" / "embedding" / data_key / f"{method_key}.parquet")
        for home in (lab, team)
    )
    pd.testing.assert_frame_equal(recomputed, laptop, check_exact=True)
