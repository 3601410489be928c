"""The sample model: callback samples, phase times, steps, the TraceSet, the per-cycle timeline,
driver/device names, device links and runtime PM calls."""
