"""`python -m lab_assets.runner.version_lock REF`: seed `core/version_lock.json` with the strings
REF's code emitted (docs/staleness.md, "Upgrades").

REF's tree is extracted as `lab impact` does; a fresh interpreter with it first on the import
path prints every entry's code version and every metric's column version as REF computed them.
The working tree's digests by meaning of the same entries and columns are then mapped to those
strings: while an entry means what it meant at REF, it keeps emitting REF's string, so a lab home
written by REF finds its cells fresh. Seed it only from a REF whose code this tree's entries
still mean (the release before, with no change of meaning in between): a key whose code changed
since maps a digest no tree of REF's meaning produces, which is harmless but useless.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from lab_assets.core import version_lock
from lab_assets.runner.impact import ImpactError, extract

# Run in REF's tree: only what the registries and specs have offered since per-cell versions exist.
REF_VERSIONS = """
import json
from lab_assets.defs.assets import specs
from lab_assets.dr.declarations import REGISTRIES
out = {f"{e.kind}/{e.name}": e.code_version for r in REGISTRIES for e in r.entries()}
out.update({f"column/{n}": specs.column_version(n) for n in REGISTRIES[-1].names()})
print(json.dumps(out))
"""


def ref_versions(ref: str) -> dict[str, str]:
    """{key: version string} as REF's code computes them."""
    with tempfile.TemporaryDirectory() as scratch:
        tree = extract(ref, Path(scratch) / "tree")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}
        done = subprocess.run(
            [sys.executable, "-c", REF_VERSIONS], cwd=tree, env=env, capture_output=True, text=True, timeout=600
        )
    if done.returncode != 0:
        raise ImpactError(f"{ref}: its versions cannot be read: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)


def digests() -> dict[str, str]:
    """{key: digest by meaning} in this tree, for the same keys."""
    from lab_assets.defs.assets import specs
    from lab_assets.dr.declarations import REGISTRIES

    out = {f"{e.kind}/{e.name}": e.code_digest for r in REGISTRIES for e in r.entries()}
    out.update({f"column/{n}": specs.column_digest(n) for n in REGISTRIES[-1].names()})
    return out


def seed(ref: str) -> dict[str, dict[str, str]]:
    """The lock with REF's strings added (also written to `core/version_lock.json`)."""
    old, now = ref_versions(ref), digests()
    lock = json.loads(version_lock.LOCK.read_text()) if version_lock.LOCK.exists() else {}
    for key in sorted(old.keys() & now.keys()):
        if old[key] != now[key]:
            lock.setdefault(key, {})[now[key]] = old[key]
    version_lock.LOCK.write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")
    return lock


if __name__ == "__main__":
    seeded = seed(sys.argv[1])
    print(f"{version_lock.LOCK}: {sum(map(len, seeded.values()))} strings of {len(seeded)} entries and columns")
