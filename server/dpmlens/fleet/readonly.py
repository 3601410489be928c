"""`fleet sql` reads: one query, a SELECT (with WITH, VALUES, FROM-first, DESCRIBE, SHOW and
SUMMARIZE, which DuckDB parses as selects). COPY ... TO, CREATE, INSERT, ATTACH, EXPORT,
INSTALL, SET and the rest are refused before anything runs: the store's files are written only
by `fleet ingest` (immutable files, one set per ingest, under its lock), and a query must not
drop a Parquet file into a table's folder or write anywhere else."""

from __future__ import annotations

import duckdb

from dpmlens.core.errors import UsageError


def check(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Raise UsageError naming what is refused; parse errors are the caller's to report."""
    statements = con.extract_statements(query)
    if len(statements) != 1:
        raise UsageError(f"fleet sql runs one query, not {len(statements)} statements")
    kind = str(statements[0].type).rsplit(".", 1)[-1]
    if kind != "SELECT":
        raise UsageError(f"fleet sql only reads: {kind} statements are refused (the store is "
                         "written only by `fleet ingest`; take results out with --format csv "
                         "or json)")
