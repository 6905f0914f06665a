"""`lab query "SQL"`: DuckDB over the lab's consolidated Parquet tables.

Views: `metric_table` (every materialized cell's metric row, with partition key and git SHA),
one `<sweep>` view per registered sweep's report table (one row per cell) and `<sweep>_summary`
(its summary over seeds, dr/summary.py). Tables are read through the storage
layer, so the same query works on local disk and on S3-compatible storage.

Read-only: only SELECT (and EXPLAIN) statements run, and once the views exist the connection is
locked down with DuckDB's own settings (see "Securing DuckDB" in its manual): no file system or
network access (`enable_external_access=false`: read_csv/read_parquet/read_text/glob, COPY,
ATTACH, INSTALL), no extension loading, no Python-variable scans, and `lock_configuration=true`
so no statement can undo any of it.
"""

import re

import duckdb
import pandas as pd

from lab_assets.core import storage
from lab_assets.dr import keystore

VIEW_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
READ_ONLY_STATEMENTS = {"SELECT", "EXPLAIN"}
LOCKDOWN = [
    "SET enable_external_access = false",
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET allow_community_extensions = false",
    "SET python_enable_replacements = false",
    "SET lock_configuration = true",  # last: nothing after it can change the settings above
]


class QueryRefused(ValueError):
    """A statement `lab query` does not run: it would write, attach, load or read outside the lab's tables."""


def tables() -> dict[str, str]:
    """View name -> Parquet path, for the tables that exist now."""
    found = {"metric_table": storage.asset_path("metric_table")}
    for name in keystore.keys("sweep"):
        if VIEW_NAME.match(name):  # a sweep named like a SQL identifier gets a view
            report = storage.current(storage.url("reports", name))  # one version's files
            found[name] = f"{report}/metrics.parquet"
            found[f"{name}_summary"] = f"{report}/summary.parquet"
    return {view: path for view, path in found.items() if storage.exists(path)}


def check(sql: str) -> list:
    """The statements of `sql`, or QueryRefused naming the first one that is not a query."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error:
        return []  # a syntax error: DuckDB's own message says where
    for statement in statements:
        kind = statement.type.name
        if kind not in READ_ONLY_STATEMENTS:
            hint = (
                "; save a result with --format csv or json instead"
                if kind in {"COPY", "CREATE", "INSERT", "EXPORT"}
                else ""
            )
            raise QueryRefused(
                f"{kind} statements are refused: `lab query` is read-only (SELECT over the lab's tables){hint}"
            )
    return statements


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory connection holding the lab's views, then locked down (see the module)."""
    con = duckdb.connect(":memory:")
    for view, path in tables().items():
        con.register(view, storage.read_parquet(path))
    for setting in LOCKDOWN:
        con.execute(setting)
    return con


def run(sql: str) -> pd.DataFrame:
    """The result of the last statement; QueryRefused for anything but a query, and
    duckdb.PermissionException for a query that reaches outside the lab's tables."""
    statements = check(sql)
    con = connect()
    try:
        for statement in statements[:-1]:
            con.execute(statement.query)
        return con.execute(statements[-1].query if statements else sql).df()
    except duckdb.PermissionException as e:
        raise QueryRefused(
            f"{str(e).splitlines()[0]}: `lab query` reads only the lab's own tables "
            f"({', '.join(tables()) or 'none yet'})"
        ) from None
    finally:
        con.close()
