"""tree-sitter C parsing (parser.py: parse, incremental reparse, queries, spans) and the byte-level PM prefilter (prefilter.py)."""
