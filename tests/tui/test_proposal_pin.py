"""The proposal dialog's pinned summary speaks the user's words (issue 35 §6: mark-unread
showed "FLAG"): a write's label when its flow sets one, its kind only when none does."""

from __future__ import annotations

from mailtriage.application.flows.proposals import Proposal, Write, WriteKind
from mailtriage.tui.dialogs.proposal import summary_text


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
