"""r, A, F and C in the app (issue 14 §2, §8): the compose dialog, then the proposal, then
the write. Project sources get drafts with the security CC (here a local Maildir, as in the
demo); a personal account sends through Principle 10 with a copy in Sent (real Dovecot +
aiosmtpd)."""

from __future__ import annotations

import os
import stat
from datetime import datetime, timezone
from email import message_from_bytes, policy

import pytest
from textual.widgets import Input, Static, TextArea

from mailtriage.backends.imap.account import password_key, smtp_password_key
from mailtriage.core.secrets import set_secret
from mailtriage.tui.dialogs.compose import ComposeDialog
from mailtriage.tui.dialogs.proposal import ProposalDialog
from tests.servers.smtp import SmtpServer
from tests.tui.helpers import back_to_the_list, make_app, mbox_project, screen_text, settle
from mailtriage.tui.panes.folders import FolderList
from mailtriage.tui.panes.thread_list import ThreadList

LIST = "security@frob.example"
MX = "mx.example.org"


def report(n: int, subject: str) -> bytes:
    return (f"From: Ana Reporter <ana@example.com>\r\nTo: {LIST}\r\nSubject: {subject}\r\n"
            f"Date: Thu, 0{n} Oct 2026 09:00:00 +0000\r\nMessage-ID: <r{n}@example.com>\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
            f"Body of report {n}.\r\n").encode()


async def open_inbox(app, pilot):
    """Sources pane → the account → its folders → INBOX (as in test_account_folders)."""
    await settle(pilot)
    await pilot.press("1")
    await settle(pilot)
    await pilot.press("down", "enter")
    await settle(pilot)
    assert isinstance(app.focused, FolderList)
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(app.focused, ThreadList)


def drafting_project(folder):
    """The TUI test project with a local Maildir that writes the drafts (as the demo has)."""
    project = mbox_project(folder, extra_rows=[("drafts", "preferred for create_draft, list_drafts", "no")],
                           extra_config={"mail_sources": {
                               "mbox": {"path": "list.mbox", "list": LIST, "parallel": False},
                               "drafts": {"kind": "maildir", "path": "Mail", "address": "triager@frob.example"}}})
    (project / "Mail").mkdir()
    return project


def maildir_drafts(project):
    folder = project / "Mail" / "Drafts" / "cur"
    return sorted(folder.iterdir()) if folder.is_dir() else []


async def compose(app, pilot, *keys: str) -> ComposeDialog:
    await settle(pilot)
    await pilot.press(*keys)
    await settle(pilot)
    assert isinstance(app.screen, ComposeDialog), type(app.screen)
    return app.screen


def field(dialog, name: str) -> str:
    return dialog.query_one(f"#compose-{name}", Input).value


async def test_r_on_a_fresh_report_gives_the_receipt_and_writes_a_draft_you_can_see(tmp_path):
    project = drafting_project(tmp_path / "p")
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        dialog = await compose(app, pilot, "r")  # the newest thread: Bob's question, nobody answered
        assert not [n for n in app._notifications if n.title == "Draft pending"]  # none yet
        assert dialog.form.kind == "receipt" and field(dialog, "to") == "bob@example.net"
        assert field(dialog, "cc") == LIST and field(dialog, "subject") == "Re: Question about 3.4 fixes"
        body = dialog.query_one("#compose-body", TextArea).text
        assert body.startswith("Hi Bob Builder,") and "Test Triager" in body
        await pilot.press("ctrl+r")  # the other one is one key away
        await settle(pilot)
        assert dialog.form.kind == "reply"
        assert "wrote:\n> Will 3.4 get the fix?" in dialog.query_one("#compose-body", TextArea).text
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert dialog.form.kind == "receipt"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        shown = screen_text(app)
        assert "1. Save draft · into the local Maildir Mail/Drafts" in shown
        assert f"Cc: {LIST}   ◀ security CC" in shown
        assert maildir_drafts(project) == []  # nothing is written before the confirmation
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, (ProposalDialog, ComposeDialog))
        [path] = maildir_drafts(project)
        status = app.screen.query_one("#reader-status", Static).content
        assert f"draft written: Re: Question about 3.4 fixes → bob@example.net · {path}" in str(status)
        # r again (issue 35): that draft is pending on the thread, so whatever is written now is
        # blocked at the review. Said when r opens the dialog, with where to find the draft.
        app.clear_notifications()
        dialog = await compose(app, pilot, "r")
        toasts = [" ".join(n.message.split()) for n in app._notifications]
        assert toasts == ["A draft is already pending on this thread: Re: Question about 3.4 fixes → bob@example.net, "
                          "in the local Maildir Mail/Drafts (✎ on its row). A new draft on it is blocked at the "
                          "review until that one is sent or deleted."], toasts
        await pilot.press("escape")
        await settle(pilot)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    draft = message_from_bytes(path.read_bytes(), policy=policy.default)
    assert draft["From"] == "Test Triager <triager@frob.example>" and draft["Cc"] == LIST
    assert not [k for k in draft.keys() if k.lower().startswith("x-mailtriage")]


