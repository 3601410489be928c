"""Device links in the editor (issue 9): `[traces] links` of `.dpmlens.toml` or the `traceLinks`
setting put suppliers on the critical paths of loaded traces, as `trace report --links` does;
a bad links file is one warning naming the file and the line, and the traces load without."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_harness import command
from lsprotocol import types
from pytest_lsp import LanguageClient
from traces_helpers import write_links_capture

from dpmlens.config.file import read_config, trace_links
from dpmlens.core.errors import ConfigError
from dpmlens.traces.model.links import links_for_editor, project_links

# The capture: traces_helpers.LINKS_CAPTURE (critical path p -> c; with the link s -> c,
# s -> c).


def _capture(directory: Path) -> Path:
    """Outside the workspace: traceGlobs would load it again on a settings change."""
    return write_links_capture(directory / "captures" / "links_ftrace.txt")


async def _on_path(client: LanguageClient, capture: Path) -> list[str]:
    """The devices on the resume phase's critical path, as the PM Latency view gets them."""
    status = await command(client, "dpmlens.loadTraces", {"paths": [str(capture)]})
    assert status["files"] == 1 and status["errors"] == []
    got = await command(client, "dpmlens.slowestCallbacks", {"limit": 10})
    (resume,) = [c for c in got["critical"] if c["phase"] == "resume"]
    return sorted(d["device"] for d in resume["devices"])


def _warnings(client: LanguageClient) -> list[str]:
    return [m.message for m in client.log_messages if m.type == types.MessageType.Warning]


async def test_toml_links_change_the_critical_path(client: LanguageClient, tmp_path: Path) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    capture = _capture(tmp_path / "out")
    assert await _on_path(client, capture) == ["dev-c", "dev-p"]
    (ws / "machine").mkdir()
    (ws / "machine" / "devlink.txt").write_text("# ls /sys/class/devlink\nx:dev-s--x:dev-c\n")
    (ws / ".dpmlens.toml").write_text('[traces]\nlinks = "machine/devlink.txt"\n')
    assert await _on_path(client, capture) == ["dev-c", "dev-s"]
    assert not [w for w in _warnings(client) if "devlink" in w]


async def test_setting_overrides_the_toml(client: LanguageClient, tmp_path: Path) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    capture = _capture(tmp_path / "out")
    (ws / ".dpmlens.toml").write_text('[traces]\nlinks = "missing.txt"\n')
    (ws / "devlink.txt").write_text("dev-s dev-c\n")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"dpmlens": {"traceLinks": "devlink.txt", "traceGlobs": []}}))
    assert await _on_path(client, capture) == ["dev-c", "dev-s"]
    assert not [w for w in _warnings(client) if "missing.txt" in w]  # the toml's is not read


async def test_bad_links_file_is_one_warning_and_no_links(client: LanguageClient,
                                                          tmp_path: Path) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    capture = _capture(tmp_path / "out")
    links = ws / "devlink.txt"
    links.write_text("x:dev-s--x:dev-c\nthree words here\n")
    (ws / ".dpmlens.toml").write_text('[traces]\nlinks = "devlink.txt"\n')
    assert await _on_path(client, capture) == ["dev-c", "dev-p"]  # loaded, without links
    (warning,) = [w for w in _warnings(client) if "devlink.txt" in w]
    assert f"{links}:2: not a device link: 'three words here'" in warning
    assert warning.endswith("traces loaded without device links")


def test_links_for_editor_all_or_nothing(tmp_path: Path) -> None:
    f = tmp_path / "devlink.txt"
    assert links_for_editor(str(f))[1] == (f"{f}: cannot read the device links file: No such "
                                           "file or directory; traces loaded without device links")
    f.write_text("a b\nc d e\n\nf g h\n")
    links, warning = links_for_editor(str(f))
    assert links is None and warning is not None
    assert warning.startswith(f"{f}:2: not a device link: 'c d e' (and 1 more line) (expected ")
    f.write_text("# nothing\n")
    assert "no device link in it" in str(links_for_editor(str(f))[1])
    f.write_text("platform:fe200000.gpio--platform:fe300000.mmc\n")
    links, warning = links_for_editor(str(f))
    assert warning is None and links is not None
    assert dict(links.suppliers) == {"fe300000.mmc": {"fe200000.gpio"}}


def test_toml_traces_table(tmp_path: Path) -> None:
    toml = tmp_path / ".dpmlens.toml"
    toml.write_text('helper_depth = 2\n[traces]\nlinks = "sub/devlink.txt"\n')
    assert read_config(toml).helper_depth == 2  # [traces] does not touch the check's Config
    assert trace_links(toml) == tmp_path / "sub" / "devlink.txt"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "devlink.txt").write_text("a b\n")
    links, warning = project_links([str(tmp_path / "sub")])  # the toml above the folder
    assert warning is None and links is not None and links.count == 1
    toml.write_text("[traces]\nlinks = 3\n")
    with pytest.raises(ConfigError, match=r"\.dpmlens\.toml:2: \[traces\] links must be"):
        read_config(toml)
    assert "traces loaded without device links" in str(project_links([str(tmp_path)])[1])
    toml.write_text('[traces]\nlink = "x"\n')
    with pytest.raises(ConfigError, match="unknown key 'link' in \\[traces\\]"):
        read_config(toml)
    toml.write_text("[rules]\n")
    assert trace_links(toml) is None and project_links([str(tmp_path)]) == (None, None)
