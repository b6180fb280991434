"""The keys mutt and aerc users miss (issue 35 §4), driven as a user would on real mbox
archives and the real Dovecot: full headers, change folder, tag prefix, g/G in the
folders pane, and the setting that skips the confirmation of reversible flag changes."""

from __future__ import annotations

from mailtriage.tui.dialogs.folder_jump import FolderJump
from mailtriage.tui.dialogs.headers import HeadersDialog
from tests.tui.helpers import back_to_the_list, make_app, mbox_project, screen_text, settle, standard_messages

RECEIVED = "from mx.attacker.invalid (mx.attacker.invalid [203.0.113.9]) by mx.frob.example with ESMTPS id 4Xk"
AUTH = "mx.frob.example; dkim=fail header.d=frob.example; spf=softfail smtp.mailfrom=attacker.invalid"


def spoofed_report() -> bytes:
    """A spoofed report as raw bytes (mailbox.mbox takes them as they are): one line per
    header, and a header carrying a raw escape sequence and a bidi override."""
    return (f"From: Release Manager <release@frob.example>\nTo: security@frob.example\n"
            f"Subject: Urgent: rotate the signing key\nDate: Tue, 03 Nov 2026 08:00:00 +0000\n"
            f"Message-ID: <spoof-1@attacker.invalid>\nReceived: {RECEIVED}\nAuthentication-Results: {AUTH}\n"
            "X-Injected: \x1b]8;;https://evil.invalid\x07click\u202e me\n"
            "Content-Type: text/plain; charset=utf-8\nMIME-Version: 1.0\n\nPlease rotate it now.\n").encode()


def headers_dialog_text(app) -> str:
    return "\n".join(static.content.plain for static in app.screen.query(".headers-message"))


def every_header_inert(app) -> None:
    """h on the newest (the spoofed report): every header, inert. Checked in the full-headers
    snapshots' app (tests/tui/test_snapshots_keys.py; was test_h_shows_every_header_inert_and_esc_closes,
    whose Esc is now test_x_in_full_headers_shows_the_raw_source_inert_and_back's last key)."""
    assert isinstance(app.screen, HeadersDialog)
    shown = headers_dialog_text(app)
    assert "Urgent: rotate the signing key" in shown  # newest first: the spoofed report
    assert f"Received: {RECEIVED}" in shown
    assert f"Authentication-Results: {AUTH}" in shown
    assert "X-Injected: \\x1b]8;;https://evil.invalid\\x07click⟨U+202E⟩ me" in shown
    assert "\x1b" not in shown and "\u202e" not in shown


def change_folder_does_not_blink(app) -> None:
    # A blinking cursor made the change-folder snapshot flaky (drawn or not at the capture).
    # (was test_change_folder_filter_follows_the_apps_cursor_blink; now in the snapshot's own app)
    assert isinstance(app.screen, FolderJump)
    assert app.screen.query_one("#folder-jump-filter").cursor_blink is False


def pipe_command_does_not_blink(app) -> None:
    # The pipe dialog's command field blinked whatever the app's setting: its snapshot failed
    # at load 12+ (the capture fell in the cursor's off half-second).
    # (was test_pipe_command_field_follows_the_apps_cursor_blink; now in the snapshot's own app)
    from mailtriage.tui.dialogs.pipe import PipeDialog

    assert isinstance(app.screen, PipeDialog)
    assert app.screen.query_one("#pipe-command").cursor_blink is False


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
        # habits8 §4: on the status line while it waits (a toast would cover that line, and go).
        assert "; waits: the next action acts on the 2 tagged rows (Esc drops it)" in status_line(app)
        await pilot.press("escape")  # dropped; the tags stay, and Esc does nothing else
        await settle(pilot)
        assert "waits" not in status_line(app) and "2 tagged" in status_line(app)
        await pilot.press("semicolon")
        await settle(pilot)
        assert "; waits" in status_line(app)
        await pilot.press("f")  # the action (refused here: list threads; it acted, so the prefix is spent)
        await settle(pilot)
        assert "waits" not in status_line(app) and "2 tagged" in status_line(app)


