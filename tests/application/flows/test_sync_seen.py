"""Sync covers what it has seen, not a Date (issue 30 §5): every reply reaches a Sync entry
exactly once, whatever its Date header says.

A reply dated in the future must not hide the real replies after it; a reply that arrives
late with an older Date (moderation, greylisting) must still be proposed. On an mbox archive
and on a real Dovecot alike. Rollups written before this change stay readable: what they
covered by date still counts as seen.
"""

from __future__ import annotations

from datetime import timedelta

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.registry import SourceSet
from mailtriage.application.flows.importer import propose_import
from mailtriage.application.flows.linking import rollup_state
from mailtriage.application.flows.sync import collect_sync, propose_sync
from tests.application.flows.conftest import REPORT, mail, report_thread, write_mbox
from tests.application.flows.test_e2e_imap import LIST, NOW, imap_env  # noqa: F401  (the fixture)

TID = ThreadId("mbox", REPORT)
RITA = "Rita Reporter <rita@reporter.example>"
SUBJECT = "Re: Heap overflow in the frob parser"


def _date(when) -> str:
    return when.strftime("%a, %d %b %Y %H:%M:%S +0000")


# -- on an mbox archive -----------------------------------------------------------------------

def _import(env, tid=TID) -> str:
    sources = SourceSet(env.config())
    report = propose_import(sources, env.tracker(), tid, sender_name="Sam").apply(confirmed=True)
    sources.close()
    assert report.ok, report.describe()
    return report.written[0][1]["id"]


def _reply(env, n: int, date: str, body: str = "More details.\n"):
    write_mbox(env.archive, [mail(f"<followup-{n}@reporter.example>", RITA, SUBJECT, body, date,
                                  in_reply_to=REPORT)])


def _sync(env) -> list[str]:
    """Collect, apply every proposed entry, and return the Message-IDs the run summarised."""
    sources = SourceSet(env.config())
    try:
        items = collect_sync(sources, env.tracker())
    finally:
        sources.close()
    assert all(i.problem is None for i in items), [i.problem for i in items]
    proposal = propose_sync(env.tracker(), items)
    if proposal.writes:
        assert proposal.apply(confirmed=True).ok
    return [m.message_id for i in items for m in i.new_messages]


def test_a_future_dated_reply_does_not_hide_the_replies_after_it(mbox_env):
    issue = _import(mbox_env)
    _reply(mbox_env, 1, "Sat, 01 Mar 2031 10:00:00 +0000", "My clock is wrong.\n")
    assert _sync(mbox_env) == ["<followup-1@reporter.example>"]
    _reply(mbox_env, 2, "Thu, 03 Sep 2026 12:00:00 +0000", "A real reply, dated today.\n")
    assert _sync(mbox_env) == ["<followup-2@reporter.example>"]
    assert _sync(mbox_env) == []  # exactly once
    assert [e.action for e in rollup_state(mbox_env.tracker(), issue).entries] == ["Import", "Sync", "Sync"]


def test_a_late_reply_with_an_older_date_is_proposed(mbox_env):
    issue = _import(mbox_env)
    _reply(mbox_env, 1, "Thu, 03 Sep 2026 12:00:00 +0000")
    assert _sync(mbox_env) == ["<followup-1@reporter.example>"]
    # Held in moderation: it arrives now, dated before the reply already summarised.
    _reply(mbox_env, 2, "Wed, 02 Sep 2026 08:00:00 +0000", "Sent yesterday, held by the moderator.\n")
    assert _sync(mbox_env) == ["<followup-2@reporter.example>"]
    assert _sync(mbox_env) == []
    entries = rollup_state(mbox_env.tracker(), issue).entries
    assert [e.action for e in entries] == ["Import", "Sync", "Sync"]
    assert "held by the moderator" in entries[2].body


def test_a_late_reply_older_than_what_the_import_covered_is_proposed(env):
    # The thread at import already holds a reply of Wed 2 Sep; one dated Tue 1 Sep 12:00 arrives later.
    env.archive = write_mbox(env.project / "security.mbox", report_thread(with_reply=True))
    env.write_project([("mbox", "primary", "yes")],
                      extra={"mail_sources.mbox": {"path": env.archive.name, "list": LIST}})
    _import(env)
    assert _sync(env) == []
    _reply(env, 1, "Tue, 01 Sep 2026 12:00:00 +0000", "Greylisted for a day.\n")
    assert _sync(env) == ["<followup-1@reporter.example>"]
    assert _sync(env) == []


