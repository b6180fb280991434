"""The status rollup: one comment per issue that keeps a dated log of what happened.

The format (DESIGN.md "Status rollup")::

    <!-- status rollup v1 -->

    <details><summary>2025-01-02 · @alice · Imported</summary>

    Report imported from the security list.

    </details>

    ---

    <details><summary>2025-01-03 · @bob · Triaged</summary>

    Confirmed on 1.2.3.

    </details>

The first line is a marker comment containing ``status rollup v1``; each entry is a
``<details>`` block whose summary is ``YYYY-MM-DD · @user · Action``, then one blank line,
the body, one blank line and ``</details>``; entries are separated by ``---``; the newest is
at the bottom. Appending and amending change only the bytes they mean to change.
"""

from __future__ import annotations

import re

from mailtriage.core.lazy_re import lazy
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.trackers.errors import TrackerError

MARKER = "<!-- status rollup v1 -->"
_MARKER_RE = lazy(r"^\s*<!--.*\bstatus rollup v1\b.*-->\s*$")
_SUMMARY_RE = lazy(r"^<details><summary>(\d{4}-\d{2}-\d{2}) · @(\S+) · (.+?)</summary>\s*$")
_END_RE = lazy(r"^</details>\s*$")
_SEP_RE = lazy(r"^---\s*$")


class RollupError(TrackerError):
    """Base of rollup problems; the contract maps them to exit codes."""


class ActionMismatch(RollupError):
    """rollup-amend-latest named an action that is not the latest entry's (exit 4)."""


class NoEntry(RollupError):
    """The rollup has no entry to amend (exit 4)."""


class MalformedRollup(RollupError):
    """The rollup text cannot be parsed into entries."""


class BadEntryBody(RollupError):
    """An entry body contains a line that would read as a rollup summary (exit 2)."""


@frozen_dataclass
class Entry:
    date: str  # YYYY-MM-DD
    user: str  # without the @
    action: str
    body: str

    def render(self, nl: str = "\n") -> str:
        body = self.body.replace("\r\n", "\n").strip("\n").replace("\n", nl)
        return (f"<details><summary>{self.date} · @{self.user} · {self.action}</summary>{nl}{nl}"
                f"{body}{nl}{nl}</details>")


@frozen_dataclass
class ParsedEntry:
    entry: Entry
    start: int  # line index of the summary line
    end: int  # line index of the closing </details>


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _bare(line: str) -> str:
    return line[:-1] if line.endswith("\r") else line


def is_rollup(text: str | None) -> bool:
    """True when the first non-blank line is the rollup marker."""
    if not text:
        return False
    for line in _lines(text):
        if line.strip():
            return bool(_MARKER_RE.match(_bare(line)))
    return False


def check_entry_body(body: str) -> None:
    """Raise BadEntryBody when a body line would read as an entry summary or an entry's end."""
    for line in body.replace("\r\n", "\n").split("\n"):
        if _SUMMARY_RE.match(line):
            raise BadEntryBody("the entry body contains a line that reads as a rollup summary "
                               "(<details><summary>DATE · @user · Action</summary>)")


def _skip_blank(lines: list[str], i: int) -> int:
    while i < len(lines) and not _bare(lines[i]).strip():
        i += 1
    return i


def parse(text: str) -> list[ParsedEntry]:
    """The entries, oldest first. Raises MalformedRollup when the marker or structure is wrong."""
    lines = _lines(text)
    i = _skip_blank(lines, 0)
    if i >= len(lines) or not _MARKER_RE.match(_bare(lines[i])):
        raise MalformedRollup("the first line is not the status rollup marker")
    i = _skip_blank(lines, i + 1)
    entries: list[ParsedEntry] = []
    while i < len(lines):
        m = _SUMMARY_RE.match(_bare(lines[i]))
        if not m:
            raise MalformedRollup(f"line {i + 1}: expected an entry summary, found {_bare(lines[i])[:60]!r}")
        start = i
        # The entry ends at the first </details> that is followed by the end of the text,
        # or by a --- separator and the next summary line.
        end = None
        j = i + 1
        nxt = len(lines)
        while j < len(lines):
            if _END_RE.match(_bare(lines[j])):
                k = _skip_blank(lines, j + 1)
                if k >= len(lines):
                    end, nxt = j, k
                    break
                if _SEP_RE.match(_bare(lines[k])):
                    k2 = _skip_blank(lines, k + 1)
                    if k2 >= len(lines) or _SUMMARY_RE.match(_bare(lines[k2])):
                        end, nxt = j, k2
                        break
            j += 1
        if end is None:
            raise MalformedRollup(f"line {start + 1}: the entry has no closing </details>")
        body_lines = [_bare(x) for x in lines[start + 1:end]]
        if body_lines and not body_lines[0].strip():
            body_lines = body_lines[1:]
        if body_lines and not body_lines[-1].strip():
            body_lines = body_lines[:-1]
        entries.append(ParsedEntry(Entry(m.group(1), m.group(2), m.group(3), "\n".join(body_lines)), start, end))
        i = nxt
    return entries


def entries(text: str) -> list[Entry]:
    return [p.entry for p in parse(text)]


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def append(text: str | None, entry: Entry) -> str:
    """The rollup with ``entry`` at the bottom; a new rollup when ``text`` is None.

    Raises MalformedRollup when the existing text does not parse (nothing is rewritten).
    """
    if text is None or not text.strip():
        return MARKER + "\n\n" + entry.render() + "\n"
    existing = parse(text)
    nl = _newline(text)
    out = text
    if not out.endswith("\n"):
        out += nl
    if existing:
        if not out.endswith(nl + nl):
            out += nl
        out += "---" + nl + nl
    elif not out.endswith(nl + nl):
        out += nl
    return out + entry.render(nl) + nl


def amend_latest(text: str, action: str, body: str) -> str:
    """Replace the body of the latest entry, keeping its date, user and every other byte.

    Raises NoEntry, ActionMismatch (the latest action is not ``action``), MalformedRollup.
    """
    parsed = parse(text)
    if not parsed:
        raise NoEntry("the status rollup has no entry to amend")
    latest = parsed[-1]
    if latest.entry.action != action:
        raise ActionMismatch(f"the latest rollup entry's action is {latest.entry.action!r}, not {action!r}")
    cr = "\r" if _newline(text) == "\r\n" else ""
    lines = _lines(text)
    new_body = body.replace("\r\n", "\n").strip("\n").split("\n")
    # the summary and closing lines are kept as they are; only the body between them changes
    middle = [lines[latest.start], cr] + [line + cr for line in new_body] + [cr, lines[latest.end]]
    return "\n".join(lines[:latest.start] + middle + lines[latest.end + 1:])
