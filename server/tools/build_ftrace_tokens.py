#!/usr/bin/env python3
"""Build the traces' C modules in place: dpmlens/traces/read/_ftrace_tokens (the ftrace
reader's event scan and pairing), dpmlens/traces/model/_timeline_runs (the timeline's intervals
by cycle and phase), dpmlens/traces/analysis/_critical_walk (the critical-path walk of a
phase run) and dpmlens/traces/report/_json_text (the report's JSON text).

Run by `make` with the project's venv. They are optional: without a C compiler or Python's
headers it says so and exits 0, and the traces use their Python code (same results, slower).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SERVER = Path(__file__).resolve().parents[1]
# (module, source, what runs in Python without it)
MODULES = (
    ("dpmlens.traces.read._ftrace_tokens", "dpmlens/traces/read/_ftrace_tokens.c",
     "the ftrace reader uses its Python scan"),
    ("dpmlens.traces.model._timeline_runs", "dpmlens/traces/model/_timeline_runs.c",
     "the timeline's intervals are grouped in Python"),
    ("dpmlens.traces.analysis._critical_walk", "dpmlens/traces/analysis/_critical_walk.c",
     "the critical paths are walked in Python"),
    ("dpmlens.traces.report._json_text", "dpmlens/traces/report/_json_text.c",
     "the report's JSON is written in Python"),
)


def main() -> int:
    try:
        from setuptools import Distribution, Extension
    except ImportError:  # a venv without setuptools (Python >= 3.12 makes none)
        for _, source, fallback in MODULES:
            print(f"note: {source} not built (no setuptools); {fallback}", file=sys.stderr)
        return 0

    os.chdir(SERVER)
    for name, source, fallback in MODULES:  # one at a time: one failing leaves the other
        # -ffp-contract=off: the same float arithmetic as Python's (no fused multiply-add)
        ext = Extension(name, [source], extra_compile_args=["-O2", "-ffp-contract=off"])
        dist = Distribution({"name": "dpmlens-" + name.rsplit(".", 1)[1].strip("_"),
                             "ext_modules": [ext]})
        cmd = dist.get_command_obj("build_ext")
        cmd.inplace = True
        cmd.build_temp = str(SERVER / "build" / "traces_c")
        try:
            dist.run_command("build_ext")
        except Exception as exc:  # no compiler, no Python.h: the Python code is used
            print(f"note: {source} not built ({exc}); {fallback}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
