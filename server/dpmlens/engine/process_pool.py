"""Shutting a worker pool down without waiting for ever on a worker that stopped or hangs
(`check`'s per-file budget, the server's out-of-loop analysis)."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

_GRACE = 10.0  # seconds an idle worker gets to exit once its pool is shut down, then killed


def close_pool(executor: ProcessPoolExecutor, kill: bool = False) -> None:
    """Shut `executor` down: `kill` its workers at once (SIGKILL ends stopped processes
    too), else give them a grace period first."""
    procs = list((getattr(executor, "_processes", None) or {}).values())
    if kill:
        for p in procs:
            p.kill()
    executor.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.join(timeout=None if kill else _GRACE)
        if p.is_alive():
            p.kill()
            p.join()
