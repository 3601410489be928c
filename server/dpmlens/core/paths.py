"""Where the data directories (`rules/`, `grammars/`) live.

In a checkout they are at the repository top; a packaged server (the .vsix) carries copies
under `dpmlens/data/`. `DPMLENS_DATA_DIR` overrides both.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # dpmlens/ (this file is dpmlens/core/paths.py)


def data_dir() -> Path:
    override = os.environ.get("DPMLENS_DATA_DIR")
    if override:
        return Path(override)
    bundled = _PACKAGE / "data"
    if (bundled / "rules").is_dir():
        return bundled
    return _PACKAGE.parent.parent  # repository top: server/dpmlens -> server -> top


def rules_dir() -> Path:
    return data_dir() / "rules"


def grammars_dir() -> Path:
    return data_dir() / "grammars"
