"""An analysis leaves nothing behind for the cyclic GC (the server runs it only when idle)."""

from __future__ import annotations

import gc
from pathlib import Path

from dpmlens.config.settings import Config
from dpmlens.engine.analyze import analyze_source
from dpmlens.model.walker import Walker
from dpmlens.rules.context import Context

FIXTURES = Path(__file__).resolve().parents[2] / "test-fixtures" / "rules"


def _alive(cls: type) -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, cls))


def test_no_context_or_walker_waits_for_the_cyclic_gc() -> None:
    files = [FIXTURES / "msleep-under-20ms.c", FIXTURES / "delay-beyond-spec-paths.c",
             FIXTURES / "runtime-pm-while-disabled-dominant.c"]  # fmt: skip
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        before = _alive(Context), _alive(Walker)
        for path in files:
            findings = analyze_source(str(path), path.read_bytes(), Config())
            assert findings  # the rules ran (and cached their analyses in the Context)
        assert (_alive(Context), _alive(Walker)) == before
    finally:
        if was:
            gc.enable()
