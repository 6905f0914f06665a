"""`lab gc`: what no registered sweep uses any more, with its size, and deleting it.

Garbage, from the registered sweeps whose file still exists ("live"):
- a sweep whose file is gone (its key record and its `sweep` partition: `register.unregister`);
- a cell no live sweep declares: its files, its `cell` partition and its runs (`delete_run`: the
  run and its events, the partition's materializations with them; a cell's runs materialize that
  one partition only);
- a data key no live cell reads: its dataset files and its latent table (`latent_table.py`); key
  records of data and method keys no live sweep names;
- a report of a sweep no longer registered (its folder, `sweep` partition, report and launch runs),
  and superseded versions of a live report (`storage.replace_folder` leaves the previous one);
- the local W&B run folders (`<lab home>/wandb`) of cells and sweeps no live sweep declares; what
  is in a W&B project already (online runs, offline ones uploaded by `wandb sync`) stays there:
  `lab gc` says which (`Item.in_wandb`);
- a file under a cell asset's folder that no materialization points to (written by a run that
  died before recording it, or a temporary file of a killed writer older than `GRACE_SECONDS`),
  checkpoints of unmaterialized cells aside (they resume a training).

What Dagster cannot delete through its public API stays: the specs' runless observations of a
removed cell (SQL event logs do not implement `wipe_asset_partitions`, and `delete_run` of the
runless run id would take every partition's); without the partition the UI no longer shows them.

In flight is never touched: the partitions of unfinished runs and of requested backfills, the
keys they read, and, while a metric table run is unfinished, every metrics file (it reads them all).
`collect` looks again right before deleting, so a sweep registered or a run started after the
listing keeps what it uses.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from lab_assets.core import key_records, keys, storage, tracking
from lab_assets.core.settings import resolve_path
from lab_assets.defs.inflight import PARTITION_TAG, UNFINISHED
from lab_assets.defs.integrity import CELL_ASSETS, DATA_ASSETS, recorded
from lab_assets.defs.latent_table import FOLDER as LATENT
from lab_assets.defs.register import unregister
from lab_assets.dr import keystore
from lab_assets.dr.sweep import Sweep
from lab_assets.runtime.backfills import requested_backfill_partitions
from lab_assets.runtime.latest_events import latest_ids
from lab_assets.runtime.run_assets import run_assets

GRACE_SECONDS = 3600  # a temporary file younger than this may be a write in progress
CHECKPOINT = ".ckpt.pt"
CELL_RUN_ASSETS = frozenset(dg.AssetKey(a) for a in (*DATA_ASSETS, *CELL_ASSETS))
SWEEP_RUN_ASSETS = frozenset({dg.AssetKey("report"), dg.AssetKey("sweep")})


@dataclass
class Item:
    kind: str  # sweep | cell | data | report | report version | key record | stray file
    name: str
    why: str
    files: dict[str, int] = field(default_factory=dict)  # path -> bytes
    runs: list[str] = field(default_factory=list)
    partitions: list[tuple[str, str]] = field(default_factory=list)  # (dynamic dimension, key)
    folders: dict[str, int] = field(default_factory=dict)  # local folders (W&B runs) -> bytes
    in_wandb: bool = False  # a W&B run also in a W&B project, which `lab gc` leaves alone

    @property
    def size(self) -> int:
        return sum(self.files.values()) + sum(self.folders.values())

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "name": self.name,
            "why": self.why,
            "bytes": self.size,
            "files": sorted([*self.files, *self.folders]),
            "runs": self.runs,
            "partitions": [f"{d}:{k}" for d, k in self.partitions],
        }


@dataclass
class InFlight:
    """What unfinished runs and requested backfills use."""

    partitions: set[str]
    metric_table: bool  # an unpartitioned run (the metric table reads every metrics file)

    def cells(self) -> set[tuple[str, str]]:
        return {keys.parse_cell_key(p) for p in self.partitions if keys.SEPARATOR in p}


def in_flight(instance: dg.DagsterInstance) -> InFlight:
    runs = [r.dagster_run for r in instance.get_run_records(dg.RunsFilter(statuses=UNFINISHED))]
    partitions = {r.tags[PARTITION_TAG] for r in runs if PARTITION_TAG in r.tags}
    unpartitioned = any(PARTITION_TAG not in r.tags for r in runs)
    return InFlight(partitions | requested_backfill_partitions(instance), unpartitioned)


def live_sweeps() -> tuple[list[Sweep], list[Sweep]]:
    """(registered sweeps whose file exists, those whose file is gone). A source is relative to the
    folder `lab sweep run` ran in, usually the project's: gone only when found in neither."""
    registered = keystore.sweeps()
    gone = [s for s in registered if not (resolve_path(s.source).is_file() or Path(s.source).is_file())]
    return [s for s in registered if s not in gone], gone


