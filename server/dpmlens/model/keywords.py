"""The words without which the model finds no PM callback in a file (for the prefilter).

`callback_filter()`: a `dev_pm_ops` table or one of its macros, a subsystem ops struct of
`rules/tables/subsystem-ops.yaml`, or a legacy bus callback (`.suspend`/`.resume`) in a driver
struct declaration. Checkers that look at callbacks ask for these (`Keywords(callbacks=True)`);
the trace mapping and the workspace index use them to skip files with no PM content.
"""

from __future__ import annotations

from functools import lru_cache

from dpmlens.model.buses import DRIVER_STRUCTS
from dpmlens.model.ops_structs import subsystem_ops
from dpmlens.syntax.prefilter import WordFilter

TABLE_WORDS: tuple[bytes, ...] = (b"PM_OPS", b"dev_pm_ops")
LEGACY_WORDS: tuple[bytes, ...] = (b".suspend", b".resume")
# `struct platform_driver foo = {`: a driver struct that could carry legacy callbacks
DRIVER_DECL: bytes = (
    rb"struct\s+(?:" + b"|".join(k.encode() for k in DRIVER_STRUCTS) + rb")\s+[^;(){}]*=\s*\{"
)


@lru_cache(maxsize=1)
def callback_filter() -> WordFilter:
    ops = tuple(name.encode() for name in subsystem_ops())
    return WordFilter(words=TABLE_WORDS + ops, legacy=LEGACY_WORDS, legacy_decl=DRIVER_DECL)


@lru_cache(maxsize=1)
def index_filter() -> WordFilter:
    """For the editor's workspace index: callbacks, and helpers other files' rules may reach
    (any runtime-PM call)."""
    return callback_filter().union(WordFilter(words=(b"pm_runtime_",)))
