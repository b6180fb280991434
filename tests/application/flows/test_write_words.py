"""Every write of a flow names itself in the user's words and says where it lands (issue 35 §6:
"TRACKER · will be written by backend tracker:local-files" was the fallback these replace)."""

from __future__ import annotations

import shutil

from mailtriage.backends.contract import Op, SourceOrigin, ThreadId
from mailtriage.backends.imap.source import ImapSource
from mailtriage.backends.maildir import MaildirDraftsSource
from mailtriage.core.projectconfig import load_project
from mailtriage.demo import demo_project_dir
from mailtriage.backends.registry import SourceSet
from mailtriage.application.flows.compose import NEW, ComposeForm, propose_personal
from mailtriage.application.flows.importer import propose_import
from mailtriage.application.flows.publish import propose_publish
from mailtriage.application.flows.reply import drafts_where, propose_reply
from mailtriage.application.flows.sync import Picks, collect_sync, propose_sync
from tests.application.flows.conftest import REPORT, mail, write_mbox
from tests.application.flows.test_reply import demo_thread

TID = ThreadId("mbox", REPORT)


def _words(proposal):
    return [(w.heading, w.destination) for w in proposal.writes]


def test_import_creates_an_issue_and_adds_its_entry_in_the_named_tracker(mbox_env):
    proposal = propose_import(SourceSet(mbox_env.config()), mbox_env.tracker(), TID, sender_name="Sam")
    where = f"in tracker local-files (git working copy {mbox_env.tracker().working_copy().root})"
    assert _words(proposal) == [("Create issue", where), ("Add Import entry to the new issue", where)]
    entry = next(f.value for f in proposal.writes[1].fields if f.label == "Entry")
    assert "; 1 message in the thread." in entry  # a count agrees with its noun


def test_sync_names_the_issue_each_write_changes(mbox_env):
    report = propose_import(SourceSet(mbox_env.config()), mbox_env.tracker(), TID, sender_name="Sam").apply(
        confirmed=True)
    issue = report.written[0][1]["id"]
    write_mbox(mbox_env.archive, [mail("<followup-1@reporter.example>", "Rita Reporter <rita@reporter.example>",
                                       "Re: Heap overflow in the frob parser", "More.\n",
                                       "Thu, 03 Sep 2026 12:00:00 +0000", in_reply_to=REPORT)])
    tracker = mbox_env.tracker()
    items = collect_sync(SourceSet(mbox_env.config()), tracker, None)
    proposal = propose_sync(tracker, items, {issue: Picks(remove_labels=["needs triage"], close="completed")})
    where = f"in tracker local-files (git working copy {tracker.working_copy().root})"
    assert _words(proposal) == [(f"Add Sync entry to {issue}", where), (f"Change labels of {issue}", where),
                                (f"Close {issue}", where)]
    entry = next(f.value for f in proposal.writes[0].fields if f.label == "Entry")
    assert entry.startswith("1 new message since ")


def test_publish_counts_the_changes_and_says_where_they_go(env):
    tracker = env.tracker()
    tracker.create("Heap overflow", "x\n", [])
    tracker.create("XSS in admin", "x\n", [])
    proposal = propose_publish(env.tracker(), env.config())
    root = tracker.working_copy().root
    assert _words(proposal) == [("Publish 2 changes and push",
                                 f"in tracker local-files (git working copy {root}): commit, then push to origin/main")]
    assert proposal.writes[0].summary == "publish 2 changed files and push"


def test_publish_of_one_change_says_one_changed_file(env):
    env.tracker().create("Heap overflow", "x\n", [])
    proposal = propose_publish(env.tracker(), env.config())
    assert [(w.heading, w.summary) for w in proposal.writes] == [("Publish 1 change and push",
                                                                  "publish 1 changed file and push")]


