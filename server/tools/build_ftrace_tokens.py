#!/usr/bin/env python3
"""Build dpmlens/traces/read/_ftrace_tokens (the ftrace reader's event scan in C) in place.

Run by `make` with the project's venv. It is optional: without a C compiler or Python's
headers it says so and exits 0, and the reader uses its Python scan (same results, slower).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SERVER = Path(__file__).resolve().parents[1]
NAME = "dpmlens.traces.read._ftrace_tokens"
SOURCE = "dpmlens/traces/read/_ftrace_tokens.c"


def main() -> int:
    try:
        from setuptools import Distribution, Extension
    except ImportError:  # a venv without setuptools (Python >= 3.12 makes none)
        print(f"note: {SOURCE} not built (no setuptools); the ftrace reader uses its Python"
              " scan", file=sys.stderr)
        return 0

    os.chdir(SERVER)
    ext = Extension(NAME, [SOURCE], extra_compile_args=["-O2"])
    dist = Distribution({"name": "dpmlens-ftrace-tokens", "ext_modules": [ext]})
    cmd = dist.get_command_obj("build_ext")
    cmd.inplace = True
    cmd.build_temp = str(SERVER / "build" / "ftrace_tokens")
    try:
        dist.run_command("build_ext")
    except Exception as exc:  # no compiler, no Python.h: the Python scan is used
        print(f"note: {SOURCE} not built ({exc}); the ftrace reader uses its Python scan",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
