"""The queue's state, waiting time, deadlines and order, derived from mail and tracker facts at
an injected ``now`` (application/queue.py; no clock is read)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from mailtriage.application.queue import (UNKNOWN_ISSUE, Breach, IssueFacts, MailFact, QueueSettings, QueueState, ThreadFacts,
                                          derive_queue, derive_row, queue_settings)
from mailtriage.backends.contract import ThreadId
from mailtriage.core.projectconfig import ConfigError, load_project

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=timezone.utc)
REPORTER = "rita@reporter.example"
SETTINGS = QueueSettings(first_response_days=2, disclosure_days=90, team=("security@frob.example.org",),
                         team_domain="frob.example.org")


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def thread(name: str, *messages: tuple[str, float], drafts: int | None = None) -> ThreadFacts:
    return ThreadFacts(ThreadId("msgid", f"<{name}@reporter.example>"), f"Report {name}",
                       tuple(MailFact(sender, day(at)) for sender, at in messages), drafts)


def issue(state: str = "open", labels=(), assignees=(), disclosure: datetime | None = None,
          cve: str | None = None) -> IssueFacts:
    return IssueFacts("SEC-0001", "file:///SEC-0001.md", state, tuple(labels), tuple(assignees), disclosure, cve=cve)


def test_a_report_nobody_answered_is_new_and_waits_since_it_came():
    row = derive_row(thread("a", (REPORTER, 0)), None, SETTINGS, day(1))
    assert row.state is QueueState.NEW
    assert (row.opened, row.unanswered_since, row.last_reporter_message) == (T0, T0, T0)
    assert row.first_response_due == day(2)
    assert row.breaches == ()
    assert derive_row(thread("a", (REPORTER, 0)), None, SETTINGS, day(2.5)).breaches == (Breach.FIRST_RESPONSE,)


def test_a_colleagues_reply_in_the_list_archive_answers_it():
    row = derive_row(thread("a", (REPORTER, 0), ("sam@frob.example.org", 1)), None, SETTINGS, day(5))
    assert row.state is QueueState.ACKNOWLEDGED
    assert row.unanswered_since is None and row.first_response_due is None and row.breaches == ()


def test_a_parent_domain_and_queue_team_addresses_count_as_the_team_but_the_reporter_never():
    outsider = derive_row(thread("a", (REPORTER, 0), ("mallory@other.example", 1)), None, SETTINGS, day(3))
    assert outsider.state is QueueState.NEW and outsider.unanswered_since == T0
    settings = QueueSettings(team=("pat@elsewhere.example",), team_domain="security.example.org")
    assert derive_row(thread("a", (REPORTER, 0), ("pat@elsewhere.example", 1)), None, settings, day(3)).state \
        is QueueState.ACKNOWLEDGED
    assert derive_row(thread("a", (REPORTER, 0), ("lee@example.org", 1)), None, settings, day(3)).state \
        is QueueState.ACKNOWLEDGED  # a sender of a parent domain of the list's
    inside = "eve@security.example.org"
    assert derive_row(thread("a", (inside, 0), (inside, 1)), None, settings, day(3)).state is QueueState.NEW


def test_the_reporters_follow_up_after_our_reply_waits_again_but_is_no_first_response_breach():
    row = derive_row(thread("a", (REPORTER, 0), ("security@frob.example.org", 1), (REPORTER, 3),
                            (REPORTER, 4)), None, SETTINGS, day(60))
    assert row.state is QueueState.ACKNOWLEDGED
    assert row.unanswered_since == day(3) and row.last_reporter_message == day(4)
    # the first response was given: its deadline is gone, only the wait is shown
    assert row.first_response_due is None and row.breaches == ()
    # the issue's own "First response due" field is about the first response too
    assert derive_row(thread("a", (REPORTER, 0), ("security@frob.example.org", 1), (REPORTER, 3)),
                      IssueFacts("SEC-0001", "", "open", first_response=day(2)), SETTINGS, day(60)).breaches == ()


def test_a_reporters_thanks_after_the_fix_does_not_put_the_row_before_what_needs_a_human():
    now = day(30)
    thanks = thread("thanks", (REPORTER, 0), ("security@frob.example.org", 1), (REPORTER, 20))
    quiet = thread("quiet", (REPORTER, 0), ("security@frob.example.org", 1))
    queue = derive_queue([thanks, quiet], {thanks.thread_id: issue(labels=("fixed",)),
                                           quiet.thread_id: replace(issue(assignees=("bob",)), id="SEC-0002")},
                         SETTINGS, now)
    assert [r.subject for r in queue.rows] == ["Report quiet", "Report thanks"]
    assert queue.rows[1].unanswered_since == day(20) and queue.rows[1].breaches == ()


def test_a_pending_draft_of_ours_acknowledges_but_does_not_answer():
    row = derive_row(thread("a", (REPORTER, 0), drafts=1), None, SETTINGS, day(1))
    assert row.state is QueueState.ACKNOWLEDGED
    assert row.unanswered_since == T0


@pytest.mark.parametrize("facts,state,owner", [
    (issue(), QueueState.IMPORTED, None),
    (issue(assignees=("alice", "bob")), QueueState.IN_PROGRESS, "alice"),
    (issue(labels=("In Progress",)), QueueState.IN_PROGRESS, None),
    (issue(labels=("cve-assigned",), assignees=("bob",)), QueueState.FIXED, "bob"),
    (issue(cve="CVE-2026-12345"), QueueState.FIXED, None),
    (issue(labels=("fixed", "disclosed")), QueueState.CLOSED, None),
    (issue(state="closed", assignees=("bob",)), QueueState.CLOSED, "bob"),
], ids=["imported", "assigned", "label", "cve", "cve-field", "disclosed", "closed"])
def test_the_tracker_issue_decides_the_state_past_acknowledged(facts, state, owner):
    row = derive_row(thread("a", (REPORTER, 0)), facts, SETTINGS, day(1))
    assert (row.state, row.owner, row.issue) == (state, owner, "SEC-0001")


def test_disclosure_deadline_from_the_issue_field_else_the_project_default_and_none_breached_once_closed():
    answered = thread("a", (REPORTER, 0), ("sam@frob.example.org", 0.5))
    assert derive_row(answered, issue(), SETTINGS, day(1)).disclosure_due == day(90)
    own = derive_row(answered, issue(disclosure=day(30)), SETTINGS, day(31))
    assert own.disclosure_due == day(30) and own.breaches == (Breach.DISCLOSURE,)
    closed = derive_row(thread("a", (REPORTER, 0)), issue(state="closed"), SETTINGS, day(200))
    assert closed.breaches == ()


def test_the_queue_puts_what_needs_a_human_first_and_filters_by_state_and_owner():
    now = day(10)
    rows = {
        "closed": (thread("closed", (REPORTER, 0)), issue(state="closed")),
        "owned-waiting": (thread("owned-waiting", (REPORTER, 9)), issue(assignees=("bob",))),
        "answered": (thread("answered", (REPORTER, 1), ("sam@frob.example.org", 2)), None),
        "breached": (thread("breached", (REPORTER, 5)), None),
        "waiting": (thread("waiting", (REPORTER, 9.5)), None),
    }
    queue = derive_queue([t for t, _ in rows.values()], {t.thread_id: i for t, i in rows.values() if i}, SETTINGS, now)
    assert [r.subject.split()[-1] for r in queue.rows] == ["breached", "waiting", "owned-waiting", "answered", "closed"]
    assert queue.now == now
    assert [r.subject for r in queue.filtered(state=QueueState.NEW).rows] == ["Report breached", "Report waiting"]
    assert [r.subject for r in queue.filtered(owner="bob").rows] == ["Report owned-waiting"]
    assert len(queue.filtered(owner="").rows) == 4
    doc = queue.to_json()
    assert doc["rows"][0]["breaches"] == ["first_response"] and doc["rows"][0]["state"] == "new"
    assert doc["rows"][0]["unanswered_since"] == "2026-11-07T10:00:00+00:00"


def test_queue_settings_come_from_project_md_and_a_wrong_type_names_the_key(tmp_path):
    (tmp_path / "project.md").write_text(
        "# P\n\n## Configuration\n\n```yaml\nsecurity_list: security@frob.example.org\nqueue:\n"
        "  first_response_days: 5\n  team: [Pat@Elsewhere.example, '@apache.example', team.example]\n"
        "  fixed_labels: [patched]\n```\n")
    settings = queue_settings(load_project(tmp_path))
    assert settings.first_response_days == 5 and settings.disclosure_days == 90
    assert settings.team == ("pat@elsewhere.example", "security@frob.example.org")
    assert settings.team_domains == ("apache.example", "team.example")
    assert settings.is_team("kim@team.example", REPORTER) and not settings.is_team("kim@x.team.example", REPORTER)
    assert settings.team_domain == "frob.example.org" and settings.fixed_labels == ("patched",)
    (tmp_path / "project.md").write_text("# P\n\n## Configuration\n\n```yaml\nqueue:\n  disclosure_days: soon\n```\n")
    with pytest.raises(ConfigError, match="queue.disclosure_days"):
        load_project(tmp_path)


def test_an_automated_message_is_listed_last_as_not_a_report_without_deadlines():
    now = day(30)
    bounce = replace(thread("bounce", ("MAILER-DAEMON@mail.example.net", 0)), automated="bounce")
    report = thread("report", (REPORTER, 29))
    queue = derive_queue([bounce, report], {}, SETTINGS, now)
    assert [r.subject for r in queue.rows] == ["Report report", "Report bounce"]
    row = queue.rows[1]
    assert row.state is QueueState.AUTOMATED and row.breaches == () and row.first_response_due is None
    assert row.to_json()["state"] == "automated" and row.to_json()["automated"] == "bounce"
    # a tracker issue someone filed for it decides instead
    assert derive_row(bounce, issue(), SETTINGS, now).state is QueueState.IMPORTED


def test_an_automated_message_stays_automated_while_the_tracker_cannot_be_asked():
    # a bounce owes no response even when no one can say whether an issue holds it (review finding:
    # with the tracker down it became 'unknown', got a first-response breach and sorted first)
    now = day(30)
    bounce = replace(thread("bounce", ("MAILER-DAEMON@mail.example.net", 0)), automated="bounce")
    report = thread("report", (REPORTER, 29))
    queue = derive_queue([bounce, report], {bounce.thread_id: UNKNOWN_ISSUE, report.thread_id: UNKNOWN_ISSUE},
                         SETTINGS, now)
    assert [r.subject for r in queue.rows] == ["Report report", "Report bounce"]
    row = queue.rows[1]
    assert row.state is QueueState.AUTOMATED and row.breaches == () and row.first_response_due is None
    assert queue.rows[0].state is QueueState.UNKNOWN


def test_a_thread_the_team_started_is_no_report():
    """A thread whose first message a named member of the team wrote (queue.team): a release
    plan, an advisory draft, a heads-up. It was listed as a report (``new``, a first-response
    breach after two days, or ``acknowledged`` once a colleague replied); it is listed last as
    not a report, with no deadline, unless an issue holds it. A sender who is only of the
    list's domain still reports (a colleague reporting a bug)."""
    settings = replace(SETTINGS, team=("pat@frob.example.org", "security@frob.example.org"))
    plan = thread("plan", ("pat@frob.example.org", 0))
    replied = thread("eol", ("Pat@Frob.example.org", 0), ("sam@frob.example.org", 1), (REPORTER, 2))
    report = thread("report", (REPORTER, 9))
    colleague = thread("colleague", ("eve@frob.example.org", 8))
    queue = derive_queue([plan, replied, report, colleague], {}, settings, day(10))
    assert [(r.subject, r.state) for r in queue.rows] == [
        ("Report colleague", QueueState.NEW), ("Report report", QueueState.NEW),
        ("Report eol", QueueState.AUTOMATED), ("Report plan", QueueState.AUTOMATED)]
    for row in queue.rows[2:]:
        assert row.automated == "started by the team" and row.breaches == () and row.first_response_due is None
        assert row.unanswered_since is None and row.disclosure_due is None
    held = derive_row(plan, issue(), settings, day(10))  # an issue holds it: its state, and no reply is owed
    assert held.state is QueueState.IMPORTED and held.breaches == () and held.first_response_due is None


def test_a_report_the_list_sent_as_itself_is_still_a_report():
    """A list that rewrites From for DMARC ("Alice via security" <security@...>) sends a
    reporter's mail as the list's own address; a review found such a report listed last as
    "started by the team", with no deadline and no breach. It stays a new report, overdue."""
    settings = replace(SETTINGS, team=("pat@frob.example.org", "security@frob.example.org"),
                       list_address="security@frob.example.org")
    munged = thread("munged", ("Security@frob.example.org", 0), (REPORTER, 1))
    row = derive_queue([munged], {}, settings, day(10)).rows[0]
    assert row.state is QueueState.NEW and row.automated != "started by the team"
    assert row.first_response_due is not None and row.breaches
