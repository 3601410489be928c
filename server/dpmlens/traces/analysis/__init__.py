"""Analyses of a TraceSet: aggregation, steps, critical path, measured delays, what-if replay,
async ordering, before/after diff, runtime PM statistics."""
