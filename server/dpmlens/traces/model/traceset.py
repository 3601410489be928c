"""The TraceSet: every file's report, the sample store, the cycles and the errors of a load
(filled by traces.read.load)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dpmlens.traces.model import names
from dpmlens.traces.model.sample import (
    CallbackSample,
    FileReport,
    Group,
    GroupKey,
    PhaseTime,
    SampleStore,
)

if TYPE_CHECKING:
    from dpmlens.traces.model.links import DeviceLinks

@dataclass
class TraceSet:
    files: list[FileReport] = field(default_factory=list)
    store: SampleStore = field(default_factory=SampleStore)
    cycles: int = 0
    errors: list[str] = field(default_factory=list)  # "file: message", paths and files
    ignored: list[str] = field(default_factory=list)  # files in a directory that are no trace
    name_splits: dict[str, str] = field(default_factory=dict)  # raw head -> how it was split
    device_links: DeviceLinks | None = None  # from --links; the timeline uses them

    @property
    def groups(self) -> dict[GroupKey, Group]:
        return self.store.groups

    @property
    def phase_times(self) -> list[PhaseTime]:
        return self.store.phase_times

    def samples(self) -> Iterator[CallbackSample]:
        return self.store.samples()

    @property
    def sample_count(self) -> int:
        return sum(f.samples for f in self.files)

    @property
    def skipped_lines(self) -> int:
        return sum(f.skipped_lines for f in self.files)

    @property
    def incomplete(self) -> int:
        return sum(f.incomplete for f in self.files)

    def skip_reasons(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for f in self.files:
            total.update(f.skip_reasons)
        return total


def resolve_names(ts: TraceSet, drivers: set[str] | None = None) -> None:
    """Decide the driver/device split of heads with several spaces (traces.names); with the
    driver names of a source tree when the caller has one."""
    ts.name_splits = names.resolve_store(ts.store, drivers or ())


__all__ = ["TraceSet", "resolve_names"]
