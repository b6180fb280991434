"""IMAP receipt drafts exactly once (issue 30, item 4): after its APPEND a run looks in
Drafts for its Message-ID; when two runs appended, the later copy (by UID) is deleted, so
concurrent imports of one thread leave one receipt. Real Dovecot, real CLI processes."""

from __future__ import annotations

import email
import os
from datetime import datetime, timedelta, timezone
from email import policy
from pathlib import Path

import pytest

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.imap.account import password_key
from mailtriage.core.secrets import set_secret
from mailtriage.application.flows.importer import ImportFlow, propose_import
from mailtriage.backends.registry import SourceSet
from tests.application.flows.conftest import REPORT, mail
from tests.application.flows.test_concurrent_imports import RUNS, child_keyring, issue_files, run_many  # noqa: F401

pytestmark = pytest.mark.slow  # real CLI processes racing

LIST = "security@frobnicator.example.org"
NOW = datetime.now(timezone.utc).replace(microsecond=0)


@pytest.fixture
def imap_env(env, dovecot, dovecot_user, child_keyring):
    config_dir = Path(os.environ["MAILTRIAGE_CONFIG_DIR"])
    config_dir.mkdir(exist_ok=True)
    (config_dir / "config.toml").write_text(f"""
name = "Sam Security"

[accounts.work]
kind = "imap"
host = "127.0.0.1"
port = {dovecot.port}
security = "plain"
username = "{dovecot_user.name}"
address = "sam@frobnicator.example.org"
access = "draft"
""", encoding="utf-8")
    set_secret(password_key("work"), dovecot_user.password)
    env.write_project([("imap", "primary", "yes")], extra={"mail_sources.imap": {"account": "work", "list": LIST}})
    env.dovecot, env.user, env.child_env = dovecot, dovecot_user, child_keyring
    sent = (NOW - timedelta(hours=5))
    dovecot.append(dovecot_user, "INBOX", mail(REPORT, "Rita Reporter <rita@reporter.example>", "Heap overflow",
                                               "The parser overflows.\n", sent.strftime("%a, %d %b %Y %H:%M:%S +0000"),
                                               to=LIST).as_bytes(policy=policy.SMTP), when=sent)
    with dovecot.client(dovecot_user) as client:
        if not client.folder_exists("Drafts"):
            client.create_folder("Drafts")
    return env


def drafts(env) -> list[tuple[int, str]]:
    """(UID, Message-ID) of every message in Drafts."""
    with env.dovecot.client(env.user) as client:
        client.select_folder("Drafts", readonly=True)
        uids = client.search(["ALL"])
        data = client.fetch(uids, ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]) if uids else {}
    out = []
    for uid in sorted(data):
        header = next(v for k, v in data[uid].items() if k.startswith(b"BODY"))
        out.append((uid, email.message_from_bytes(header)["Message-ID"]))
    return out


def test_a_draft_appended_twice_is_kept_once_by_the_next_run(imap_env):
    """Two runs that both passed the pending check both APPEND the same receipt (same
    Message-ID): the state they leave is two copies. The run's own look in Drafts keeps the
    first by UID and deletes the later."""
    sources = SourceSet(imap_env.config())
    try:
        proposal = propose_import(sources, imap_env.tracker(), ThreadId("imap", REPORT))
        receipt = proposal.writes[2]
        assert receipt.kind.value == "draft"
        assert proposal.apply(confirmed=True).ok
        [(uid, message_id)] = drafts(imap_env)
        with imap_env.dovecot.client(imap_env.user) as client:  # the other run's APPEND of the same draft
            client.select_folder("Drafts", readonly=True)
            raw = client.fetch([uid], ["BODY.PEEK[]"])[uid][b"BODY[]"]
        imap_env.dovecot.append(imap_env.user, "Drafts", raw, flags=(b"\\Draft", b"\\Seen"))
        assert [m for _, m in drafts(imap_env)] == [message_id, message_id]

        draft = receipt.apply(receipt)  # the same request again, as the racing run makes it
    finally:
        sources.close()
    assert drafts(imap_env) == [(uid, message_id)]
    assert str(draft.draft_ref).endswith(f":{uid}")


def test_five_processes_importing_one_thread_leave_one_issue_and_one_receipt(imap_env):
    results = run_many(imap_env.project, [["import", f"imap:{REPORT}", "--yes"]] * RUNS, imap_env.child_env)
    assert all(code == 0 for code, _, _ in results), [r[2] for r in results]
    assert issue_files(imap_env.tracker_root) == ["SEC-0001.md"]
    found = drafts(imap_env)
    assert len(found) == 1, found


def test_bulk_import_drafts_no_receipt_for_a_thread_the_team_already_answered(imap_env):
    """Issue 30, item 7: tagged rows imported at once; the thread a team member already
    answered on the list gets its issue but no receipt (a receipt on top of the team's own
    answer); the fresh report gets one."""
    from mailtriage.application.project import Project

    fresh = "<fresh-1@reporter.example>"
    when = NOW - timedelta(hours=3)
    date = when.strftime("%a, %d %b %Y %H:%M:%S +0000")
    imap_env.dovecot.append(imap_env.user, "INBOX", mail(fresh, "Fred Finder <fred@finder.example>", "XSS in admin",
                                                         "Script runs.\n", date, to=LIST).as_bytes(policy=policy.SMTP),
                            when=when)
    later = NOW - timedelta(hours=2)
    imap_env.dovecot.append(imap_env.user, "INBOX", mail(
        "<answer-1@frobnicator.example.org>", "Tara Team <tara@frobnicator.example.org>", "Re: Heap overflow",
        "Thanks, we are on it.\n", later.strftime("%a, %d %b %Y %H:%M:%S +0000"), to=LIST,
        in_reply_to=REPORT).as_bytes(policy=policy.SMTP), when=later)
    project = Project.open(imap_env.project)
    try:
        proposal = ImportFlow(project).propose_many(
            [ThreadId("imap", REPORT), ThreadId("imap", fresh)], sender_name="Sam Security")
        drafts_proposed = [w for w in proposal.writes if w.kind.value == "draft"]
        assert len(drafts_proposed) == 1 and drafts_proposed[0].summary.startswith("[2/2]")
        assert any("[1/2]" in n and "already answered" in n and "tara@frobnicator.example.org" in n
                   for n in proposal.notes), proposal.notes
        assert len([w for w in proposal.writes if w.kind.value == "tracker"]) == 4  # both imported
        assert proposal.apply(confirmed=True).ok
    finally:
        project.close()
    assert len(drafts(imap_env)) == 1
