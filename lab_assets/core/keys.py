"""The names this package writes into Dagster: data and method keys, two-dimensional partition
key strings and run tag keys.

A data or method key is `<name>[-<stem>]-<digest>`: the digest of the full parameters makes it
unique and stable; the stem (the parameters that differ from the entry's defaults, sorted,
`umap-n_neighbors=50-9c1d2e`) is there so a person reads a cell in the UI's partition list
without opening its metadata. A data key adds its seed: `swissroll-noise=0.05-03af35~s0`.

A cell is `<data>|<method>`, a training trial `<corpus>|<trial>`: Dagster joins the keys of a
multi-partition with "|" in the order of its dimension names (data < method, corpus < trial),
and that string is what it stores, shows in the UI and what `storage.asset_path` turns into
folders. This codec is the one place such strings are built or split; `defs/partitions.py`
converts them to and from `dg.MultiPartitionKey` (a test checks both agree).
"""

from __future__ import annotations

import json
import re
from typing import Any

SEPARATOR = "|"  # Dagster's multi-partition delimiter
TAG_PREFIX = "lab_assets/"  # every run tag this package sets or reads


SEED_MARK = "~s"  # `<data config key>~s<seed>`
# The stem is cut here: the digest, not the stem, makes a key unique, and keys become folder
# names (storage.asset_path) and columns of the UI's partition list.
STEM_LENGTH = 48
# Characters a stem keeps: safe in folder names, object-store keys and Dagster partition keys;
# never the separator, the seed mark or "/".
_UNSAFE = re.compile(r"[^A-Za-z0-9_.=+-]+")


class BadKeyError(ValueError):
    """A string that is not a two-part partition key (or a part that cannot be one)."""


def tag(name: str) -> str:
    """The run tag key `lab_assets/<name>`."""
    return TAG_PREFIX + name


_CONTROL = re.compile(r"[\x00-\x1f]")  # one C-level scan: a plan checks 20,000 parts at 10,000 cells


def _check_part(part: str, what: str) -> str:
    # Dagster refuses control characters (and "...") in partition keys; the separator would make
    # the key ambiguous. Refusing here names the part instead of failing deep in Dagster.
    if not isinstance(part, str) or not part:
        raise BadKeyError(f"{what}: expected a non-empty string, got {part!r}")
    if SEPARATOR in part or "..." in part or _CONTROL.search(part):
        raise BadKeyError(f"{what} {part!r}: a key part may not contain {SEPARATOR!r}, '...' or control characters")
    return part


def cell_key(first: str, second: str) -> str:
    """`<first>|<second>`, the parts in Dagster's dimension order (data, method / corpus, trial)."""
    return f"{_check_part(first, 'first key part')}{SEPARATOR}{_check_part(second, 'second key part')}"


def parse_cell_key(key: str) -> tuple[str, str]:
    """The two parts of a `<first>|<second>` key string."""
    parts = key.split(SEPARATOR) if isinstance(key, str) else []
    if len(parts) != 2:
        raise BadKeyError(
            f"{key!r} is not a two-part partition key: expected '<data>{SEPARATOR}<method>' "
            f"(or '<corpus>{SEPARATOR}<trial>')"
        )
    return _check_part(parts[0], f"key {key!r}: first part"), _check_part(parts[1], f"key {key!r}: second part")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def config_key(name: str, changed: dict[str, Any], digest: str) -> str:
    """`<name>-<p>=<v>-...-<digest>`: `changed` (the parameters that differ from the entry's
    defaults) as a stem, sorted so that dict order never matters, unsafe characters as `_`."""
    stem = _UNSAFE.sub("_", "-".join(f"{p}={_text(v)}" for p, v in sorted(changed.items())))
    stem = re.sub(r"\.{2,}", ".", stem)[:STEM_LENGTH].strip("-")  # Dagster refuses "..."
    return "-".join(part for part in (name, stem, digest) if part)


def data_key(config: str, seed: int) -> str:
    """`<data config key>~s<seed>`: one dataset configuration at one seed."""
    return f"{config}{SEED_MARK}{seed}"


def split_data_key(key: str) -> tuple[str, int]:
    """`swissroll-noise=0.05-03af35~s0` -> (`swissroll-noise=0.05-03af35`, 0)."""
    config, mark, seed = key.rpartition(SEED_MARK)
    if not mark or not config or not seed.isdigit():
        raise BadKeyError(f"{key!r} is not a data key: expected '<config>{SEED_MARK}<seed>'")
    return config, int(seed)
