"""The names this package writes into Dagster: two-dimensional partition key strings and run tag keys.

A cell is `<data>|<method>`, a training trial `<corpus>|<trial>`: Dagster joins the keys of a
multi-partition with "|" in the order of its dimension names (data < method, corpus < trial),
and that string is what it stores, shows in the UI and what `storage.asset_path` turns into
folders. This codec is the one place such strings are built or split; `defs/partitions.py`
converts them to and from `dg.MultiPartitionKey` (a test checks both agree).
"""

from __future__ import annotations

SEPARATOR = "|"  # Dagster's multi-partition delimiter
TAG_PREFIX = "lab_assets/"  # every run tag this package sets or reads


class BadKeyError(ValueError):
    """A string that is not a two-part partition key (or a part that cannot be one)."""


def tag(name: str) -> str:
    """The run tag key `lab_assets/<name>`."""
    return TAG_PREFIX + name


def _check_part(part: str, what: str) -> str:
    # Dagster refuses control characters (and "...") in partition keys; the separator would make
    # the key ambiguous. Refusing here names the part instead of failing deep in Dagster.
    if not isinstance(part, str) or not part:
        raise BadKeyError(f"{what}: expected a non-empty string, got {part!r}")
    if SEPARATOR in part or "..." in part or any(ord(c) < 32 for c in part):
        raise BadKeyError(f"{what} {part!r}: a key part may not contain {SEPARATOR!r}, '...' or control characters")
    return part


def cell_key(first: str, second: str) -> str:
    """`<first>|<second>`, the parts in Dagster's dimension order (data, method / corpus, trial)."""
    return f"{_check_part(first, 'first key part')}{SEPARATOR}{_check_part(second, 'second key part')}"


def parse_cell_key(key: str) -> tuple[str, str]:
    """The two parts of a `<first>|<second>` key string."""
    parts = key.split(SEPARATOR) if isinstance(key, str) else []
    if len(parts) != 2:
        raise BadKeyError(f"{key!r} is not a two-part partition key: expected '<data>{SEPARATOR}<method>' "
                          f"(or '<corpus>{SEPARATOR}<trial>')")
    return _check_part(parts[0], f"key {key!r}: first part"), _check_part(parts[1], f"key {key!r}: second part")
