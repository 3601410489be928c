"""The fuzz suite's shared parts (tests/test_fuzz_*.py): hypothesis profiles, the seed corpus,
mutations, and keeping what breaks.

Two profiles: `ci` (the default: a few examples per property, seconds in `make test`) and
`fuzz` (`make fuzz`, many examples per property, run again with fresh seeds until the time
is up, see tests/fuzz_driver.py). A failing example is shrunk by hypothesis; the final, minimal
one is written to test-fixtures/fuzz/found/ so that it can become a regression input
(test-fixtures/fuzz/{c,traces,lsp}/, run by test_fuzz_regressions.py).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "test-fixtures"
FUZZ = FIXTURES / "fuzz"
FOUND = FUZZ / "found"
SHARED_TRACES = REPO.parent.parent / "shared" / "traces"  # /work/shared/traces beside /work/wt

_COMMON = {"deadline": None, "database": None, "derandomize": False,
           "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.function_scoped_fixture]}
settings.register_profile("ci", max_examples=12, **_COMMON)
settings.register_profile("fuzz", max_examples=int(os.environ.get("DPMLENS_FUZZ_EXAMPLES",
                                                                  "300")), **_COMMON)
settings.load_profile(os.environ.get("DPMLENS_FUZZ_PROFILE", "ci"))


def c_corpus() -> list[Path]:
    """Real drivers and fixtures: every C file under test-fixtures (not fuzz/ outputs)."""
    files = [p for p in sorted(FIXTURES.rglob("*.[ch]")) if FUZZ not in p.parents]
    return [p for p in files if p.stat().st_size < 256 << 10]


def trace_corpus() -> list[Path]:
    """Captures: the fixtures, and the real pm-graph captures when /work/shared is there."""
    out = [p for p in sorted((FIXTURES / "traces").glob("*"))
           if p.is_file() and p.suffix in (".txt", ".pftrace", ".perfetto-trace")]
    if SHARED_TRACES.is_dir():
        out += sorted(SHARED_TRACES.rglob("*.txt"))
    return out


# Byte strings that have broken parsers before: numbers that are not numbers, huge digits,
# NULs, lone CRs, PM words and brackets out of place.
_NASTY = [b"nan", b"inf", b"-inf", b"1e999", b"9" * 40, b"18446744073709551615", b"\x00",
          b"\r", b"\n", b"\xff\xfe", b"{", b"}", b"(", b")", b"[", b"]", b";", b",", b"\"",
          b"/*", b"*/", b"//", b"#if 0\n", b"#endif\n", b"\\\n", b"static", b"SIMPLE_DEV_PM_OPS(",
          b".suspend = ", b"msleep(", b"pm_runtime_get_sync(", b"device_pm_callback_start: ",
          b"device_pm_callback_end: ", b"suspend_resume: ", b"PM: ", b"calling  ",
          b" returned 0 after ", b"usecs", b"-1", b"0x", b"\t"]


@st.composite
def mutated(draw: st.DrawFn, data: bytes, max_edits: int = 8) -> bytes:
    """`data` with a few byte-level edits: flips, deletions, nasty insertions, duplicated or
    swapped stretches, truncation."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, max_edits))):
        kind = draw(st.integers(0, 5))
        i = draw(st.integers(0, max(0, len(buf))))
        if kind == 0 and buf:
            buf[min(i, len(buf) - 1)] = draw(st.integers(0, 255))
        elif kind == 1:
            del buf[i:i + draw(st.integers(1, 200))]
        elif kind == 2:
            buf[i:i] = draw(st.sampled_from(_NASTY))
        elif kind == 3 and buf:
            j = draw(st.integers(0, len(buf) - 1))
            buf[i:i] = buf[j:j + draw(st.integers(1, 400))]
        elif kind == 4:
            buf[i:i] = draw(st.binary(max_size=16))
        elif kind == 5 and draw(st.booleans()):
            del buf[i:]
    return bytes(buf)


def record(kind: str, data: bytes, suffix: str) -> None:
    """Keep the final (shrunk) failing input of a property under test-fixtures/fuzz/found/."""
    from hypothesis.control import current_build_context

    try:
        final = current_build_context().is_final
    except Exception:  # noqa: BLE001 - not inside a hypothesis run
        final = True
    if not final:
        return
    FOUND.mkdir(parents=True, exist_ok=True)
    name = f"{kind}-{hashlib.sha1(data).hexdigest()[:12]}{suffix}"
    (FOUND / name).write_bytes(data)
