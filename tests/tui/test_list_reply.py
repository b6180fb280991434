"""``L`` (list-reply) in the app, on the real Dovecot + aiosmtpd: on a report to the security
list it is the project draft with the security CC (the one outgoing rule), never a send; on
the account's own list mail it goes to the list's List-Post address only; on mail that came
through no list it says why."""

from __future__ import annotations

from datetime import datetime, timezone

from mailtriage.tui.dialogs.compose import ComposeDialog
from tests.tui.helpers import make_app, screen_text, settle
from tests.tui.test_compose import LIST, MX, field, open_inbox, sending_project, smtp  # noqa: F401 (fixtures)
from tests.tui.test_imap_drafts import drafts
from tests.tui.test_security_cc_paths import confirm_twice

DEV_LIST = (f"Authentication-Results: {MX}; dmarc=pass header.from=example.net\r\n"
            "From: Carol Colleague <carol@example.net>\r\nTo: dev@lists.frob.example\r\n"
            "List-Post: <mailto:dev@lists.frob.example>\r\nSubject: Release timeline for 3.4\r\n"
            "Date: Sun, 04 Oct 2026 09:00:00 +0000\r\nMessage-ID: <dev-1@example.net>\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nShip on Friday?\r\n").encode()


async def test_L_on_list_mail_goes_to_the_list_on_other_mail_says_why_and_on_a_report_is_the_project_draft(
        sending_project, dovecot, dovecot_user, smtp):
    dovecot.append(dovecot_user, "INBOX", DEV_LIST, when=datetime(2026, 10, 4, 9, 0, tzinfo=timezone.utc))
    app = make_app(sending_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("L")  # the newest: the dev list's mail
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ComposeDialog)
        assert field(dialog, "to") == "dev@lists.frob.example" and field(dialog, "cc") == ""
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("j", "L")  # Carol's personal mail: no List-Post
        await settle(pilot)
        assert not isinstance(app.screen, ComposeDialog)
        # A refusal of the request, not a failure: a warning that says why, nothing in the error list.
        [said] = [n for n in app._notifications if "no List-Post address" in n.message]
        assert said.severity == "warning" and "(reply to the sender with r, to all with A)" in said.message
        assert app.errors == []
        # L on a report to the security list is the project draft (was
        # test_L_on_a_report_to_the_security_list_is_the_project_draft, an app of its own: the
        # cursor on Carol's mail, as there at the start, one row above the report).
        await pilot.press("j")
        assert app.main.threads.thread_list.current.subject == "Path traversal in frob-serve"
        await pilot.press("L")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ComposeDialog)
        assert "sent from account" not in screen_text(app)
        assert field(dialog, "to") == LIST
        proposal = await confirm_twice(app, pilot)
        assert "Save draft · into Drafts of account work" in proposal
    assert smtp.log.messages == []  # never a bare send
    [(draft, _flags)] = drafts(dovecot, dovecot_user)
    assert draft["To"] == LIST and draft["In-Reply-To"] == "<r2@example.com>"
