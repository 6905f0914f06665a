"""A process that has loaded Dagster, pandas, scikit-learn and their kind ends slowly: the
interpreter's final garbage collections walk every object those libraries built (0.3-0.6 s for
`lab`; 5-7 s for two sweep workers shutting down on a loaded 2-core machine: BENCHMARKS.md,
issue #15). Frozen objects are skipped by those collections; the memory goes back to the
operating system with the process either way."""

import atexit
import gc
import sys

# nanobind extensions print every instance of theirs still alive at shutdown as a leak
# ("nanobind: leaked 27 instances!" after `lab query`): where one is loaded, collect as usual.
NANOBIND_MODULES = ("duckdb",)


def _freeze() -> None:
    if not any(m in sys.modules for m in NANOBIND_MODULES):
        gc.freeze()


def skip_final_collections() -> None:
    """At exit (after the program's own exit handlers registered before this one), freeze every
    object instead of collecting them. Only for processes that end after this: a frozen object
    is never collected."""
    atexit.register(_freeze)
