"""What a sweep's partition keys mean: the key records (core/key_records.py) of its data and
method keys (dataset/method and full parameters) and of the sweep itself, written when a sweep
is registered."""

from __future__ import annotations

import json
from functools import lru_cache

from lab_assets.core import key_records
from lab_assets.dr.sweep import DataConfig, MethodConfig, MetricConfig, Sweep


def save_sweep(sweep: Sweep) -> None:
    for d in sweep.data:
        key_records.write("data", d.key, {"dataset": d.dataset, "params": d.params, "seed": d.seed})
    for m in sweep.methods:
        key_records.write("method", m.key, m.record())
    key_records.write("sweep", sweep.name, sweep.to_json())


keys = key_records.keys  # the registered keys of a kind: "data", "method" or "sweep"


REGISTER = "`lab sweep run <file>`"


def _record(kind: str, key: str) -> dict:
    return key_records.read(kind, key, REGISTER)


def data_config(key: str) -> DataConfig:
    return DataConfig(**_record("data", key))


def method_config(key: str) -> MethodConfig:
    return MethodConfig(**_record("method", key))


def sweep(name: str) -> Sweep:
    return _parsed(key_records.read_bytes("sweep", name, REGISTER))


@lru_cache(maxsize=64)
def _parsed(record: bytes) -> Sweep:
    """One `Sweep` per record content and process: building one computes every config's key, and
    each cell's run looks up the sweeps containing it twice (its label, its metric suite)."""
    return Sweep.from_json(json.loads(record))


def sweeps() -> list[Sweep]:
    return [sweep(name) for name in keys("sweep")]


def sweeps_containing(data_key: str, method_key: str) -> list[Sweep]:
    return [s for s in sweeps() if s.contains(data_key, method_key)]


def metric_suite(cell_sweeps: list[Sweep]) -> list[MetricConfig]:
    """The metrics a cell owes: every metric that any registered sweep containing it asks for."""
    suite = {m.column: m for s in cell_sweeps for m in s.metrics}
    return [suite[c] for c in sorted(suite)]
