"""Runtime PM calls of a TraceSet, column-wise (filled by traces.read.rpm_events), and the
kernel's runtime PM table (`rules/tables/runtime-pm.yaml`: formats, flags, statuses, errno)."""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from dpmlens.core.paths import rules_dir

EVENTS = ("rpm_suspend", "rpm_resume", "rpm_idle", "rpm_usage", "rpm_return_int", "rpm_status")
CALL_KINDS = ("suspend", "resume", "idle")  # RpmLog.kinds values 0, 1, 2


@dataclass(frozen=True)
class RpmTable:
    formats: dict[str, str]
    flags: dict[str, int]
    statuses: dict[str, int]
    errno: dict[int, str]  # 13 -> "EACCES"
    meanings: dict[str, dict[str, tuple[str, str]]]  # rpm_resume -> EACCES -> (class, why)
    callback_errors: dict[str, str]  # rpm_resume -> what a failed callback leaves behind
    callback_codes: dict[str, str]  # EIO -> what a callback's own code usually says


@lru_cache(maxsize=2)
def load_table(file: str) -> RpmTable:
    from dpmlens.traces.model.yaml_tables import safe_load  # (PyYAML: only with rpm_* events)

    with open(file, encoding="utf-8") as f:
        data = safe_load(f) or {}
    return RpmTable(
        formats={str(k): str(v) for k, v in (data.get("formats") or {}).items()},
        flags={str(k): int(v) for k, v in (data.get("flags") or {}).items()},
        statuses={str(k): int(v) for k, v in (data.get("statuses") or {}).items()},
        errno={int(v): str(k) for k, v in (data.get("errno") or {}).items()},
        meanings={str(ev): {str(code): (str(m[0]), str(m[1])) for code, m in codes.items()}
                  for ev, codes in (data.get("meanings") or {}).items()},
        callback_errors={str(k): str(v) for k, v in (data.get("callback_errors") or {}).items()},
        callback_codes={str(k): str(v) for k, v in (data.get("callback_codes") or {}).items()},
    )


def table() -> RpmTable:
    """`rules/tables/runtime-pm.yaml` (data, with kernel citations)."""
    return load_table(str(rules_dir() / "tables" / "runtime-pm.yaml"))


def errno_name(ret: int) -> str:
    """-13 -> "-EACCES"; an unknown code stays a number."""
    name = table().errno.get(-ret) if ret < 0 else None
    return f"-{name}" if name else str(ret)


@dataclass(frozen=True)
class CallbackTrace:
    """A call trace printed in a kernel log while the PM core ran a runtime PM callback
    (`__rpm_callback` on the stack): which callback was running, on which thread, when."""

    file: int
    thread: int  # SampleStore.threads index; -1: the log does not say
    ts: float  # seconds, the log's clock
    call: str  # rpm_resume, rpm_suspend, rpm_idle ("" when the stack does not show it)
    callback: str  # the driver's callback (the innermost *runtime_* frame the core reached)
    module: str  # its module ("" when built in)
    via: str  # the frame the PM core called, when it is another (a bus or PM domain's)

    def label(self) -> str:
        out = f"{self.callback}()" + (f" [{self.module}]" if self.module else "")
        return out + (f" via {self.via}()" if self.via else "")


def explain(call: str, ret: int) -> tuple[str, str]:
    """(class, why) of a negative return of rpm_suspend/rpm_resume/rpm_idle: the PM core's
    own refusal or error (the table's `meanings`), else the callback's code and what its
    failure leaves behind. Every code gets an explanation."""
    t = table()
    name = errno_name(ret).lstrip("-")
    core = t.meanings.get(call, {}).get(name)
    if core:
        return core
    code = t.callback_codes.get(name, f"error code {ret}")
    after = t.callback_errors.get(call, "")
    return ("error", f"returned by the callback: {code}" + (f"; {after}" if after else ""))


class RpmLog:
    """Every runtime PM call and status change of a TraceSet, column-wise."""

    def __init__(self) -> None:
        self.devices: list[str] = []
        self._dev_ids: dict[str, int] = {}
        # calls: rpm_suspend/resume/idle ... rpm_return_int
        self.dev = array("l")
        self.kinds = array("b")
        self.flags = array("l")
        self.usage = array("l")  # usage count when the call started
        self.child = array("l")  # active children when the call started
        self.depth = array("l")  # disable_depth when the call started
        self.start = array("d")  # seconds, trace clock
        self.end = array("d")  # nan: never returned in the capture
        self.ret = array("l")
        self.nested = array("d")  # us spent in calls nested inside it (a parent's resume)
        self.thread = array("l")  # SampleStore.threads index
        self.file = array("l")
        # rpm_status (newer kernels): the status the device enters
        self.st_dev = array("l")
        self.st_ts = array("d")
        self.st_val = array("b")
        self.st_file = array("l")
        # rpm_usage: a get/put that did not reach a call (usage count stayed > 0)
        # suspend calls with a nested rpm_idle of another device: after a suspend the core
        # notifies the parent (runtime.c:703 rpm_idle(parent, RPM_ASYNC)), so it suspended
        self.idled_parent: set[int] = set()
        self.usage_events = 0
        self.unmatched_returns = 0
        self.unreturned = 0
        self.formats_from_capture: set[str] = set()
        self.callback_traces: list[CallbackTrace] = []  # from call traces in a kernel log
        # files whose rpm lines had no time (a kernel log without timestamps): order only
        self.untimed_files: set[int] = set()

    def dev_id(self, name: str) -> int:
        i = self._dev_ids.get(name)
        if i is None:
            i = self._dev_ids[name] = len(self.devices)
            self.devices.append(name)
        return i

    def __len__(self) -> int:
        return len(self.dev)

    @property
    def has_status(self) -> bool:
        return len(self.st_dev) > 0


def rpm_log(store: Any) -> RpmLog:
    """The store's RpmLog, created on first use (a trace without rpm_* events has none)."""
    log = getattr(store, "rpm", None)
    if log is None:
        log = store.rpm = RpmLog()
    return log


__all__ = ["CALL_KINDS", "EVENTS", "CallbackTrace", "RpmLog", "RpmTable", "errno_name", "explain",
           "load_table", "rpm_log", "table"]
