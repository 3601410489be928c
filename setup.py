"""`pip install .` at the repository top: dpmlens with its data, for tools that install a
repository as a package (pre-commit's `language: python` hooks, the GitHub Action).

The package itself is defined in server/pyproject.toml (development: `make .venv/.installed`
installs server/ in editable mode); this reads its metadata and adds rules/ and grammars/ as
dpmlens/data/, where dpmlens.core.paths looks in an installed copy (as the .vsix wheel does).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from setuptools import find_packages, setup

TOP = Path(__file__).resolve().parent
TEXT = (TOP / "server" / "pyproject.toml").read_text(encoding="utf-8")

if sys.version_info >= (3, 11):
    import tomllib

    PROJECT = tomllib.loads(TEXT)["project"]
else:  # the build environment may lack tomli: the few fields needed, read plainly
    def _field(name: str) -> str:
        return re.search(rf'^{name}\s*=\s*"([^"]*)"', TEXT, re.M).group(1)  # type: ignore[union-attr]

    block = re.search(r"^dependencies = \[(.*?)^\]", TEXT, re.M | re.S).group(1)  # type: ignore[union-attr]
    PROJECT = {
        "name": _field("name"), "version": _field("version"),
        "description": _field("description"), "requires-python": _field("requires-python"),
        "dependencies": re.findall(r'"([^"]+)"', block),
        "scripts": {"dpmlens": "dpmlens.cli:main"},
        "optional-dependencies": {
            name: re.findall(r'^\s*"([^"]+)"', body, re.M)
            for name, body in re.findall(r"^(\w+) = \[(.*?)^\]",
                                         TEXT.split("[project.optional-dependencies]")[1].split("\n[")[0],
                                         re.M | re.S)
        },
    }  # fmt: skip
# `pip install .[server,traces]`: the language server and the Perfetto importer (the hook and the
# Action's check need neither); dev tools are for server/ only.
EXTRAS = {k: v for k, v in PROJECT.get("optional-dependencies", {}).items() if k != "dev"}

setup(
    name=PROJECT["name"],
    version=PROJECT["version"],
    description=PROJECT["description"],
    python_requires=PROJECT["requires-python"],
    install_requires=PROJECT["dependencies"],
    extras_require=EXTRAS,
    entry_points={"console_scripts": [f"{k} = {v}" for k, v in PROJECT["scripts"].items()]},
    packages=[*find_packages("server", include=["dpmlens*"]), "dpmlens.data.rules",
              "dpmlens.data.grammars"],  # fmt: skip
    package_dir={"": "server", "dpmlens.data.rules": "rules", "dpmlens.data.grammars": "grammars"},
    package_data={
        "dpmlens": ["traces/*.yaml"],
        "dpmlens.data.rules": ["*.yaml", "*.json", "tables/*.yaml"],
        "dpmlens.data.grammars": ["*.scm", "*.md"],
    },
    license="GPL-2.0-only",
)
