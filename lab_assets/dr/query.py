"""`lab query "SQL"`: DuckDB over the lab's consolidated Parquet tables.

Views: `metric_table` (every materialized cell's metric row, with partition key and git SHA),
one `<sweep>` view per registered sweep's report table (one row per cell) and `<sweep>_summary`
(its summary over seeds, dr/summary.py). Tables are read through the storage
layer, so the same query works on local disk and on S3-compatible storage.
"""

import re

import duckdb
import pandas as pd

from lab_assets.dr import keystore
from lab_assets.core import storage

VIEW_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def tables() -> dict[str, str]:
    """View name -> Parquet path, for the tables that exist now."""
    found = {"metric_table": storage.asset_path("metric_table")}
    for name in keystore.keys("sweep"):
        if VIEW_NAME.match(name):  # a sweep named like a SQL identifier gets a view
            found[name] = storage.url("reports", name, "metrics.parquet")
            found[f"{name}_summary"] = storage.url("reports", name, "summary.parquet")
    return {view: path for view, path in found.items() if storage.exists(path)}


def run(sql: str) -> pd.DataFrame:
    con = duckdb.connect()
    for view, path in tables().items():
        con.register(view, storage.read_parquet(path))
    return con.execute(sql).df()
