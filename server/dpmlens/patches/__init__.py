"""Patches and series: `dpmlens check --patch FILE...` and `--commits A..B`.

`parse` splits format-patch files and mboxes into patches, `apply` applies one in memory,
`introduced` keeps what a patch adds, `series` runs a series against a tree, `report` prints
per-patch blocks in checkpatch's shape.
"""
