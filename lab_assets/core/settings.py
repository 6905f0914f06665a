"""Where things live. Everything is derived from two environment variables, so a laptop, CI and
a cluster pod differ only in their environment, never in code."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path

from lab_assets.core.input_files import InputError

# A lab home that cannot take this much more cannot hold a run's events and files either.
PROBE_BYTES = 1 << 20
# OSError numbers that mean "this place cannot be written", not a bug.
UNWRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT}


def _resolve(path: str | os.PathLike[str]) -> Path:
    return _resolved(os.fspath(path), os.getcwd())


@lru_cache(maxsize=64)
def _resolved(path: str, cwd: str) -> Path:
    # Resolving stats every component of the path (~0.1 ms); a plan resolves the lab home for
    # every artifact path, 2,000+ times at 1,000 cells. Keyed by the variable's value and the
    # folder it is relative to, so a changed environment or folder resolves again.
    return (Path(cwd) / path).resolve()


def project_dir() -> Path:
    """The lab's project folder (sweeps/, relative data paths). Default: the current folder."""
    return _resolve(os.environ.get("LAB_PROJECT_DIR") or ".")


def lab_home() -> Path:
    """Asset files, key records and the embedded Dagster instance. Default: <project>/.lab."""
    return _resolve(os.environ.get("LAB_HOME") or project_dir() / ".lab")


def resolve_path(path: str | os.PathLike[str]) -> Path:
    """A user-given path: absolute as is, relative to the project folder otherwise."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else project_dir() / p


class LabHomeError(InputError):
    """The lab home (or the Dagster home, or local storage) cannot be written."""

    what = "lab home"


def dagster_home() -> Path:
    return _resolve(os.environ.get("DAGSTER_HOME") or lab_home() / "dagster")


def writable_places() -> list[Path]:
    """The folders a command that runs or plans writes to: the lab home, the Dagster home and a
    local LAB_STORAGE_URL."""
    places = [lab_home(), dagster_home()]
    url = os.environ.get("LAB_STORAGE_URL", "")
    if url and "://" not in url:
        places.append(Path(url).resolve())
    return list(dict.fromkeys(places))


def unwritable(path: Path, error: OSError) -> LabHomeError:
    reason = error.strerror or str(error)
    where = f" ({error.filename})" if error.filename and str(error.filename) != str(path) else ""
    fix = "Free some space there" if error.errno in (errno.ENOSPC, errno.EDQUOT) else "Make it writable"
    return LabHomeError(
        f"{path}: cannot write here: {reason}{where}. Nothing was run. {fix}, or point LAB_HOME "
        f"(and DAGSTER_HOME, LAB_STORAGE_URL if set) at another folder."
    )


def check_writable() -> None:
    """LabHomeError unless every writable place exists or can be created, and takes a 1 MiB
    file (written, synced, removed): a read-only or full lab home is refused before anything
    starts, instead of failing half-way through a run."""
    for place in writable_places():
        try:
            place.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=".lab-probe.", suffix=".tmp", dir=place)
            try:
                block = memoryview(bytes(PROBE_BYTES))
                while block:  # a short write on a nearly full disk: the next one says ENOSPC
                    block = block[os.write(fd, block):]
                os.fsync(fd)
            finally:
                os.close(fd)
                os.unlink(name)
        except OSError as e:
            raise unwritable(place, e) from None


DEFAULT = "default"  # `results_cache()`: `results_cache/` under the storage root


def results_cache() -> str | None:
    """Where computed artifacts are kept by their inputs' identity (`core/results_cache.py`):
    `LAB_RESULTS_CACHE` = a URL shared by the team (`s3://team/lab-cache`, options as JSON in
    `LAB_RESULTS_CACHE_OPTIONS`), `off` for none, unset: DEFAULT."""
    value = os.environ.get("LAB_RESULTS_CACHE", "").strip()
    if value.lower() == "off":
        return None
    return value or DEFAULT


def results_cache_options() -> dict:
    return json.loads(os.environ.get("LAB_RESULTS_CACHE_OPTIONS") or "{}")
