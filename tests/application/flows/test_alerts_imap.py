"""The alert cursor on a real Dovecot: after a quiet spell and a silent baseline, exactly the
new reports are new and replies to old threads are updates, for the poller and the CLI alike."""

from __future__ import annotations

import io
import json
import os
import re
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest

from mailtriage.core.trace import TRACE
from mailtriage.application.flows.alerts import NewReportPoller, run_poll_loop
from tests.application.flows.conftest import REPORT, mail
from tests.application.flows.test_e2e_imap import LIST, NOW, _sources, imap_env  # noqa: F401  (the fixture)

OLD_ROOT = "<old-root@reporter.example>"


def _date(when) -> str:
    return when.strftime("%a, %d %b %Y %H:%M:%S +0000")


def _seed_quiet_history(env) -> None:
    """A thread started ten days ago (before any look-back window) and one that went quiet
    a little more than three days ago: the list was quiet for three days before the baseline."""
    ten_days = NOW - timedelta(days=10)
    env.seed(mail(OLD_ROOT, "Olga <olga@reporter.example>", "Old race in frobd", "x\n", _date(ten_days), to=LIST),
             when=ten_days)
    quiet = NOW - timedelta(days=3, hours=2)
    env.seed(mail("<quiet-1@reporter.example>", "Quinn <quinn@reporter.example>", "Quiet report", "x\n",
                  _date(quiet), to=LIST), when=quiet)


def _seed_news(env) -> None:
    now = NOW + timedelta(seconds=5)
    env.seed(mail("<fresh-1@reporter.example>", "Nina <nina@reporter.example>", "Fresh report", "x\n", _date(now),
                  to=LIST), when=now)
    env.seed(mail("<old-reply@reporter.example>", "Olga <olga@reporter.example>", "Re: Old race in frobd", "y\n",
                  _date(now), to=LIST, in_reply_to=OLD_ROOT), when=now)
    env.seed(mail("<report-reply@reporter.example>", "Rita <rita@reporter.example>", "Re: Heap overflow", "z\n",
                  _date(now), to=LIST, in_reply_to=REPORT), when=now)


def test_after_a_quiet_spell_only_new_reports_are_new_and_replies_are_updates(imap_env):
    _seed_quiet_history(imap_env)
    sources = _sources(imap_env)
    try:
        poller = NewReportPoller(sources)
        baseline = poller.poll()
        assert baseline.baseline and not baseline.has_news
        poller.acknowledge(baseline)
        # Nothing arrived: nothing is new, not even threads older than the baseline's window.
        quiet = poller.poll()
        assert not quiet.has_news, [t.subject for t in quiet.new_threads]
        poller.acknowledge(quiet)
        _seed_news(imap_env)
        news = poller.poll()
        assert [str(t.thread_id.value) for t in news.new_threads] == ["<fresh-1@reporter.example>"]
        assert sorted(str(t.thread_id.value) for t in news.updated_threads) == sorted([OLD_ROOT, REPORT])
        poller.acknowledge(news)
        assert not poller.poll().has_news
    finally:
        sources.close()


def test_a_first_reply_to_a_root_never_on_the_list_is_a_new_report(imap_env):
    # Issue 39: the reporter's first mail to the list answers a private thread (its root was
    # never on the list). The thread is first seen now: a new report, not "New mail".
    _seed_quiet_history(imap_env)
    sources = _sources(imap_env)
    try:
        poller = NewReportPoller(sources)
        poller.acknowledge(poller.poll())
        now = NOW + timedelta(seconds=5)
        imap_env.seed(mail("<fwd-1@reporter.example>", "Pia <pia@reporter.example>", "Re: private race", "x\n",
                           _date(now), to=LIST, in_reply_to="<private-root@reporter.example>"), when=now)
        imap_env.seed(mail("<old-reply@reporter.example>", "Olga <olga@reporter.example>", "Re: Old race in frobd",
                           "y\n", _date(now), to=LIST, in_reply_to=OLD_ROOT), when=now)
        news = poller.poll()
        assert [t.subject for t in news.new_threads] == ["Re: private race"]
        assert [str(t.thread_id.value) for t in news.updated_threads] == [OLD_ROOT]
    finally:
        sources.close()