def _listing(top: str) -> dict[str, dict]:
    """{path: info (size, mtime)} of every file under `top`, temporaries included."""
    fs = storage.filesystem()
    if not fs.exists(top):
        return {}
    found = fs.find(top, detail=True)
    return {path if storage.is_local() else fs.unstrip_protocol(path): info for path, info in found.items()}


def _relative(path: str) -> list[str]:
    """A path's parts under the storage root (`assets/<asset>/...`): recorded paths name the root
    they were written under, which a moved lab home no longer is."""
    parts = path.replace("\\", "/").split("/")
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] in ("assets", "reports", "keys"):
            return parts[i:]
    return parts


def _mtime(info: dict) -> float:
    m = info.get("mtime") or info.get("LastModified") or info.get("created")
    return m.timestamp() if hasattr(m, "timestamp") else float(m or 0)


def find(instance: dg.DagsterInstance, now: float | None = None) -> list[Item]:
    """Everything `lab gc` would delete, read-only."""
    live, gone = live_sweeps()
    flight = in_flight(instance)
    used_cells = {c for s in live for c in s.cells} | flight.cells()
    used_data, used_methods = {d for d, _ in used_cells}, {m for _, m in used_cells}
    busy_sweeps = {p for p in flight.partitions if keys.SEPARATOR not in p}
    cell_files, data_files, temporaries = _scan_assets(time.time() if now is None else now)
    runs = _runs_by_partition(instance)

    items = [
        Item("sweep", s.name, f"its file {s.source} is gone", _sized([key_records.path("sweep", s.name)])) for s in gone
    ]
    partitions = set(instance.get_dynamic_partitions("cell"))
    latest = {a: latest_ids(instance, a) for a in (*DATA_ASSETS, *CELL_ASSETS)}  # {asset: {partition: id}}
    history = {p for ids in latest.values() for p in ids}
    unused = {keys.cell_key(d, m) for d, m in cell_files} | partitions | history
    unused |= {p for p in runs if keys.SEPARATOR in p}
    for cell in sorted(unused - {keys.cell_key(d, m) for d, m in used_cells}):
        files = cell_files.get(keys.parse_cell_key(cell), {})
        if flight.metric_table and any("/metrics/" in p for p in files):
            continue  # the metric table run in flight reads every metrics file
        partition = [("cell", cell)] if cell in partitions else []
        items.append(Item("cell", cell, "no registered sweep declares it", files, runs.get(cell, []), partition))
    items += [
        Item("data", d, "no declared cell reads it", data_files[d]) for d in sorted(data_files.keys() - used_data)
    ]
    items += _unrecorded(instance, latest, live, flight, cell_files, data_files, used_data)
    items += [Item("stray file", p, "a temporary file of a write that never finished", {p: n}) for p, n in temporaries]
    items += _reports(instance, {s.name for s in live} | busy_sweeps, busy_sweeps, runs)
    items += _key_records(used_data, used_methods)
    live_runs = {tracking.run_id("cell", keys.cell_key(d, m)) for d, m in used_cells}
    items += _wandb_runs(live_runs | {tracking.run_id("sweep", s) for s in {s.name for s in live} | busy_sweeps})
    return items


