"""`dpmlens capture`: the shell script that records a capture on the target, and the archive
it packs (read back by `dpmlens trace` and `dpmlens fleet ingest`)."""
