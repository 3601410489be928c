"""The traces' YAML tables read with libyaml's loader when PyYAML has it (same data as
yaml.safe_load: its constructor and resolver are the same Python code; the scanner and parser
are C). The pure-Python parser took ~25 ms of each report for spaced-driver-names.yaml alone."""

from __future__ import annotations

from typing import IO, Any

import yaml

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str | IO[str]) -> Any:
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader
