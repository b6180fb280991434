from pathlib import Path

import pytest

from mailtriage.backends.contract import MailSource, Op, ThreadId, reply_subject
from mailtriage.backends.errors import NotSupported
from mailtriage.application.flows.proposals import Blocked, BlockedBy, Field, Proposal, Write, WriteKind

ROOT = Path(__file__).resolve().parents[2]


def test_thread_ids_of_different_shapes_never_dedupe():
    mid = "<abc@example.org>"
    ids = {ThreadId("msgid", mid), ThreadId("hyperkitty", mid), ThreadId("msgid", mid)}
    assert len(ids) == 2
    assert ThreadId.parse("msgid:<abc@example.org>") == ThreadId("msgid", mid)
    # A bare Message-ID is a msgid reference, whatever backend would read it.
    assert ThreadId.parse("<abc@example.org>", default_kind="gmail") == ThreadId("msgid", mid)
    with pytest.raises(ValueError, match="has no kind"):
        ThreadId.parse("abc")


def test_thread_id_kind_is_the_shape_and_old_backend_tags_read_back():
    """mbox and IMAP both emit root Message-IDs: one shape, so an ID read through one is
    drafted through the other. Stored IDs written with the old backend tags read back."""
    mid = "<abc@example.org>"
    assert ThreadId("mbox", mid) == ThreadId("imap", mid) == ThreadId("msgid", mid)
    assert ThreadId.parse("mbox:<abc@example.org>") == ThreadId.parse("imap:<abc@example.org>")
    assert str(ThreadId.parse("imap:<abc@example.org>")) == "msgid:<abc@example.org>"
    assert ThreadId.parse("imap-synthetic:<s@mailtriage.invalid>").kind == "msgid-synthetic"
    assert ThreadId("msgid", mid).root == mid


def test_a_native_reference_carries_its_root_and_prints_it():
    tid = ThreadId("gmail", "18c2f3a", "<root@example.org>")
    assert str(tid) == "gmail:18c2f3a<root@example.org>"
    back = ThreadId.parse(str(tid))
    assert back == tid and back.root == "<root@example.org>"
    # The root does not take part in equality: the same Gmail thread, root known or not.
    assert ThreadId("gmail", "18c2f3a") == tid
    assert ThreadId.parse("gmail:18c2f3a").root is None
    assert tid.to_json() == {"kind": "gmail", "value": "18c2f3a", "root": "<root@example.org>"}


@pytest.mark.parametrize("subject, expected", [
    ("Vulnerability in X", "Re: Vulnerability in X"),
    ("Re: Vulnerability", "Re: Vulnerability"),
    ("RE: re: Fwd: FW: AW: sv: thing", "Re: thing"),
    ("Re[2]: thing", "Re: thing"),
    ("Fwd[3] : thing", "Re: thing"),
    ("", "Re: (no subject)"),
    (None, "Re: (no subject)"),
    ("   Re:   ", "Re: (no subject)"),
    ("Reply to all", "Re: Reply to all"),
    ("Sverige: report", "Re: Sverige: report"),
])
def test_reply_subject_rule(subject, expected):
    assert reply_subject(subject) == expected


def test_base_backend_declines_every_op():
    class Nothing(MailSource):
        kind = thread_id_kind = "nothing"

    backend = Nothing("n")
    assert backend.capabilities == frozenset()
    tid = ThreadId("nothing", "x")
    for call in (lambda: backend.list_recent_threads("l", None), lambda: backend.read_thread(tid),
                 lambda: backend.list_drafts(tid), lambda: backend.list_sent_since(tid, None),
                 lambda: backend.create_draft(None), lambda: backend.thread_url(tid)):
        with pytest.raises(NotSupported):
            call()
    assert {Op.parse("list-recent-threads"), Op.parse("thread_url")} == {Op.LIST_RECENT_THREADS, Op.THREAD_URL}


def test_proposal_needs_confirmation_and_reports_partial_failure():
    written = []

    def ok(write):
        written.append(write.summary)
        return write.summary

    def boom(write):
        raise OSError("disk full")

    proposal = Proposal("t", writes=[
        Write(WriteKind.TRACKER, "local", "create issue", [Field("Title", "x")], ok),
        Write(WriteKind.TRACKER, "local", "append rollup", [], boom),
        Write(WriteKind.DRAFT, "imap", "draft reply", [], ok),
    ])
    with pytest.raises(PermissionError):
        proposal.apply(confirmed=False)
    assert written == []
    report = proposal.apply(confirmed=True)
    assert written == ["create issue"]
    assert not report.ok
    assert report.failed == ("append rollup", "OSError: disk full")
    assert report.not_attempted == ["draft reply"]
    assert "FAILED: append rollup" in report.describe()
    with pytest.raises(RuntimeError):
        proposal.apply(confirmed=True)


def test_a_blocked_proposal_carries_a_typed_reason_and_its_json_keeps_the_code():
    proposal = Proposal("t", facts={"pending_drafts": 0}).block(BlockedBy.PENDING_CHECK, "could not check")
    assert proposal.blocked == Blocked(BlockedBy.PENDING_CHECK, "could not check")
    doc = proposal.to_json()
    # the documented shape (docs/workflows.md): the sentence in `blocked`, the code in `facts.blocked_by`
    assert doc["blocked"] == "could not check"
    assert doc["facts"] == {"pending_drafts": 0, "blocked_by": "pending_check"}
    assert proposal.facts == {"pending_drafts": 0}  # the code comes from the typed value alone
    assert "BLOCKED: could not check" in proposal.render_text()
    clear = Proposal("t").to_json()
    assert clear["blocked"] is None and clear["facts"] == {}


def test_every_blocked_code_is_documented():
    text = (ROOT / "docs" / "workflows.md").read_text(encoding="utf-8")
    assert [reason.value for reason in BlockedBy if f"| `{reason.value}` |" not in text] == []


def test_blocked_proposal_writes_nothing():
    proposal = Proposal("t", writes=[Write(WriteKind.DRAFT, "imap", "d", [], lambda w: 1/0)],
                        blocked=Blocked(BlockedBy.SECURITY_CC, "no CC"))
    with pytest.raises(PermissionError, match="no CC"):
        proposal.apply(confirmed=True)


def test_the_cli_confirmation_names_a_write_in_the_users_words_as_the_dialog_does():
    # Issue 35 §6 ("a file save says 'will be written by backend mbox'", mark-unread shows "FLAG"),
    # mended in the dialog's pinned summary (27b9dc24); the CLI's confirmation still printed the
    # kind and the backend.
    proposal = Proposal("Save attachments")
    proposal.writes.append(Write(WriteKind.SAVE, "mbox", "save a.pdf (k1)", [], lambda w: None,
                                 label="Save file", where="into the folder /home/me/x"))
    proposal.writes.append(Write(WriteKind.FLAG, "account demo", "unread: 2", [], lambda w: None))
    lines = proposal.render_text().split("\n")
    assert "[1] Save file into the folder /home/me/x: save a.pdf (k1)" in lines
    assert "[2] FLAG via account demo: unread: 2" in lines  # no label set: the kind, the backend
