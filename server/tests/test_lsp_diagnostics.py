"""End-to-end diagnostics, code actions and settings against the real server process."""

from __future__ import annotations

from pathlib import Path

from lsp_harness import (
    apply_edits,
    codes,
    line_of,
    open_file,
    wait_diagnostics,
)
from lsprotocol import types
from pytest_lsp import LanguageClient

from dpmlens.config.settings import Config
from dpmlens.engine.analyze import analyze_source


def by_code(diags: list[types.Diagnostic], code: str) -> types.Diagnostic:
    found = [d for d in diags if d.code == code]
    assert found, f"no {code} in {codes(diags)}"
    return found[0]


async def test_open_publishes_findings_with_chain(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "foo_core.c"
    uri = open_file(client, path)
    diags = await wait_diagnostics(client, uri, lambda d: "msleep-under-20ms" in codes(d))
    d = by_code(diags, "msleep-under-20ms")
    line = line_of(path, "msleep(5);")
    assert d.range == types.Range(start=types.Position(line=line, character=1),
                                  end=types.Position(line=line, character=10))
    assert d.source == "dpmlens"
    # msleep(5) once per system suspend: quiet (rules/tables/severity-policy.yaml): CI leaves it
    # out, the editor shows it as a hint with the cost stated
    assert d.severity == types.DiagnosticSeverity.Hint
    assert "paid once per system suspend" in d.message
    assert d.code_description is not None
    assert d.code_description.href.startswith("https://docs.kernel.org/")
    # relatedInformation: the callback, then the offending call.
    rel = d.related_information or []
    assert [r.location.uri for r in rel] == [uri, uri]
    assert rel[0].location.range.start.line == line_of(path, "static int foo_suspend(")
    assert "suspend callback" in rel[0].message
    assert rel[1].location.range.start.line == line


async def test_helper_in_other_file_of_directory_is_followed(client: LanguageClient):
    """foo_suspend_noirq() -> foo_arm_wake() in foo_wake.c -> enable_irq_wake()."""
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "foo_core.c"
    uri = open_file(client, path)
    diags = await wait_diagnostics(client, uri, lambda d: "wake-setup-in-noirq" in codes(d),
                                   what="wake-setup-in-noirq through foo_wake.c")
    d = by_code(diags, "wake-setup-in-noirq")
    assert "enable_irq_wake" in d.message
    # Reported on the call in the callback (this document) ...
    assert d.range.start.line == line_of(path, "foo_arm_wake(foo);")
    # ... with the chain reaching into the other file.
    rel = d.related_information or []
    wake_uri = (ws / "foo_wake.c").as_uri()
    in_other = [r for r in rel if r.location.uri == wake_uri]
    assert in_other, [r.location.uri for r in rel]
    assert in_other[-1].location.range.start.line == line_of(ws / "foo_wake.c",
                                                             "enable_irq_wake(")


async def test_edit_updates_diagnostics(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "foo_core.c"
    uri = open_file(client, path)
    await wait_diagnostics(client, uri, lambda d: "msleep-under-20ms" in codes(d))
    line = line_of(path, "msleep(5);")
    # Delete the msleep line with an incremental edit.
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=line, character=0),
                              end=types.Position(line=line + 1, character=0)),
            text="")],
    ))
    diags = await wait_diagnostics(client, uri, lambda d: "msleep-under-20ms" not in codes(d),
                                   what="msleep finding gone")
    assert "asymmetric-pm-callbacks" in codes(diags)
    # Put a short sleep back, two lines further down: the finding moves with it.
    at = line_of(path, "writel(1, foo->base);") - 1
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=at, character=0),
                              end=types.Position(line=at, character=0)),
            text="\tmsleep(2);\n")],
    ))
    diags = await wait_diagnostics(client, uri, lambda d: "msleep-under-20ms" in codes(d))
    d = by_code(diags, "msleep-under-20ms")
    assert d.range.start.line == at
    assert "resume" in d.message


