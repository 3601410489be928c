"""Split git format-patch files and mboxes into patches, and each patch into file diffs.

Only what applying needs is kept: the subject (to name the patch), each file's old and new
path, and its hunks with the line number of every `+` line inside the patch text (checkpatch's
`#NN:`). Binary diffs and mode-only changes carry no hunks and are skipped by the applier.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_MBOX_FROM = re.compile(rb"^From \S+ ", re.M)
_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_INDEX = re.compile(rb"^index ([0-9a-f]{4,64})\.\.([0-9a-f]{4,64})")
_SUBJECT = re.compile(rb"^Subject:[ \t]*(.*(?:\n[ \t]+.*)*)", re.M | re.I)


@dataclass
class Hunk:
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    header: str  # the `@@ ... @@` line, to name the hunk in errors
    # (op, text, patch line): op is b" ", b"-" or b"+"; text ends with its newline, if any.
    lines: list[tuple[bytes, bytes, int]] = field(default_factory=list)


@dataclass
class FileDiff:
    old_path: str | None  # None: a new file
    new_path: str | None  # None: a deleted file
    hunks: list[Hunk] = field(default_factory=list)
    binary: bool = False
    # git's `index OLD..NEW` blob ids (abbreviated; None without an index line, or for a
    # created file): the text before the patch, when the repository has it (as `git am -3`)
    old_blob: str | None = None

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""


@dataclass
class Patch:
    name: str  # the file name, and the subject when a file holds several patches
    subject: str
    files: list[FileDiff]
    lines: int  # lines of patch text (checkpatch's "lines checked")


def _strip_prefix(path: bytes) -> str | None:
    text = path.split(b"\t")[0].decode("utf-8", errors="replace").strip()
    if text.startswith('"') and text.endswith('"'):  # git quotes unusual names
        text = text[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    if text == "/dev/null":
        return None
    return text[2:] if text[:2] in ("a/", "b/") else text


def split_mbox(data: bytes) -> list[bytes]:
    """One message per `From ` separator line (an mbox, or several format-patch files in one);
    a file without separators is one message (a plain diff)."""
    starts = [m.start() for m in _MBOX_FROM.finditer(data) if m.start() == 0 or
              data[m.start() - 1 : m.start()] == b"\n"]  # fmt: skip
    if not starts:
        return [data]
    if starts[0] != 0 and data[: starts[0]].strip():
        starts.insert(0, 0)
    return [data[a:b] for a, b in zip(starts, [*starts[1:], len(data)], strict=True)]


def _subject(message: bytes) -> str:
    head = message.split(b"\n\n", 1)[0]
    m = _SUBJECT.search(head)
    if m is None:
        return ""
    return re.sub(r"\s+", " ", m.group(1).decode("utf-8", errors="replace")).strip()


def parse_patches(data: bytes, name: str) -> list[Patch]:
    """The patches in one file's bytes; `name` names them (file name, + subject if several)."""
    messages = [m for m in split_mbox(data) if b"\n@@ " in m or m.startswith(b"@@ ")]
    out = []
    for index, message in enumerate(messages, start=1):
        subject = _subject(message)
        label = name if len(messages) == 1 else f"{name} [{index}/{len(messages)}]"
        out.append(Patch(label, subject, parse_diff(message), message.count(b"\n")))
    return out


def parse_diff(text: bytes) -> list[FileDiff]:
    """The file diffs of one patch (unified diff, git or plain), with patch line numbers."""
    files: list[FileDiff] = []
    current: FileDiff | None = None
    hunk: Hunk | None = None
    remaining_old = remaining_new = 0
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line, number = lines[i], i + 1
        i += 1
        if hunk is not None and (remaining_old > 0 or remaining_new > 0):
            op = line[:1] or b" "
            if line.startswith(b"\\"):  # "\ No newline at end of file": the previous line
                _drop_newline(hunk)
                continue
            if op not in (b" ", b"-", b"+"):
                if line in (b"\n", b"\r\n"):  # an empty context line whose space was eaten
                    op, line = b" ", b" " + line
                else:
                    hunk = None
                    i -= 1
                    continue
            hunk.lines.append((op, line[1:], number))
            remaining_old -= op != b"+"
            remaining_new -= op != b"-"
            continue
        if hunk is not None and line.startswith(b"\\"):
            _drop_newline(hunk)
            continue
        hunk = None
        if line.startswith(b"diff --git "):
            current = FileDiff(None, None)
            files.append(current)
            parts = line[len(b"diff --git ") :].rstrip(b"\r\n").split(b" b/", 1)
            if len(parts) == 2:  # until ---/+++ say otherwise (a mode-only or binary change)
                current.old_path = _strip_prefix(parts[0])
                current.new_path = _strip_prefix(b"b/" + parts[1])
        elif line.startswith(b"index ") and current is not None:
            m = _INDEX.match(line)
            if m is not None and m.group(1).strip(b"0"):
                current.old_blob = m.group(1).decode()
        elif line.startswith(b"new file mode") and current is not None:
            current.old_path = None
        elif line.startswith(b"deleted file mode") and current is not None:
            current.new_path = None
        elif line.startswith(b"Binary files ") or line.startswith(b"GIT binary patch"):
            if current is not None:
                current.binary = True
        elif line.startswith(b"--- ") and i < len(lines) and lines[i].startswith(b"+++ "):
            old, new = _strip_prefix(line[4:]), _strip_prefix(lines[i][4:])
            if current is None or current.hunks:
                current = FileDiff(old, new)
                files.append(current)
            else:
                current.old_path, current.new_path = old, new
            i += 1
        elif line.startswith(b"@@ ") and current is not None:
            m = _HUNK.match(line)
            if m is None:
                continue
            old_count = int(m.group(2)) if m.group(2) is not None else 1
            new_count = int(m.group(4)) if m.group(4) is not None else 1
            hunk = Hunk(int(m.group(1)), old_count, int(m.group(3)), new_count,
                        line.rstrip(b"\r\n").decode("utf-8", errors="replace"))  # fmt: skip
            current.hunks.append(hunk)
            remaining_old, remaining_new = old_count, new_count
    return files


def reverse(diff: FileDiff) -> FileDiff:
    """The diff that undoes `diff` (what `git apply -R` applies)."""
    swap = {b"+": b"-", b"-": b"+", b" ": b" "}
    hunks = [
        Hunk(h.new_start, h.new_count, h.old_start, h.old_count, h.header,
             [(swap[op], text, n) for op, text, n in h.lines])
        for h in diff.hunks
    ]  # fmt: skip
    return FileDiff(diff.new_path, diff.old_path, hunks, diff.binary)


def _drop_newline(hunk: Hunk) -> None:
    if hunk.lines:
        op, text, number = hunk.lines[-1]
        hunk.lines[-1] = (op, text[:-2] if text.endswith(b"\r\n") else text.rstrip(b"\n"), number)
