"""Shared by the fleet tests: the CLI in a subprocess, and the synthetic fleet store (made
once per test session from a real capture in ../shared, with known injected changes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpmlens.fleet import synthetic

REPO = Path(__file__).resolve().parents[2]


def dpmlens(*args: str, timeout: float = 600, **kw) -> subprocess.CompletedProcess[str]:  # noqa: ANN003
    return subprocess.run([sys.executable, "-m", "dpmlens.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO / "server", **kw)


def template() -> Path:
    t = synthetic.shared_template()
    if t is None:
        pytest.skip("real captures not found (../shared/traces is absent): the synthetic "
                    "fleet is made from pm-graph-3.15/skynet_mem_ftrace.txt")
    return t


def synthetic_store(base: Path) -> Path:
    """1,800 cycles (3 kernels x 6 hosts x 100), ingested with `fleet ingest`; reused within
    a session."""
    store = base / "fleet-synth-store"
    if (store / "dpmlens-store.json").is_file():
        return store
    caps = base / "fleet-synth-captures"
    synthetic.generate(template(), synthetic.default_fleet(), caps)
    r = dpmlens("fleet", "ingest", "--store", str(store), "-j", "2", "-q", str(caps))
    assert r.returncode == 0, r.stderr
    return store


def env_without_store() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("DPMLENS_FLEET_STORE", None)
    return env