def test_the_cli_poll_follows_the_same_cursor(imap_env, capsys, monkeypatch):
    from mailtriage.cli.main import main

    def cli(*args):
        monkeypatch.setattr(sys, "stdin", io.StringIO(""))
        code = main(["--project", str(imap_env.project), *args])
        out, err = capsys.readouterr()
        assert code == 0, err
        return json.loads(out)

    _seed_quiet_history(imap_env)
    assert cli("poll")["baseline"] is True
    quiet = cli("poll")
    assert quiet["new_threads"] == [] and quiet["updated_threads"] == []
    _seed_news(imap_env)
    news = cli("poll")
    assert [t["thread_id"] for t in news["new_threads"]] == ["msgid:<fresh-1@reporter.example>"]
    assert sorted(t["thread_id"] for t in news["updated_threads"]) == sorted([f"msgid:{OLD_ROOT}", f"msgid:{REPORT}"])
    again = cli("poll")
    assert again["new_threads"] == [] and again["updated_threads"] == []


# -- IDLE on the list's own folder ---------------------------------------------------------------

def _in_folders(env, *folders: str) -> None:
    """The list in its own folder (as server-side filters put it), and a fallback source on
    another folder of the same account when two are given."""
    rows = [("imap", "primary", "yes")] + [(f"imap{n}", "fallback", "no") for n in range(2, len(folders) + 1)]
    extra = {"mail_sources.imap": {"account": "work", "list": LIST, "folder": folders[0]}}
    for n, folder in enumerate(folders[1:], start=2):
        extra[f"mail_sources.imap{n}"] = {"kind": "imap", "account": "work", "list": LIST, "folder": folder}
    env.write_project(rows, extra=extra)
    for folder in folders:
        env.seed(mail(f"<start-{folder}@reporter.example>", "Olga <olga@reporter.example>", f"Old in {folder}",
                      "x\n", _date(NOW), to=LIST), folder=folder, when=NOW)


def _until(condition, what: str, bound: float = 45.0) -> None:
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {bound:g} s waiting for {what}")
        time.sleep(0.05)


def test_idle_watches_the_lists_own_folder(imap_env):
    _in_folders(imap_env, "seclist")
    sources = _sources(imap_env)
    poller = NewReportPoller(sources)
    stop = threading.Event()
    news, errors = [], []

    def on_news(outcome):
        news.append([t.subject for t in outcome.new_threads])
        poller.acknowledge(outcome)

    # An hour between polls: only IDLE on the list's folder can bring the report in.
    loop = threading.Thread(target=run_poll_loop, args=(poller, on_news), daemon=True,
                            kwargs={"stop": stop, "interval": 3600, "on_error": errors.append})
    loop.start()
    try:
        _until(poller.store.path.exists, "the silent baseline")
        imap_env.seed(mail("<seclist-1@reporter.example>", "Nina <nina@reporter.example>", "Report in seclist",
                           "x\n", _date(NOW), to=LIST), folder="seclist", when=NOW)
        _until(lambda: news, "the report delivered to seclist")
    finally:
        stop.set()
        sources.abort()  # the IDLE slice ends at once
        loop.join(timeout=60)
        sources.close()
    assert errors == [] and news == [["Report in seclist"]]


