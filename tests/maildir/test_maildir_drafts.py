"""The writable local Maildir for reply drafts (issue 14 §8): configured like any source,
it writes a draft into the Drafts folder only after a confirmed proposal, finds its own
drafts by the Message-ID it made, and keeps the pending-draft rule."""

from __future__ import annotations

import mailbox
import sys
import shutil
import stat
from dataclasses import replace
from datetime import datetime, timezone
from email import message_from_bytes, policy

import pytest

from mailtriage.backends.contract import DraftRequest, Op, ThreadId
from mailtriage.backends.errors import DraftAlreadyPending, Unavailable
from mailtriage.backends.maildir import MaildirDraftsSource
from mailtriage.backends.registry import SourceSet
from mailtriage.application.flows.proposals import BlockedBy
from mailtriage.core.projectconfig import load_project
from mailtriage.demo import demo_project_dir
from mailtriage.application.flows.compose import REPLY
from mailtriage.application.flows.reply import propose_reply, reply_form

ROOT = "<r1@reporter.example.net>"
ADDRESS = "triager@example.org"


@pytest.fixture
def maildir(tmp_path):
    root = tmp_path / "Mail"
    root.mkdir()
    return root


def source_for(root, **extra):
    return MaildirDraftsSource("drafts", {"path": str(root), "address": ADDRESS, **extra})


def files(folder):
    return sorted(p for sub in ("cur", "new") for p in (folder / sub).iterdir())


def test_a_draft_is_one_private_file_flagged_draft_in_the_drafts_folder(maildir):
    source = source_for(maildir)
    source.check_available()
    request = DraftRequest(ThreadId("msgid", ROOT), "Thanks.\n", ("reporter@example.net",),
                           ("security@example.org",), "Re: XSS", ROOT, (ROOT,), from_name="Tess Triager")
    assert source.list_drafts(request.thread_id) == []
    assert not (maildir / "Drafts").exists()  # nothing is made before a write
    draft = source.create_draft(request)
    [path] = files(maildir / "Drafts")
    assert draft.draft_ref == str(path) and path.parent.name == "cur" and path.name.endswith(":2,DS")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    message = message_from_bytes(path.read_bytes(), policy=policy.default)
    assert message["From"] == f"Tess Triager <{ADDRESS}>" and message["In-Reply-To"] == ROOT
    assert message["Cc"] == "security@example.org" and message["References"] == ROOT
    assert not [k for k in message.keys() if "mailtriage" in k.lower()]
    assert "mailtriage" not in message["Message-ID"]
    # The standard library (and so mbsync's view of the folder) sees one draft.
    assert [m.get_flags() for m in mailbox.Maildir(str(maildir / "Drafts"), create=False)] == ["DS"]
    # A retry finds the draft it wrote; another text is refused unless a second one is allowed.
    assert source.create_draft(request).draft_ref == draft.draft_ref
    other = DraftRequest(request.thread_id, "Other.\n", request.to, request.cc, request.subject, ROOT, (ROOT,))
    with pytest.raises(DraftAlreadyPending):
        source.create_draft(other)
    source.create_draft(replace(other, allow_second_draft=True))
    assert len(source.list_drafts(request.thread_id)) == 2 and len(files(maildir / "Drafts")) == 2
    assert source.list_drafts(ThreadId("msgid", "<other@x>")) == []


def test_a_maildir_plus_plus_drafts_folder_is_used_when_it_is_there(maildir):
    mailbox.Maildir(str(maildir / ".Drafts"), create=True)
    source = source_for(maildir)
    source.create_draft(DraftRequest(ThreadId("msgid", ROOT), "x\n", ("a@example.net",)))
    assert len(files(maildir / ".Drafts")) == 1 and not (maildir / "Drafts").exists()


def test_unavailable_until_configured(tmp_path):
    for settings, why in (({}, "path is not set"), ({"path": str(tmp_path / "nope"), "address": ADDRESS}, "does not exist"),
                          ({"path": str(tmp_path)}, "address")):
        with pytest.raises(Unavailable, match=why):
            MaildirDraftsSource("drafts", settings).check_available()


