"""User-facing errors: each is reported as one line and ends the CLI with exit code 2."""

from __future__ import annotations


class UsageError(Exception):
    """A mistake on the command line, in a configuration file or in a rule file.

    The message is complete and names the file (and line, where known); the CLI prints it as
    `dpmlens: error: <message>` without a traceback.
    """


class ConfigError(UsageError):
    """A `.dpmlens.toml` that cannot be read or does not make sense."""