async def r_in_the_reader_runs_on_the_app_s_handling_of_the_key_and_asks_the_screen_directly(app, pilot) -> None:
    """Issue 35: an r typed in the reader went down to the view, bubbled up through its pane and
    the screen to the App's bindings, and its reply request bubbled up again from the view: a
    frame could run between any two hops. Now the App runs the binding as it takes the key, and
    the request goes to the screen: neither the view nor its pane is posted anything."""
    from mailtriage.tui.panes.reader import ReaderPane, ThreadView

    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)
    view, pane = app.focused, app.screen.query_one(ReaderPane)
    assert isinstance(view, ThreadView)
    posted: list[str] = []
    for widget in (view, pane):
        def posting(message, real=widget.post_message) -> bool:
            posted.append(type(message).__name__)
            return real(message)
        widget.post_message = posting
    dialog = await compose(app, pilot, "r")
    assert dialog.form.kind == "receipt" and field(dialog, "cc") == LIST  # the security CC kept
    assert "Key" not in posted and "ReplyRequested" not in posted, posted


async def a_follow_up_gets_a_quoted_reply_and_reply_all_keeps_the_security_cc(app, pilot) -> None:
    await settle(pilot)
    await pilot.press("G", "enter")  # the heap overflow thread: Priya answered already
    await settle(pilot)
    dialog = await compose(app, pilot, "r")
    assert dialog.form.kind == "reply" and field(dialog, "to") == "ana@example.com"
    await pilot.press("escape")
    await settle(pilot)
    assert not isinstance(app.screen, ComposeDialog)
    dialog = await compose(app, pilot, "A")
    assert dialog.form.kind == "reply_all" and LIST in field(dialog, "cc")
    # Removing the security CC blocks the proposal: project replies always copy the list.
    dialog.query_one("#compose-cc", Input).value = ""
    await pilot.press("ctrl+s")
    await settle(pilot)
    assert isinstance(app.screen, ProposalDialog)
    shown = screen_text(app)
    assert "Nothing can be written" in shown and "security CC security@frob.example was removed" in shown
    # Blocked means blocked: no draft text to copy or edit (was test_flows.py's
    # test_blocked_reply_offers_no_text_to_copy, a second Pilot run for the same dialog).
    assert "copy the text" not in shown and "Would write" not in shown and "in copy" not in shown
    assert not app.screen.query(TextArea) and not app.screen.can_confirm
    await pilot.press("escape")
    await settle(pilot)


async def test_f_forwards_inline_and_asks_for_a_recipient(tmp_path):
    project = drafting_project(tmp_path / "p")
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        dialog = await compose(app, pilot, "F")
        assert dialog.form.kind == "forward" and field(dialog, "to") == ""
        assert field(dialog, "subject") == "Fwd: Question about 3.4 fixes"
        assert app.focused is dialog.query_one("#compose-to", Input)  # To first: it is empty
        await pilot.press(*"dev@frob.example")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog) and app.screen.can_confirm
        await pilot.press("ctrl+s")
        await settle(pilot)
    [path] = maildir_drafts(project)
    draft = message_from_bytes(path.read_bytes(), policy=policy.default)
    assert draft["To"] == "dev@frob.example" and "---------- Forwarded message ----------" in draft.get_content()


async def c_is_for_personal_accounts_only(app, pilot) -> None:
    await settle(pilot)
    await pilot.press("C")
    await settle(pilot)
    assert not isinstance(app.screen, ComposeDialog)
    assert any("personal account" in n.message for n in app._notifications)