def _wandb_runs(live: set[str]) -> list[Item]:
    """Local W&B run folders of runs no live cell or sweep has."""
    out = []
    for run, folders in tracking.local_runs().items():
        if run not in live:
            sizes = {str(f): sum(p.stat().st_size for p in f.rglob("*") if p.is_file()) for f in folders}
            why = "a run of a cell or sweep no registered sweep declares"
            out.append(Item("wandb run", run, why, folders=sizes, in_wandb=any(map(tracking.in_project, folders))))
    return out


def _scan_assets(now: float) -> tuple[dict[tuple[str, str], dict[str, int]], dict[str, dict[str, int]], list]:
    """The sweep assets' files, one listing: ({(data, method): {path: bytes}} of cells, {data key:
    {path: bytes}} of datasets and latent tables, [(path, bytes)] of temporaries older than
    `GRACE_SECONDS` and of files in no known place)."""
    cells: dict[tuple[str, str], dict[str, int]] = {}
    data: dict[str, dict[str, int]] = {}
    other = []
    for path, info in _listing(storage.url("assets")).items():
        parts = _relative(path)
        if len(parts) < 3 or parts[1] not in (*DATA_ASSETS, *CELL_ASSETS, LATENT):
            continue  # training's assets, the metric table: not a sweep's cells
        name = parts[-1]
        if name.startswith("."):  # a killed writer's temporary, or one being written
            if now - _mtime(info) > GRACE_SECONDS:
                other.append((path, info["size"]))
        elif parts[1] in (*DATA_ASSETS, LATENT) and len(parts) == 3:
            data.setdefault(name.removesuffix(".parquet"), {})[path] = info["size"]
        elif parts[1] in CELL_ASSETS and len(parts) == 4:
            method = name.removesuffix(CHECKPOINT).removesuffix(".pt").removesuffix(".parquet")
            cells.setdefault((parts[2], method), {})[path] = info["size"]
        else:
            other.append((path, info["size"]))
    return cells, data, sorted(other)


def _sized(paths: list[str]) -> dict[str, int]:
    return {p: n for p, n in storage.sizes(paths).items() if n is not None}


def _runs_by_partition(instance: dg.DagsterInstance) -> dict[str, list[str]]:
    """{partition: ids of its finished runs that materialize sweep assets only}: a training run's
    `corpus|trial` partition looks like a cell, its assets do not."""
    out: dict[str, list[str]] = {}
    for r in instance.get_run_records():
        run = r.dagster_run
        partition = run.tags.get(PARTITION_TAG)
        if partition is None or run.status in UNFINISHED:
            continue
        assets = run_assets(instance, run)
        if assets and (assets <= CELL_RUN_ASSETS if keys.SEPARATOR in partition else assets <= SWEEP_RUN_ASSETS):
            out.setdefault(partition, []).append(run.run_id)
    return out


def _unrecorded(
    instance, latest: dict[str, dict[str, int]], live: list[Sweep], flight: InFlight, cell_files, data_files, used_data
) -> list[Item]:
    """Files of declared cells and data keys that no materialization points to (checkpoints of
    unmaterialized cells aside: they resume a training); `latest`: {asset: {partition: its latest
    materialization's storage id}}, read once by `find`."""
    busy = flight.cells()
    cells = sorted({c for s in live for c in s.cells} - busy)
    pointed: set[tuple[str, ...]] = set()
    for asset in (*DATA_ASSETS, *CELL_ASSETS):
        for files in recorded(instance, asset, [keys.cell_key(d, m) for d, m in cells], latest=latest[asset]).values():
            pointed |= {tuple(_relative(p)) for p in files}
    out = []
    busy_data = {d for d, _ in busy}
    candidates = [(p, n) for c in cells for p, n in cell_files.get(c, {}).items() if not p.endswith(CHECKPOINT)]
    # A latent table is no materialization's file: the step that needs it writes it when missing.
    candidates += [
        (p, n)
        for d in sorted(used_data - busy_data)
        for p, n in data_files.get(d, {}).items()
        if _relative(p)[1] != LATENT
    ]
    for path, size in candidates:
        if tuple(_relative(path)) not in pointed:
            out.append(Item("stray file", path, "no materialization points to it", {path: size}))
    return out