def test_every_folder_that_holds_a_configured_list_is_watched(imap_env):
    _in_folders(imap_env, "seclist", "seclist-old")
    sources = _sources(imap_env)
    # The server's "+ idling" answers: each wait IDLEs on both folders, one connection each.
    idling: list[str] = []
    unsubscribe = TRACE.subscribe(lambda line: idling.append(line.text) if line.text.startswith("+ idling") else None)
    try:
        poller = NewReportPoller(sources)
        poller.acknowledge(poller.poll())
        for n, folder in enumerate(("seclist-old", "seclist"), start=1):
            stop = threading.Event()

            def deliver(f: str = folder, waits: int = 2 * n) -> None:
                # Delivered once both folders are in IDLE (a timer could fire, on a loaded machine,
                # before the fallback folder's connection, opened by the wait, first selects it:
                # that mail is then already counted in the SELECT IDLE compares with).
                _until(lambda: len(idling) >= waits, "both folders in IDLE", bound=90)
                imap_env.seed(mail(f"<late-{f}@reporter.example>", "Nina <nina@reporter.example>", "Late", "x\n",
                                   _date(NOW), to=LIST), folder=f, when=NOW)

            sender = threading.Thread(target=deliver, daemon=True)
            sender.start()
            try:
                # True only when the server announced mail: a wait that ran out says False.
                assert poller.wait(120, stop, slice_seconds=120) is True, folder
            finally:
                sender.join(timeout=120)
            poller.acknowledge(poller.poll())
    finally:
        unsubscribe()
        sources.close()


def test_mail_in_a_fallback_folder_between_the_poll_and_the_wait_wakes_the_wait_at_once(imap_env):
    # The fallback folder's wait had no earlier look at it (the poll lists the primary only): a
    # mail that landed there after the poll and before the wait's first SELECT was in the state
    # IDLE compares with, and the wait ran out instead of waking (the next poll was a delay).
    _in_folders(imap_env, "seclist", "seclist-old")
    sources = _sources(imap_env)
    stop = threading.Event()
    try:
        poller = NewReportPoller(sources)

        def poll_once() -> None:
            assert run_poll_loop(poller, poller.acknowledge, stop=stop, max_polls=1) == 1

        poll_once()
        imap_env.seed(mail("<between@reporter.example>", "Nina <nina@reporter.example>", "Between", "x\n",
                           _date(NOW), to=LIST), folder="seclist-old", when=NOW)
        # At once, from the wait's SELECT; without a look at the poll, IDLE waited out the 30 s.
        assert poller.wait(30, stop, slice_seconds=30) is True
        poll_once()
        assert poller.wait(1, stop, slice_seconds=1) is False  # nothing came since: the look wakes nothing
    finally:
        sources.close()


# -- what a poll asks of the server ----------------------------------------------------------------

def _fetched(lines) -> int:
    """Messages the server sent FETCH data for: one untagged ``* n FETCH`` each, as the trace
    shows them (the first few one by one, then "[n more FETCH responses, …]")."""
    count = 0
    for line in lines:
        if line.direction == "<":
            more = re.match(r"\[(\d+) more FETCH responses", line.text)
            count += int(more.group(1)) if more else bool(re.match(r"\* \d+ FETCH ", line.text))
    return count


@pytest.mark.parametrize("on_disk", [True, False], ids=["cache", "cache_summaries-off"])
def test_a_poll_fetches_only_the_mail_that_came_since_the_last(imap_env, on_disk):
    # Issue 39: each poll of a storm listed the whole 3-day window again. With the summary
    # cache off (cache_summaries = false) every poll fetched every message of the window.
    if not on_disk:
        config = Path(os.environ["MAILTRIAGE_CONFIG_DIR"]) / "config.toml"
        config.write_text(config.read_text(encoding="utf-8").replace(
            'access = "draft"\n', 'access = "draft"\ncache_summaries = false\n'), encoding="utf-8")
    for n in range(40):
        when = NOW - timedelta(hours=2, minutes=n)
        imap_env.seed(mail(f"<storm-{n}@reporter.example>", "Sam <sam@reporter.example>", f"Storm {n}", "x\n",
                           _date(when), to=LIST), when=when)
    sources = _sources(imap_env)
    lines: list = []
    unsubscribe = TRACE.subscribe(lines.append)
    try:
        poller = NewReportPoller(sources)
        poller.acknowledge(poller.poll())
        assert _fetched(lines) >= 41  # the baseline reads the window (40 + the fixture's report)
        for n in range(2):
            now = NOW + timedelta(seconds=5 + n)
            imap_env.seed(mail(f"<new-{n}@reporter.example>", "Nina <nina@reporter.example>", f"New {n}", "x\n",
                               _date(now), to=LIST), when=now)
            lines.clear()
            news = poller.poll()
            assert [t.subject for t in news.new_threads] == [f"New {n}"]
            assert _fetched(lines) == 1, _fetched(lines)  # the new message, not the window again
            poller.acknowledge(news)
    finally:
        unsubscribe()
        sources.close()