async def _first_quick_fix(
    client: LanguageClient, uri: str, d: types.Diagnostic
) -> types.CodeAction:
    """Ask for code actions the way an editor does (the diagnostic sent back) and take the
    first."""
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=d.range,
        context=types.CodeActionContext(diagnostics=[d]),
    ))
    assert actions, f"no code action for {d.code}"
    return actions[0]


async def _fix_through_helper_file(
    client: LanguageClient, helpers: Path, core: Path, code: str, call: str
) -> tuple[types.Diagnostic, str]:
    """Announce both new files, open `core`, expect `code` on the line of `call` (the call
    into the helper) and return that diagnostic and the helper's text with its quick fix
    applied; the fix must edit only the helper's file."""
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=p.as_uri(), type=types.FileChangeType.Created)
        for p in (helpers, core)]))
    uri = open_file(client, core)
    diags = await wait_diagnostics(client, uri, lambda d: code in codes(d),
                                   what=f"{code} through {helpers.name}")
    d = by_code(diags, code)
    assert d.range.start.line == line_of(core, call)
    changes = (await _first_quick_fix(client, uri, d)).edit.changes
    assert list(changes) == [helpers.as_uri()], changes
    return d, apply_edits(helpers.read_text(), changes[helpers.as_uri()])


async def _fix_and_recheck(client: LanguageClient, path: Path, uri: str, code: str) -> str:
    diags = await wait_diagnostics(client, uri, lambda d: code in codes(d))
    d = by_code(diags, code)
    action = await _first_quick_fix(client, uri, d)
    assert action.kind == types.CodeActionKind.QuickFix
    assert action.diagnostics and action.diagnostics[0].code == code
    edits = action.edit.changes[uri]
    new_text = apply_edits(path.read_text(), edits)
    # Apply it the way an editor does (full text), and see the finding go.
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=new_text)],
    ))
    await wait_diagnostics(client, uri, lambda d: code not in codes(d), what=f"{code} fixed")
    # And the engine agrees on the fixed text, read the way the CLI reads it.
    findings = analyze_source(str(path), new_text.encode(), Config())
    assert code not in {f.rule for f in findings}
    return new_text


async def test_code_action_get_sync(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "bar_legacy.c"
    uri = open_file(client, path)
    text = await _fix_and_recheck(client, path, uri, "get-sync-without-put-on-error")
    assert "pm_runtime_resume_and_get(bar->dev)" in text
    assert "pm_runtime_get_sync(bar->dev)" not in text


async def test_code_action_deprecated_macro(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "bar_legacy.c"
    uri = open_file(client, path)
    diags = await wait_diagnostics(client, uri, lambda d: "deprecated-pm-ops-macro" in codes(d))
    assert list(by_code(diags, "deprecated-pm-ops-macro").tags) == [types.DiagnosticTag.Deprecated]
    text = await _fix_and_recheck(client, path, uri, "deprecated-pm-ops-macro")
    assert "DEFINE_SIMPLE_DEV_PM_OPS(bar_pm_ops, bar_suspend, bar_resume)" in text
    assert "pm_sleep_ptr(&bar_pm_ops)" in text


async def test_code_action_msleep(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "foo_core.c"
    uri = open_file(client, path)
    text = await _fix_and_recheck(client, path, uri, "msleep-under-20ms")
    assert "msleep(5)" not in text
    assert "fsleep(5000)" in text or "usleep_range(" in text


async def test_configuration_change_turns_rule_off(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    uri = open_file(client, ws / "foo_core.c")
    await wait_diagnostics(client, uri, lambda d: "msleep-under-20ms" in codes(d))
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"dpmlens": {"debounceMs": 0,
                              "rules": {"msleep-under-20ms": {"enabled": False},
                                        "asymmetric-pm-callbacks": {"severity": "error"}}}}))
    diags = await wait_diagnostics(client, uri, lambda d: "msleep-under-20ms" not in codes(d))
    assert by_code(diags, "asymmetric-pm-callbacks").severity == types.DiagnosticSeverity.Error
    # A bad value is reported in one line and the rest still applies.
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"dpmlens": {"debounceMs": "soon", "enable": False}}))
    await wait_diagnostics(client, uri, lambda d: not d, what="diagnostics cleared")
    assert any("debounceMs" in m.message for m in client.log_messages)