def _reports(
    instance: dg.DagsterInstance, live_names: set[str], busy: set[str], runs: dict[str, list[str]]
) -> list[Item]:
    """Reports of sweeps not registered, and superseded versions of live ones not being written."""
    fs, top = storage.filesystem(), storage.url("reports")
    entries: list[str] = []
    if fs.exists(top):
        fs.invalidate_cache(top)
        entries = sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(top, detail=False))
    names = {n for n in entries if not n.startswith(".")}
    registered = set(instance.get_dynamic_partitions("sweep"))
    out = []
    for name in sorted((names | registered | {p for p in runs if keys.SEPARATOR not in p}) - live_names):
        files = {f"{top}/{name}": _du(f"{top}/{name}")} if name in names else {}
        out.append(
            Item(
                "report",
                name,
                "its sweep is not registered",
                files,
                runs.get(name, []),
                [("sweep", name)] if name in registered else [],
            )
        )
    for name in sorted(names & live_names - busy):
        for version in _superseded(f"{top}/{name}", entries):
            out.append(
                Item(
                    "report version", name, f"superseded version {version.rsplit('/', 1)[-1]}", {version: _du(version)}
                )
            )
    return out


def _superseded(path: str, entries: list[str]) -> list[str]:
    """A live report's versions other than the current one (local: the hidden folders beside its
    link, `.old` ones included; an object store: the version folders inside it besides the one
    `.current` names)."""
    name = path.rsplit("/", 1)[-1]
    if storage.is_local():
        link = Path(path)
        current = link.resolve().name if link.is_symlink() else None
        version = re.compile(rf"\.{re.escape(name)}\.[0-9a-f]{{12}}(\.old)?")  # storage.replace_folder's names
        versions = [e for e in entries if version.fullmatch(e)]
        return [str(link.with_name(e)) for e in versions if e != current]
    current = storage.current(path).rsplit("/", 1)[-1]
    found = [p.rstrip("/") for p in storage.filesystem().ls(path, detail=False)]
    return [p for p in found if (v := p.rsplit("/", 1)[-1]).startswith(".") and v not in (current, storage.CURRENT)]


def _du(path: str) -> int:
    """The bytes of a file or folder (a report's link: its current version)."""
    if storage.is_local():
        p = Path(path).resolve()
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size
    return storage.filesystem().du(path, total=True)


def _key_records(used_data: set[str], used_methods: set[str]) -> list[Item]:
    out = []
    for kind, used in (("data", used_data), ("method", used_methods)):
        for key in sorted(set(keystore.keys(kind)) - used):
            out.append(
                Item(
                    "key record", f"{kind} {key}", "no registered sweep names it", _sized([key_records.path(kind, key)])
                )
            )
    return out


def collect(instance: dg.DagsterInstance, items: list[Item]) -> list[Item]:
    """Delete `items` (from `find`), except what became used since: what `find` says now is
    garbage too. Returns what was deleted."""
    still = {(i.kind, i.name, tuple(sorted(i.files))) for i in find(instance)}
    done = []
    for item in items:
        if (item.kind, item.name, tuple(sorted(item.files))) not in still:
            continue
        if item.kind == "sweep":
            unregister(instance, item.name)
        for run_id in item.runs:
            instance.delete_run(run_id)
        for dimension, key in item.partitions:
            instance.delete_dynamic_partition(dimension, key)
        for path in item.files:
            _delete(path)
        for folder in item.folders:
            shutil.rmtree(folder, ignore_errors=True)
        done.append(item)
    return done


def _delete(path: str) -> None:
    if storage.is_local():
        p = Path(path)
        target = p.resolve() if p.is_symlink() else None
        if p.is_dir() and target is None:
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)
        if target is not None:
            shutil.rmtree(target, ignore_errors=True)
        return
    fs = storage.filesystem()
    if fs.exists(path):
        fs.rm(path, recursive=fs.isdir(path))
