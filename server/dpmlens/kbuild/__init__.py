"""`dpmlens cc`: the checker `make C=1 CHECK=...` calls for every file it compiles.

`flags` reads the compiler command line kbuild passes, `kconfig` gathers the configuration it
implies (-D/-U, the -include'd kconfig.h -> generated/autoconf.h), `select` keeps only the
preprocessor branches that configuration compiles (same bytes, same lines, same columns).
"""
