"""The version lock: the strings Dagster recorded before code versions were by meaning.

Up to commit 171c77e, an entry's code version digested its files' *bytes* (with the versions of
its libraries); Dagster recorded those strings as the data versions of the spec partitions, and
each metric row recorded its columns' versions (which digested the shared kNN code's bytes). A
version by meaning is another string, so a lab home written then would find every cell stale
although nothing changed. `version_lock.json` keeps, for the code as that release had it, what
its strings digested: per entry, {its digest by meaning: the byte digests of its files}, and for
the shared metric code, {its digest by meaning: that release's digest of its bytes}.

The versions are computed by one formula either way (`Entry.code_version`,
`specs.column_version`): what stands for the code is the locked byte digest while the code means
what it meant then (a formatter pass, a comment, a docstring: same meaning), else the digest by
meaning (a real edit: a new string, its cells stale as they should be). So the libraries a lab has
installed enter as they always did: the lock holds no library version. Nothing is ever added for
an edit: the lock only carries that release's strings forward. It is seeded by
`python -m lab_assets.runner.version_lock REF` (docs/staleness.md, "Upgrades: the version lock").
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

LOCK = Path(__file__).with_name("version_lock.json")


@cache
def _lock() -> dict[str, dict[str, Any]]:
    try:
        return json.loads(LOCK.read_text())
    except FileNotFoundError:
        return {}


def source(key: str, meaning: str) -> Any:
    """What stands for the code of entry `key` (`method/umap`) whose modules mean `meaning`."""
    return _lock().get("entries", {}).get(key, {}).get(meaning, meaning)


def shared(meaning: str) -> str:
    """What stands for the shared metric code (and the metrics step) that means `meaning`."""
    return _lock().get("shared", {}).get(meaning, meaning)
