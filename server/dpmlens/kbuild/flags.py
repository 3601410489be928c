"""The parts of a gcc command line dpmlens needs; every other flag is ignored.

kbuild runs `$(CHECK) $(CHECKFLAGS) $(c_flags) $<` (scripts/Makefile.build, cmd_checksrc): the
checker's own flags, then the compiler's, then the source file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dpmlens.kbuild.argv_options import WITH_VALUE

_WITH_VALUE = WITH_VALUE


@dataclass
class CompileFlags:
    """In order: `macros` holds ("D", "NAME=VALUE") / ("U", "NAME") as given on the line."""

    macros: list[tuple[str, str]] = field(default_factory=list)
    include_dirs: list[str] = field(default_factory=list)  # -I, in order
    includes: list[str] = field(default_factory=list)  # -include / -imacros files, in order
    sources: list[str] = field(default_factory=list)


def parse_flags(argv: list[str]) -> CompileFlags:
    out = CompileFlags()
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        value: str | None = None
        for opt, kind in (("-D", "D"), ("-U", "U"), ("-I", "I")):
            if arg.startswith(opt):
                value = arg[len(opt) :]
                if not value and i < len(argv):
                    value, i = argv[i], i + 1
                if kind == "I":
                    out.include_dirs.append(value)
                else:
                    out.macros.append((kind, value))
                break
        else:
            if arg in ("-include", "-imacros"):
                if i < len(argv):
                    out.includes.append(argv[i])
                    i += 1
            elif arg in _WITH_VALUE:
                i += 1
            elif arg == "-" or not arg.startswith("-"):
                out.sources.append(arg)
    return out
