"""Fleets: many suspend/resume captures in one Parquet store, queried with DuckDB.

One-way stages (docs/fleet.md):
  captures  read:   paths -> captures (sleepgraph tests, files, archives), ids, header metadata
  rows      model:  a parsed capture -> rows per table (schema.TABLES)
  store     store:  rows -> immutable Parquet (staged, then committed); views for queries
  ingest            the three above, parsers in worker processes
  stats / regress   query: percentiles, failures, critical path; regressions between groups
  report_*          report: table, JSON (versioned), HTML
trace_adapter is the one module that imports trace-package internals.
"""