def test_the_reply_flow_drafts_into_the_maildir_only_after_confirmation(tmp_path):
    project = tmp_path / "p"
    shutil.copytree(demo_project_dir(), project)
    # The demo project names a local Maildir for drafts: mail_sources.drafts, path Mail.
    assert "kind: maildir" in (project / "project.md").read_text(encoding="utf-8")
    (project / "Mail").mkdir()
    sources = SourceSet(load_project(project))
    assert sources.resolve(Op.CREATE_DRAFT).chosen == "drafts"
    since = datetime(2026, 9, 1, tzinfo=timezone.utc)
    summaries = sources.dispatch(Op.LIST_RECENT_THREADS, lambda b: b.list_recent_threads(None, since)).value
    summary = next(t for t in summaries if t.subject.startswith("Open redirect"))
    thread = sources.dispatch(Op.READ_THREAD, lambda b: b.read_thread(summary.thread_id)).value
    form = reply_form(sources.config, thread, REPLY)
    proposal = propose_reply(sources, thread, form.body, form=form, from_name="Dana Whitfield")
    assert not proposal.blocked and proposal.writes[0].backend == "drafts"
    assert not (project / "Mail" / "Drafts").exists()
    report = proposal.apply(confirmed=True)
    assert report.ok, report.describe()
    [path] = files(project / "Mail" / "Drafts")
    assert "Dana Whitfield <triager@example.org>" in path.read_text(encoding="utf-8")
    again = propose_reply(sources, thread, form.body, form=form)
    assert again.blocked and again.blocked.reason is BlockedBy.PENDING_DRAFT and again.existing


def _bytes_read() -> int:
    """What this process has read through read() so far (Linux /proc/self/io)."""
    with open("/proc/self/io") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("rchar:"))


_OPENED: list[str] | None = None


def _note_open(event: str, args: tuple) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], str):
        _OPENED.append(args[0])


def test_listing_drafts_reads_the_other_drafts_headers_once_and_never_their_bodies(maildir):
    """The row marks of a screen ask for the drafts of many threads: the Drafts folder's other
    drafts are told apart by their header block, read once while they stay unchanged, and a
    big draft's body is never read; only the thread's own drafts are read whole."""
    global _OPENED
    from mailtriage.backends.maildir import add_draft

    source = source_for(maildir)
    thread = ThreadId("msgid", ROOT)
    mine = source.create_draft(DraftRequest(thread, "Thanks.\n", ("reporter@example.net",), subject="Re: XSS",
                                            in_reply_to=ROOT, references=(ROOT,)))
    folder = maildir / "Drafts"
    for n in range(30):
        body = b"x" * (8 * 1024 * 1024) if n == 0 else b"Unrelated.\n"
        add_draft(folder, b"Message-ID: <other%d@example.org>\nIn-Reply-To: <elsewhere%d@example.org>\n"
                          b"Subject: other\n\n%s" % (n, n, body))
    others = [str(p) for p in files(folder) if str(p) != mine.draft_ref]
    sys.addaudithook(_note_open)
    _OPENED = []
    before = _bytes_read()
    try:
        many = source.list_drafts_of([thread, ThreadId("msgid", "<other@x>"), ThreadId("msgid", "<more@x>")])
        again = source.list_drafts(thread)
    finally:
        read, opened, _OPENED = _bytes_read() - before, _OPENED, None
    assert [d.draft_ref for d in many[thread]] == [d.draft_ref for d in again] == [mine.draft_ref]
    assert many[thread][0].body == "Thanks.\n"
    assert many[ThreadId("msgid", "<other@x>")] == [] and many[ThreadId("msgid", "<more@x>")] == []
    assert max(opened.count(p) for p in others) == 1, "another draft was read more than once"
    assert read < 1024 * 1024, f"{read:,} bytes read: the 8 MiB draft's body was read"
