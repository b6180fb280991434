"""The reading pane's Case section, from a real modes thread record written through modes.store."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from mailtriage.modes.store import Store
from tests.tui.helpers import make_app, mbox_project, reader_text, settle

T0 = datetime(2026, 10, 2, 8, 0, tzinfo=timezone.utc)
HOSTILE = "\x1b[2J[bold]done[/bold]\u202e"


def write_record(path: Path, *, message_id: str | None = "<overflow-1@example.com>",
                 address: str = "vuln=frob-17@mas.example.org") -> None:
    store = Store(path)
    try:
        with store.transaction():
            store.add_case(key="c1", address=address, resource_type="vuln", resource_id="frob-17", role="master",
                           participant=None, now=T0)
            if message_id:
                store.add_mail(ref="m1", direction="in", message_id=message_id, now=T0, state="received",
                               case_key="c1", sender="ana@example.com", subject="Heap overflow")
            store.add_handoff(handoff_id="h-assess", case_key="c1", mode="assess", role="master", status="accepted",
                              now=T0, endpoint="http://127.0.0.1:9/assess")
            store.add_status(handoff_id="h-assess", case_key="c1", status="requested", seq=None, source="master",
                             fields={}, now=T0)
            store.add_status(handoff_id="h-assess", case_key="c1", status="accepted", seq=1, source="mode",
                             fields={"note": HOSTILE}, now=datetime(2026, 10, 2, 9, 30, tzinfo=timezone.utc))
            store.add_handoff(handoff_id="h-fix", case_key="c1", mode="fix", role="master", status="requested",
                              now=T0, endpoint=None)
    finally:
        store.close()


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


async def test_case_found_by_its_address_in_to_or_cc(tmp_path, user_data):
    from tests.tui.helpers import mail

    write_record(user_data / "modes.sqlite3", message_id=None, address="vuln=frob-17@mas.example.org")
    messages = [mail("Assessment", "Mode <assess@mas.example.org>", "Thu, 01 Oct 2026 09:00:00 +0000",
                     "<assess-1@mas.example.org>", "status follows\n",
                     to="security@frob.example, vuln=frob-17@mas.example.org")]
    app = make_app(mbox_project(tmp_path / "p", messages=messages))
    async with app.run_test(size=(140, 40)) as pilot:
        await _open_oldest_thread(app, pilot)
        assert "Handoff h-assess · mode assess" in reader_text(app)


async def test_no_record_no_section_and_none_is_created(tmp_path, user_data):
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(140, 40)) as pilot:
        await _open_oldest_thread(app, pilot)
        assert "Thanks Ana" in reader_text(app) and "Case " not in reader_text(app)
    assert not (user_data / "modes.sqlite3").exists()


async def test_thread_outside_every_case_has_no_section(tmp_path, user_data):
    write_record(user_data / "modes.sqlite3", message_id="<someone-else@example.org>")
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(140, 40)) as pilot:
        await _open_oldest_thread(app, pilot)
        assert "Thanks Ana" in reader_text(app) and "Handoff" not in reader_text(app)


async def test_configured_database_in_the_user_settings(tmp_path, user_data, user_config):
    record = tmp_path / "elsewhere" / "record.sqlite3"
    write_record(record)
    (user_config / "config.toml").write_text(f'name = "Test Triager"\n[modes]\ndatabase = "{record}"\n',
                                             encoding="utf-8")
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(140, 40)) as pilot:
        await _open_oldest_thread(app, pilot)
        assert "Handoff h-assess · mode assess" in reader_text(app)
    assert not (user_data / "modes.sqlite3").exists()


async def test_unusable_record_is_said_and_the_thread_stays_readable(tmp_path, user_data):
    user_data.mkdir(parents=True, exist_ok=True)
    (user_data / "modes.sqlite3").write_bytes(b"not a database at all" * 100)
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(140, 40)) as pilot:
        await _open_oldest_thread(app, pilot)
        shown = reader_text(app)
        assert "the modes record could not be read" in shown and "Thanks Ana" in shown


async def test_an_empty_file_is_not_turned_into_a_record(tmp_path, user_data):
    user_data.mkdir(parents=True, exist_ok=True)
    (user_data / "modes.sqlite3").write_bytes(b"")
    app = make_app(mbox_project(tmp_path / "p"))
    async with app.run_test(size=(140, 40)) as pilot:
        await _open_oldest_thread(app, pilot)
        assert "not a modes database" in reader_text(app)
    assert (user_data / "modes.sqlite3").read_bytes() == b""
