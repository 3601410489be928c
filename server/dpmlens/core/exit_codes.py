"""The exit codes of every `dpmlens` command (README.md, "Exit codes"): one place."""

OK = 0  # nothing at or above --fail-level; a command that did its job
FINDINGS = 1  # findings at or above --fail-level
USAGE = 2  # usage, configuration or rule-file errors (argparse exits 2 too)
INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as shells report it
