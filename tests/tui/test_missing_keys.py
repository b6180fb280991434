"""The keys mutt and aerc users miss (issue 35 §4), driven as a user would on real mbox
archives and the real Dovecot: full headers, change folder, tag prefix, g/G in the
folders pane, and the setting that skips the confirmation of reversible flag changes."""

from __future__ import annotations

from mailtriage.tui.dialogs.folder_jump import FolderJump
from mailtriage.tui.dialogs.headers import HeadersDialog
from mailtriage.tui.panes.thread_list import ThreadList
from tests.tui.helpers import mail, make_app, mbox_project, screen_text, settle, standard_messages

RECEIVED = "from mx.attacker.invalid (mx.attacker.invalid [203.0.113.9]) by mx.frob.example with ESMTPS id 4Xk"
AUTH = "mx.frob.example; dkim=fail header.d=frob.example; spf=softfail smtp.mailfrom=attacker.invalid"


def spoofed_report():
    return mail("Urgent: rotate the signing key", "Release Manager <release@frob.example>",
                "Tue, 03 Nov 2026 08:00:00 +0000", "<spoof-1@attacker.invalid>", "Please rotate it now.\n",
                headers={"Received": RECEIVED, "Authentication-Results": AUTH,
                         "X-Injected": "\x1b]8;;https://evil.invalid\x07click\u202e me"})


def headers_dialog_text(app) -> str:
    return "\n".join(static.content.plain for static in app.screen.query(".headers-message"))


async def test_h_shows_every_header_inert_and_esc_closes(tmp_path):
    app = make_app(mbox_project(tmp_path / "p", messages=[*standard_messages(), spoofed_report()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        thread_list = app.screen.query_one(ThreadList)
        assert thread_list.current.subject == "Urgent: rotate the signing key"  # newest first
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("4", "h")
        await settle(pilot)
        assert isinstance(app.screen, HeadersDialog)
        shown = headers_dialog_text(app)
        assert f"Received: {RECEIVED}" in shown
        assert f"Authentication-Results: {AUTH}" in shown
        assert "X-Injected: \\x1b]8;;https://evil.invalid\\x07click⟨U+202E⟩ me" in shown
        assert "\x1b" not in shown and "\u202e" not in shown
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, HeadersDialog)


def notices(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_tag_prefix_says_what_the_next_key_acts_on(tmp_path):
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("semicolon")
        await settle(pilot)
        assert any(n.startswith("tag prefix: no row is tagged") for n in notices(app))
        await pilot.press("v", "v", "semicolon")
        await settle(pilot)
        assert "tag prefix: the next action (m f a d M i) acts on the 2 tagged rows" in notices(app)
