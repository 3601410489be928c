"""Shared pieces of the language-server tests: start the real server, open files, wait."""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "test-fixtures" / "lsp"
SERVER_CMD = [sys.executable, "-m", "dpmlens.lsp"]
CONFIG = ClientServerConfig(server_command=SERVER_CMD)


def codes(diags: list[types.Diagnostic]) -> set[str]:
    return {str(d.code) for d in diags}


def copy_workspace(tmp_path: Path, name: str = "ws") -> Path:
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst)
    return dst


async def initialize(
    client: LanguageClient, root: Path, options: dict[str, Any] | None = None,
    spec: str = "visual-studio-code",
) -> types.InitializeResult:
    client.registrations = []  # type: ignore[attr-defined]
    client.lens_refreshes = 0  # type: ignore[attr-defined]
    if types.CLIENT_REGISTER_CAPABILITY not in client.protocol.fm.features:

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register_capability(ls: LanguageClient, params: types.RegistrationParams) -> None:
            ls.registrations.extend(params.registrations)  # type: ignore[attr-defined]

        @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def code_lens_refresh(ls: LanguageClient, params: None) -> None:
            ls.lens_refreshes += 1  # type: ignore[attr-defined]

    caps = client_capabilities(spec)
    params = types.InitializeParams(
        capabilities=caps,
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        initialization_options={"debounceMs": 0, "traceGlobs": [], **(options or {})},
    )
    return await client.initialize_session(params)


async def command(client: LanguageClient, name: str, *args: object) -> Any:
    """workspace/executeCommand `name` with `args`; an error response raises."""
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(args)))


def open_file(client: LanguageClient, path: Path, text: str | None = None) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="c", version=1,
                text=path.read_text() if text is None else text,
            )
        )
    )
    return uri


async def wait_for(cond: Callable[[], Any], timeout: float = 15.0, what: str = "") -> Any:
    """Poll `cond` until it is truthy (diagnostics arrive as notifications, asynchronously)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        value = cond()
        if value:
            return value
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what or cond}")
        await asyncio.sleep(0.02)


async def wait_diagnostics(
    client: LanguageClient, uri: str, check: Callable[[list[types.Diagnostic]], bool],
    what: str = "diagnostics", timeout: float = 15.0,
) -> list[types.Diagnostic]:
    def ready() -> tuple[list[types.Diagnostic]] | None:
        diags = client.diagnostics.get(uri)
        return (list(diags),) if diags is not None and check(list(diags)) else None

    return (await wait_for(ready, timeout, what))[0]


def line_of(path: Path, needle: str) -> int:
    """0-based line of the first occurrence of `needle` in the file."""
    for i, line in enumerate(path.read_text().splitlines()):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP TextEdits (UTF-16 columns; fixtures are ASCII) to `text`, last first."""
    lines = text.split("\n")
    starts = [0]
    for ln in lines[:-1]:
        starts.append(starts[-1] + len(ln) + 1)

    def off(p: types.Position) -> int:
        return starts[p.line] + p.character

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                    reverse=True):
        text = text[: off(e.range.start)] + e.new_text + text[off(e.range.end) :]
    return text
