"""`[fleet]` of `.dpmlens.toml`: health thresholds and what counts as a regression.

[fleet]
store = "/data/dpmlens-fleet"   # the store the editor and `fleet report` use by default
suspend_max_ms = 1000           # a cycle whose suspend takes longer is over the limit
resume_max_ms = 1000            # (ChromeOS's limit is 1 s; pm-graph's bands are 1 s, 2 s)
fail_rate_max = 0.01            # a group failing more cycles than this is "bad"
over_max = 0.05                 # ... or with more cycles than this over a limit
alpha = 0.05                    # false-discovery rate of the regression tests
min_effect_ms = 1.0             # smaller changes of a median are not regressions
min_runs = 5                    # fewer runs of a callback on a side: not tested (listed)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from dpmlens.config.file import CONFIG_NAME, find_config
from dpmlens.core.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULTS: dict[str, float] = {  # min_runs is an int
    "suspend_max_ms": 1000.0, "resume_max_ms": 1000.0, "fail_rate_max": 0.01,
    "over_max": 0.05, "alpha": 0.05, "min_effect_ms": 1.0, "min_runs": 5,
}
KEYS = set(DEFAULTS) | {"store"}


def load(path: str | None, start: str = ".") -> tuple[dict[str, Any], Path | None]:
    """The [fleet] settings (defaults filled in) and the file they came from."""
    found = Path(path) if path else find_config(start)
    out: dict[str, Any] = dict(DEFAULTS)
    if found is None:
        return out, None
    try:
        data = tomllib.loads(found.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{found}: cannot read {CONFIG_NAME}: {exc}") from None
    table = data.get("fleet", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{found}: [fleet] must be a table")
    for k, v in table.items():
        if k not in KEYS:
            raise ConfigError(f"{found}: unknown key {k!r} in [fleet] "
                              f"(expected one of: {', '.join(sorted(KEYS))})")
        if k == "store":
            if not isinstance(v, str) or not v:
                raise ConfigError(f"{found}: [fleet] store must be a folder path")
            out[k] = str((found.parent / v).resolve()) if not Path(v).is_absolute() else v
        elif k == "min_runs":
            if isinstance(v, bool) or not isinstance(v, int) or v < 2:
                raise ConfigError(f"{found}: [fleet] min_runs must be a whole number >= 2, "
                                  f"not {v!r}")
            out[k] = v
        elif isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ConfigError(f"{found}: [fleet] {k} must be a number >= 0, not {v!r}")
        else:
            out[k] = float(v)
    return out, found
