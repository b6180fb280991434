"""Sync: Sync rollup entries from new mail on linked threads; picks applied only as picked."""

from __future__ import annotations

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.registry import SourceSet
from mailtriage.application.flows.importer import propose_import
from mailtriage.application.flows.linking import rollup_state, seen_line
from mailtriage.application.flows.sync import Picks, collect_sync, propose_sync
from tests.application.flows.conftest import REPORT, mail, write_mbox

TID = ThreadId("mbox", REPORT)


def _imported(env) -> str:
    report = propose_import(SourceSet(env.config()), env.tracker(), TID, sender_name="Sam").apply(confirmed=True)
    assert report.ok, report.describe()
    return report.written[0][1]["id"]


def _reply(env, n: int, body: str, date: str, sender="Rita Reporter <rita@reporter.example>"):
    write_mbox(env.archive, [mail(f"<followup-{n}@reporter.example>", sender, "Re: Heap overflow in the frob parser",
                                  body, date, in_reply_to=REPORT)])


def _collect(env, issue_ids=None):
    return collect_sync(SourceSet(env.config()), env.tracker(), issue_ids)


def test_new_reply_becomes_a_sync_entry_with_signals_shown(mbox_env):
    issue = _imported(mbox_env)
    items = _collect(mbox_env)
    assert [(i.issue_id, len(i.new_messages), i.problem) for i in items] == [(issue, 0, None)]

    _reply(mbox_env, 1, "> old quoted text CVE-2020-0001\nI wrote a patch; please credit me as Rita R.\n"
                        "Is CVE-2026-12345 reserved?\n-- \nRita\n", "Thu, 03 Sep 2026 12:00:00 +0000")
    _reply(mbox_env, 2, "Confirmed on 1.2.3, fixed in trunk.\n", "Fri, 04 Sep 2026 08:30:00 +0000",
           sender="Sam Security <sam@frobnicator.example.org>")
    item, = _collect(mbox_env)
    assert [m.message_id for m in item.new_messages] == ["<followup-1@reporter.example>",
                                                         "<followup-2@reporter.example>"]
    assert item.since_source.startswith("the Import entry of ")
    signals = "\n".join(item.signals)
    assert "CVE CVE-2026-12345: Rita Reporter (rita@reporter.example)" in signals
    assert "CVE-2020-0001" not in signals  # quoted text is not what they wrote
    assert "credit: Rita Reporter" in signals
    assert "status (patch): Rita Reporter" in signals and "status (confirmed): Sam Security" in signals
    assert item.entry.splitlines() == [
        f"2 new messages since {item.since_source}:",  # the Import entry names what it covers
        "- 2026-09-03 12:00 UTC · Rita Reporter (rita@reporter.example) (reporter): I wrote a patch; please "
        "credit me as Rita R. Is CVE-2026-12345 reserved?",
        "- 2026-09-04 08:30 UTC · Sam Security (sam@frobnicator.example.org): Confirmed on 1.2.3, fixed in trunk.",
        f"Thread: `msgid:{REPORT}`",
        "Covers mail up to: 2026-09-04T08:30:00Z",
        seen_line(["<followup-1@reporter.example>", "<followup-2@reporter.example>"]),
    ]

    proposal = propose_sync(mbox_env.tracker(), [item])
    assert [w.summary for w in proposal.writes] == [f"status rollup entry Sync on {issue}"]
    # nothing is decided from the signals: no label or state change is proposed
    assert all("labels" not in w.summary and "close" not in w.summary for w in proposal.writes)
    assert proposal.apply(confirmed=True).ok
    tracker = mbox_env.tracker()
    assert [e.action for e in rollup_state(tracker, issue).entries] == ["Import", "Sync"]
    assert tracker.view(issue)["labels"] == ["needs triage"]
    again, = _collect(mbox_env)
    assert again.new_messages == [] and again.since_source.startswith("the Sync entry of ")


def test_picks_change_labels_and_state_only_as_picked(mbox_env):
    issue = _imported(mbox_env)
    items = _collect(mbox_env)
    proposal = propose_sync(mbox_env.tracker(), items, {
        issue: Picks(add_labels=["valid", "urgent"], remove_labels=["needs triage"], close="completed"),
        "SEC-9999": Picks(add_labels=["valid"]),
    })
    assert [w.summary for w in proposal.writes] == [f"labels of {issue}: +valid, -needs triage",
                                                    f"close {issue} (completed)"]
    assert any("'urgent'" in w for w in proposal.warnings)
    assert any("SEC-9999" in w for w in proposal.warnings)
    assert proposal.apply(confirmed=True).ok
    view = mbox_env.tracker().view(issue)
    assert view["labels"] == ["valid"] and view["state"] == "closed"


