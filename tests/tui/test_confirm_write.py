"""Issue 35, f ... Ctrl+s: the confirmed write starts on the key (the proposal dialog calls it
before it leaves) and runs with the interpreter's switch interval lowered, so its round trips
do not wait behind the repaint of the screen the dialog leaves. Against the real Dovecot."""

from __future__ import annotations

import sys
import threading

from mailtriage.core.trace import TRACE
from mailtriage.tui.controllers.proposals import WRITE_SWITCH_INTERVAL, write_first
from mailtriage.tui.dialogs.proposal import ProposalDialog
from tests.tui.helpers import make_app, settle
from tests.tui.test_account_folders import inbox_flags, open_inbox
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
