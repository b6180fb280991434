"""The proposal dialog's pinned summary speaks the user's words (issue 35 §6: mark-unread
showed "FLAG"): a write's label when its flow sets one, its kind only when none does."""

from __future__ import annotations

from textual.geometry import Region

from mailtriage.application.flows.proposals import Field, Proposal, Write, WriteKind
from mailtriage.tui.dialogs.proposal import PIN_ROWS, summary_text
from tests.tui.test_words import DialogHost


def _write(kind: WriteKind, label: str | None) -> Write:
    return Write(kind, "account demo", "unread: Heap overflow in frob", [], lambda w: None, label=label)


def test_the_pin_names_a_labelled_write_by_its_label_not_its_kind():
    proposal = Proposal("Mark unread", writes=[_write(WriteKind.FLAG, "Mark unread")])
    pinned = summary_text(proposal).plain
    assert "1. Mark unread → account demo" in pinned
    assert "FLAG" not in pinned


def test_the_pin_falls_back_to_the_kind_when_the_flow_gave_no_label():
    proposal = Proposal("Flag", writes=[_write(WriteKind.FLAG, None)])
    assert "1. FLAG → account demo" in summary_text(proposal).plain


def test_the_pin_says_where_a_write_lands_in_the_words_of_the_write_below():
    # A reply draft's pin said "1. Save draft → drafts" (the source's name) above
    # "1. Save draft · into the local Maildir Mail/Drafts".
    draft = Write(WriteKind.DRAFT, "drafts", "draft reply on msgid:<r@x>", [], lambda w: None, label="Save draft",
                  where="into the local Maildir Mail/Drafts")
    pinned = summary_text(Proposal("Reply", writes=[draft])).plain
    assert "1. Save draft · into the local Maildir Mail/Drafts  draft reply on msgid:<r@x>" in pinned
    assert "→ drafts" not in pinned


async def test_the_pin_shows_every_write_of_an_import_at_80x24():
    # The pin is at most 6 rows: with the words wrapped, an import's third write (its receipt
    # draft, the one with the security CC) was cut off the pin at 80 columns.
    tracker = "in tracker local-files (git working copy /home/triager/.local/share/mailtriage/work/security-tracker)"
    cc = Field("Cc", "security@frob.example", marker="security CC")
    proposal = Proposal("Import report: Heap overflow", writes=[
        Write(WriteKind.TRACKER, "tracker:local-files", 'create the tracker issue "Heap buffer overflow in the '
              'frob-native thumbnail decoder"', [], lambda w: None, label="Create issue", where=tracker),
        Write(WriteKind.TRACKER, "tracker:local-files", "status rollup entry Import on the new issue", [],
              lambda w: None, label="Add Import entry to the new issue", where=tracker),
        Write(WriteKind.DRAFT, "drafts", "receipt-of-confirmation draft reply on msgid:<d5a75dc5@example.com>",
              [cc], lambda w: None, label="Save draft", where="into the local Maildir Mail/Drafts")])
    app = DialogHost(proposal)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        pin = app.screen.query_one("#proposal-summary")
        shown = [strip.text for strip in pin.render_lines(Region(0, 0, pin.size.width, pin.size.height))]
        rows = "\n".join(shown)
        for heading in ("Cc: security@frob.example", "1. Create issue · in tracker local-files",
                        "2. Add Import entry to the new issue", "3. Save draft · into the local Maildir"):
            assert heading in rows, rows


def test_a_pin_too_long_for_its_rows_says_how_many_writes_are_below():
    # Importing two tagged reports: two Cc lines and six writes, in a pin of six rows.
    cc = Field("Cc", "security@frob.example", marker="security CC")
    writes = []
    for n in (1, 2):
        writes += [Write(WriteKind.TRACKER, "tracker:local-files", f"[{n}/2] create", [], lambda w: None,
                         label="Create issue", where="in tracker local-files"),
                   Write(WriteKind.TRACKER, "tracker:local-files", f"[{n}/2] entry", [], lambda w: None,
                         label="Add Import entry to the new issue", where="in tracker local-files"),
                   Write(WriteKind.DRAFT, "drafts", f"[{n}/2] receipt", [cc], lambda w: None, label="Save draft",
                         where="into the local Maildir Mail/Drafts")]
    lines = summary_text(Proposal("Import 2 reports", writes=writes)).plain.split("\n")
    assert len(lines) <= PIN_ROWS == 6
    assert lines[:2] == ["Cc: security@frob.example   ◀ security CC"] * 2  # never cut
    assert lines[2].startswith("1. Create issue") and lines[-1] == "… and 3 more writes below"
