"""Rules that AGENTS.md used to state as traps, now checked on the package's source (an AST scan,
so a comment or a string that names the forbidden call does not count):

- built-in metrics are registered by a call after the function, not `@METRICS(...)`: mutmut does
  not mutate decorated functions (docs/mutation-testing.md);
- Parquet is read through `core/storage.py` (`parquet_table`/`parquet_frame`: pyarrow's
  `ParquetFile` in the calling thread), never `pandas.read_parquet`, whose Arrow pool thread still
  ending at exit aborted finished processes;
- a Dagster instance is opened through `runtime/instance.get_instance` (a file lock around the
  creation of a fresh SQLite instance), never `DagsterInstance.get()` elsewhere."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import lab_assets

PACKAGE = Path(lab_assets.__file__).resolve().parent
# The launcher's warm worker opens the instance the daemon already created, from its environment.
INSTANCE_OPENERS = {"runtime/instance.py", "runtime/launcher.py"}


def _decorated_by_metrics(tree: ast.Module) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        for d in node.decorator_list
        if isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "METRICS"
    ]


def _pandas_parquet_reads(tree: ast.Module) -> list[int]:
    pandas = {"pandas"} | {
        a.asname
        for n in ast.walk(tree)
        if isinstance(n, ast.Import)
        for a in n.names
        if a.name == "pandas" and a.asname
    }
    from_pandas = {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module == "pandas"
        for a in n.names
        if a.name == "read_parquet"
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (
                isinstance(node.func, ast.Attribute)
                and node.func.attr == "read_parquet"
                and ast.unparse(node.func.value) in pandas
            )
            or (isinstance(node.func, ast.Name) and node.func.id in from_pandas)
        )
    ]


def _instance_opened(tree: ast.Module) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("get", "from_config", "from_ref")
        and ast.unparse(node.func.value).endswith("DagsterInstance")
    ]


def _offenders(scan, files) -> list[str]:
    return [f"{path.relative_to(PACKAGE)}:{line}" for path in files for line in scan(ast.parse(path.read_text()))]


def test_built_in_metrics_are_registered_by_a_call_not_a_decorator():
    offenders = _offenders(_decorated_by_metrics, sorted((PACKAGE / "dr" / "metrics").glob("*.py")))
    assert not offenders, "register with `name = METRICS(...)(name)` after the function (mutmut):\n" + "\n".join(
        offenders
    )


def test_parquet_is_read_through_storage_only():
    offenders = _offenders(_pandas_parquet_reads, sorted(PACKAGE.rglob("*.py")))
    assert not offenders, "read Parquet with core/storage.parquet_table or parquet_frame:\n" + "\n".join(offenders)


def test_the_instance_is_opened_through_get_instance_only():
    files = [p for p in sorted(PACKAGE.rglob("*.py")) if str(p.relative_to(PACKAGE)) not in INSTANCE_OPENERS]
    offenders = _offenders(_instance_opened, files)
    assert not offenders, "open the instance with runtime/instance.get_instance (its creation lock):\n" + "\n".join(
        offenders
    )


@pytest.mark.parametrize(
    "scan, source",
    [
        (_decorated_by_metrics, "@METRICS('m', better=None)\ndef m(nb, *, k: int):\n    return 0.0\n"),
        (_pandas_parquet_reads, "import pandas as pd\npd.read_parquet('x.parquet')\n"),
        (_pandas_parquet_reads, "from pandas import read_parquet as rp\nrp('x.parquet')\n"),
        (_instance_opened, "import dagster as dg\ndg.DagsterInstance.get()\n"),
    ],
)
def test_each_scan_finds_what_it_forbids(scan, source):
    assert scan(ast.parse(source)), source


@pytest.mark.parametrize(
    "scan, source",
    [
        (_decorated_by_metrics, "def m(nb, *, k: int):\n    return 0.0\n\nm = METRICS('m', better=None)(m)\n"),
        (_pandas_parquet_reads, "from lab_assets.core import storage\nstorage.read_parquet('x')\n"),
        (_instance_opened, "from lab_assets.runtime.instance import get_instance\nget_instance()\n"),
    ],
)
def test_each_scan_leaves_the_allowed_form_alone(scan, source):
    assert not scan(ast.parse(source)), source
