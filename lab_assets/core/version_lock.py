"""The version lock: the strings Dagster recorded before code versions were by meaning.

Up to commit 171c77e, an entry's code version was a digest of its files' bytes; Dagster recorded
those strings as the data versions of the spec partitions (and the metric rows recorded their
column versions). A version by meaning is another string, so a lab home written before would see every
cell stale although nothing changed. `version_lock.json` maps, per entry and per metric column,
the digest by meaning of the code as it was released to the string that release emitted:
`emit(key, digest)` returns that string while the code means the same (a formatter pass, a
comment, a docstring: the digest is unchanged), and the digest itself once it means something
else (a real edit: a new string, so its cells are stale as they should be). Nothing is ever added
for a new edit: the lock only carries the previous release's strings forward. It is seeded by
`python -m lab_assets.runner.version_lock REF` (docs/staleness.md, "Upgrades").
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

LOCK = Path(__file__).with_name("version_lock.json")


@cache
def _lock() -> dict[str, dict[str, str]]:
    try:
        return json.loads(LOCK.read_text())
    except FileNotFoundError:
        return {}


def emit(key: str, digest: str) -> str:
    """The version string of `key` (`method/umap`, `column/lid`) whose code has `digest`."""
    return _lock().get(key, {}).get(digest, digest)
