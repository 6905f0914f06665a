"""numba's on-disk cache for an installed library's jitted functions that do not ask for it.

umap-learn compiles ~110 numba functions in every new process: ~9 s of the first fit at 1,500
points (2.6 s a fit after), paid again by each sweep worker, each command run without the warm
service, each CI job. `keep_compiled_for(estimator)` turns numba's cache on for them (what
`@njit(cache=True)` does) before the fit, so that the first process on a machine compiles and
every later one loads the machine code. The cache is numba's own: `__pycache__` beside the
library's sources (its per-user folder where those are read-only), keyed by the source file's
stamp, numba's version and the CPU; loaded code computes bitwise what a fresh compile does
(test_jit_cache.py).

Installed libraries only, named in `LIBRARIES`: numba keys a function's cache by its own file, not
by the files of the jitted functions it calls, so code being edited (a lab's plugin) could load
machine code of a callee since changed. An installed library's files are all rewritten together
when it is upgraded.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

# The top-level packages of methods' libraries that jit without `cache=True`.
LIBRARIES = frozenset({"umap"})


def keep_compiled_for(estimator: Any) -> int:
    """`keep_compiled` for the library of a method's estimator, if it is one of `LIBRARIES`."""
    package = type(estimator).__module__.partition(".")[0]
    return keep_compiled(package) if package in LIBRARIES else 0


def jitted(package: str) -> list:
    """The numba functions (dispatchers) of `package`'s loaded modules, each once."""
    from numba.core.dispatcher import Dispatcher

    return list(
        {
            id(value): value
            for name, module in list(sys.modules.items())
            if name == package or name.startswith(f"{package}.")
            for value in list(vars(module).values())
            if isinstance(value, Dispatcher)
        }.values()
    )


@cache
def keep_compiled(package: str) -> int:
    """Turn numba's disk cache on for the jitted functions in `package`'s loaded modules (after
    importing it, before its first call; once a process). Returns how many; 0 where numba finds no
    folder to write its cache to (nothing changes then)."""
    functions = jitted(package)
    for function in functions:
        try:
            function.enable_caching()
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return 0
    return len(functions)
