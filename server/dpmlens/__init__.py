"""dpmlens: a reviewer for Linux driver power management."""

__version__ = "0.1.0"
