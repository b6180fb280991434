"""What the command line prints: one JSON document on stdout, messages on stderr.

Mail, tracker and server text is untrusted: it goes out through the one inert-text
module (neutralized characters escaped, lines kept where they may be), and no secret the
session holds is ever printed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mailtriage.application.errors import UsageError
from mailtriage.core.inert import json_dumps, json_dumps_lines, terminal_line, terminal_text
from mailtriage.core.secrets import scrub, scrub_json


def emit(doc: Any, *, lines: bool = False) -> None:
    """One JSON document on stdout; neutralized characters escaped (lossless). ``lines``: a
    long list one item a line (``queue --json``: a row a line, :func:`json_dumps_lines`)
    instead of indented throughout.

    Scrubbed as a document (reasons, errors) and as text (a secret split across keys never is).
    """
    doc = scrub_json(doc)
    sys.stdout.write(scrub(json_dumps_lines(doc) if lines else json_dumps(doc)) + "\n")


def dumps(doc: Any) -> str:
    """One JSON line (``poll --watch``); neutralized characters escaped, secrets masked."""
    return scrub(json_dumps(scrub_json(doc), indent=None))


def err(text: str) -> None:
    """One message on stderr. Errors quote subjects, IDs and server text: inert, lines kept, secrets masked."""
    sys.stderr.write(f"mailtriage: {terminal_text(scrub(text))}\n")


def line(text: Any) -> str:
    """One inert line for a table or a heading."""
    return terminal_line(text)


#: Characters of untrusted text on one line of a human listing; the rest is cut, and the line
#: says so (a 200 KB subject would otherwise fill the terminal's scrollback as one line).
LINE_LIMIT = 300


def capped_line(text: Any, limit: int = LINE_LIMIT) -> str:
    """:func:`line`, at most ``limit`` characters of marked text, then ``… [cut: N characters]``
    naming the full length. Marked before it is cut, so no marker is split."""
    value = "" if text is None else str(text)
    shown = terminal_line(value)
    if len(shown) <= limit:
        return shown
    parts: list[str] = []
    used = 0
    for ch in value:  # mark one character at a time, so the cut falls between markers
        piece = terminal_line(ch)
        if used + len(piece) > limit:
            break
        parts.append(piece)
        used += len(piece)
    return "".join(parts) + f" … [cut: {len(value):,} characters]"


def read_file_arg(name: str) -> str:
    """The text of a ``--*-file`` argument (``-`` is stdin).

    Raises:
        UsageError: the file cannot be read or is not UTF-8.
    """
    if name == "-":
        return sys.stdin.read()
    try:
        return Path(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {name}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"{name} is not UTF-8 text") from exc


def jsonable(value: Any) -> Any:
    """A contract value (or a list of them) as JSON-ready data."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def ask_line(prompt: str) -> str:
    """A confirmation question: the prompt goes to stderr (stdout carries only the JSON); the
    answer is one line of stdin (EOFError when stdin is closed)."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line
