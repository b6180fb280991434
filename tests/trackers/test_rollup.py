"""The status rollup format of DESIGN.md, appended and amended byte-exactly."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mailtriage.trackers import rollup
from mailtriage.trackers.rollup import ActionMismatch, Entry, MalformedRollup, NoEntry

FIRST = Entry("2025-01-02", "alice", "Imported", "Report imported.")
SECOND = Entry("2025-01-03", "bob", "Triaged", "Confirmed on 1.2.3.\n\nSecond paragraph.")

EXPECTED = (
    "<!-- status rollup v1 -->\n"
    "\n"
    "<details><summary>2025-01-02 · @alice · Imported</summary>\n"
    "\n"
    "Report imported.\n"
    "\n"
    "</details>\n"
    "\n"
    "---\n"
    "\n"
    "<details><summary>2025-01-03 · @bob · Triaged</summary>\n"
    "\n"
    "Confirmed on 1.2.3.\n"
    "\n"
    "Second paragraph.\n"
    "\n"
    "</details>\n"
)


def test_append_builds_the_exact_format():
    text = rollup.append(None, FIRST)
    text = rollup.append(text, SECOND)
    assert text == EXPECTED
    assert rollup.entries(text) == [FIRST, SECOND]
    assert rollup.is_rollup(text)


def test_amend_latest_keeps_date_user_and_other_bytes():
    amended = rollup.amend_latest(EXPECTED, "Triaged", "Only on 1.2.3.")
    assert amended == EXPECTED.replace("Confirmed on 1.2.3.\n\nSecond paragraph.", "Only on 1.2.3.")
    assert rollup.entries(amended)[-1] == Entry("2025-01-03", "bob", "Triaged", "Only on 1.2.3.")


def test_amend_latest_refuses_another_action():
    with pytest.raises(ActionMismatch):
        rollup.amend_latest(EXPECTED, "Imported", "x")
    with pytest.raises(NoEntry):
        rollup.amend_latest(rollup.MARKER + "\n", "Imported", "x")


def test_entry_bodies_may_hold_details_blocks_and_separators():
    tricky = Entry("2025-01-04", "carol", "Note", "<details>\n\ninner\n\n</details>\n\n---\n\ntail")
    text = rollup.append(EXPECTED, tricky)
    assert rollup.entries(text)[-1] == tricky
    assert rollup.entries(text)[:2] == [FIRST, SECOND]
    amended = rollup.amend_latest(text, "Note", "plain")
    assert rollup.entries(amended) == [FIRST, SECOND, Entry("2025-01-04", "carol", "Note", "plain")]


def test_crlf_rollup_stays_crlf():
    text = EXPECTED.replace("\n", "\r\n")
    appended = rollup.append(text, FIRST)
    assert "\n" not in appended.replace("\r\n", "")
    assert rollup.entries(appended)[-1] == FIRST
    amended = rollup.amend_latest(appended, "Imported", "again")
    assert amended.startswith(text)
    assert "\n" not in amended.replace("\r\n", "")


def test_malformed_rollups_are_not_rewritten():
    with pytest.raises(MalformedRollup):
        rollup.append("no marker here\n", FIRST)
    with pytest.raises(MalformedRollup):
        rollup.entries(rollup.MARKER + "\n\n<details><summary>2025-01-02 · @a · X</summary>\n\nbody\n")
    with pytest.raises(rollup.BadEntryBody):
        rollup.check_entry_body("ok\n<details><summary>2025-01-02 · @a · X</summary>\n")


bodies = st.text(alphabet=st.sampled_from(list("ab -<>/\n")), min_size=1, max_size=30).filter(
    lambda b: b.strip("\n").strip() and b.strip("\n") == b.strip("\n").rstrip("\n"))


@settings(max_examples=200, deadline=None)
@given(st.lists(bodies, min_size=1, max_size=4), bodies)
def test_append_and_amend_round_trip(body_list, new_body):
    text = None
    entries = []
    for n, body in enumerate(body_list):
        entry = Entry(f"2025-01-{n + 1:02d}", "u", f"Act{n}", body.strip("\n"))
        text = rollup.append(text, entry)
        entries.append(entry)
    parsed = rollup.entries(text)
    assert [(e.date, e.user, e.action) for e in parsed] == [(e.date, e.user, e.action) for e in entries]
    assert [e.body.strip() for e in parsed] == [e.body.strip() for e in entries]
    before_latest = text[: text.rindex("<details><summary>")]
    amended = rollup.amend_latest(text, entries[-1].action, new_body)
    assert amended.startswith(before_latest)
    assert rollup.entries(amended)[-1].body.strip() == new_body.strip("\n").strip()
