"""The writable local Maildir for reply drafts (issue 14 §8): configured like any source,
it writes a draft into the Drafts folder only after a confirmed proposal, finds its own
drafts by the Message-ID it made, and keeps the pending-draft rule."""

from __future__ import annotations

import mailbox
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
