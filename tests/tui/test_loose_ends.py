"""Issue 35, the loose ends after the focus, keys, words and demo branches: the status line
offers `e` only where `e` acts, presets keep Send on Confirm's key, and no key of the main
screen or the reader silently does nothing."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from mailtriage.backends.contract import Address, ThreadId, ThreadSummary
from mailtriage.core.settings import UserSettings
from mailtriage.tui import bindings, keymaps
from mailtriage.tui.dialogs.attachments import AttachmentsDialog
from mailtriage.tui.footer import KeyFooter, KeyLine
from mailtriage.tui.panes.thread_list import ThreadList, format_date
from mailtriage.tui.textual_private import FooterKey
from tests.tui.attachment_data import attachments_project
from tests.tui.helpers import make_app, settle


def reader_status(app) -> str:
    return str(app.screen.query_one("#reader-status").render())


async def test_the_status_line_offers_e_only_while_the_reader_has_focus(tmp_path):
    # With n and p at the ends of the one-message thread, and e opening the attachments, in the
    # same app (were test_n_and_p_at_the_ends_of_a_thread_say_so and tests/tui/test_reader_focus.py's
    # test_e_in_the_reader_opens_the_attachments_the_status_line_offers: the same project and size).
    app = make_app(attachments_project(tmp_path / "p"))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert "attachment" in reader_status(app) and "(e)" in reader_status(app)
        await pilot.press("n")  # a one-message thread: n has nowhere to go
        await settle(pilot)
        assert any("last message" in str(n.message) for n in app._notifications)
        await pilot.press("p")
        await settle(pilot)
        assert any("first message" in str(n.message) for n in app._notifications)
        await pilot.press("q")  # back to the list, where e has no binding
        await settle(pilot)
        assert isinstance(app.focused, ThreadList)
        assert "attachment" in reader_status(app) and "(e)" not in reader_status(app)
        await pilot.press("e")
        await settle(pilot)
        assert not isinstance(app.screen, AttachmentsDialog)
        await pilot.press("4")  # into the reader again: e acts, and is offered again
        await settle(pilot)
        assert "(e)" in reader_status(app)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, AttachmentsDialog)


def _keys(keymap: dict[str, str], binding_id: str) -> list[str]:
    binding = next(b for b in bindings.PROPOSAL if b.id == binding_id)
    return bindings.effective_keys(binding, keymap)


def test_every_preset_and_a_users_own_confirm_key_leave_send_on_the_same_key(tmp_path):
    """The proposal's Send button is bound to proposal.send, Confirm to proposal.confirm: one
    key for both, whichever remaps it."""
    for name in [None, *keymaps.PRESETS]:
        data = {"keys": {"preset": name}} if name else {}
        keymap = keymaps.keymap(UserSettings(tmp_path / "config.toml", data))
        assert _keys(keymap, "proposal.confirm") == _keys(keymap, "proposal.send"), name
    for name in [None, *keymaps.PRESETS]:
        own = {"proposal.confirm": "ctrl+y"} | ({"preset": name} if name else {})
        keymap = keymaps.keymap(UserSettings(tmp_path / "config.toml", {"keys": own}))
        assert _keys(keymap, "proposal.send") == ["ctrl+y"], name
    both = keymaps.keymap(UserSettings(tmp_path / "config.toml",
                                       {"keys": {"proposal.confirm": "ctrl+y", "proposal.send": "ctrl+e"}}))
    assert _keys(both, "proposal.send") == ["ctrl+e"]  # said apart on purpose: the user's word


@pytest.fixture
def chatham_clock(monkeypatch):
    """The user's zone is Pacific/Chatham (+13:45 in October): unlike any sender's here."""
    monkeypatch.setenv("TZ", "Pacific/Chatham")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_archive_rows_and_imap_rows_show_the_same_instant_in_the_users_zone(chatham_clock):
    """The mbox index keeps epoch seconds (no zone), IMAP the sender's Date: with its offset:
    both rows show the user's local time, so the same instant reads the same in either."""
    instant = datetime(2026, 10, 1, 9, 0, tzinfo=timezone.utc)
    who = Address("Ana", "ana@example.com")
    archive_row = ThreadSummary(ThreadId("msgid", "<a@x>"), "s", "<a@x>", who, instant, 1)
    imap_row = ThreadSummary(ThreadId("msgid", "<b@x>"), "s", "<b@x>", who, instant + timedelta(hours=1), 1,
                             sent=instant.astimezone(timezone(timedelta(hours=-4))))  # the sender in New York
    assert format_date(archive_row, narrow=False) == "2026-10-01 22:45"  # 09:00 UTC in Chatham
    assert format_date(imap_row, narrow=False) == "2026-10-01 22:45"
    assert format_date(imap_row, narrow=False, column="arrival") == "2026-10-01 23:45"
    assert format_date(archive_row, narrow=True) == "10-01"


def footer_keys_cut_at(app, width: int) -> list[str]:
    # Checked in the footer snapshots' apps (tests/tui/test_snapshots_footer.py), list and reader.
    """The footer's keys not whole on screen: past the edge, or under another key."""
    footer = app.screen.query_one(KeyFooter)
    line = footer.query_one(KeyLine)
    keys = [(f"{k.key_display} {k.description}", region) for k, region in line.key_regions()]
    keys += [(f"{k.key_display} {k.description}", k.region) for k in footer.query_children(FooterKey)
             if k is not line]
    cut = [name for name, region in keys
           if region.width < len(name) or region.right > width
           or any(other is not region and other.overlaps(region) for _, other in keys)]
    return cut + ([] if any(name.startswith("? ") for name, _ in keys) else ["? missing"])


