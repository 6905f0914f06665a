"""Where things live and how a process is configured: the one reader of the `LAB_*` variables
and DAGSTER_HOME (`lab_assets_tests/test_settings.py` fails on a read elsewhere), so a laptop, CI
and a cluster pod differ only in their environment, never in code. Every place derives from two
of them (LAB_PROJECT_DIR, LAB_HOME); the rest choose storage, executor, device and tracking.

Values are read when asked, never at import: the warm service forks commands that each bring
their own environment (`runner/warm_service_process.py`)."""

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


# The variables' names, for code that writes a child process's environment.
PROJECT_DIR_VAR = "LAB_PROJECT_DIR"
HOME_VAR = "LAB_HOME"
DAGSTER_HOME_VAR = "DAGSTER_HOME"
STORAGE_URL_VAR = "LAB_STORAGE_URL"
STORAGE_OPTIONS_VAR = "LAB_STORAGE_OPTIONS"
EXECUTOR_VAR = "LAB_EXECUTOR"
SERVICE_VAR = "LAB_SERVICE"  # "1": use the warm service, "0": never; unset: when stdin and stderr are terminals
SERVICE_IDLE_VAR = "LAB_SERVICE_IDLE"  # seconds a service waits for a command before it ends
RESULTS_CACHE_VAR = "LAB_RESULTS_CACHE"  # a shared cache URL, or "off"
RESULTS_CACHE_OPTIONS_VAR = "LAB_RESULTS_CACHE_OPTIONS"
PLUGINS_VAR = "LAB_PLUGINS"  # comma-separated modules of the lab's own entries
SERVICE_CHILD_VAR = "LAB_SERVICE_CHILD"  # set in a command the service runs: it never forwards again
# What places a command's files and instance, and how it runs them: a process serving another
# command's lab home sets these anew.
PER_LAB_HOME = (STORAGE_URL_VAR, STORAGE_OPTIONS_VAR, EXECUTOR_VAR, DAGSTER_HOME_VAR, HOME_VAR)
SERVICE_IDLE_DEFAULT_S = 1800.0
# The lab home's folders, each named once here (their names on disk are read by every release:
# never renamed). The storage root's own folders (assets/, keys/, reports/) are `core/storage.py`'s.
CACHE_FOLDER = "cache"  # the plan's kept answers and the saved no-op answers: deleting it costs one full plan
DAGSTER_FOLDER = "dagster"  # the embedded Dagster instance: DAGSTER_HOME's default
WANDB_FOLDER = "wandb"  # W&B's local and offline runs
CLUSTER_FOLDER = "cluster"  # `lab cluster up`'s default folder
# Read by the tests only, never by the package; named here so that docs/settings.md lists every variable.
TESTS_ONLY = {
    "LAB_UPDATE_SNAPSHOTS": "1: `test_snapshot.py` rewrites the definitions snapshot instead of comparing",
    "LAB_SCREENSHOTS": "the folder `test_browser.py` writes its screenshots to (default: the test's temporary folder)",
    "LAB_UPDATE_SCREENSHOTS": "1: `test_browser.py` refreshes the README's `docs/screenshots/*.png`",
    "LAB_PROPERTY_EXAMPLES": "how many random examples each `test_property.py` test draws (default 60, or 30)",
    "LAB_SKIP_GUARD_DEMO": "set by `test_skip_guard.py` in the pytest sessions it starts; not for people to set",
}


def _get(name: str, default: str = "") -> str:
    return os.environ.get(name) or default


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
    return _resolve(_get(PROJECT_DIR_VAR, "."))


def lab_home() -> Path:
    """Asset files, key records and the embedded Dagster instance. Default: <project>/.lab."""
    return _resolve(_get(HOME_VAR) or project_dir() / ".lab")


def resolve_path(path: str | os.PathLike[str]) -> Path:
    """A user-given path: absolute as is, relative to the project folder otherwise."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else project_dir() / p


class LabHomeError(InputError):
    """The lab home (or the Dagster home, or local storage) cannot be written."""

    what = "lab home"


def dagster_home() -> Path:
    """The Dagster instance's folder: DAGSTER_HOME, default <lab home>/dagster."""
    return _resolve(_get(DAGSTER_HOME_VAR) or lab_home() / DAGSTER_FOLDER)


def dagster_home_chosen() -> Path | None:
    """DAGSTER_HOME as set in the environment (by the user, or by `instance.prepare_dagster_home`, which
    copies the project's dagster.yaml there), unresolved."""
    value = _get(DAGSTER_HOME_VAR)
    return Path(value) if value else None


def storage_url() -> str:
    """LAB_STORAGE_URL: the root of every file (a local path or an fsspec URL); "" = the lab home."""
    return _get(STORAGE_URL_VAR)


def storage_options() -> str:
    """LAB_STORAGE_OPTIONS: JSON keyword arguments of the storage URL's fsspec filesystem ("" = none)."""
    return _get(STORAGE_OPTIONS_VAR)


def executor() -> str:
    """LAB_EXECUTOR: how a run's steps execute, `in_process` (default) or `k8s`."""
    return _get(EXECUTOR_VAR, "in_process")


def forced_device() -> str:
    """LAB_DEVICE: "cpu" forces the CPU; "" auto-detects (checked by `backend.detect`)."""
    return _get("LAB_DEVICE")


def peak_flops_override() -> float | None:
    """LAB_PEAK_FLOPS: the device's peak bf16 FLOP/s for MFU, where `backend`'s table lacks it (unset: the table)."""
    value = _get("LAB_PEAK_FLOPS")
    return float(value) if value else None


