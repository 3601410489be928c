"""The one finding model every printer, the CLI and the language server consume."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class Severity(IntEnum):
    """Ordered so that `a >= b` means "a is at least as serious as b"."""

    HINT = 1
    INFO = 2
    WARNING = 3
    ERROR = 4

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(
                f"unknown severity {text!r} (expected one of: error, warning, info, hint)"
            ) from None

    def __str__(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Span:
    """A source range; lines and columns are 1-based, end exclusive (like SARIF)."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class ChainStep:
    """One hop of the call chain from a PM callback to the offending call."""

    function: str
    path: str
    span: Span
    note: str = ""  # e.g. "suspend_noirq callback", "calls foo_set_wake()"


@dataclass(frozen=True)
class TextEdit:
    """Replace the text in `span` (1-based, end exclusive) of `path` with `new_text`."""

    path: str
    span: Span
    new_text: str


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[TextEdit, ...]


@dataclass(frozen=True)
class Measured:
    """A delay site a capture measured (`dpmlens check --traces`), joined to a finding."""

    function: str  # the delay function the probe saw (msleep, udelay, ...)
    caller: str
    requested_ms: float | None
    calls: int
    cycles: int  # suspend/resume cycles in the capture
    measured_us: float  # all calls, all cycles
    mean_us: float
    on_critical_path_calls: int
    on_critical_path_us: float
    phases: tuple[str, ...] = ()  # the phases of the callbacks it ran in
    capture: str = ""  # the trace file(s)


@dataclass(frozen=True)
class FleetCost:
    """A delay site or callback as a fleet store measured it (`dpmlens check --fleet`), for
    the newest kernel that ran it (fleet/code_figures.py)."""

    kind: str  # "delay site" | "callback"
    what: str  # "msleep() in edp_panel_vdd_on()" | "i915_pm_resume() (resume via bus)"
    phase: str
    kernel: str
    cycles: int
    machines: int  # distinct hosts
    runs: int  # calls of the delay, runs of the callback
    p50_us: float  # of a callback's runs; of a delay site's time per cycle
    p95_us: float
    critical_path_p50_us: float  # per cycle, its time on the phase's critical path
    cycles_on_critical_path: int
    previous_kernel: str | None
    previous_p50_us: float | None
    store: str


@dataclass(frozen=True)
class Finding:
    rule: str
    kernel_type: str
    severity: Severity
    path: str
    span: Span
    message: str
    function: str | None = None
    phase: str | None = None
    chain: tuple[ChainStep, ...] = ()
    fixes: tuple[Fix, ...] = ()
    tags: tuple[str, ...] = field(default=())  # e.g. ("deprecated",)
    dead: str | None = None  # why no real build enables the driver (kbuild/dead.py)
    measured: Measured | None = None  # the delay site as a capture measured it
    fleet: FleetCost | None = None  # the delay site or callback as a fleet store measured it

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.span.line, self.span.column, self.rule)
