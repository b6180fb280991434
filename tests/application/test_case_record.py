"""The MAS case a thread belongs to, as application/cases.py reads it from a real modes record
(written through modes.store): found by the thread's Message-IDs or by a case address in To/Cc,
where the record is looked for, and that nothing here creates or rewrites a record. The reading
pane's Case section (how the TUI shows it) is tests/tui/test_case.py."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from mailtriage.application import case_record, modes_database
from mailtriage.backends.contract import Address, Message, Thread, ThreadId
from mailtriage.core.settings import load_settings
from mailtriage.modes.store import Store, StoreError

T0 = datetime(2026, 10, 2, 8, 0, tzinfo=timezone.utc)
HOSTILE = "\x1b[2J[bold]done[/bold]\u202e"
LIST = Address("", "security@frob.example")


def write_record(path: Path, *, message_id: str | None = "<overflow-1@example.com>",
                 address: str = "vuln=frob-17@mas.example.org") -> None:
    """Case c1 (vuln=frob-17): a mail of it (``message_id``), an accepted assess handoff with two
    statuses (the mode's note hostile text) and a requested fix handoff."""
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


def thread(*message_ids: str, to: tuple[Address, ...] = (LIST,), cc: tuple[Address, ...] = ()) -> Thread:
    messages = tuple(Message(mid, "Heap overflow", Address("Ana", "ana@example.com"), to=to, cc=cc)
                     for mid in message_ids)
    return Thread(ThreadId("mbox", message_ids[0]), "Heap overflow", messages)


OVERFLOW = thread("<overflow-1@example.com>", "<overflow-2@frob.example>")


@pytest.fixture
def data(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("MAILTRIAGE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MAILTRIAGE_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "data"


def test_a_thread_of_a_known_case_gets_its_handoffs_and_statuses(data):
    write_record(data / "modes.sqlite3")
    record = case_record(modes_database(None), OVERFLOW)
    assert record is not None and record["case"]["address"] == "vuln=frob-17@mas.example.org"
    assert (record["resource_type"], record["resource_id"]) == ("vuln", "frob-17")
    assert [(h["handoff_id"], h["mode"], h["status"]) for h in record["handoffs"]] == [
        ("h-assess", "assess", "accepted"), ("h-fix", "fix", "requested")]
    assessed = record["handoffs"][0]["statuses"]
    assert [(s["seq"], s["status"], s["at"], s["source"]) for s in assessed] == [
        (None, "requested", "2026-10-02T08:00:00.000000Z", "master"),
        (1, "accepted", "2026-10-02T09:30:00.000000Z", "mode")]
    assert assessed[1]["note"] == HOSTILE  # as the mode wrote it: the pane makes it inert


@pytest.mark.parametrize("where", ["to", "cc"])
def test_a_case_is_found_by_its_address_in_to_or_cc(data, where):
    write_record(data / "modes.sqlite3", message_id=None)
    case = (LIST, Address("", "vuln=frob-17@mas.example.org"))
    mail = thread("<assess-1@mas.example.org>", **{where: case})
    record = case_record(modes_database(None), mail)
    assert record is not None and record["handoffs"][0]["handoff_id"] == "h-assess"


def test_no_record_no_case_and_none_is_created(data):
    assert modes_database(None) == data / "modes.sqlite3"
    assert case_record(modes_database(None), OVERFLOW) is None
    assert not (data / "modes.sqlite3").exists() and not data.exists()


def test_a_thread_outside_every_case_has_none(data):
    write_record(data / "modes.sqlite3", message_id="<someone-else@example.org>")
    assert case_record(modes_database(None), OVERFLOW) is None


def test_the_database_configured_in_the_user_settings_is_read(data, tmp_path):
    record_file = tmp_path / "elsewhere" / "record.sqlite3"
    write_record(record_file)
    settings_file = tmp_path / "config" / "config.toml"
    settings_file.parent.mkdir(mode=0o700)
    settings_file.write_text(f'name = "Test Triager"\n[modes]\ndatabase = "{record_file}"\n', encoding="utf-8")
    where = modes_database(load_settings())
    assert where == record_file
    assert case_record(where, OVERFLOW)["handoffs"][0]["handoff_id"] == "h-assess"
    assert not (data / "modes.sqlite3").exists()


def test_an_unusable_record_raises_and_an_empty_file_is_not_turned_into_a_record(data):
    data.mkdir(mode=0o700)
    (data / "modes.sqlite3").write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError, match="not a modes database"):
        case_record(modes_database(None), OVERFLOW)
    (data / "modes.sqlite3").write_bytes(b"")
    with pytest.raises(StoreError, match="not a modes database"):
        case_record(modes_database(None), OVERFLOW)
    assert (data / "modes.sqlite3").read_bytes() == b""
