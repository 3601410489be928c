"""budget.within_limits: the in-process limits of `dpmlens cc` and `check --patch`."""

from __future__ import annotations

import gc
import time

import pytest

from dpmlens.core.budget import Skipped, within_limits


def test_too_deep_a_file_is_refused_before_running() -> None:
    ran = []
    with pytest.raises(Skipped, match="too deeply nested"):
        within_limits(b"int x = " + b"(" * 600 + b"1" + b")" * 600 + b";", lambda: ran.append(1))
    assert ran == []


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed
def test_a_tick_swallowed_in_a_gc_callback_is_raised_again(monkeypatch) -> None:
    """Python ignores an exception raised in a GC callback; the first tick often lands there
    when callbacks take the time. The timer repeats, so the budget still stops the code."""
    monkeypatch.setenv("DPMLENS_FILE_TIMEOUT", "0.1")

    slow_until = time.perf_counter() + 0.3  # the first tick (0.1 s) lands in the callback

    def slow_callback(_phase: str, _info: dict[str, int]) -> None:
        if time.perf_counter() < slow_until:
            end = time.perf_counter() + 0.004
            while time.perf_counter() < end:
                pass

    def run() -> str:
        end = time.perf_counter() + 3  # without the repeat: runs to the end, and returns
        while time.perf_counter() < end:
            gc.collect(0)
        return "finished"

    gc.callbacks.append(slow_callback)
    try:
        t0 = time.perf_counter()
        with pytest.raises(Skipped, match="DPMLENS_FILE_TIMEOUT"):
            within_limits(b"int x;", run)
        assert time.perf_counter() - t0 < 2
    finally:
        gc.callbacks.remove(slow_callback)


def test_within_the_budget_the_result_comes_back(monkeypatch) -> None:
    monkeypatch.setenv("DPMLENS_FILE_TIMEOUT", "5")
    assert within_limits(b"int x;", lambda: 42) == 42
