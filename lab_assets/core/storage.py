"""Where every file of the lab lives (asset partitions, key records, reports), written atomically.

The storage root is any fsspec URL: `LAB_STORAGE_URL` (e.g. `s3://bucket/lab`, with options such
as an S3 endpoint as JSON in `LAB_STORAGE_OPTIONS`), by default the local lab home. Every path
this module hands out is a string under that root.

Atomicity, so a run killed at any moment leaves either the old complete file or the new one,
never a torn file that a later run would read as valid:
- local disk: write a temporary file beside the target ('.<name>.<random>.tmp'), fsync, rename
  over the target, fsync the directory;
- object stores: one PUT of the complete bytes; S3-compatible stores make an object visible only
  once its upload has completed, so a killed writer leaves nothing at the key.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

import fsspec
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from lab_assets.core import settings
from lab_assets.core.keys import SEPARATOR
from lab_assets.core.settings import lab_home


class UnreadableFileError(Exception):
    """A file of the lab cannot be read: `problem` names it and says why, `advice` what to do."""

    def __init__(self, problem: str, advice: str = "", path: str | None = None):
        super().__init__(f"{problem}; {advice}" if advice else problem)
        self.problem, self.advice, self.path = problem, advice, path


class MissingAssetError(UnreadableFileError):
    """An upstream file that should exist does not: materialize its partition (again) first."""


class DamagedFileError(UnreadableFileError):
    """A file exists but cannot be read as what it should be (truncated, overwritten)."""


def root() -> str:
    return (settings.storage_url() or str(lab_home())).rstrip("/")


@cache
def _filesystem(url: str, options: str) -> fsspec.AbstractFileSystem:
    return fsspec.core.url_to_fs(url, **json.loads(options or "{}"))[0]


def filesystem_cache_clear() -> None:
    """Forget the filesystems made so far (a process about to serve another lab home)."""
    _filesystem.cache_clear()


def filesystem() -> fsspec.AbstractFileSystem:
    return _filesystem(root(), settings.storage_options())


def is_local() -> bool:
    return isinstance(filesystem(), LocalFileSystem)


def url(*parts: str) -> str:
    return "/".join([root(), *parts])


def asset_path(asset: str, partition: str | None = None, suffix: str = ".parquet") -> str:
    """`assets/<asset>/<data>/<method>.parquet` for a cell, `assets/<asset>/<data>.parquet` for a
    data key, `assets/<asset>.parquet` when unpartitioned, under the storage root."""
    return url(*asset_parts(asset, partition, suffix))


def asset_parts(asset: str, partition: str | None = None, suffix: str = ".parquet") -> list[str]:
    """`asset_path`'s parts below a storage root (another lab home's, for one). Multi-partition
    key strings are `<data>|<method>` (core/keys.py)."""
    if partition is None:
        return ["assets", asset + suffix]
    *dirs, last = partition.split(SEPARATOR)
    return ["assets", asset, *dirs, last + suffix]


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Local disk: call `write(tmp)` on a temporary file beside `path`, then move it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def _fsync_dir(folder: Path) -> None:
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> str:
    path = os.fspath(path)
    put(filesystem(), path, data)
    return path


def put(fs: fsspec.AbstractFileSystem, path: str, data: bytes) -> None:
    """`data` as the file `path` of `fs`, whole or not at all (a reader never sees part of it)."""
    if isinstance(fs, LocalFileSystem):
        atomic_write(Path(fs._strip_protocol(path)), lambda tmp: tmp.write_bytes(data))
    else:
        fs.pipe_file(path, data)  # a single PUT: all or nothing


CURRENT = ".current"  # on an object store, the object naming a replaced folder's current version


def replace_folder(path: str, files: dict[str, bytes]) -> dict[str, str]:
    """Replace the folder `path` by exactly `files` ({name: bytes}) as a whole: a reader that goes
    through `current(path)` sees the previous set or the new one, never a mix. Returns {name: path}.

    Local disk: the files go into a new hidden version folder beside it ('.<name>.<random>'),
    then the symbolic link `path` is swapped to it in one rename and the previous version is
    removed (a plain folder left by an older version is moved aside first). Object stores have no
    rename and no multi-object swap: the files go into a new version folder inside it
    ('<path>/.<random>/'), then the pointer object '<path>/.current' is written last, naming it
    (one PUT: all or nothing). The version before is kept for readers that read the pointer just
    before the swap; older ones, and files of a report written before pointers, are removed."""
    if not is_local():
        return _replace_remote_folder(path, files)
    target = Path(filesystem()._strip_protocol(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    version = target.with_name(f".{target.name}.{secrets.token_hex(6)}")
    version.mkdir()  # not mkdtemp: its 0700 would hide the report from the folder's other readers
    try:
        for name, data in files.items():
            atomic_write(version / name, lambda tmp, data=data: tmp.write_bytes(data))
        link = version.with_name(version.name + ".link.tmp")
        link.symlink_to(version.name)
        previous = target.resolve() if target.is_symlink() else None
        if target.is_dir() and not target.is_symlink():
            previous = target.rename(target.with_name(f"{version.name}.old"))
        os.replace(link, target)
    except BaseException:
        shutil.rmtree(version, ignore_errors=True)
        raise
    _fsync_dir(target.parent)
    if previous is not None and previous != version:
        shutil.rmtree(previous, ignore_errors=True)
    return {name: f"{path}/{name}" for name in files}


def _replace_remote_folder(path: str, files: dict[str, bytes]) -> dict[str, str]:
    fs, pointer = filesystem(), f"{path}/{CURRENT}"
    try:
        previous = fs.cat_file(pointer).decode()
    except FileNotFoundError:
        previous = None
    version = f".{secrets.token_hex(6)}"
    paths = {name: f"{path}/{version}/{name}" for name in files}
    fs.pipe({paths[name]: data for name, data in files.items()})  # concurrent PUTs, each all or nothing
    write_bytes(pointer, version.encode())  # the swap
    keep = {version, previous, CURRENT}
    fs.invalidate_cache(path)
    stale = [p for p in fs.ls(path, detail=False) if p.rstrip("/").rsplit("/", 1)[-1] not in keep]
    if stale:
        fs.rm(stale, recursive=True)
    return paths


def current(path: str) -> str:
    """Where a folder written by `replace_folder` is read from: the folder itself on local disk
    (its link is swapped whole); on an object store, the version folder its pointer names (one
    GET), or the folder itself when it has no pointer (written before pointers, or not yet)."""
    if is_local():
        return path
    try:
        return f"{path}/{filesystem().cat_file(f'{path}/{CURRENT}').decode()}"
    except FileNotFoundError:
        return path


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    try:
        return filesystem().cat_file(os.fspath(path))
    except FileNotFoundError:
        raise MissingAssetError(f"{path} does not exist", "materialize its partition first") from None


def read_many(paths: list[str]) -> dict[str, bytes]:
    """Several files by path (an object store fetches them concurrently); missing ones raise."""
    return filesystem().cat(list(paths), on_error="raise") if paths else {}


def exists(path: str | os.PathLike[str]) -> bool:
    return filesystem().exists(os.fspath(path))


def sizes(paths: Iterable[str | os.PathLike[str]]) -> dict[str, int | None]:
    """{path: its size in bytes, None if it does not exist}: one stat each (one HEAD on object
    stores); the filesystem is looked up once, which costs as much as a local stat."""
    fs, out = filesystem(), {}
    for path in map(os.fspath, paths):
        try:
            out[path] = fs.size(path)
        except FileNotFoundError:
            out[path] = None
    return out


def glob(pattern: str) -> list[str]:
    """Matching paths, as full URLs under the root, sorted. Temporaries ('.'-names) never match.
    What the store holds now: an object store's cached listing would miss what other processes
    wrote since (two ledger writers each rewrote the views from a listing without the other's
    last row)."""
    fs = filesystem()
    if not is_local():
        fs.invalidate_cache(pattern.split("*", 1)[0].rsplit("/", 1)[0])
    found = fs.glob(pattern)
    return sorted(found if is_local() else (fs.unstrip_protocol(p) for p in found))


def parquet_bytes(df: pd.DataFrame, metadata: dict[str, Any] | None = None) -> bytes:
    """A table as a Parquet file, with its provenance as JSON in the footer (readable by any tool)."""
    table = pa.Table.from_pandas(df, preserve_index=False)
    if metadata:
        extra = {b"lab_assets": json.dumps(metadata, sort_keys=True, default=str).encode()}
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **extra})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def write_parquet(path: str, df: pd.DataFrame, metadata: dict[str, Any] | None = None) -> str:
    return write_bytes(path, parquet_bytes(df, metadata))


def parquet_table(source: bytes | str | os.PathLike[str], columns: list[str] | None = None) -> pa.Table:
    """A Parquet file (its bytes, or a local path) as a table: the one Parquet reader here.

    Read in the calling thread, never on Arrow's thread pools: a pool thread still ending when a
    short process exits aborts it after its work and output were complete ("terminate called
    without an active exception", exit -6). pandas' reader (pyarrow's dataset scanner) did so in
    5 of 100 runs of a script that reads one small file and exits; `ParquetFile` on the pools in
    1 of 60 in CI. Our files are small: the pools gave them nothing. `lab` and the workers also
    end without that teardown (`fast_exit`); Dagster's own processes do not."""
    reader = pa.BufferReader(source) if isinstance(source, bytes) else os.fspath(source)
    return pq.ParquetFile(reader).read(columns=columns, use_threads=False, use_pandas_metadata=True)


def parquet_frame(source: bytes | str | os.PathLike[str], columns: list[str] | None = None) -> pd.DataFrame:
    """`parquet_table` as a DataFrame, converted in the calling thread too."""
    return parquet_table(source, columns).to_pandas(use_threads=False)


def read_parquet(path: str, columns: list[str] | None = None) -> pd.DataFrame:
    return read_parquet_with_provenance(path, columns)[0]


def read_parquet_with_provenance(path: str, columns: list[str] | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A table and the provenance written with it (`parquet_provenance`), from one read."""
    return parquet_with_provenance(read_bytes(path), path, columns)


def parquet_with_provenance(
    data: bytes, path: str, columns: list[str] | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """`read_parquet_with_provenance` of bytes already in hand (`path`: the file they are, for errors)."""
    try:
        table = parquet_table(data, columns)
    except (pa.ArrowException, OSError):  # pyarrow's message names a '<Buffer>', never the file
        raise _damaged(path, data) from None
    return table.to_pandas(use_threads=False), _provenance(table.schema.metadata)


def read_parquets(paths: list[str]) -> pd.DataFrame:
    """Many tables as one, columns unioned (a column a table lacks is null there), rows in path
    order. Converted to pandas once, not once a file: a file read into pandas cost ~2.5 ms, into
    a pyarrow table ~0.5 ms, which counts at 10,000 cells."""
    tables = []
    for path, data in read_many(paths).items():
        try:
            tables.append(parquet_table(data).replace_schema_metadata(None))
        except (pa.ArrowException, OSError):
            raise _damaged(path, data) from None
    return pa.concat_tables(tables, promote_options="permissive").to_pandas(use_threads=False)


def _damaged(path: str, data: bytes) -> DamagedFileError:
    return DamagedFileError(f"{path} is damaged: not a readable Parquet file ({len(data)} bytes)", path=path)


def parquet_provenance(path: str) -> dict[str, Any]:
    """The provenance JSON written with the table (empty if none), from the file's footer alone:
    on an object store a few ranged reads, not the whole file."""
    try:
        with filesystem().open(os.fspath(path), "rb") as f:
            meta = pq.read_schema(f).metadata
    except FileNotFoundError:
        raise MissingAssetError(f"{path} does not exist", "materialize its partition first") from None
    except (pa.ArrowException, OSError):
        raise DamagedFileError(f"{path} is damaged: not a readable Parquet file", path=path) from None
    return _provenance(meta)


def _provenance(meta: dict[bytes, bytes] | None) -> dict[str, Any]:
    return json.loads((meta or {}).get(b"lab_assets", b"{}"))


def json_bytes(obj: Any) -> bytes:
    """How a JSON record is written (`write_bytes`): stable bytes for the same content."""
    return json.dumps(obj, indent=2, sort_keys=True, default=str).encode()


def remove(path: str | os.PathLike[str]) -> None:
    """Delete a file (a superseded checkpoint, say); missing is fine."""
    fs = filesystem()
    if fs.exists(os.fspath(path)):
        fs.rm_file(os.fspath(path))
