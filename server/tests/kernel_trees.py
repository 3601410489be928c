"""Where tests find Debian's kernel source trees (apt-get install linux-source-6.x, extracted):
$DPMLENS_LINUX (default /work/linux) holds linux-source-6.1 and linux-source-6.12. Tests
that need a tree skip, naming it, when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

LINUX = Path(os.environ.get("DPMLENS_LINUX", "/work/linux"))
K612 = LINUX / "linux-source-6.12"
K61 = LINUX / "linux-source-6.1"
