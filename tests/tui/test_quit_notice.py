"""A quit that waits says what for (tui/dialogs/quitting.py): a confirmed send whose text is at
the SMTP server (real aiosmtpd, its answer held) keeps the app up with "the mail is being sent…"
on screen until the send and its copy to Sent are done; then the app ends. The close ran in
on_unmount before, after the screens had gone: nothing on the terminal said why it waited."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from mailtriage.application import service_lock
from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.dialogs.quit import QuitDialog
from mailtriage.tui.dialogs.quitting import QuittingNotice
from tests.tui.helpers import make_app, screen_text, settle, until
from tests.tui.test_compose import compose, open_inbox, sending_project, sent_subjects, smtp  # noqa: F401 (fixtures)


@pytest.fixture
def long_waits(monkeypatch):
    """The close's own waits (1 s for the write, then 3 s) made 30 s: a loaded machine cannot make
    the close give up on the send before the test lets the server answer."""
    monkeypatch.setattr(service_lock, "CLOSE_WAIT", 30.0)
    monkeypatch.setattr(service_lock, "ABORT_WAIT", 30.0)


async def test_a_quit_while_the_mail_is_sent_says_so_and_ends_after_it(sending_project, dovecot, dovecot_user,
                                                                       smtp, long_waits):  # noqa: F811
    smtp.hold_answers()
    app = make_app(sending_project)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await open_inbox(app, pilot)
            dialog = await compose(app, pilot, "C")
            await pilot.press(*"dev@example.net")
            dialog.query_one("#compose-subject", Input).value = "Fix timeline"
            await pilot.press("ctrl+s")
            await settle(pilot)
            assert isinstance(app.screen, ProposalDialog)
            await pilot.press("ctrl+s")  # confirmed: the send runs on a worker
            await until(pilot, smtp.log.text_in.is_set, "the mail's text at the server")
            await pilot.press("q")
            await until(pilot, lambda: isinstance(app.screen, QuitDialog), "the quit dialog")
            await pilot.press("y")
            await until(pilot, lambda: isinstance(app.screen, QuittingNotice), "the quitting notice")
            assert "The mail is being sent…" in screen_text(app)
            assert app.return_code is None  # still up: the send is not done
            await pilot.press("q")  # a second quit changes nothing: the notice stays
            assert isinstance(app.screen, QuittingNotice) and app.return_code is None
            await pilot.press("ctrl+q")
            assert isinstance(app.screen, QuittingNotice) and app.return_code is None
            smtp.release_answers()
            await until(pilot, lambda: app.return_code is not None, "the app to end")
    finally:
        smtp.release_answers()
    assert app.return_code == 0
    [mail] = smtp.log.messages
    assert mail.message["Subject"] == "Fix timeline"
    assert sent_subjects(dovecot, dovecot_user) == ["Fix timeline"]  # the write ended whole before the close

