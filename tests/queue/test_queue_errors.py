"""The queue over issues whose deadline fields it cannot read, configuration out of range, and
issue files replaced behind its records (issue 37 review): one bad issue is a warning naming
it, the rest of the queue shows; a bad key is a configuration error naming the key."""

from __future__ import annotations

import os
from datetime import datetime, timezone

from mailtriage.application.project import Project
from mailtriage.application.queue import build_queue
from tests.queue.conftest import doc, make_team, run_here

NOW = "2026-09-02T12:00:00+00:00"


def _set_field(team, value: str) -> None:
    project = Project.open(team.project("alice"))
    try:
        project.open_tracker().field_set("SEC-0001", "Disclosure date", value)
    finally:
        project.close()


def test_a_malformed_disclosure_date_is_a_warning_and_no_invented_deadline(tmp_path):
    team = make_team(tmp_path, triagers=["alice"])
    _set_field(team, "1 December 2026")
    got = doc(run_here(team.project("alice"), "queue", "--json", "--now", NOW))
    assert [w for w in got["warnings"] if "SEC-0001" in w and "Disclosure date" in w]
    assert got["rows"][0]["disclosure_due"] is None


def test_a_date_with_no_utc_instant_is_a_warning_and_the_queue_shows(tmp_path):
    team = make_team(tmp_path, triagers=["alice"])
    _set_field(team, "9999-12-31T23:00:00-05:00")
    proc = run_here(team.project("alice"), "queue", "--json", "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    got = doc(proc)
    assert got["rows"][0]["issue"] == "SEC-0001" and got["rows"][0]["disclosure_due"] is None
    assert [w for w in got["warnings"] if "SEC-0001" in w and "Disclosure date" in w]


def test_a_disclosure_days_beyond_ten_years_is_a_configuration_error_naming_the_key(tmp_path):
    team = make_team(tmp_path, triagers=["alice"])
    md = team.project("alice") / "project.md"
    md.write_text(md.read_text().replace("import:\n", "queue:\n  disclosure_days: 3000000\nimport:\n"))
    proc = run_here(team.project("alice"), "queue", "--now", NOW)
    assert proc.returncode == 2 and "queue.disclosure_days" in proc.stderr


def test_an_issue_file_replaced_at_the_same_size_and_mtime_is_read_again(tmp_path):
    team = make_team(tmp_path, triagers=["alice"])
    f = team.clones["alice"] / "security-tracker" / "SEC-0001.md"
    text = f.read_text()
    f.write_text(text.replace("assignees: []", 'assignees: ["bob"]'))
    st = f.stat()
    now = datetime(2026, 9, 2, 12, tzinfo=timezone.utc)
    project = Project.open(team.project("alice"))
    try:
        assert build_queue(project, now=now).rows[0].owner == "bob"
        # a colleague's pull replaces it within one timestamp tick: same size, same mtime
        tmp = f.with_name("x.tmp")
        tmp.write_text(text.replace("assignees: []", 'assignees: ["dan"]'))
        os.replace(tmp, f)
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert f.stat().st_size == st.st_size
        assert build_queue(project, now=now).rows[0].owner == "dan"
    finally:
        project.close()


def test_a_listed_thread_that_cannot_be_read_is_a_warning_and_the_rest_of_the_queue_shows(tmp_path):
    """A thread gone between the listing and its read (ThreadNotFound, a BackendFailure)."""
    from dataclasses import replace  # why: this test alone rewrites a listing row

    from mailtriage.application import queue as queuemod  # why: the rows of a given listing
    from mailtriage.application import queue_records as records  # why: records of no file
    from mailtriage.backends.contract import ThreadId  # why: the id of the vanished thread

    team = make_team(tmp_path, triagers=["alice"], imported=False)
    project = Project.open(team.project("alice"))
    try:
        listing = project.list_threads(project.list_name(None), None)
        real = list(listing.value)
        gone = replace(real[0], thread_id=ThreadId.parse("msgid:<vanished@reporter.example>"))
        warnings: list[str] = []
        rows = queuemod._rows(project, None, False, records.QueueRecords(None),
                              queuemod.queue_settings(project.config), datetime(2026, 9, 2, 12, tzinfo=timezone.utc),
                              replace(listing, value=[gone, *real]), warnings)
    finally:
        project.close()
    assert [str(r.thread_id) for r in rows] == [str(s.thread_id) for s in real]
    assert [w for w in warnings if "vanished@reporter.example" in w and "not read" in w]
