"""The demo has half the app a newcomer could not try before (issue 35 item 8): a personal
Maildir account with folders and messages, tracker issues linked to their threads, and new
mail on a linked thread that Sync proposes. Checked on a fresh demo session, through the
application layer (the same calls the app and the CLI make)."""

import os
import subprocess

import pytest

from mailtriage.application import project_dir
from mailtriage.application.flows.sync import SyncFlow
from mailtriage.application.project import Project
from mailtriage.application.flows.importer import ImportFlow
from mailtriage.application.accounts import Mailboxes
from mailtriage.application.flows.compose import ComposeFlow
from mailtriage.core.settings import UserSettings
from mailtriage.demo.personal import ACCOUNT_ID
from mailtriage.demo.workspace import demo_settings


@pytest.fixture
def session(tmp_path, monkeypatch):
    monkeypatch.setenv("MAILTRIAGE_DEMO_DIR", str(tmp_path / "demo"))
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(tmp_path / "config"))
    return project_dir(demo_session=True)


def user_settings(tmp_path) -> UserSettings:
    return UserSettings(tmp_path / "config" / "config.toml",
                        {"theme": "light", "accounts": {"work": {"kind": "imap", "host": "imap.example.org"}}})


def test_the_demo_settings_hold_only_the_demo_account_and_leave_the_users_untouched(session, tmp_path):
    mine = user_settings(tmp_path)
    demo = demo_settings(mine, session)
    assert list(demo.accounts()) == [ACCOUNT_ID]  # never a real mailbox in the demo
    assert demo.accounts()[ACCOUNT_ID]["path"] == str(session / "Personal")
    assert demo.theme == "light" and demo.path == mine.path
    assert list(mine.accounts()) == ["work"]  # the user's settings are a different object, unchanged
    assert subprocess.run(["git", "status", "--porcelain"], cwd=session, capture_output=True,
                          text=True).stdout == ""  # the personal Maildir is not project history


def test_the_personal_account_has_folders_messages_and_drafts_but_never_sends(session, tmp_path):
    boxes = Mailboxes(demo_settings(user_settings(tmp_path), session))
    try:
        folders = {f.id: (f.role, f.unread, f.total) for f in boxes.folders(ACCOUNT_ID)}
        assert folders == {"INBOX": ("inbox", 2, 4), "Drafts": ("drafts", 0, 0), "Sent": ("sent", 0, 1),
                           "Archive": ("archive", 0, 1), "Trash": ("trash", 0, 0)}
        inbox = boxes.page(ACCOUNT_ID, "INBOX", 0, 50).messages
        assert [h.subject for h in inbox] == ["Security rota for December", "Key signing at the summit?",
                                              "[frobnicator] Nightly build failed on main (3.5.0-SNAPSHOT)",
                                              "Welcome to the security team"]
        rota = boxes.message(ACCOUNT_ID, inbox[0].id)
        assert [a.filename for a in rota.attachments] == ["rota-december.txt"]
        assert rota.content.header("X-Mailtriage-Demo") == "demo data, not real mail"

        flow = ComposeFlow(boxes.get(ACCOUNT_ID))
        proposal = flow.propose(flow.form("reply", rota.content), source_id=inbox[0].id)
        assert not proposal.blocked and [w.kind.value for w in proposal.writes] == ["draft"]
        assert any("saved to Drafts, not sent" in n for n in proposal.notes)
        assert proposal.apply(confirmed=True).ok
        [draft] = (session / "Personal" / ".Drafts" / "cur").iterdir()
        assert "Subject: Re: Security rota for December" in draft.read_text(encoding="utf-8")
    finally:
        boxes.close()


def test_sync_proposes_the_reporters_new_reply_on_a_linked_issue_and_import_finds_the_issue(session):
    project = Project.open(session)
    try:
        proposal = SyncFlow(project).propose()
        # SEC-0002 (the credit line) and, for the queue, SEC-0006 (the open redirect's follow-up)
        writes = {w.summary: w for w in proposal.writes}
        assert sorted(writes) == ["status rollup entry Sync on SEC-0002", "status rollup entry Sync on SEC-0006"]
        write = writes["status rollup entry Sync on SEC-0002"]
        entry = next(f.value for f in write.fields if f.label == "Entry")
        assert entry.startswith("1 new message since the Import entry of 2026-09-23:")
        assert 'Ana Costa (ana.costa@redteam.example.com) (reporter): Great, thanks' in entry

        threads = project.list_threads(None, project.since(None)).value
        auth = next(t for t in threads if t.subject.startswith("Authentication bypass"))
        imported = ImportFlow(project).propose(auth.thread_id)
        assert imported.facts["issue"] == "SEC-0002" and imported.facts["imported"] is True
    finally:
        project.close()
    assert os.stat(session).st_mode & 0o077 == 0
