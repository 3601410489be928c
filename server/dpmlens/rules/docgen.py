"""Generate docs/rules.md from the rule files and tables.

cd server && python -m dpmlens.rules.docgen > ../docs/rules.md
"""

from __future__ import annotations

from dpmlens.rules import severity_policy
from dpmlens.rules.loader import Rule, load_rules, load_table

_WRITING = """## Writing a rule (no Python needed for the common shape)

Add `rules/<id>.yaml` and a fixture `test-fixtures/rules/<id>.c`; `make test` runs it.

```yaml
id: firmware-load-in-noirq        # kebab-case, equal to the file name
kernel_type: PM_FIRMWARE_IN_NOIRQ # UPPER_SNAKE, for checkpatch-style output and --ignore
severity: warning                 # error | warning | info | hint
title: "Firmware loaded in a noirq callback"   # one line, for rule lists and SARIF
message: "{callee}() in the {phase} callback {callback}(){via}: ..."
note: |
  Markdown: why it is wrong, what to do.
url: https://docs.kernel.org/...
match:
  kind: call-in-phase             # a call reachable (through same-file helpers) from a callback
  phases: [noirq]                 # dev_pm_ops members, or groups: prepare main late noirq early
                                  # complete runtime system up down runtime-disabled all
  calls: [request_firmware, "request_firmware_*"]   # names or fnmatch patterns
  allow: [request_firmware_nowait]  # optional: never reported
  skip_paths: ["*/remoteproc/*"]  # optional: files not checked (fnmatch on the path)
  skip_sources: ['firmware_cache']  # optional: files not checked (regex on the text)
  calls_when_file_calls:          # optional: more calls, only in files that also call these
    calls: [firmware_request_nowarn]
    file_calls: [devm_request_irq]
  unless: [pinned-active]         # optional: named conditions implemented in callmatch.py
  once_per_callback: true         # optional: only the first (dominant) call of each callback
  rollback:                       # optional: `by` calls after an `of` call in the same
    of: ["pm_runtime_get*"]       # callback undo or balance it and are never reported
    by: ["pm_runtime_put*"]
```

Every key is checked when the rules load: an unknown key, a missing one, or a value of the
wrong type (`report: busywait` where the checker knows `busy-wait`) is one error line naming
the file; so is a `{placeholder}` in `message` that the checker does not fill. Editors can
check rule files as you type with the published JSON schema `rules/schema.json` (generated
from the checkers' typed options: `python -m dpmlens.rules.schema`).

A safe mechanical fix can be declared too: `fix: {kind: rename-callee, title: ..., renames:
{old_name: new_name}}` (see runtime-pm-state-query-while-disabled.yaml).

Message placeholders for `call-in-phase`: `{callee}`, `{phase}`, `{callback}`, `{function}`
(the function holding the call), `{via}` (" via helper()" or empty). Mark the fixture's
expected lines with `/* expect: <id> */` (or `<id>(severity)`) and the allowed ones with
`/* ok: <id> */` on the line before. Rules needing more than this name a `checker:` written in
`server/dpmlens/rules/`.
"""


def _match_text(rule: Rule) -> str:
    m = rule.match
    if "checker" in m:
        extra = {k: v for k, v in m.items() if k != "checker"}
        more = f" ({', '.join(f'{k}: {v}' for k, v in extra.items())})" if extra else ""
        return f"checker `{m['checker']}`{more} (server/dpmlens/rules/)"
    lines = [f"generic `{m['kind']}`: phases {', '.join(f'`{p}`' for p in m['phases'])}"]
    lines.append(f"- calls: {', '.join(f'`{c}`' for c in m['calls'])}")
    if m.get("calls_when_file_calls"):
        extra = m["calls_when_file_calls"]
        lines.append(
            f"- also {', '.join(f'`{c}`' for c in extra['calls'])} in files that call "
            f"{', '.join(f'`{c}`' for c in extra['file_calls'])}"
        )
    if m.get("allow"):
        lines.append(f"- allowed: {', '.join(f'`{c}`' for c in m['allow'])}")
    if m.get("skip_paths") or m.get("skip_sources"):
        skipped = [f"`{p}`" for p in m.get("skip_paths", []) + m.get("skip_sources", [])]
        lines.append(f"- files skipped: {', '.join(skipped)}")
    if m.get("unless"):
        lines.append(f"- not reported when: {', '.join(m['unless'])}")
    if m.get("once_per_callback"):
        lines.append("- one finding per callback: its first matching call")
    if m.get("rollback"):
        rb = m["rollback"]
        lines.append(
            f"- never reported: {', '.join(f'`{c}`' for c in rb['by'])} after "
            f"{', '.join(f'`{c}`' for c in rb['of'])} in the same callback"
        )
    return "\n".join(lines)


def render() -> str:
    out = [
        "# dpmlens rules",
        "",
        "Generated from `rules/*.yaml` by `python -m dpmlens.rules.docgen` (a test checks it is",
        "current). Each rule: id, checkpatch-style type, default severity, what it matches, why.",
        "Fixtures with expected findings: `test-fixtures/rules/<id>*.c`. Precision on the real",
        "`drivers/` tree: [precision.md](precision.md).",
        "",
    ]
    rules = load_rules()
    out += _WRITING.splitlines()
    out += ["", "| rule | type | severity | fix |", "|---|---|---|---|"]
    for r in rules:
        fix = r.fix["title"] if r.fix else ""
        out.append(f"| [{r.id}](#{r.id}) | `{r.kernel_type}` | {r.severity} | {fix} |")
    for r in rules:
        out += [
            "",
            f"## {r.id}",
            "",
            f"**{r.title}**",
            "",
            f"`{r.kernel_type}`, default severity **{r.severity}**, see <{r.url}>",
            "",
            f"Match: {_match_text(r)}",
            "",
            f"Message: `{r.message}`",
            "",
            r.note,
        ]
        if r.fix:
            out += ["", f"Fix: {r.fix['title']}"]
    out += ["", *severity_policy.table_markdown()]
    spec = load_table("spec-delays")
    out += [
        "",
        "## Spec minimum delays (rules/tables/spec-delays.yaml)",
        "",
        "| quantity | minimum | source | kernel constants |",
        "|---|---|---|---|",
    ]
    for q in spec.get("quantities", []):
        consts = ", ".join(f"`{c}`" for c in (q.get("constants") or {}))
        out.append(
            f"| {q['id']}: {q.get('title', '')} | {q['min_ms']} ms | {q['source']} | {consts} |"
        )
    ops = load_table("subsystem-ops")
    out += [
        "",
        "## Subsystem ops structs whose members are PM callbacks (rules/tables/subsystem-ops.yaml)",
        "",
        "| struct | members (phase) | called from |",
        "|---|---|---|",
    ]
    for stype, spec in (ops.get("structs") or {}).items():
        members = ", ".join(
            f"`.{m}` ({'/'.join(ps)})" if [m] != ps else f"`.{m}`"
            for m, ps in (spec.get("members") or {}).items()
        )
        out.append(f"| `{stype}` | {members} | {spec.get('source', '')} |")
    buses = load_table("async-buses")
    out += [
        "",
        "## Buses that enable async suspend (rules/tables/async-buses.yaml)",
        "",
    ]
    for bus, where in (buses.get("async_buses") or {}).items():
        out.append(f"- `{bus}`: {where}")
    out.append("")
    out.append(f"Known synchronous: {', '.join(f'`{b}`' for b in buses.get('sync_buses', []))}")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(render(), end="")