def test_a_reply_draft_is_saved_into_the_drafts_of_its_source(tmp_path):
    project = tmp_path / "demo"
    shutil.copytree(demo_project_dir(), project)
    (project / "Mail").mkdir(exist_ok=True)  # the demo's drafts Maildir
    sources = SourceSet(load_project(project))
    _, shown = demo_thread("Open redirect")
    thread = sources.dispatch(Op.READ_THREAD, lambda b: b.read_thread(shown.thread_id)).value
    proposal = propose_reply(sources, thread, "Thanks, looking.\n")
    assert proposal.writes, proposal.render_text()
    # The demo's drafts place is a local Maildir named "drafts": not "into the drafts of source drafts".
    assert _words(proposal) == [("Save draft", "into the local Maildir Mail/Drafts")]


def test_every_kind_of_drafts_place_reads_as_a_place(tmp_path, monkeypatch):
    project, home = tmp_path / "project", tmp_path / "home"
    (project / "Mail" / ".Drafts" / "cur").mkdir(parents=True)  # Maildir++: the folder actually written
    for sub in ("new", "tmp"):
        (project / "Mail" / ".Drafts" / sub).mkdir()
    origin = SourceOrigin(project_dir=project)
    inside = MaildirDraftsSource("drafts", {"path": "Mail", "address": "me@example.org"}, origin=origin)
    assert drafts_where(inside, "drafts") == "into the local Maildir Mail/.Drafts"
    monkeypatch.setenv("HOME", str(home))
    outside = MaildirDraftsSource("local", {"path": str(home / "Mail"), "drafts": "Entwürfe",
                                            "address": "me@example.org"}, origin=origin)
    assert drafts_where(outside, "local") == "into the local Maildir ~/Mail/Entwürfe"
    elsewhere = MaildirDraftsSource("local", {"path": "/srv/mail", "address": "me@example.org"}, origin=origin)
    assert drafts_where(elsewhere, "local") == "into the local Maildir /srv/mail/Drafts"
    # An account source whose account is not configured (the write is blocked, but the words still read).
    unconfigured = ImapSource("work", {"account": "nowhere"}, origin=origin)
    assert drafts_where(unconfigured, "work") == "into the drafts of mail source “work”"
    assert drafts_where(None, "gone") == "into the drafts of mail source “gone”"


def test_a_personal_draft_and_send_name_their_account():
    form = ComposeForm(NEW, ("rita@reporter.example",), (), "Status", "Fixed in 1.2.4.\n")
    draft = propose_personal(None, form, account_id="work", access="draft", from_address="me@example.org")
    assert _words(draft) == [("Save draft", "into Drafts of account work")]
    send = propose_personal(None, form, account_id="work", access="send", from_address="me@example.org")
    assert _words(send) == [("Send", "from account work, through its SMTP server")]


def test_an_account_without_a_from_address_refuses_the_draft_and_names_the_setting(tmp_path):
    """habits8 §3: an IMAP account with no ``address`` and a username that is not an address
    wrote drafts with no From: header while the proposal showed "From: account work". A
    draft needs a From to be sent: the proposal is blocked and names the setting; with
    ``address`` set the same form proposes the draft From that address."""
    from dataclasses import replace

    from mailtriage.application.flows.compose import ComposeFlow
    from mailtriage.application.flows.proposals import BlockedBy
    from mailtriage.backends.imap.account import ImapAccount
    from mailtriage.backends.imap.adapter import ImapMailbox

    account = ImapAccount.from_settings("work", {"kind": "imap", "host": "127.0.0.1", "security": "plain",
                                                  "username": "tess", "access": "draft"}, tmp_path / "config.toml")
    form = ComposeForm(NEW, ("rita@reporter.example",), (), "Status", "Fixed in 1.2.4.\n")
    proposal = ComposeFlow(ImapMailbox(account)).propose(form)
    assert not proposal.writes and proposal.blocked is not None
    assert proposal.blocked.reason is BlockedBy.SENDER
    assert 'address = "' in proposal.blocked.text and "[accounts.work]" in proposal.blocked.text
    assert "'tess' is not an address" in proposal.blocked.text
    fine = ComposeFlow(ImapMailbox(replace(account, address="tess@example.org"))).propose(form)
    assert [f.value for f in fine.writes[0].fields if f.label == "From"] == ["tess@example.org"]
