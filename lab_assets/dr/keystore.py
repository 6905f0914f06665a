"""What each partition key means.

Dagster stores dynamic partition keys, not what they stand for. The key store keeps, beside the
asset files, one small JSON record per key (its dataset/method and full parameters) and one per
sweep, written when a sweep is registered. Assets look their configuration up here, so a
partition materialized from the UI computes exactly what the sweep declared.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from lab_assets.core import storage
from lab_assets.dr.sweep import DataConfig, MethodConfig, MetricConfig, Sweep


class UnknownKeyError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def _path(kind: str, key: str) -> str:
    return storage.url("keys", kind, f"{key}.json")


def save_sweep(sweep: Sweep) -> None:
    for d in sweep.data:
        storage.write_json(_path("data", d.key), {"dataset": d.dataset, "params": d.params, "seed": d.seed})
    for m in sweep.methods:
        storage.write_json(_path("method", m.key), {"method": m.method, "params": m.params, "resources": m.resources})
    storage.write_json(_path("sweep", sweep.name), sweep.to_json())


def _record(kind: str, key: str) -> dict:
    try:
        return storage.read_json(_path(kind, key))
    except storage.MissingAssetError:
        raise UnknownKeyError(
            f"{kind} key {key!r} has no record at {_path(kind, key)}: register it with `lab sweep run <file>`"
        ) from None


def data_config(key: str) -> DataConfig:
    return DataConfig(**_record("data", key))


def method_config(key: str) -> MethodConfig:
    return MethodConfig(**_record("method", key))


def sweep(name: str) -> Sweep:
    return Sweep.from_json(_record("sweep", name))


def keys(kind: str) -> list[str]:
    return sorted(PurePosixPath(p).stem for p in storage.glob(_path(kind, "*")))


def sweeps() -> list[Sweep]:
    return [sweep(name) for name in keys("sweep")]


def sweeps_containing(data_key: str, method_key: str) -> list[Sweep]:
    return [s for s in sweeps() if (data_key, method_key) in s.cells]


def metric_suite(cell_sweeps: list[Sweep]) -> list[MetricConfig]:
    """The metrics a cell owes: every metric that any registered sweep containing it asks for."""
    suite = {m.column: m for s in cell_sweeps for m in s.metrics}
    return [suite[c] for c in sorted(suite)]
