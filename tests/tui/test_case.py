"""The reading pane's Case section, from a real modes thread record written through modes.store.

Which case a thread belongs to, where the record is looked for and that none is created are the
application layer's (tests/application/test_case_record.py); here what the pane shows of it."""

from __future__ import annotations

from tests.application.test_case_record import write_record
from tests.tui.helpers import make_app, mbox_project, reader_text, settle


async def _open_oldest_thread(app, pilot) -> None:
    await settle(pilot)
    await pilot.press("G", "enter")
    await settle(pilot)


async def test_thread_of_a_known_case_shows_its_handoffs_and_statuses(tmp_path, user_data):
    write_record(user_data / "modes.sqlite3")
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(140, 40)) as pilot:
        await _open_oldest_thread(app, pilot)
        shown = reader_text(app)
        assert "Case  vuln=frob-17@mas.example.org" in shown
        assert "resource vuln=frob-17" in shown
        assert "Handoff h-assess · mode assess · status accepted" in shown
        assert "Handoff h-fix · mode fix · status requested" in shown
        assert "seq   -  requested  2026-10-02T08:00:00.000000Z  (master)" in shown
        assert "seq   1  accepted  2026-10-02T09:30:00.000000Z  (mode)" in shown
        # The mode's text is inert: no escape sequence, no bidi override, markup shown as text.
        assert "[bold]done[/bold]" in shown and "\x1b" not in shown and "\u202e" not in shown
        # The section sits above the messages, and the thread is still all there.
        assert shown.index("Case ") < shown.index("Message 1/2")
        assert "Thanks Ana" in shown
        # A thread outside the case, read next in the same pane: no section (was
        # test_thread_outside_every_case_has_no_section, its own app).
        await pilot.press("q", "g", "enter")
        await settle(pilot)
        shown = reader_text(app)
        assert "Will 3.4 get the fix?" in shown and "Case " not in shown and "Handoff" not in shown


async def test_unusable_record_is_said_and_the_thread_stays_readable(tmp_path, user_data):
    user_data.mkdir(parents=True, exist_ok=True)
    (user_data / "modes.sqlite3").write_bytes(b"not a database at all" * 100)
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(140, 40)) as pilot:
        await _open_oldest_thread(app, pilot)
        shown = reader_text(app)
        assert "the modes record could not be read" in shown and "not a modes database" in shown
        assert "Thanks Ana" in shown
