"""Mutation testing keeps reaching the formulas (docs/mutation-testing.md): mutmut 3 never mutates
a decorated function, so a metric registered with `@METRICS(...)` would silently leave its reach.
Every built-in metric is a plain function in a module `[tool.mutmut]` mutates, registered by a
call after it; the modules whose silent errors change a result table's numbers or verdicts are
in the set, and the tests that check them in its test selection."""

import ast
import inspect
import tomllib
from fnmatch import fnmatch
from pathlib import Path

from lab_assets.dr.metrics import METRICS
from lab_assets_tests.conftest import REPO

MUTMUT = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mutmut"]


def mutated(path: str) -> bool:
    return any(fnmatch(path, g) for g in MUTMUT["only_mutate"]) and not any(
        fnmatch(path, g) for g in MUTMUT.get("do_not_mutate", [])
    )


def test_every_built_in_metric_is_an_undecorated_function_mutmut_mutates():
    built_in = [METRICS[n] for n in METRICS.names() if METRICS[n].fn.__module__.startswith("lab_assets.")]
    assert len(built_in) >= 9  # the nine of test_summary.py's directions, at least
    for entry in built_in:
        fn = inspect.unwrap(entry.fn)
        path = Path(inspect.getsourcefile(fn)).resolve().relative_to(REPO).as_posix()
        assert mutated(path), f"{path} (metric {entry.name}) is not in [tool.mutmut] only_mutate"
        [node] = [
            n
            for n in ast.walk(ast.parse((REPO / path).read_text()))
            if isinstance(n, ast.FunctionDef) and n.name == fn.__name__
        ]
        assert not node.decorator_list, (
            f"{path}:{node.lineno}: {fn.__name__} is decorated; mutmut 3 never mutates a decorated function: "
            f'register it by a call after it, `{fn.__name__} = METRICS("{entry.name}", ...)({fn.__name__})`'
        )


def test_the_result_tables_formulas_and_their_tests_are_in_the_mutation_set():
    for module in ("lab_assets/dr/summary.py", "lab_assets/dr/compare.py", "lab_assets/core/keys.py"):
        assert mutated(module), module
    for tests in ("test_summary.py", "test_lab_compare.py", "test_knn_metrics.py", "test_structure_metrics.py"):
        assert f"lab_assets_tests/{tests}" in MUTMUT["pytest_add_cli_args_test_selection"], tests