def _message_id_searches(lines) -> int:
    """``UID SEARCH … HEADER Message-ID …`` commands the client sent (an OR of several counts once)."""
    return sum(1 for line in lines if line.direction == ">" and "SEARCH" in line.text.upper()
               and "MESSAGE-ID" in line.text.upper())


def test_a_poll_looks_up_the_roots_of_many_replies_to_old_threads_at_once(imap_env):
    # Issue 39: in a storm each reply to a thread older than the window made its own HEADER
    # Message-ID search (57 ms each at 3,000 messages): 20 such replies held a poll for 1.2 s.
    # All the roots one poll needs are looked up together: one search of the list folder, one of
    # Sent for the roots it did not hold; a root found once is not searched for again.
    ten_days = NOW - timedelta(days=10)
    roots = [f"<old-{n}@reporter.example>" for n in range(12)]
    for n, root in enumerate(roots):
        imap_env.seed(mail(root, "Olga <olga@reporter.example>", f"Old race {n}", "x\n", _date(ten_days), to=LIST),
                      when=ten_days)
    sources = _sources(imap_env)
    lines: list = []
    unsubscribe = TRACE.subscribe(lines.append)
    try:
        poller = NewReportPoller(sources)
        poller.acknowledge(poller.poll())
        now = NOW + timedelta(seconds=5)
        for n, root in enumerate(roots):
            imap_env.seed(mail(f"<reply-{n}@reporter.example>", "Olga <olga@reporter.example>", f"Re: Old race {n}",
                               "y\n", _date(now), to=LIST, in_reply_to=root), when=now)
        imap_env.seed(mail("<fwd-1@reporter.example>", "Pia <pia@reporter.example>", "Re: private race", "x\n",
                           _date(now), to=LIST, in_reply_to="<private-root@reporter.example>"), when=now)
        lines.clear()
        news = poller.poll()
        assert [t.subject for t in news.new_threads] == ["Re: private race"]
        assert sorted(str(t.thread_id.value) for t in news.updated_threads) == sorted(roots)
        assert _message_id_searches(lines) <= 2, _message_id_searches(lines)
        lines.clear()
        again = poller.poll()  # not acknowledged: the same news, from the roots already found
        assert sorted(str(t.thread_id.value) for t in again.updated_threads) == sorted(roots)
        assert [t.subject for t in again.new_threads] == ["Re: private race"]
        assert _message_id_searches(lines) <= 2, _message_id_searches(lines)  # the private root, only
        # Once shown and acknowledged the cursor has those threads: their roots are not kept
        # (a storm's found roots grew for the whole run).
        poller.acknowledge(again)
        assert [root for _epoch, known in poller._found_roots.values() for root in known] == []
    finally:
        unsubscribe()
        sources.close()


def _expunge_root(env, folder: str) -> None:
    """Another client deletes the old root from the list folder (the reply stays)."""
    with env.dovecot.client(env.user) as other:
        other.select_folder(folder)
        other.delete_messages(other.search(["HEADER", "Message-ID", OLD_ROOT]))
        other.expunge()


