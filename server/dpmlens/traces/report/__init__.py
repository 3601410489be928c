"""Printers: text, CSV, JSON and HTML of reports, what-ifs and runtime PM."""
