"""`dpmlens fleet report`: build the report document, print it in the asked format."""

from __future__ import annotations

import argparse
import json
import sys

from dpmlens.core import exit_codes
from dpmlens.fleet import report_html, report_model, report_text, stats, thresholds
from dpmlens.fleet.store import Store


def run(args: argparse.Namespace) -> int:
    settings, _src = thresholds.load(args.config)
    if getattr(args, "min_runs", None) is not None:
        if args.min_runs < 2:
            print("dpmlens: error: --min-runs must be at least 2 (a test needs two runs a "
                  "side)", file=sys.stderr)
            return exit_codes.USAGE
        settings["min_runs"] = args.min_runs
    store = Store(args.store)
    con = store.connect()
    derived = store.format() >= 2
    histograms = args.by == "kernel" and not args.exact
    if histograms and not derived:
        print(f"dpmlens: note: {args.store}: store format {store.format()} has no duration "
              "histograms; percentiles from the raw rows (slower); `dpmlens fleet migrate` "
              "(or the next ingest) adds them", file=sys.stderr)
        histograms = False
    try:
        doc = report_model.build(con, stats.Scope(args.by, args.since, args.driver), settings,
                                 str(args.store), args.baseline, histograms, derived)
    finally:
        con.close()
    if args.format == "json":
        text = json.dumps(doc, indent=1) + "\n"
    elif args.format == "html":
        text = report_html.write(doc)
    else:
        import io
        buf = io.StringIO()
        report_text.write(doc, buf)
        text = buf.getvalue()
    if args.output:
        from dpmlens.core.atomic import write_text_atomic
        try:
            write_text_atomic(args.output, text)
        except OSError as exc:
            print(f"dpmlens: error: {args.output}: cannot write: {exc.strerror or exc}",
                  file=sys.stderr)
            return exit_codes.USAGE
    else:
        sys.stdout.write(text)
    return exit_codes.OK
