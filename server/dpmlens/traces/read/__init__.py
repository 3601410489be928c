"""Importers: dmesg, ftrace text (with function_graph and kprobes), Perfetto; `load.load_traces`
reads files and directories into a model.TraceSet."""