async def the_editor_edits_the_headers_and_they_are_checked(app, pilot, tmp_path) -> None:
    """$EDITOR (set by the test: a script that swaps the recipient and adds a header line nobody
    may add) gets the headers and the body, and what it leaves is checked."""
    dialog = await compose(app, pilot, "r")
    await pilot.press("ctrl+o")
    await settle(pilot)
    assert field(dialog, "to") == "carol@example.net" and field(dialog, "subject") == "Edited"
    assert "'Bcc' is not one of" in str(dialog.query_one("#compose-problems").render())
    await pilot.press("ctrl+s")
    await settle(pilot)
    assert isinstance(app.screen, ProposalDialog) and not app.screen.can_confirm
    await pilot.press("escape")
    await settle(pilot)
    seen = (tmp_path / "seen.eml").read_text(encoding="utf-8")  # what the editor was given
    assert seen.startswith("To: bob@example.net\nCc: security@frob.example\n"
                           "Subject: Re: Question about 3.4 fixes\nAttach: \n\nHi Bob Builder,")
    assert seen.endswith("\n") and not seen.endswith("\n\n\n")  # the editor file ends with a newline


def an_editor_that_adds_a_bcc(tmp_path, monkeypatch) -> None:
    script = tmp_path / "editor.sh"
    # An "editor" that swaps the recipient and adds a header line nobody may add.
    script.write_text("#!/bin/sh\ncp \"$1\" " + str(tmp_path / "seen.eml") + "\n"
                      "sed -i -e 's/^To: .*/To: carol@example.net/' "
                      "-e 's/^Subject: .*/Subject: Edited\\nBcc: leak@attacker.invalid/' \"$1\"\n")
    script.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(script))
    monkeypatch.delenv("VISUAL", raising=False)


async def test_the_keys_that_open_no_draft_on_a_project_thread(tmp_path, monkeypatch):
    """Four checks that write nothing, on one app of the drafting project at 140x44 (each was a
    test with an app of its own; issue 36 §7): C is for personal accounts only; r in the reader
    is the app's key; $EDITOR's headers are checked; a follow-up's reply and reply-all, the
    latter blocked without the security CC. Each starts from the list (``back_to_the_list``)."""
    project = drafting_project(tmp_path / "p")
    an_editor_that_adds_a_bcc(tmp_path, monkeypatch)
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await c_is_for_personal_accounts_only(app, pilot)
        await r_in_the_reader_runs_on_the_app_s_handling_of_the_key_and_asks_the_screen_directly(app, pilot)
        await back_to_the_list(pilot)  # the cursor still on the newest thread, Bob's question
        await the_editor_edits_the_headers_and_they_are_checked(app, pilot, tmp_path)
        await back_to_the_list(pilot)
        await a_follow_up_gets_a_quoted_reply_and_reply_all_keeps_the_security_cc(app, pilot)
    assert maildir_drafts(project) == []


# -- a personal account: send after confirmation, a copy in Sent -------------------------

@pytest.fixture
def smtp(dovecot):
    server = SmtpServer(dovecot.cert, mode="starttls").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def sending_project(tmp_path, user_config, dovecot, dovecot_user, memory_keyring, smtp, monkeypatch):
    address = f"{dovecot_user.name}@example.org"
    (user_config / "config.toml").write_text(f'''name = "Test Triager"
signature = "Test Triager\\nFrob security"

[accounts.work]
kind = "imap"
host = "127.0.0.1"
port = {dovecot.port}
security = "plain"
username = "{dovecot_user.name}"
address = "{address}"
access = "send"
smtp_host = "127.0.0.1"
smtp_port = {smtp.port}
smtp_security = "starttls"
authserv_id = "{MX}"
ca_file = "{dovecot.cert.cert}"
''', encoding="utf-8")
    set_secret(password_key("work"), dovecot_user.password)
    smtp.add_user(dovecot_user.name, "smtp-secret")
    set_secret(smtp_password_key("work"), "smtp-secret")
    project = tmp_path / "project"
    project.mkdir()
    (project / "project.md").write_text(f"""# Frob project

## Mail sources

| Backend | Role | Mandatory | Notes |
|---|---|---|---|
| `imap` | primary | no | the security list folder |

## Configuration

```yaml
security_list: {LIST}
mail_sources:
  imap:
    account: work
    folder: INBOX
    list: {LIST}
```
""", encoding="utf-8")
    passed = f"Authentication-Results: {MX}; dmarc=pass header.from=example.com\r\n".encode()
    for n, subject in ((1, "Heap overflow in the frob parser"), (2, "Path traversal in frob-serve")):
        dovecot.append(dovecot_user, "INBOX", passed + report(n, subject),
                       when=datetime(2026, 10, n, 9, 0, tzinfo=timezone.utc))
    # The newest is the account's own mail, not to the list: only such mail is sent personally
    # (a report to the security list is answered as the project's draft: issue 30).
    dovecot.append(dovecot_user, "INBOX", PERSONAL.replace(b"TO", address.encode()),
                   when=datetime(2026, 10, 3, 9, 0, tzinfo=timezone.utc))
    return project


