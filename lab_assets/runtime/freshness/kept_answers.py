"""Dagster's stale-status answers for cell partitions, kept between plans.

Planning a materialized sweep asks Dagster's resolver about every cell: ~8 event-log queries a
cell, 27-37 ms a cell on the 2-core VM (75 s at 2,000 cells). Between two plans most cells have
no new event, and what the resolver answers for a partition of a cell asset depends only on
- the latest events of that partition (every edge between cell assets is the identity,
  docs/ARCHITECTURE.md): its *stamp*, the storage id of the latest materialization of each
  cell asset and of the latest observation of each spec, for that partition;
- the latest events of the unpartitioned assets upstream of them (`metric_spec`);
- the asset graph (code versions, edges, partitions) and Dagster's version.
So an answer is reused while its partition's stamp is unchanged, and the whole cache is dropped
when anything of the rest changed. The stamps are read before any answer is computed: an event
stored meanwhile makes an answer newer than its stamp (computed again next time), never older.

Deleted events: Postgres never reuses a storage id, but SQLite reuses the largest one after a
delete, so an old stamp could name a new event. On SQLite the cache keeps a mark of the newest
event when it looked (`instance_head.deletion_mark`) and is dropped when an event stored by then
is gone; answers stamped with a newer event are not kept. Any other event log: no cache.

The same file keeps what each materialization recorded about its files (`defs/integrity.py`),
by storage id: a stored record never changes.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import astuple
from pathlib import Path

import dagster as dg

from lab_assets.runtime.freshness import instance_head
from lab_assets.runtime.freshness.stale_status import StaleStatusReader, Status
from lab_assets.runtime.latest_events import latest_ids

FORMAT = 1  # of the file: a change here drops every saved answer


def _dimension(node) -> str | None:
    return getattr(node.partitions_def, "name", None)


def _deletion_mark(instance: dg.DagsterInstance) -> list | None:
    """See above: a SQLite mark, [] where ids are never reused (Postgres), None: no cache."""
    mark = instance_head.deletion_mark(Path(instance.root_directory))
    if mark is not None:
        return mark
    try:
        from dagster_postgres.event_log import PostgresEventLogStorage
    except ImportError:
        return None
    return [] if isinstance(instance.event_log_storage, PostgresEventLogStorage) else None


class KeptAnswers:
    """`StaleStatusReader` with the answers for partitions of `dimension` kept in a file in
    `folder` (None: nothing kept). `save()` writes what this look computed."""

    def __init__(self, instance: dg.DagsterInstance, asset_graph, folder: Path | None, dimension: str = "cell"):
        self._reader = StaleStatusReader(instance, asset_graph)
        self._mark = _deletion_mark(instance) if folder is not None else None
        self._stamps: dict[str, list] = {}
        self._entries: dict[str, dict] = {}
        self.files: dict[str, dict[str, dict]] = {}  # {asset: {storage id: what it recorded}}, see integrity.recorded
        # {cell asset: {partition: storage id of its latest materialization (a spec's: observation)}}
        self.latest: dict[str, dict[str, int]] = {}
        if self._mark is None:
            self._path = None
            return
        ref = instance.get_ref().event_storage_data
        where = hashlib.sha256(
            f"{instance.root_directory}|{ref.module_name}|{ref.class_name}|{ref.config_yaml}".encode()
        ).hexdigest()
        self._path = Path(folder) / f"status-{where[:16]}.json"
        nodes = {k.to_user_string(): asset_graph.get(k) for k in asset_graph.get_all_asset_keys()}
        cell = sorted(a for a, n in nodes.items() if _dimension(n) == dimension)
        upstream = sorted({p.to_user_string() for a in cell for p in nodes[a].parent_keys} - set(cell))
        self.latest = by_asset = {a: latest_ids(instance, a, observed=nodes[a].is_observable) for a in cell}
        for ids in by_asset.values():
            for partition in ids:
                self._stamps.setdefault(partition, [by_asset[b].get(partition) for b in cell])
        self._key = _as_json(
            [
                FORMAT,
                dg.__version__,
                dimension,
                sorted(
                    (a, n.code_version, _dimension(n), sorted(p.to_user_string() for p in n.parent_keys))
                    for a, n in nodes.items()
                ),
                [(a, _latest_id(instance, a, nodes[a])) for a in upstream],
            ]
        )
        saved = self._load()
        if (
            saved.get("key") == self._key
            and saved.get("mark") is not None
            and not self._deleted_since(instance, saved["mark"])
        ):
            self._entries = {p: e for p, e in saved.get("entries", {}).items() if e["stamp"] == self._stamps.get(p)}
            latest = {str(i) for ids in by_asset.values() for i in ids.values()}
            self.files = {a: {i: f for i, f in fs.items() if i in latest} for a, fs in saved.get("files", {}).items()}

    def status(self, asset: str, partition: str | None) -> Status:
        return Status(
            *self._answer(f"status:{asset}", partition, lambda: list(astuple(self._reader.status(asset, partition))))
        )

    def observed(self, asset: str, partition: str | None = None) -> str | None:
        return self._answer(f"observed:{asset}", partition, lambda: self._reader.observed(asset, partition))

    def _answer(self, question: str, partition: str | None, compute):
        stamp = self._stamps.get(partition) if partition is not None else None
        if stamp is None:  # not a cell partition, or one with no event at all (cheap: missing)
            return compute()
        entry = self._entries.setdefault(partition, {"stamp": stamp, "answers": {}})
        if question not in entry["answers"]:
            entry["answers"][question] = compute()
        return entry["answers"][question]

    def _deleted_since(self, instance: dg.DagsterInstance, mark: list) -> bool:
        return instance_head.deleted_since(Path(instance.root_directory), mark) if self._mark else False

    def _load(self) -> dict:
        try:
            saved = json.loads(self._path.read_text())
        except (OSError, ValueError):
            return {}
        return saved if isinstance(saved, dict) else {}

    def save(self) -> None:
        """Best effort: a lab home that cannot be written plans without the cache."""
        if self._path is None:
            return
        newest = self._mark[0] if self._mark else None
        entries = {
            p: e
            for p, e in self._entries.items()
            if newest is None or all(i is None or i <= newest for i in e["stamp"])
        }
        files = {a: {i: f for i, f in fs.items() if newest is None or int(i) <= newest} for a, fs in self.files.items()}
        tmp = self._path.with_suffix(f".{os.getpid()}.tmp")
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({"key": self._key, "mark": self._mark, "entries": entries, "files": files}))
            os.replace(tmp, self._path)  # a reader sees the old file or this one, never half of it
        except OSError:
            tmp.unlink(missing_ok=True)


def _as_json(value):
    return json.loads(json.dumps(value))  # tuples as lists: comparable with what was saved


def _latest_id(instance: dg.DagsterInstance, asset: str, node) -> int | None:
    fetch = instance.fetch_observations if node.is_observable else instance.fetch_materializations
    found = fetch(dg.AssetKey(asset), limit=1).records
    return found[0].storage_id if found else None
