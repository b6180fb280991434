"""A display name that holds an address, or could pass for one, never hides the real
address (issue 20 §8): thread list, `mailtriage list`, reading pane and proposals."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from mailtriage.backends.contract import Address, Message, TextPart, ThreadId, ThreadSummary
from mailtriage.core.inert import sender_label, sender_mismatch
from mailtriage.tui.panes.reader import header_text
from mailtriage.tui.panes.thread_list import ThreadList
from mailtriage.tui.rows import ListRows
from tests.tui.test_thread_list import ListHost, painted

SPOOF = Address("security@apache.org", "attacker@evil.example")
WHEN = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("name, email, spoofed", [
    ("security@apache.org", "attacker@evil.example", True),
    ("security\uff20apache.org", "attacker@evil.example", True),  # fullwidth at sign
    ("Apache Security (apache.org)", "attacker@evil.example", True),
    ("security at apache.org", "attacker@evil.example", True),
    ("rita@reporter.example", "rita@reporter.example", False),
    ("Rita Reporter", "rita@reporter.example", False),
    ("Rita (reporter.example)", "rita@mail.reporter.example", False),
    ("", "rita@reporter.example", False),
])
def test_mismatch_rule(name, email, spoofed):
    assert bool(sender_mismatch(name, email)) is spoofed


def test_label_puts_the_real_address_first():
    assert sender_label(SPOOF.name, SPOOF.email).startswith("⚠ attacker@evil.example")
    assert "security@apache.org" in sender_label(SPOOF.name, SPOOF.email)
    assert sender_label("Rita Reporter", "rita@reporter.example") == "Rita Reporter"
    assert sender_label("rita@reporter.example", "rita@reporter.example") == "rita@reporter.example"


async def test_thread_list_shows_the_real_address_of_a_spoofed_sender():
    rows = ListRows([
        ThreadSummary(ThreadId("test", "<1@x>"), "Urgent", "<1@x>", SPOOF, WHEN, 1),
        ThreadSummary(ThreadId("test", "<2@x>"), "Real", "<2@x>", Address("security@apache.org",
                                                                          "security@apache.org"), WHEN, 1),
    ])
    app = ListHost(rows)
    async with app.run_test(size=(100, 10)) as pilot:
        await pilot.pause()
        first, second = painted(app.query_one(ThreadList))[:2]
    assert "attacker@evil" in first and "⚠" in first
    assert "⚠" not in second and "security@apache.org" in second


def test_reading_pane_marks_the_mismatch():
    message = Message("<1@x>", "Urgent", SPOOF, to=(Address("", "security@frobnicator.example.org"),), date=WHEN,
                      text_parts=(TextPart("text/plain", "hi"),))
    text = header_text(message, 1, 1).plain
    assert "attacker@evil.example" in text
    assert "⚠" in text and "name is not their address" in text


def test_cli_list_shows_the_real_address(capsys, tmp_path):
    from mailtriage.cli.main import main
    from tests.hostile.corpus import CORPUS
    from tests.mbox.mboxes import write_mbox

    archive = write_mbox(tmp_path / "a.mbox", [(CORPUS / "15-spoofed-address-name.eml").read_bytes()
                                               .replace(b"\r\n", b"\n")])
    (tmp_path / "project.md").write_text(
        "# P\n\n## Mail sources\n\n| Backend | Role | Mandatory | Notes |\n|---|---|---|---|\n"
        "| `mbox` | primary | yes | x |\n\n## Configuration\n\n```yaml\nsecurity_list: "
        "security@frobnicator.example.org\nmail_sources:\n  mbox:\n    path: a.mbox\n```\n", encoding="utf-8")
    assert main(["--project", str(tmp_path), "list", "--since", "2026-01-01"]) == 0
    out = capsys.readouterr().out
    assert "attacker@evil.example" in out
