"""A message file whose header block is larger than 1 MiB (issue 33): in a Maildir or a folder
of .eml files it lists with its date, subject and Message-ID, as the same message does in an
mbox (the header block is read to its end, however long)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from mailtriage.backends.mbox import MboxSource
from tests.mbox.mboxes import write_eml_folder, write_maildir, write_mbox

SINCE = datetime(2000, 1, 1, tzinfo=timezone.utc)
# 1.2 MiB of trace headers before the ones a listing shows (as a mail loop or a spam run makes).
TRACE = b"".join(b"Received: from relay%d.example.net by mx.example.org; Mon, 1 Jan 2024\n" % n
                 for n in range(18_000))
MESSAGE = (b"From: Reporter <reporter@example.net>\n" + TRACE
           + b"Subject: Exploit report\nDate: Tue, 02 Jan 2024 10:00:00 +0000\n"
           + b"Message-ID: <big-header@example.net>\n\nBODY\n")


@pytest.mark.parametrize("kind", ["maildir", "eml", "mbox"])
def test_a_header_block_over_one_mib_lists_with_its_date_and_subject(tmp_path, cache, kind):
    assert len(TRACE) > 1024 * 1024
    path = {"maildir": lambda: write_maildir(tmp_path / "md", [MESSAGE]),
            "eml": lambda: write_eml_folder(tmp_path / "eml", [MESSAGE]),
            "mbox": lambda: write_mbox(tmp_path / "a.mbox", [MESSAGE])}[kind]()
    source = MboxSource("archive", {"path": str(path)})
    (thread,) = source.list_recent_threads(None, SINCE)
    assert thread.subject == "Exploit report"
    assert thread.root_message_id == "<big-header@example.net>"
    assert thread.last_activity == datetime(2024, 1, 2, 10, tzinfo=timezone.utc)
    (read,) = source.read_thread(thread.thread_id).messages
    assert read.subject == "Exploit report"