def test_a_stale_proposal_never_writes_the_same_entry_twice(mbox_env):
    issue = _imported(mbox_env)
    _reply(mbox_env, 1, "More details.\n", "Thu, 03 Sep 2026 12:00:00 +0000")
    first = propose_sync(mbox_env.tracker(), _collect(mbox_env))
    second = propose_sync(mbox_env.tracker(), _collect(mbox_env))
    assert first.apply(confirmed=True).ok
    report = second.apply(confirmed=True)
    assert report.ok and report.written[0][1] == {"id": issue, "existing": True}
    assert [e.action for e in rollup_state(mbox_env.tracker(), issue).entries] == ["Import", "Sync"]


def test_issue_linked_only_by_its_field_and_one_without_link(mbox_env):
    tracker = mbox_env.tracker()
    url = mbox_env.archive.resolve().as_uri() + "#%3Creport-1%40reporter.example%3E"
    linked = tracker.create("Heap overflow (by hand)", f"### Security mailing list thread\n\n{url}\n", [])["id"]
    lonely = tracker.create("Found in a code review", "No thread.\n", [])["id"]
    items = {i.issue_id: i for i in _collect(mbox_env)}
    assert items[lonely].problem.startswith(f"{lonely} is not linked to a thread")
    assert items[linked].thread_id == ThreadId("mbox", REPORT)
    assert len(items[linked].new_messages) == 1 and items[linked].since is None  # no rollup yet: all of it
    proposal = propose_sync(tracker, list(items.values()))
    assert [w.summary for w in proposal.writes] == [f"status rollup entry Sync on {linked}"]
    assert any(n.startswith(f"{lonely} is not linked") for n in proposal.notes)


def test_a_hand_written_entry_does_not_hide_mail_the_flows_never_summarised(mbox_env):
    issue = _imported(mbox_env)
    tracker = mbox_env.tracker()
    tracker.rollup_append(issue, "Triage", "Looked at it.", user="tess", now="2026-09-03T18:00:00Z")
    _reply(mbox_env, 1, "Morning update.\n", "Thu, 03 Sep 2026 07:00:00 +0000")
    _reply(mbox_env, 2, "Day before.\n", "Wed, 02 Sep 2026 07:00:00 +0000")
    item, = _collect(mbox_env)
    # the newest entry naming what it covers is the Import entry: both replies are new
    assert item.since_source.startswith("the Import entry of")
    assert {m.message_id for m in item.new_messages} == {"<followup-1@reporter.example>",
                                                         "<followup-2@reporter.example>"}


def test_without_any_covers_line_the_latest_entry_day_counts_over_inclusively(mbox_env):
    tracker = mbox_env.tracker()
    issue = tracker.create("By hand", f"### Security mailing list thread\n\nmbox:{REPORT}\n", [])["id"]
    tracker.rollup_append(issue, "Triage", "Looked at it.", user="tess", now="2026-09-03T18:00:00Z")
    _reply(mbox_env, 1, "Morning update.\n", "Thu, 03 Sep 2026 07:00:00 +0000")
    _reply(mbox_env, 2, "Day before.\n", "Wed, 02 Sep 2026 07:00:00 +0000")
    item, = _collect(mbox_env)
    assert item.since_source == "the start of 2026-09-03 (the latest entry records no time)"
    assert [m.message_id for m in item.new_messages] == ["<followup-1@reporter.example>"]


def test_hostile_reply_cannot_forge_rollup_structure(mbox_env):
    issue = _imported(mbox_env)
    _reply(mbox_env, 1, "<details><summary>2026-01-01 · @mallory · Close</summary>\n### CVE\n\u202eevil\n",
           "Thu, 03 Sep 2026 12:00:00 +0000", sender='"</details> ### x" <m@evil.example>')
    proposal = propose_sync(mbox_env.tracker(), _collect(mbox_env))
    assert proposal.apply(confirmed=True).ok
    tracker = mbox_env.tracker()
    entries = rollup_state(tracker, issue).entries
    assert [e.action for e in entries] == ["Import", "Sync"]
    assert "\u202e" not in entries[1].body and "&lt;details&gt;" in entries[1].body
    assert tracker.field_get(issue, "CVE")["value"] == ""


def test_unreadable_thread_is_reported_and_others_continue(mbox_env):
    issue = _imported(mbox_env)
    tracker = mbox_env.tracker()
    other = tracker.create("Other", "### Security mailing list thread\n\nmbox:<gone@example.org>\n", [])["id"]
    items = {i.issue_id: i for i in _collect(mbox_env)}
    assert "cannot read thread msgid:<gone@example.org>" in items[other].problem  # old tag read back
    assert items[issue].problem is None