PERSONAL = (f"Authentication-Results: {MX}; dmarc=pass header.from=example.net\r\n"
            "From: Carol Colleague <carol@example.net>\r\nTo: TO\r\nSubject: Release timeline\r\n"
            "Date: Sat, 03 Oct 2026 09:00:00 +0000\r\nMessage-ID: <timeline-1@example.net>\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
            "When does 3.4 ship?\r\n").encode()


def sent_subjects(dovecot, user) -> list[str]:
    with dovecot.client(user) as client:
        if not client.folder_exists("Sent"):
            return []
        client.select_folder("Sent", readonly=True)
        uids = client.search("ALL")
        fetched = client.fetch(uids, ["BODY.PEEK[HEADER.FIELDS (SUBJECT)]"]) if uids else {}
        return sorted(d[b"BODY[HEADER.FIELDS (SUBJECT)]"].decode().strip().partition(": ")[2]
                      for d in fetched.values())


async def test_a_personal_reply_is_sent_after_confirmation_with_a_copy_in_sent(sending_project, dovecot,
                                                                               dovecot_user, smtp):
    app = make_app(sending_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        dialog = await compose(app, pilot, "r")  # the newest: Carol's mail to the account, not to the list
        assert "sent from account work after you confirm it" in screen_text(app)
        assert field(dialog, "to") == "carol@example.net" and field(dialog, "cc") == ""  # no project CC here
        assert dialog.query_one("#compose-body", TextArea).text.endswith("-- \nTest Triager\nFrob security\n")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        assert "1. Send · from account work, through its SMTP server" in screen_text(app)
        assert smtp.log.messages == []
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, ProposalDialog)
    [mail] = smtp.log.messages
    assert mail.rcpt_tos == ["carol@example.net"]
    assert mail.message["From"] == f"Test Triager <{dovecot_user.name}@example.org>"
    assert mail.message["Subject"] == "Re: Release timeline"
    assert sent_subjects(dovecot, dovecot_user) == ["Re: Release timeline"]


async def test_c_writes_new_mail_from_the_open_account(sending_project, dovecot, dovecot_user, smtp):
    app = make_app(sending_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        dialog = await compose(app, pilot, "C")
        assert dialog.form.kind == "new" and field(dialog, "to") == ""
        await pilot.press(*"dev@example.net")
        dialog.query_one("#compose-subject", Input).value = "Fix timeline"
        await pilot.press("ctrl+s")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
    [mail] = smtp.log.messages
    assert mail.rcpt_tos == ["dev@example.net"] and mail.message["Subject"] == "Fix timeline"
    assert sent_subjects(dovecot, dovecot_user) == ["Fix timeline"]
    assert os.environ.get("MAILTRIAGE_DATA_DIR")  # the send ledger went to the test's folder


async def test_f_on_a_personal_message_forwards_it_attached_after_ctrl_g(sending_project, dovecot, dovecot_user, smtp):
    app = make_app(sending_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        dialog = await compose(app, pilot, "F")
        assert dialog.form.title == "Forward · inline" and "---------- Forwarded message" in \
            dialog.query_one("#compose-body", TextArea).text
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert dialog.form.title == "Forward · as an attachment"
        await pilot.press(*"dev@example.net")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "Forward: the original attached whole" in screen_text(app)
        await pilot.press("ctrl+s")
        await settle(pilot)
    [mail] = smtp.log.messages
    assert mail.message["Subject"] == "Fwd: Release timeline"
    assert [p.get_content_type() for p in mail.message.iter_attachments()] == ["message/rfc822"]