def test_a_stale_proposal_writes_only_what_the_other_run_did_not(mbox_env):
    issue = _import(mbox_env)
    _reply(mbox_env, 1, "Thu, 03 Sep 2026 12:00:00 +0000", "First.\n")
    sources = SourceSet(mbox_env.config())
    stale = propose_sync(mbox_env.tracker(), collect_sync(sources, mbox_env.tracker()))
    _reply(mbox_env, 2, "Wed, 02 Sep 2026 12:00:00 +0000", "Second, dated earlier.\n")
    fresh = propose_sync(mbox_env.tracker(), collect_sync(sources, mbox_env.tracker()))
    sources.close()
    assert stale.apply(confirmed=True).ok
    report = fresh.apply(confirmed=True)
    assert report.ok, report.describe()
    entries = rollup_state(mbox_env.tracker(), issue).entries
    assert [e.action for e in entries] == ["Import", "Sync", "Sync"]
    assert "First." in entries[1].body and "First." not in entries[2].body and "Second, dated" in entries[2].body
    assert _sync(mbox_env) == []


def test_a_rollup_written_before_keeps_its_date_coverage(mbox_env):
    """Migration: an entry that records only ``Covers mail up to`` covers every message dated
    up to it; a message after it is new, and so is one the new entries have not seen."""
    tracker = mbox_env.tracker()
    issue = tracker.create("By an older mailtriage", f"### Security mailing list thread\n\nmbox:{REPORT}\n", [])["id"]
    tracker.rollup_append(issue, "Sync", f"1 new message(s):\nThread: `mbox:{REPORT}`\n"
                          "Covers mail up to: 2026-09-03T00:00:00Z", user="tess", now="2026-09-03T18:00:00Z")
    _reply(mbox_env, 1, "Wed, 02 Sep 2026 12:00:00 +0000", "Covered by the old entry.\n")
    _reply(mbox_env, 2, "Fri, 04 Sep 2026 12:00:00 +0000", "After it.\n")
    assert _sync(mbox_env) == ["<followup-2@reporter.example>"]
    _reply(mbox_env, 3, "Thu, 03 Sep 2026 12:00:00 +0000", "Late, but after the old coverage.\n")
    assert _sync(mbox_env) == ["<followup-3@reporter.example>"]
    assert _sync(mbox_env) == []


# -- on a real Dovecot -------------------------------------------------------------------------

def _seed_reply(env, n: int, dated, arrived=None, body="More details.\n"):
    env.seed(mail(f"<followup-{n}@reporter.example>", RITA, SUBJECT, body, _date(dated), to=LIST,
                  in_reply_to=REPORT), when=arrived or NOW)


def _imap_import(env) -> str:
    return _import(env, ThreadId("imap", REPORT))


def test_imap_future_dated_reply_then_a_normal_reply(imap_env):
    _imap_import(imap_env)
    _seed_reply(imap_env, 1, NOW + timedelta(days=5 * 365), arrived=NOW - timedelta(hours=2))
    assert _sync(imap_env) == ["<followup-1@reporter.example>"]
    _seed_reply(imap_env, 2, NOW - timedelta(hours=1), arrived=NOW - timedelta(hours=1))
    assert _sync(imap_env) == ["<followup-2@reporter.example>"]
    assert _sync(imap_env) == []


def test_imap_late_reply_with_an_older_date(imap_env):
    _imap_import(imap_env)
    _seed_reply(imap_env, 1, NOW - timedelta(hours=2), arrived=NOW - timedelta(hours=2))
    assert _sync(imap_env) == ["<followup-1@reporter.example>"]
    _seed_reply(imap_env, 2, NOW - timedelta(hours=4), arrived=NOW, body="Greylisted.\n")
    assert _sync(imap_env) == ["<followup-2@reporter.example>"]
    assert _sync(imap_env) == []


def test_an_edited_entry_still_names_what_it_covers(mbox_env):
    issue = _import(mbox_env)
    _reply(mbox_env, 1, "Thu, 03 Sep 2026 12:00:00 +0000", "Details.\n")
    sources = SourceSet(mbox_env.config())
    proposal = propose_sync(mbox_env.tracker(), collect_sync(sources, mbox_env.tracker()))
    sources.close()
    proposal.writes[0].body = "Rita sent details; nothing new."  # the triager rewrote the whole entry
    assert proposal.apply(confirmed=True).ok
    body = rollup_state(mbox_env.tracker(), issue).entries[-1].body
    assert body.startswith("Rita sent details; nothing new.")
    assert _sync(mbox_env) == []  # the reply is covered all the same
