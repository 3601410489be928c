"""The trace outputs' duration formatter: `dpmlens.core.durations.format_us`, one for all of
dpmlens (a module outside this package, so that `dpmlens check` need not import it). The CLI's
tables, the language server's CodeLens and hover and (the same rules in TypeScript,
extension/src/protocol.ts formatDuration) the editor's tree view use it; all are tested
against one table, test-fixtures/durations.json.
"""

from dpmlens.core.durations import format_us, signed_us

__all__ = ["format_us", "signed_us"]
