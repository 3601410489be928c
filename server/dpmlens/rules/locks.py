"""Where sleeping is not allowed: spinlock / irq-off / preempt-off sections open at a call
(also through the file's own lock wrappers), and functions that run in atomic context (IRQ
handlers, timer and tasklet callbacks, netdev watchdog / xmit, irq_chip ops)."""

from __future__ import annotations

import re
from bisect import bisect_right

from dpmlens.model import footprint
from dpmlens.model.types import CallSite, FileModel

# Sections in which sleeping is not allowed: spinlocks and rwlocks (also the _nested
# lockdep variants), the netdev TX lock, irq/BH/preempt off, RCU read side.
_LOCKS = re.compile(
    r"\b(?:raw_)?spin_lock(?:_irq|_irqsave|_bh)?(?:_nested)?\s*\(|"
    r"\blocal_irq_(?:disable|save)\s*\(|\blocal_bh_disable\s*\(|\bpreempt_disable\s*\(|"
    r"\b(?:read|write)_lock(?:_irq|_irqsave|_bh)?\s*\(|\bnetif_tx_lock(?:_bh)?\s*\(|"
    r"\brcu_read_lock\s*\("
)
_UNLOCKS = re.compile(
    r"\b(?:raw_)?spin_unlock(?:_irq|_irqrestore|_bh)?\s*\(|"
    r"\blocal_irq_(?:enable|restore)\s*\(|\blocal_bh_enable\s*\(|\bpreempt_enable\s*\(|"
    r"\b(?:read|write)_unlock(?:_irq|_irqrestore|_bh)?\s*\(|\bnetif_tx_unlock(?:_bh)?\s*\(|"
    r"\brcu_read_unlock\s*\("
)


def net_locks(text: str, wrappers: dict[str, int]) -> int:
    """Locks taken minus released in `text`, counting the file's own lock wrappers."""
    n = len(_LOCKS.findall(text)) - len(_UNLOCKS.findall(text))
    for name, delta in wrappers.items():
        n += delta * len(re.findall(rf"\b{re.escape(name)}\s*\(", text))
    return n


_LOCKS_B = re.compile(_LOCKS.pattern.encode())
_UNLOCKS_B = re.compile(_UNLOCKS.pattern.encode())
# bytes of a function definition that hold its return type (`static irqreturn_t foo(...)`)
_RETURN_TYPE_HEAD = 60


def lock_wrappers(model: FileModel) -> dict[str, int]:
    """Functions of the file that leave a lock taken (tg3_full_lock) or release one."""
    starts = sorted((fn.start_byte, fn.end_byte, name) for name, fn in model.functions.items())
    keys = [s for s, _e, _n in starts]
    net: dict[str, int] = {}
    footprint.searched(model, _LOCKS_B, _UNLOCKS_B)
    for pattern, delta in ((_LOCKS_B, 1), (_UNLOCKS_B, -1)):
        for m in pattern.finditer(model.source):
            i = bisect_right(keys, m.start()) - 1
            if i >= 0 and starts[i][0] <= m.start() < starts[i][1]:
                net[starts[i][2]] = net.get(starts[i][2], 0) + delta
    return {name: (1 if n > 0 else -1) for name, n in net.items() if n}


def lock_held(model: FileModel, call: CallSite, wrappers: dict[str, int]) -> bool:
    """Is a spinlock / irq-off / preempt-off section open at `call` in its function?"""
    fn = model.functions.get(call.caller) if call.caller else None
    if fn is None:
        return False
    footprint.read_function(model, call.caller)
    before = model.source[fn.start_byte : call.start_byte].decode("utf-8", "replace")
    return net_locks(before, wrappers) > 0


# Registrations whose callback runs in atomic context: (registering call, argument index).
_ATOMIC_REGISTRATIONS = {
    "timer_setup": 1,
    "setup_timer": 1,
    "tasklet_setup": 1,
    "tasklet_init": 1,
    "request_irq": 1,
    "devm_request_irq": 2,
    "request_any_context_irq": 1,
    "request_threaded_irq": 1,  # the hard handler; the thread function may sleep
    "devm_request_threaded_irq": 2,
    "hrtimer_setup": 1,
}


# Callbacks the kernel calls with BHs or IRQs off: netdev watchdog/xmit/rx-mode, irq_chip ops.
_ATOMIC_FIELDS = re.compile(
    rb"\.(?:ndo_tx_timeout|ndo_start_xmit|ndo_set_rx_mode|irq_[a-z_]+)\s*=\s*&?\s*(\w+)"
)


def atomic_entries(model: FileModel) -> set[str]:
    """Functions of the file that run in atomic context: IRQ handlers, timer and tasklet
    callbacks (by registration, and functions returning irqreturn_t)."""
    out: set[str] = set()
    for c in model.calls_to(*_ATOMIC_REGISTRATIONS):
        index = _ATOMIC_REGISTRATIONS.get(c.callee)
        if index is not None and len(c.args) > index:
            out.add(c.args[index].strip().lstrip("&"))
    footprint.searched(model, "irqreturn_t", _ATOMIC_FIELDS)
    for name, fn in model.functions.items():
        if b"irqreturn_t" in model.source[fn.start_byte : fn.start_byte + _RETURN_TYPE_HEAD]:
            out.add(name)
    for m in _ATOMIC_FIELDS.finditer(model.source):
        out.add(m.group(1).decode())
    return out


def atomic_callers(model: FileModel, function: str | None, wrappers: dict[str, int]) -> bool:
    """Is `function`, or a function calling it (three levels up), called with a lock held
    or from an atomic entry point (IRQ handler, timer, tasklet)?"""
    atomic = atomic_entries(model)
    todo: list[str | None] = [function]
    seen: set[str] = set()
    for _level in range(4):
        nxt: list[str | None] = []
        for name in todo:
            if name is None or name in seen:
                continue
            seen.add(name)
            if name in atomic:
                return True
            for c in model.calls_to(name):
                if c.caller:
                    if lock_held(model, c, wrappers):
                        return True
                    nxt.append(c.caller)
        todo = nxt
    return False
