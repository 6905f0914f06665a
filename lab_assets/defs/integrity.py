"""Every artifact's size and content hash, in its materialization metadata, and the checks
against them: a deleted, truncated or overwritten file makes its partition "damaged" (not
fresh) in a plan, `lab verify` finds same-size corruption, and an error reading an artifact
names the file and the command that recomputes it.

The recorded fingerprints are the latest materialization's `integrity` entry ({path: {bytes,
blake2b}}); a materialization from before they were recorded is checked for presence only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import dagster as dg
import pandas as pd

from lab_assets.core import integrity, keys, storage
from lab_assets.core.integrity import Fingerprint
from lab_assets.dr import keystore
from lab_assets.dr.sweep import Sweep
from lab_assets.runtime.latest_events import latest_ids, records

ENTRY = "integrity"
# The assets whose files a data key's and a cell's status answer for.
DATA_ASSETS, CELL_ASSETS = ("raw_dataset", "dataset"), ("model", "embedding", "metrics")


@dataclass(frozen=True)
class Damage:
    asset: str
    partition: str | None
    path: str
    problem: str
    content_only: bool = False  # the size is right: only a hash check finds it

    def __str__(self) -> str:
        return f"{self.asset} {self.partition or ''}".rstrip() + f": {self.path}: {self.problem}"


def metadata(files: dict[str, Fingerprint]) -> dict[str, dg.MetadataValue]:
    """The materialization metadata entry recording `files` ({path: fingerprint})."""
    return {ENTRY: dg.MetadataValue.json({p: {"bytes": f.size, "blake2b": f.digest} for p, f in files.items()})}


def file_metadata(path: str) -> dict[str, dg.MetadataValue]:
    """The entry for one written file, hashed as it lies in storage (streamed)."""
    return metadata({path: integrity.of_file(path)})


def _recorded(m: dg.AssetMaterialization | None) -> dict[str, dict | None]:
    """{path: {bytes, blake2b}} as recorded; None for a file recorded before fingerprints were
    (checked for presence only)."""
    if m is None:
        return {}
    entry = m.metadata.get(ENTRY)
    if entry is not None:
        return dict(entry.value)
    path = m.metadata.get("path")
    return {} if path is None else {str(path.value): None}


def recorded(
    instance: dg.DagsterInstance,
    asset: str,
    partitions: Iterable[str | None],
    known: dict[str, dict] | None = None,
    latest: dict[str, int] | None = None,
) -> dict[str | None, dict[str, dict | None]]:
    """What the latest materialization of each partition (None: the unpartitioned asset)
    recorded about its files, in a few queries for all of them, whatever their number.
    `known`: {storage id: what it recorded} read before, reused and added to (a stored record
    never changes: `runtime/freshness/kept_answers.py` keeps it between plans). `latest`: {partition: its
    latest materialization's storage id} when the caller read them already (the plan's stamps)."""
    wanted, known = set(partitions), {} if known is None else known
    found: dict[str | None, dict[str, dict | None]] = {}
    if wanted - {None}:
        if latest is None:
            latest = latest_ids(instance, asset, partitions=wanted - {None})
        ids = {p: str(latest[p]) for p in wanted & latest.keys()}
        new = records(instance, asset, {int(i) for i in ids.values() if i not in known})
        known.update({str(i): _recorded(r.asset_materialization) for i, r in new.items()})
        found.update({p: known[i] for p, i in ids.items() if i in known})
    if None in wanted:
        latest = instance.fetch_materializations(dg.AssetKey(asset), limit=1).records
        if latest:
            found[None] = _recorded(latest[0].asset_materialization)
    return found


def damaged(
    instance: dg.DagsterInstance,
    asset: str,
    partitions: Iterable[str | None],
    full: bool,
    known: dict[str, dict] | None = None,
    latest: dict[str, int] | None = None,
) -> dict[str | None, Damage]:
    """The partitions among `partitions` whose latest materialization's files are missing or
    differ from what was recorded: sizes (one stat per file), or with `full` content hashes.
    `known`, `latest`: see `recorded`."""
    found = recorded(instance, asset, partitions, known, latest)
    sizes = storage.sizes(path for files in found.values() for path in files)
    out = {}
    for partition, files in found.items():
        for path, f in files.items():
            fingerprint = None if f is None else Fingerprint(f["bytes"], f["blake2b"])
            size_problem = integrity.problem(path, fingerprint, sizes[path], full=False)
            problem = size_problem or (integrity.problem(path, fingerprint, sizes[path], full=True) if full else None)
            if problem:
                out[partition] = Damage(asset, partition, path, problem, content_only=size_problem is None)
                break
    return out


def sweep_partitions(sweep: Sweep) -> dict[str, list[str | None]]:
    """Every partition of every asset a sweep writes (datasets too are partitioned by cell:
    each cell's dataset partition records the data key's one file)."""
    cells = [keys.cell_key(d, m) for d, m in sweep.cells]
    trainable = {m.key for m in sweep.methods if m.entry.trainable}
    return {
        **{a: cells for a in DATA_ASSETS},
        "model": [keys.cell_key(d, m) for d, m in sweep.cells if m in trainable],
        "embedding": cells,
        "metrics": cells,
        "metric_table": [None],
        "report": [sweep.name],
    }


def artifact_paths(sweep: Sweep) -> list[str]:
    """The files the sweep's partitions write (a dataset's one file per data key, a cell's per
    asset, the metric table): what a saved no-op answer must find unchanged to stand for a plan,
    which would call a missing or resized one damaged (`runner/noop_answer.py`)."""
    parts = sweep_partitions(sweep)
    data = sorted({keys.parse_cell_key(c)[0] for c in parts["embedding"]})
    paths = [storage.asset_path(a, k) for a in DATA_ASSETS for k in data]
    paths += [storage.asset_path("model", c, ".pt") for c in parts["model"]]
    paths += [storage.asset_path(a, c) for a in ("embedding", "metrics") for c in parts[a]]
    return [*paths, storage.asset_path("metric_table")]


def sweep_damage(
    instance: dg.DagsterInstance,
    sweep: Sweep,
    full: bool,
    known: dict[str, dict[str, dict]] | None = None,
    latest: dict[str, dict[str, int]] | None = None,
) -> list[Damage]:
    """Every damaged artifact of a sweep, in the order the sweep writes them. `known`: {asset:
    what `recorded` keeps}, filled in; `latest`: {asset: what `recorded` takes}, where read."""
    known, latest = {} if known is None else known, {} if latest is None else latest
    return [
        d
        for asset, parts in sweep_partitions(sweep).items()
        if parts
        for d in damaged(instance, asset, parts, full, known.setdefault(asset, {}), latest.get(asset)).values()
    ]


def repair_command(sources: Iterable[str], content_only: bool = False) -> str:
    """The command that recomputes a damaged artifact of the sweeps in `sources` (files): a
    corruption that kept the size is found only with hashes, hence `--verify`."""
    found = sorted(set(sources))
    if not found:
        return "its sweep is not registered: run `lab sweep run <sweep file>`"
    return f"lab sweep run {found[0]}" + (" --verify" if content_only else "")


def _sources_of(path: str) -> list[str]:
    """The files of the registered sweeps that write the asset file at `path`."""
    parts = path.removeprefix(storage.url("assets") + "/").removesuffix(".parquet").split("/")
    if len(parts) == 3:  # <asset>/<data>/<method>
        return [s.source for s in keystore.sweeps_containing(parts[1], parts[2])]
    if len(parts) == 2:  # <asset>/<data>
        return [s.source for s in keystore.sweeps() if parts[1] in {d.key for d in s.data}]
    return [s.source for s in keystore.sweeps()]  # the metric table: any sweep rebuilds it


def read_parquet(path: str) -> pd.DataFrame:
    """An upstream table, or an error naming the file and the command that recomputes it (not
    pyarrow's "Could not open Parquet input source '<Buffer>'")."""
    try:
        return storage.read_parquet(path)
    except storage.UnreadableFileError as e:
        raise _with_repair(e, path) from None


def read_parquets(paths: list[str]) -> pd.DataFrame:
    """Upstream tables as one (`storage.read_parquets`), or `read_parquet`'s error for the first
    file that cannot be read."""
    try:
        return storage.read_parquets(paths)
    except storage.UnreadableFileError as e:
        raise _with_repair(e, e.path or "") from None


def _with_repair(e: storage.UnreadableFileError, path: str) -> storage.UnreadableFileError:
    return type(e)(e.problem, f"to recompute it: {repair_command(_sources_of(path))}", path)
