"""`lab query SQL`: DuckDB over metric_table and each sweep's report table (dr/query.py)."""

from __future__ import annotations

import sys

from lab_assets.cli.exits import BAD_INPUT


def add_parser(sub) -> None:
    query = sub.add_parser("query", help="SQL (DuckDB) over metric_table and each sweep's report table")
    query.add_argument("sql")
    query.add_argument("--format", choices=["markdown", "csv", "json"], default="markdown")
    query.set_defaults(fn=run)


def run(args) -> int:
    import duckdb

    from lab_assets.dr.query import QueryRefused, tables
    from lab_assets.dr.query import run as run_query

    if not tables():
        print("lab query: no results yet; run `lab sweep run <file>` first", file=sys.stderr)
        return BAD_INPUT
    try:
        df = run_query(args.sql)
    except QueryRefused as e:
        print(f"lab query: refused: {e}", file=sys.stderr)
        return BAD_INPUT
    except duckdb.Error as e:
        print(f"lab query: {e}\nviews: {', '.join(tables())}", file=sys.stderr)
        return BAD_INPUT
    if args.format == "json":
        print(df.to_json(orient="records", indent=2))
    elif args.format == "csv":
        print(df.to_csv(index=False), end="")
    else:
        print(df.to_markdown(index=False))
    return 0
