"""Issue 35, f ... Ctrl+s: the confirmed write starts on the key (the proposal dialog calls it
before it leaves) and runs with the interpreter's switch interval lowered, so its round trips
do not wait behind the repaint of the screen the dialog leaves. Against the real Dovecot."""

from __future__ import annotations

import sys
import threading

from mailtriage.core.trace import TRACE
from mailtriage.tui.controllers.proposals import WRITE_SWITCH_INTERVAL, write_first
from mailtriage.tui.dialogs.compose import ComposeDialog
from mailtriage.tui.dialogs.proposal import ProposalDialog
from mailtriage.tui.dialogs.quit import QuitDialog
from tests.tui.helpers import make_app, screen_text, settle
from tests.tui.test_account_folders import inbox_flags, open_inbox
from tests.tui.test_imap_network import wait_until
from tests.tui.test_read_ahead import held_project  # noqa: F401 (fixture)
from tests.tui.test_tags import SUBJECTS, tags_project  # noqa: F401 (fixture)


async def test_ctrl_s_twice_writes_the_tagged_flags_once(tags_project, dovecot, dovecot_user):
    sent: list[str] = []

    def seen(line) -> None:
        if line.direction == ">" and " STORE " in f" {line.text} ":
            sent.append(line.text)

    app = make_app(tags_project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)
        await pilot.press("v", "v", "v")
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        assert isinstance(app.screen, ProposalDialog)
        dialog = app.screen
        stop = TRACE.subscribe(seen)
        try:
            # Two confirms before the dialog is gone (keys pressed through Pilot arrive after the
            # dismiss, so the second is called in the same turn as the first): one write.
            dialog.action_confirm()
            dialog.action_confirm()
            await settle(pilot)
        finally:
            stop()
        assert not isinstance(app.screen, ProposalDialog)
    assert len(sent) == 1 and "+FLAGS" in sent[0], sent  # one UID STORE for the three, once
    flags = inbox_flags(dovecot, dovecot_user)
    assert {s for s, f in flags.items() if b"\\Flagged" in f} == set(SUBJECTS[1:])


async def test_q_while_the_confirmed_write_runs_asks_first_and_quits_at_once_after_it(held_project, user_config,
                                                                                     dovecot_user):
    """A quit while a confirmed write is on its way asks first (the write is the proposals
    component's worker, not the screen's: the quit's look must find it there too). The reply's
    draft waits for the held server; once it is written, q quits without asking."""
    project, proxy = held_project
    settings = user_config / "config.toml"  # [accounts.work] is its last table: the draft's From
    settings.write_text(settings.read_text() + f'address = "{dovecot_user.name}@example.org"\n')
    app = make_app(project)
    async with app.run_test(size=(140, 44)) as pilot:
        await open_inbox(app, pilot)  # the personal message is the first row
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, ComposeDialog))
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ProposalDialog))
        proxy.hold()
        try:
            await pilot.press("ctrl+s")  # confirmed: the draft's APPEND gets no answer yet
            await wait_until(pilot, lambda: not isinstance(app.screen, ProposalDialog))
            await pilot.press("q")
            await wait_until(pilot, lambda: isinstance(app.screen, QuitDialog))
            assert "a confirmed write is still running" in screen_text(app)
            await pilot.press("n")  # stay
            await wait_until(pilot, lambda: not isinstance(app.screen, QuitDialog))
        finally:
            proxy.release()
        await wait_until(pilot, lambda: any(n.title == "Written" for n in app._notifications))
        await settle(pilot)
        await pilot.press("q")
        assert app.return_code == 0


def test_write_first_lowers_the_switch_interval_while_any_write_runs():
    before = sys.getswitchinterval()
    inside: list[float] = []
    started, release = threading.Event(), threading.Event()

    def other_write() -> None:
        with write_first():
            started.set()
            release.wait(10)
            inside.append(sys.getswitchinterval())

    thread = threading.Thread(target=other_write)
    with write_first():
        thread.start()
        assert started.wait(10)
        inside.append(sys.getswitchinterval())
    inside.append(sys.getswitchinterval())  # the other write still runs: still lowered
    release.set()
    thread.join(10)
    assert inside == [WRITE_SWITCH_INTERVAL] * 3
    assert sys.getswitchinterval() == before