def torch_compile_allowed() -> bool:
    """LAB_TORCH_COMPILE=0 turns torch.compile off (debugging, or a driver where Inductor misbehaves)."""
    return _get("LAB_TORCH_COMPILE", "1") != "0"


def tracking_off() -> bool:
    """LAB_WANDB=off: no W&B run per cell."""
    return _get("LAB_WANDB", "on") == "off"


def tracking_uploads() -> bool:
    """LAB_WANDB_UPLOAD=1: W&B Artifacts carry a copy of the dataset and embedding files, not
    only a reference to where they are stored."""
    return _get("LAB_WANDB_UPLOAD", "0") == "1"


def service_choice() -> str:
    """LAB_SERVICE: "1" runs `lab sweep run|plan`, `lab report` and `lab verify` in the warm service, "0" never;
    unset: when stdin and stderr are terminals, on Linux (`runner/warm_service.enabled`)."""
    return _get(SERVICE_VAR)


def in_service_child() -> bool:
    """LAB_SERVICE_CHILD: set by the warm service in a command it forked, which never hands itself over
    again. Not for people to set."""
    return bool(_get(SERVICE_CHILD_VAR))


def service_idle_seconds() -> float:
    """LAB_SERVICE_IDLE: how many seconds a warm service waits for a command before it ends (default 1800)."""
    return float(_get(SERVICE_IDLE_VAR) or SERVICE_IDLE_DEFAULT_S)


def writable_places() -> list[Path]:
    """The folders a command that runs or plans writes to: the lab home, the Dagster home and a
    local LAB_STORAGE_URL."""
    places = [lab_home(), dagster_home()]
    url = storage_url()
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
                    block = block[os.write(fd, block) :]
                os.fsync(fd)
            finally:
                os.close(fd)
                os.unlink(name)
        except OSError as e:
            raise unwritable(place, e) from None


def env_plugins() -> list[str]:
    """LAB_PLUGINS: comma-separated module names of the lab's own entries (importable from the
    project folder or the environment), loaded after those the project's pyproject.toml names."""
    return [m.strip() for m in _get(PLUGINS_VAR).split(",") if m.strip()]


PYPROJECT = "pyproject.toml"
TOOL_TABLE = "tool.lab_assets"
TOOL_KEYS = ("plugins",)  # a misspelt key would otherwise be ignored without a word


class ProjectConfigError(InputError):
    """The project's pyproject.toml cannot be read, or its [tool.lab_assets] table is wrong."""

    what = "project configuration"


def project_plugins() -> list[str]:
    """`[tool.lab_assets] plugins = ["mylab.entries", ...]` in the project folder's pyproject.toml:
    the lab's plugin modules, named once for every shell, CI job and worker that runs in the project."""
    plugins = _tool_setting("plugins", [])
    if not (isinstance(plugins, list) and all(isinstance(m, str) and m.strip() for m in plugins)):
        raise ProjectConfigError(
            f"{project_dir() / PYPROJECT}: [{TOOL_TABLE}] plugins: expected a list of module names "
            f'like ["mylab.entries"], got {plugins!r}'
        )
    return [m.strip() for m in plugins]


def lab_plugins() -> list[str]:
    """Every plugin module a lab names: its pyproject.toml's, then LAB_PLUGINS (once each)."""
    return list(dict.fromkeys([*project_plugins(), *env_plugins()]))


def _tool_setting(name: str, default: object) -> object:
    path = project_dir() / PYPROJECT
    try:
        st = path.stat()
    except OSError:
        return default
    return _tool_table(str(path), st.st_mtime_ns, st.st_size).get(name, default)


@lru_cache(maxsize=8)
def _tool_table(path: str, mtime_ns: int, size: int) -> dict:
    # Keyed by the file's stamp: asked before every warm-worker run and no-op answer, read once per edit.
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ProjectConfigError(f"{path}: cannot read it: {e.strerror or e}") from None
    if b"lab_assets" not in data:  # no table of ours (a lab's usually names its dependency lab-assets)
        return {}
    import tomllib  # only here: ~5 ms with its parse, on the saved no-op answer's path

    try:
        table = tomllib.loads(data.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ProjectConfigError(f"{path}: cannot read it as TOML: {e}") from None
    for part in TOOL_TABLE.split("."):
        table = table.get(part, {})
        if not isinstance(table, dict):
            raise ProjectConfigError(f"{path}: [{TOOL_TABLE}] must be a table")
    unknown = sorted(set(table) - set(TOOL_KEYS))
    if unknown:
        raise ProjectConfigError(f"{path}: [{TOOL_TABLE}] {unknown[0]}: unknown key; allowed: {', '.join(TOOL_KEYS)}")
    return table


DEFAULT = "default"  # `results_cache()`: `results_cache/` under the storage root


def results_cache() -> str | None:
    """Where computed artifacts are kept by their inputs' identity (`core/results_cache.py`):
    `LAB_RESULTS_CACHE` = a URL shared by the team (`s3://team/lab-cache`, options as JSON in
    `LAB_RESULTS_CACHE_OPTIONS`), `off` for none; unset: `results_cache/` under the storage root (DEFAULT)."""
    value = _get(RESULTS_CACHE_VAR).strip()
    if value.lower() == "off":
        return None
    return value or DEFAULT


def results_cache_options() -> dict:
    """LAB_RESULTS_CACHE_OPTIONS: JSON keyword arguments of the results cache URL's fsspec filesystem."""
    return json.loads(_get(RESULTS_CACHE_OPTIONS_VAR) or "{}")
