"""`python -m dpmlens.lsp` = `dpmlens serve` (works without the console script)."""

import sys

from dpmlens.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
