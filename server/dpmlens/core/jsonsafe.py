"""JSON that every parser accepts: non-finite floats (a NaN that stands for "no timestamp",
an infinity from an absurd number in a log) become null. Python's `json` would print them as
`NaN`/`Infinity`, which is not JSON: Node's `JSON.parse`, and so the VS Code client, rejects
the whole document."""

from __future__ import annotations

import json
import math
from typing import Any


def finite(obj: Any) -> Any:
    """`obj` with every non-finite float (in dicts, lists, tuples) replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def dumps(obj: Any, **kwargs: Any) -> str:
    """json.dumps of `finite(obj)`; never prints NaN or Infinity (allow_nan=False)."""
    return json.dumps(finite(obj), allow_nan=False, **kwargs)
