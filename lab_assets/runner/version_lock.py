"""`python -m lab_assets.runner.version_lock REF`: seed `core/version_lock.json` with what REF's
strings digested (docs/staleness.md, "Upgrades: the version lock").

REF is the release before versions by meaning (171c77e): its entries' code versions digested
their files' bytes, its metric columns the shared code's bytes. REF's tree is extracted as
`lab impact` does; a fresh interpreter with it first on the import path prints those byte digests
(checking that they give REF's own versions). The working tree's digests by meaning of the same
entries and of the shared code are then mapped to them: while an entry means what it meant at
REF, its versions are REF's strings, so a lab home written by REF finds its cells fresh. Seed it
only from a REF whose code this tree's entries still mean (no change of meaning in between): a
key whose code changed since maps a meaning REF never had, which is harmless but useless.
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

# Run in REF's tree (171c77e's internals: `source_files`, `_shared_metric_code`, `digest`).
REF_VERSIONS = """
import hashlib, json
from pathlib import Path
from lab_assets.core.registry import digest, package_version
from lab_assets.defs.assets import specs
from lab_assets.dr.declarations import REGISTRIES
entries = {}
for e in (e for r in REGISTRIES for e in r.entries()):
    shas = [hashlib.sha256(Path(f).read_bytes()).hexdigest() for f in e.source_files]
    source = entries[f"{e.kind}/{e.name}"] = shas[0] if len(shas) == 1 else shas
    assert e.code_version == digest({"source": source, "packages": {p: package_version(p) for p in e.packages}})
print(json.dumps({"entries": entries, "shared": specs._shared_metric_code()}))
"""


def ref_versions(ref: str) -> dict:
    """{"entries": {key: byte digests}, "shared": byte digest} as REF's code computes them."""
    with tempfile.TemporaryDirectory() as scratch:
        tree = extract(ref, Path(scratch) / "tree")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}
        done = subprocess.run(
            [sys.executable, "-c", REF_VERSIONS], cwd=tree, env=env, capture_output=True, text=True, timeout=600
        )
    if done.returncode != 0:
        raise ImpactError(f"{ref}: its versions cannot be read: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)


def seed(ref: str) -> dict:
    """The lock with REF's byte digests added (also written to `core/version_lock.json`)."""
    from lab_assets.defs.assets import specs
    from lab_assets.dr.declarations import REGISTRIES

    old = ref_versions(ref)
    meanings = {f"{e.kind}/{e.name}": e.meaning for r in REGISTRIES for e in r.entries()}
    lock = json.loads(version_lock.LOCK.read_text()) if version_lock.LOCK.exists() else {}
    for key in sorted(old["entries"].keys() & meanings.keys()):
        lock.setdefault("entries", {}).setdefault(key, {})[meanings[key]] = old["entries"][key]
    lock.setdefault("shared", {})[specs.shared_meaning()] = old["shared"]
    version_lock.LOCK.write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")
    return lock


if __name__ == "__main__":
    seeded = seed(sys.argv[1])
    print(f"{version_lock.LOCK}: {len(seeded['entries'])} entries and the shared metric code locked")
