"""A second real client: headless Neovim (vim.lsp.start_client) drives `dpmlens serve`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_harness import FIXTURES, copy_workspace, line_of

NVIM = shutil.which("nvim")


@pytest.mark.skipif(NVIM is None, reason="nvim not installed (apt-get install neovim); "
                                         "the Neovim end-to-end test needs a real Neovim")
def test_neovim_headless_client(tmp_path: Path):
    ws = copy_workspace(tmp_path)
    out = tmp_path / "nvim-result.json"
    env = dict(os.environ)
    env.update({
        "DPMLENS_NVIM_CMD": "\t".join([sys.executable, "-m", "dpmlens.lsp"]),
        "DPMLENS_NVIM_FILE": str(ws / "foo_core.c"),
        "DPMLENS_NVIM_ROOT": str(ws),
        "DPMLENS_NVIM_OUT": str(out),
        "XDG_STATE_HOME": str(tmp_path / "state"),  # nvim's lsp.log goes here, not ~
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    })
    script = FIXTURES / "nvim" / "drive.lua"
    proc = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {script}"],
        env=env, cwd=ws, capture_output=True, timeout=120,
    )
    assert out.exists(), f"nvim wrote no result (rc={proc.returncode}): {proc.stderr[-2000:]!r}"
    result = json.loads(out.read_text())
    assert result.get("error") is None, result
    assert result["steps"] == ["open", "edit", "hover", "command"]
    assert result["open"]["line"] == line_of(FIXTURES / "ws" / "foo_core.c", "msleep(5);")
    assert result["open"]["character"] == 1
    assert result["open"]["source"] == "dpmlens"
    assert result["open"]["href"].startswith("https://docs.kernel.org/")
    assert "device IRQs suspended" in result["hover"]
    assert result["explain"] == "msleep-under-20ms"
