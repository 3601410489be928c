"""Write a file so that readers see the old complete file or the new complete file, never a
part of either: the text goes to a temporary file beside the target, is flushed to disk, and
is renamed over it (`os.replace` is atomic on POSIX and Windows). Two writers at once leave
one of their files; a full disk or a kill during the write leaves the old file as it was.
"""

from __future__ import annotations

import contextlib
import os
import tempfile


def write_text_atomic(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Replace `path` with `text`; raises OSError (the target untouched) on failure."""
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    mode = _mode_for(target)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding=encoding) as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _mode_for(target: str) -> int:
    """The existing file's permissions, or what a plain open() would give (0666 & ~umask)."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