def _recreate_without_root(env, folder: str) -> None:
    """Another client deletes the list folder and creates it again (a new UIDVALIDITY) with
    the reply only."""
    reply = mail("<old-reply@reporter.example>", "Olga <olga@reporter.example>", "Re: Old race in frobd", "y\n",
                 _date(NOW + timedelta(seconds=5)), to=LIST, in_reply_to=OLD_ROOT)
    with env.dovecot.client(env.user) as other:
        other.delete_folder(folder)
        other.create_folder(folder)
    env.seed(reply, when=NOW + timedelta(seconds=5), folder=folder)


@pytest.mark.parametrize("gone", [_expunge_root, _recreate_without_root], ids=["root-expunged", "folder-recreated"])
def test_a_remembered_root_is_asked_again_once_it_may_be_gone(imap_env, gone):
    # Issue 39: a root found on the list was remembered for good ("remembered roots are never
    # rechecked"): after the root was expunged, or the folder re-created without it (a new
    # UIDVALIDITY), a reply to it was still an update to a thread on the list, never a new report.
    folder = "Reports"
    imap_env.write_project([("imap", "primary", "yes")],
                           extra={"mail_sources.imap": {"account": "work", "list": LIST, "folder": folder}})
    ten_days = NOW - timedelta(days=10)
    imap_env.seed(mail(OLD_ROOT, "Olga <olga@reporter.example>", "Old race in frobd", "x\n", _date(ten_days), to=LIST),
                  when=ten_days, folder=folder)
    sources = _sources(imap_env)
    try:
        poller = NewReportPoller(sources)
        poller.acknowledge(poller.poll())
        now = NOW + timedelta(seconds=5)
        imap_env.seed(mail("<old-reply@reporter.example>", "Olga <olga@reporter.example>", "Re: Old race in frobd",
                           "y\n", _date(now), to=LIST, in_reply_to=OLD_ROOT), when=now, folder=folder)
        news = poller.poll()  # not acknowledged (the screen is busy): the next poll reports it again
        assert [str(t.thread_id.value) for t in news.updated_threads] == [OLD_ROOT] and not news.new_threads
        gone(imap_env, folder)
        again = poller.poll()
        assert [t.subject for t in again.new_threads] == ["Re: Old race in frobd"], \
            ([t.subject for t in again.new_threads], [t.subject for t in again.updated_threads])
        assert not again.updated_threads
    finally:
        sources.close()


def test_a_root_remembered_from_sent_is_asked_again_once_it_left_sent(imap_env):
    # Issue 39: roots are looked for in Sent too, but only departures from the list folder made
    # the poller forget the roots it found: after our own report was expunged from Sent, a reply
    # to it stayed an update to a thread on the list, never a new report.
    ten_days = NOW - timedelta(days=10)
    imap_env.seed(mail(OLD_ROOT, "Me <me@example.org>", "Old race in frobd", "x\n", _date(ten_days), to=LIST),
                  when=ten_days, folder="Sent")
    sources = _sources(imap_env)
    try:
        poller = NewReportPoller(sources)
        poller.acknowledge(poller.poll())
        now = NOW + timedelta(seconds=5)
        imap_env.seed(mail("<old-reply@reporter.example>", "Olga <olga@reporter.example>", "Re: Old race in frobd",
                           "y\n", _date(now), to=LIST, in_reply_to=OLD_ROOT), when=now)
        news = poller.poll()  # not acknowledged: the next poll reports it again
        assert [str(t.thread_id.value) for t in news.updated_threads] == [OLD_ROOT] and not news.new_threads
        _expunge_root(imap_env, "Sent")
        again = poller.poll()
        assert [t.subject for t in again.new_threads] == ["Re: Old race in frobd"], \
            ([t.subject for t in again.new_threads], [t.subject for t in again.updated_threads])
    finally:
        sources.close()
