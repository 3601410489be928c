"""Find the C sources under the paths given on the command line.

Paths keep the form the user gave (`drivers/usb` -> `drivers/usb/core/hub.c`), so every printer
shows them as given. Symlinked directories are followed once; a link back to an enclosing
directory is reported as a loop and not followed.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from dpmlens.core.inputs import kind

SOURCE_SUFFIXES = (".c", ".h")


@dataclass(frozen=True)
class InputError:
    """A path that could not be checked. `usage` errors (a missing operand) make exit code 2."""

    path: str
    message: str
    usage: bool = False

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def _stat_error(path: str, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink loop, not followed"
    if exc.errno == errno.ENOENT and os.path.islink(path):
        return f"dangling symlink (to {os.readlink(path)!r}), skipped"
    return f"cannot read: {exc.strerror or exc}"


def _encloses(link: str, directory: str) -> bool:
    """Does the symlinked directory `link` lead to `directory` or one of its parents?"""
    target, here = os.path.realpath(link), os.path.realpath(directory)
    return here == target or here.startswith(target.rstrip("/") + "/")


def collect_files(paths: list[str]) -> tuple[list[str], list[InputError]]:
    """All files to check, in a stable order, and the paths that could not be used."""
    errors: list[InputError] = []
    files = list(iter_files(paths, errors))
    return files, errors


def iter_files(paths: list[str], errors: list[InputError]) -> Iterator[str]:
    """Yield the files to check as the walk finds them (so checking can start at once);
    paths that cannot be used are appended to `errors`."""
    seen_files: set[tuple[int, int]] = set()
    seen_dirs: set[tuple[int, int]] = set()
    for given in paths:
        try:
            st = os.stat(given)
        except OSError as exc:
            missing = exc.errno == errno.ENOENT and not os.path.islink(given)
            message = "no such file or directory" if missing else _stat_error(given, exc)
            errors.append(InputError(given, message, usage=missing))
            continue
        key = (st.st_dev, st.st_ino)
        if stat.S_ISDIR(st.st_mode):
            if key not in seen_dirs:
                seen_dirs.add(key)
                yield from _walk(given, st.st_dev, {key}, seen_dirs, seen_files, errors)
        elif stat.S_ISREG(st.st_mode):
            # A file named explicitly is checked whatever its suffix: the user asked for it.
            if key not in seen_files:
                seen_files.add(key)
                yield given
        else:
            errors.append(InputError(given, f"{kind(st.st_mode)}, not a source file; skipped"))


def _walk(
    top: str,
    dev: int,
    ancestors: set[tuple[int, int]],
    seen_dirs: set[tuple[int, int]],
    seen_files: set[tuple[int, int]],
    errors: list[InputError],
) -> Iterator[str]:
    try:
        with os.scandir(top) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        errors.append(InputError(top, f"cannot list directory: {exc.strerror or exc}"))
        return
    subdirs: list[tuple[str, int, tuple[int, int]]] = []
    for entry in entries:
        path = entry.path
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            if entry.name.startswith("."):  # .git, .tmp_versions, ...
                continue
            try:
                st = os.stat(path)
            except OSError as exc:
                errors.append(InputError(path, _stat_error(path, exc)))
                continue
            key = (st.st_dev, st.st_ino)
            if key in ancestors or (entry.is_symlink() and _encloses(path, top)):
                errors.append(
                    InputError(
                        path, "symlink loop (points to an enclosing directory), not followed"
                    )
                )
            elif key not in seen_dirs:
                seen_dirs.add(key)
                subdirs.append((path, st.st_dev, key))
            continue
        if not entry.name.endswith(SOURCE_SUFFIXES):
            continue
        if entry.is_file(follow_symlinks=False):  # the common case: no stat() needed
            key = (dev, entry.inode())
        else:
            try:
                st = os.stat(path)
            except OSError as exc:
                errors.append(InputError(path, _stat_error(path, exc)))
                continue
            if not stat.S_ISREG(st.st_mode):
                errors.append(InputError(path, f"{kind(st.st_mode)}, not a source file; skipped"))
                continue
            key = (st.st_dev, st.st_ino)
        if key not in seen_files:
            seen_files.add(key)
            yield path
    for path, sub_dev, key in subdirs:
        yield from _walk(path, sub_dev, ancestors | {key}, seen_dirs, seen_files, errors)
