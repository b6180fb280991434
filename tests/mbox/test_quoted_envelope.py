"""Issue 33 (regression): a message whose first line is a quoted ``>From `` envelope line.

A message stored with its own ``From `` envelope line (a forwarded mbox entry, a bounce,
mail saved by another client) gets that line quoted as ``>From `` by an mboxrd writer, like
every ``From `` line in it. Unquoting must come before the header split: else that line,
which is not a header field, ends the header block at once and the message lists and
reads with neither sender nor subject.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from mailtriage.backends.contract import SourceOrigin
from mailtriage.backends.mbox import MboxSource
from tests.mbox.mboxes import from_line

LONG_AGO = datetime(1900, 1, 1, tzinfo=timezone.utc)


def _mbox(tmp_path: Path, quotes: bytes) -> MboxSource:
    quoted = (quotes + b"From MAILER-DAEMON Fri Apr 06 16:46:09 2001\n"
              b"From: Reporter <reporter@example.net>\nTo: security@example.org\nSubject: Heap overflow\n"
              b"Date: Fri, 06 Apr 2001 16:46:09 +0000\nMessage-ID: <quoted@example.net>\n\nDetails.\n"
              b">From here on, more details.\n")
    plain = (b"From: Other <other@example.net>\nTo: security@example.org\nSubject: Another report\n"
             b"Date: Sat, 07 Apr 2001 10:00:00 +0000\nMessage-ID: <plain@example.net>\n\nHello.\n")
    path = tmp_path / "quoted.mbox"
    path.write_bytes(from_line() + quoted + b"\n" + from_line() + plain + b"\n")
    return MboxSource("archive", {"path": str(path)}, origin=SourceOrigin(project_dir=tmp_path))


def test_a_quoted_envelope_line_first_keeps_the_header_block(tmp_path):
    # One level: the message's own envelope line. (Two would be a ">From " line in the
    # original too: not a header field, so a strict reader ends the header block there.)
    for depth, quotes in enumerate((b">",), 1):
        folder = tmp_path / str(depth)
        folder.mkdir()
        source = _mbox(folder, quotes)
        rows = {r.root_message_id: r for r in source.list_recent_threads(None, LONG_AGO)}
        assert sorted(rows) == ["<plain@example.net>", "<quoted@example.net>"], depth
        row = rows["<quoted@example.net>"]
        assert (row.subject, row.sender.email) == ("Heap overflow", "reporter@example.net"), depth
        (message,) = source.read_thread(row.thread_id).messages
        assert (message.subject, message.sender.email) == ("Heap overflow", "reporter@example.net"), depth
        assert message.body_text.startswith("Details.\n") and "From here on" in message.body_text, depth
