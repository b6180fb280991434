"""The hostile corpus through every offline reader (mbox, Maildir, .eml folder) and every
printer: each message is read (nothing raises, nothing is skipped), and what the app's
reading pane, the JSON and the tracker conversions make of it holds nothing raw."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pathlib import Path

from mailtriage.backends.contract import SourceOrigin
from mailtriage.backends.contract import reply_subject
from mailtriage.backends.mbox import MboxSource
from mailtriage.core.inert import json_dumps, markdown_block, markdown_inline, sender_label
from mailtriage.trackers.jiramarkup import md_to_adf, md_to_wiki
from mailtriage.tui.panes.reader import body_text, header_text
from tests.hostile.corpus import assert_inert, cases, message_id
from tests.mbox.mboxes import write_eml_folder, write_maildir, write_mbox

CASES = cases()
SINCE = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(params=["mbox", "maildir", "eml"])
def archive(request, tmp_path):
    raws = list(CASES.values())
    if request.param == "mbox":
        return write_mbox(tmp_path / "hostile.mbox", [r.replace(b"\r\n", b"\n") for r in raws])
    if request.param == "maildir":
        return write_maildir(tmp_path / "Maildir", raws)
    return write_eml_folder(tmp_path / "eml", raws)


def test_every_case_is_read_and_printed_inert(archive):
    source = MboxSource("hostile", {"path": str(archive)}, origin=SourceOrigin(project_dir=Path(archive.parent)))
    try:
        threads = source.list_recent_threads(None, SINCE)
        seen = set()
        for summary in threads:
            assert_inert(json_dumps(summary.to_json()), f"summary {summary.thread_id}")
            thread = source.read_thread(summary.thread_id)
            assert_inert(json_dumps(thread.to_json()), f"thread {summary.thread_id}")
            for n, message in enumerate(thread.messages, 1):
                seen.add(message.message_id)
                where = message.message_id
                assert_inert(header_text(message, n, len(thread.messages)).plain, f"{where} header pane")
                assert_inert(body_text(message).plain, f"{where} body pane")
                assert_inert(sender_label(message.sender.name, message.sender.email), f"{where} sender label")
                assert "\n" not in reply_subject(message.subject)
                md = markdown_inline(message.sender.name) + "\n\n" + markdown_block(message.body_text)
                assert_inert(md_to_wiki(md), f"{where} wiki")
                assert_inert(json_dumps(md_to_adf(md)), f"{where} adf")
    finally:
        source.close()
    assert {message_id(raw) for raw in CASES.values()} <= seen
