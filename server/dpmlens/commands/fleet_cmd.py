"""`dpmlens fleet ingest|sql|report`: suspend/resume captures of many machines in one store.

Exit codes: 0 done; 1 `ingest`: some captures were rejected (the rest stored); 2 usage, a
store that cannot be used (newer format, not a store), a query error, nothing readable.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from dpmlens.commands import help_handler
from dpmlens.core import exit_codes
from dpmlens.core.errors import UsageError

DEFAULT_STORE = "dpmlens-fleet"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("fleet", help="many captures in one Parquet store: ingest, "
                              "query, regressions across kernels")
    sub = p.add_subparsers(title="fleet commands", metavar="ACTION")
    p.set_defaults(handler=help_handler(p))

    ing = sub.add_parser("ingest", help="add captures to the store (re-adding one is a no-op)",
                         description="Read dmesg/ftrace/Perfetto captures, sleepgraph test "
                         "folders and -multi trees, .gz and .tar.gz archives; one row per "
                         "suspend/resume cycle.")
    ing.add_argument("paths", nargs="+", metavar="PATH")
    _store_arg(ing)
    ing.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE",
                     help="tag every capture of this ingest (host, machine, kernel, mode, "
                     "trigger, captured_at override the capture's own; others become tags)")
    ing.add_argument("--source", metavar="DIR", help="kernel tree: store callback -> source")
    ing.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                     help="parser processes (default: all cores)")
    ing.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    ing.set_defaults(handler=run_ingest)

    sql = sub.add_parser("sql", help="run a SQL query (DuckDB) over the store's tables")
    sql.add_argument("query")
    _store_arg(sql)
    sql.add_argument("--format", choices=("table", "json", "csv"), default="table")
    sql.set_defaults(handler=run_sql)

    rep = sub.add_parser("report", help="percentiles, failures, critical path, regressions")
    _store_arg(rep)
    rep.add_argument("--by", choices=("kernel", "host", "machine"), default="kernel")
    rep.add_argument("--since", metavar="DATE", help="only cycles captured on/after DATE "
                     "(YYYY-MM-DD)")
    rep.add_argument("--baseline", metavar="GROUP", help="compare against this group "
                     "(default: the previous group in order)")
    rep.add_argument("--driver", metavar="NAME", help="only this driver")
    rep.add_argument("--format", choices=("table", "json", "html"), default="table")
    rep.add_argument("-o", "--output", metavar="FILE", help="write the report here")
    rep.add_argument("--config", metavar="FILE", help=".dpmlens.toml with [fleet] thresholds")
    rep.add_argument("--min-runs", type=int, metavar="N", help="test a callback only with at "
                     "least N runs on both sides (default: [fleet] min_runs, else 5)")
    rep.add_argument("--exact", action="store_true", help="percentiles and tests from the raw "
                     "rows, not the duration histograms (slower; --by host|machine always are)")
    rep.set_defaults(handler=run_report)

    mig = sub.add_parser("migrate", help="bring an older store to this dpmlens' format")
    _store_arg(mig)
    mig.set_defaults(handler=run_migrate)


def _store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", metavar="DIR",
                   default=os.environ.get("DPMLENS_FLEET_STORE", DEFAULT_STORE),
                   help=f"the store folder (default $DPMLENS_FLEET_STORE or ./{DEFAULT_STORE})")


def _tags(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"--meta {item!r}: expected KEY=VALUE")
        out[k.strip()] = v.strip()
    return out


def run_ingest(args: argparse.Namespace) -> int:
    from dpmlens.fleet.ingest import ingest
    from dpmlens.fleet.store import Store

    tags = _tags(args.meta)
    progress = None if args.quiet else _progress()
    try:
        s = ingest(Store(args.store), args.paths, tags, jobs=args.jobs, source=args.source,
                   progress=progress)
    except OSError as exc:  # a full disk, a read-only store: nothing of this ingest landed
        where = exc.filename or args.store
        print(f"dpmlens: error: {where}: {exc.strerror or exc}; the store is unchanged",
              file=sys.stderr)
        return exit_codes.USAGE
    except _duck_error() as exc:
        print(f"dpmlens: error: {args.store}: writing failed ({_first_line(exc)}); "
              "the store is unchanged", file=sys.stderr)
        return exit_codes.USAGE
    for line in s.recovered:
        print(f"dpmlens: fleet: recovered {line}", file=sys.stderr)
    for path, why in s.rejects:
        print(f"dpmlens: rejected: {path}: {why}", file=sys.stderr)
    for note in s.notes:
        print(f"dpmlens: note: {note}", file=sys.stderr)
    print(f"ingest {s.ingest_id}: {s.captures} captures, {s.cycles} cycles, "
          f"{s.callbacks} callbacks stored; {s.already} already in the store; "
          f"{len(s.rejects)} rejected (table `rejects`)", file=sys.stderr)
    if s.rejects and not s.captures and not s.already:
        return exit_codes.USAGE
    return exit_codes.FINDINGS if s.rejects else exit_codes.OK


def _progress() -> Any:
    if not sys.stderr.isatty():
        return None
    n = [0]

    def show(_name: str) -> None:
        n[0] += 1
        if n[0] % 50 == 0:
            print(f"\r{n[0]} captures read", end="", file=sys.stderr)

    return show


def run_sql(args: argparse.Namespace) -> int:
    from dpmlens.fleet import readonly
    from dpmlens.fleet.store import Store
    from dpmlens.fleet.text_output import write_rows

    con = Store(args.store).connect()
    try:
        readonly.check(con, args.query)
        rel = con.execute(args.query)
        cols = [d[0] for d in rel.description or []]
        data = rel.fetchall()
    except _duck_error() as exc:
        raise UsageError(f"query failed: {_first_line(exc)}") from None
    finally:
        pass
    write_rows(cols, data, args.format, sys.stdout)
    con.close()
    return exit_codes.OK


def run_migrate(args: argparse.Namespace) -> int:
    from dpmlens.fleet.store import Store

    store = Store(args.store)
    try:
        done = store.migrate()
    except OSError as exc:
        print(f"dpmlens: error: {exc.filename or args.store}: {exc.strerror or exc}; the store "
              "is unchanged", file=sys.stderr)
        return exit_codes.USAGE
    print(f"dpmlens: fleet: {done or f'{args.store}: already at the current format'}",
          file=sys.stderr)
    return exit_codes.OK


def run_report(args: argparse.Namespace) -> int:
    from dpmlens.fleet.report_cli import run

    return run(args)


def _duck_error() -> type[Exception]:
    import duckdb

    return duckdb.Error


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
