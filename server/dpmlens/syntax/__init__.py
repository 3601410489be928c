"""tree-sitter C parsing and the PM prefilter.

parser.py: parse / incremental reparse, query loading, spans; prefilter.py: byte-level
keyword check deciding which files are worth parsing.
"""
