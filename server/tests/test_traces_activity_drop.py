"""ThreadActivity.drop_from (what a file recorded before its first test is dropped) against
the plain rule it stands for: every span whose cycle is >= the file's cycle base."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dpmlens.traces.model.sample import ThreadActivity

# a load: files, each adding spans (cycle offset, thread, func) and maybe dropping at some point
_FILES = st.lists(st.tuples(st.integers(0, 3),  # the file's cycles (its base moves by this)
                            st.lists(st.tuples(st.integers(-1, 5), st.integers(0, 3),
                                               st.integers(0, 2)), max_size=12),
                            st.integers(0, 12),  # how many of them come before the drop
                            st.booleans()),  # whether the file has a test (a drop) at all
                  max_size=8)


@settings(max_examples=500, deadline=None)
@given(_FILES)
def test_drop_from_is_the_plain_rule(files: list[tuple[int, list, int, bool]]) -> None:
    act, ref = ThreadActivity(), {}
    base = 0
    for n_cycles, adds, before, tested in files:
        start = len(act.spans)
        for i, (c, t, f) in enumerate(adds):
            if tested and i == before:
                act.drop_from(base, start)
                for k in [k for k in ref if k[0] >= base]:
                    del ref[k]
            act.add(base + c, t, f, 1.0, 2.0)
            ref.setdefault((base + c, t, f), [1.0, 2.0, 0])[2] += 1
            assert list(act.spans) == list(ref)
        if tested and before >= len(adds):
            act.drop_from(base, start)
            for k in [k for k in ref if k[0] >= base]:
                del ref[k]
        assert list(act.spans) == list(ref)
        assert [v[2] for v in act.spans.values()] == [v[2] for v in ref.values()]
        base += n_cycles  # (a file's cycles may pass the next base: the reference path then)


def test_drop_from_after_keys_were_dropped_elsewhere() -> None:
    act = ThreadActivity()
    for c in range(5):
        act.add(c, 0, 0, 1.0, 2.0)
    start = len(act.spans)
    act.spans.clear()  # fewer keys than when the file began
    act.add(7, 0, 0, 1.0, 2.0)
    act.add(2, 1, 0, 1.0, 2.0)
    act.drop_from(3, start)
    assert list(act.spans) == [(2, 1, 0)]