async def test_code_action_for_a_finding_in_a_helper_file(client: LanguageClient):
    """pm_runtime_suspended() in a helper of another file, reached from a noirq callback: the
    diagnostic sits on the call into the helper here, and its quick fix (matched by that
    range) edits the helper's file."""
    ws: Path = client.ws  # type: ignore[attr-defined]
    helpers = ws / "baz_helpers.c"
    helpers.write_text(
        '#include <linux/pm_runtime.h>\n#include "foo.h"\n\n'
        "bool baz_idle(struct device *dev)\n{\n\treturn pm_runtime_suspended(dev);\n}\n"
    )
    core = ws / "baz_core.c"
    core.write_text(
        '#include <linux/platform_device.h>\n#include <linux/pm.h>\n#include "foo.h"\n\n'
        "bool baz_idle(struct device *dev);\n\n"
        "static int baz_suspend_noirq(struct device *dev)\n{\n"
        "\tif (baz_idle(dev))\n\t\treturn 0;\n\treturn 0;\n}\n\n"
        "static int baz_resume_noirq(struct device *dev)\n{\n\treturn 0;\n}\n\n"
        "static DEFINE_NOIRQ_DEV_PM_OPS(baz_pm_ops, baz_suspend_noirq, baz_resume_noirq);\n\n"
        "static struct platform_driver baz_driver = {\n"
        '\t.driver = { .name = "baz", .pm = pm_sleep_ptr(&baz_pm_ops) },\n};\n'
        "module_platform_driver(baz_driver);\n"
    )
    _d, fixed = await _fix_through_helper_file(
        client, helpers, core, "runtime-pm-state-query-while-disabled", "if (baz_idle(dev))")
    assert "return pm_runtime_status_suspended(dev);" in fixed


async def test_msleep_in_a_helper_file_is_reported_with_its_quick_fix(client: LanguageClient):
    """msleep(3) in a helper of another file, reached from a resume callback: the delay is
    evaluated there (its #define), shown on the call into the helper here, and the quick fix
    edits the helper's file."""
    ws: Path = client.ws  # type: ignore[attr-defined]
    helpers = ws / "qux_helpers.c"
    helpers.write_text(
        '#include <linux/delay.h>\n\n#define QUX_SETTLE_MS 3\n\n'
        "void qux_settle(struct device *dev)\n{\n\tmsleep(QUX_SETTLE_MS);\n}\n"
    )
    core = ws / "qux_core.c"
    core.write_text(
        '#include <linux/platform_device.h>\n#include <linux/pm.h>\n\n'
        "void qux_settle(struct device *dev);\n\n"
        "static int qux_resume(struct device *dev)\n{\n\tqux_settle(dev);\n\treturn 0;\n}\n\n"
        "static int qux_suspend(struct device *dev)\n{\n\treturn 0;\n}\n\n"
        "static DEFINE_SIMPLE_DEV_PM_OPS(qux_pm_ops, qux_suspend, qux_resume);\n\n"
        "static struct platform_driver qux_driver = {\n"
        '\t.driver = { .name = "qux", .pm = pm_sleep_ptr(&qux_pm_ops) },\n};\n'
        "module_platform_driver(qux_driver);\n"
    )
    d, fixed = await _fix_through_helper_file(
        client, helpers, core, "msleep-under-20ms", "\tqux_settle(dev);")
    assert "msleep(QUX_SETTLE_MS) = 3 ms" in d.message
    assert (
        "\tusleep_range(QUX_SETTLE_MS * USEC_PER_MSEC, (QUX_SETTLE_MS + 1) * USEC_PER_MSEC);\n"
        in fixed
    )
