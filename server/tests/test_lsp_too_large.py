"""A document with PM code over DPMLENS_MAX_EDITOR_BYTES gets one "not analysed" diagnostic on
its first line, at once (issue 29: a 20 MB amalgamation of drivers got no diagnostics within a
minute); a document without PM code over the same size is analysed as before."""

from __future__ import annotations

import os
from pathlib import Path

from lsp_harness import SERVER_CMD, copy_workspace, initialize, open_file, wait_diagnostics
from lsprotocol import types
from pytest_lsp import make_test_lsp_client

_FILLER = "".join(
    f"static int filler_{i}(int a)\n{{\n\treturn a + {i};\n}}\n\n" for i in range(100)
)


async def test_a_document_with_pm_code_over_the_limit_says_so(tmp_path: Path) -> None:
    client = make_test_lsp_client()
    await client.start_io(*SERVER_CMD, env={**os.environ, "DPMLENS_MAX_EDITOR_BYTES": "2000"})
    ws = copy_workspace(tmp_path)
    await initialize(client, ws)
    try:
        big = ws / "big.c"
        big.write_text((ws / "foo_core.c").read_text() + _FILLER)
        plain = ws / "plain.c"
        plain.write_text(_FILLER)  # no PM code: nothing a rule could find
        assert big.stat().st_size > 2000 and plain.stat().st_size > 2000
        uri = open_file(client, big)
        diags = await wait_diagnostics(client, uri, lambda d: bool(d))
        assert len(diags) == 1
        d = diags[0]
        assert d.severity == types.DiagnosticSeverity.Information
        assert d.range.start.line == 0
        assert "not analysed in the editor" in d.message
        assert "DPMLENS_MAX_EDITOR_BYTES" in d.message and "dpmlens check" in d.message
        plain_uri = open_file(client, plain)
        plain_diags = await wait_diagnostics(client, plain_uri, lambda d: True)
        assert plain_diags == []
        await client.shutdown_session()
    finally:
        await client.stop()
