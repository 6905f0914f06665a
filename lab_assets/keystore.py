"""What each partition key means.

Dagster stores dynamic partition keys, not what they stand for. The key store keeps, beside the
asset files, one small JSON record per key (its dataset/method and full parameters) and one per
sweep, written when a sweep is registered. Assets look their configuration up here, so a
partition materialized from the UI computes exactly what the sweep declared.
"""

from __future__ import annotations

from pathlib import Path

from lab_assets.settings import lab_home
from lab_assets.storage import read_json, write_json
from lab_assets.sweep import DataConfig, MethodConfig, MetricConfig, Sweep


class UnknownKeyError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def _dir(kind: str) -> Path:
    return lab_home() / "keys" / kind


def save_sweep(sweep: Sweep) -> None:
    for d in sweep.data:
        write_json(_dir("data") / f"{d.key}.json", {"dataset": d.dataset, "params": d.params, "seed": d.seed})
    for m in sweep.methods:
        write_json(_dir("method") / f"{m.key}.json", {"method": m.method, "params": m.params})
    write_json(_dir("sweep") / f"{sweep.name}.json", sweep.to_json())


def _record(kind: str, key: str) -> dict:
    path = _dir(kind) / f"{key}.json"
    if not path.is_file():
        raise UnknownKeyError(
            f"{kind} key {key!r} has no record in {path.parent}: register it with `lab sweep run <file>`"
        )
    return read_json(path)


def data_config(key: str) -> DataConfig:
    return DataConfig(**_record("data", key))


def method_config(key: str) -> MethodConfig:
    return MethodConfig(**_record("method", key))


def sweep(name: str) -> Sweep:
    return Sweep.from_json(_record("sweep", name))


def keys(kind: str) -> list[str]:
    return sorted(p.stem for p in _dir(kind).glob("*.json"))


def sweeps() -> list[Sweep]:
    return [sweep(name) for name in keys("sweep")]


def metric_suite(data_key: str, method_key: str) -> list[MetricConfig]:
    """The metrics a cell owes: every metric that any registered sweep containing it asks for."""
    suite: dict[str, MetricConfig] = {}
    for s in sweeps():
        if (data_key, method_key) in s.cells:
            suite.update((m.column, m) for m in s.metrics)
    return [suite[c] for c in sorted(suite)]
