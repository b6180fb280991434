"""Issue 35, the loose ends after the focus, keys, words and demo branches: the status line
offers `e` only where `e` acts, presets keep Send on Confirm's key, and no key of the main
screen or the reader silently does nothing."""

from __future__ import annotations

from mailtriage.core.settings import UserSettings
from mailtriage.tui import bindings, keymaps
from mailtriage.tui.dialogs.attachments import AttachmentsDialog
from mailtriage.tui.panes.thread_list import ThreadList
from tests.tui.attachment_data import attachments_project
from tests.tui.helpers import make_app, settle


def reader_status(app) -> str:
    return str(app.screen.query_one("#reader-status").render())


async def test_the_status_line_offers_e_only_while_the_reader_has_focus(tmp_path):
    app = make_app(attachments_project(tmp_path / "p"))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert "attachment" in reader_status(app) and "(e)" in reader_status(app)
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