def status_line(app) -> str:
    from textual.widgets import Static

    return str(app.screen.query_one("#threads-status", Static).content)


async def x_in_full_headers_shows_the_raw_source_inert_and_back(app, pilot, monkeypatch) -> None:
    reads: list[str] = []
    read_raw = app.session.raw_message  # a spy that calls through: how often the source is read

    def counted(message, **kwargs):
        reads.append(message.message_id)
        return read_raw(message, **kwargs)

    monkeypatch.setattr(app.session, "raw_message", counted)
    await settle(pilot)
    await pilot.press("enter", "4", "h", "x")
    await settle(pilot)
    shown = headers_dialog_text(app)
    assert "Message 1 of 1 · raw source, " in shown and f"Received: {RECEIVED}" in shown
    assert "Please rotate it now." in shown  # the body too: the raw message, not its headers
    assert "\\x1b]8;;https://evil.invalid\\x07click⟨U+202E⟩ me" in shown and "\x1b" not in shown
    await pilot.press("x")
    await settle(pilot)
    assert "raw source" not in headers_dialog_text(app)
    await pilot.press("x")  # again: shown from what was read, not read again
    await settle(pilot)
    assert "Please rotate it now." in headers_dialog_text(app)
    assert reads == ["<spoof-1@attacker.invalid>"]
    await pilot.press("escape")
    await settle(pilot)
    assert not isinstance(app.screen, HeadersDialog)


async def pipe_runs_the_confirmed_command_on_the_raw_message_and_shows_its_output(app, pilot, tmp_path) -> None:
    from textual.widgets import Static

    from mailtriage.tui.dialogs.pipe import PipeDialog

    marker = tmp_path / "ran"
    await pilot.press("enter", "4", "vertical_line")
    await settle(pilot)
    assert isinstance(app.screen, PipeDialog)
    await pilot.press(*f"touch {marker}", "enter")
    await settle(pilot)
    assert f"Will run touch {marker} (no shell)" in app.screen.query_one("#pipe-plan", Static).content.plain
    await pilot.press("escape")  # cancelled after reading the plan: nothing ran
    await settle(pilot)
    assert not isinstance(app.screen, PipeDialog) and not marker.exists()
    # Ctrl+s before Enter shows the plan, nothing run; a second Ctrl+s runs it (the footer says
    # "nothing runs before Ctrl+s", yet Ctrl+s did nothing until Enter had shown the plan: issue 35
    # §6. Was test_pipe_ctrl_s_before_enter_shows_the_plan_and_a_second_ctrl_s_runs_it, its own app).
    command = "grep -i -e ^authentication-results -e ^x-injected"
    await pilot.press("vertical_line", *command, "ctrl+s")
    await settle(pilot)
    plan = app.screen.query_one("#pipe-plan", Static).content.plain
    assert "Will run grep -i -e '^authentication-results' -e '^x-injected' (no shell)" in plan
    assert str(app.screen.query_one("#pipe-output-text", Static).content) == ""  # not before Ctrl+s
    await pilot.press("ctrl+s")
    await settle(pilot)
    assert app.screen.query_one("#pipe-plan", Static).content.plain == "exit status 0"
    output = app.screen.query_one("#pipe-output-text", Static).content.plain
    assert output == (f"Authentication-Results: {AUTH}\n"
                      "X-Injected: \\x1b]8;;https://evil.invalid\\x07click⟨U+202E⟩ me\n")


async def test_the_raw_source_in_full_headers_and_the_pipe_on_the_spoofed_report(tmp_path, monkeypatch):
    """Two tests, one app each, on one app (issue 36 §7): x in full headers first (it counts the
    reads of the raw source from the start), then the pipe from the list (``back_to_the_list``)."""
    app = make_app(mbox_project(tmp_path / "p", messages=[*standard_messages(), spoofed_report()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await x_in_full_headers_shows_the_raw_source_inert_and_back(app, pilot, monkeypatch)
        await back_to_the_list(pilot)
        await pipe_runs_the_confirmed_command_on_the_raw_message_and_shows_its_output(app, pilot, tmp_path)
