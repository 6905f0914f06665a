"""UMAP's numba code is compiled once a machine, not once a process (`dr/jit_cache.py`), and the
machine code loaded from the cache computes bitwise what a fresh compile does."""

import json
import subprocess
import sys

import pytest

from lab_assets.dr import jit_cache
from lab_assets.dr.methods import METHODS

# A process fits UMAP through the method's entry, with numba's cache on ("cached", as the
# embedding step does) or off (a fresh compile), and says what it computed and where its umap
# functions came from.
FIT = """
import hashlib, json, sys
import numpy as np
from lab_assets.dr import jit_cache
from lab_assets.dr.methods import METHODS


def counts():
    functions = jit_cache.jitted("umap")
    return (
        sum(sum(f.stats.cache_hits.values()) for f in functions),
        sum(sum(f.stats.cache_misses.values()) for f in functions),
    )

estimator = METHODS["umap"](0, n_neighbors=10)
kept = jit_cache.keep_compiled_for(estimator) if sys.argv[1] == "cached" else 0
before = counts()  # a few tiny functions with a signature compile as umap is imported
Z = np.ascontiguousarray(estimator.fit_transform(np.random.default_rng(0).normal(size=(300, 5))))
after = counts()
print(json.dumps({
    "kept": kept,
    "digest": hashlib.sha256(Z.tobytes()).hexdigest(),
    "loaded": after[0] - before[0],
    "compiled": after[1] - before[1],
}))
"""


def fit(mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", FIT, mode], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_only_the_listed_libraries_get_a_disk_cache():
    assert jit_cache.keep_compiled_for(METHODS["pca"](0)) == 0
    assert "umap" in jit_cache.LIBRARIES


@pytest.mark.slow
def test_a_later_process_loads_umaps_machine_code_and_computes_what_a_fresh_compile_does():
    fresh = fit("fresh")  # no cache: numba compiles every function this process calls
    first = fit("cached")  # compiles what no earlier process cached, and writes it
    later = fit("cached")
    assert fresh["kept"] == 0 and first["kept"] > 100
    assert later["loaded"] > 0 and later["compiled"] == 0  # the fit compiled nothing
    assert fresh["digest"] == first["digest"] == later["digest"]
