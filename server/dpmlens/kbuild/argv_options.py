"""Option tables shared by `dpmlens cc`'s quick exit (quick.py) and its full parse (flags.py,
cc.py); kept in a module that imports nothing, so the quick exit stays cheap."""

# gcc options whose value may be the next argument: skipped together, so the value is never
# taken for the source file.
WITH_VALUE = frozenset({
    "-o", "-MF", "-MT", "-MQ", "-x", "-isystem", "-iquote", "-idirafter", "-iprefix",
    "-iwithprefix", "-iwithprefixbefore", "-isysroot", "--sysroot", "-Xpreprocessor",
    "-Xassembler", "-Xlinker", "-arch", "-aux-info", "-param", "--param", "-G", "-T", "-l",
    "-L", "-u", "-z", "-e", "-B", "-A", "-imultilib", "-specs",
})  # fmt: skip

# dpmlens's own options on a `dpmlens cc` line (`--opt VALUE` or `--opt=VALUE`) -> the
# attribute of kbuild.cc.Options they set; `--no-config` takes no value.
OWN_OPTIONS = {"--fail-level": "fail_level", "--rule": "rules", "--ignore": "ignore",
               "--config": "config"}  # fmt: skip
