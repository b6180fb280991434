"""PonyMailSource against an emulated Pony Mail Foal API on loopback."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pathlib import Path

from mailtriage.backends.contract import SourceOrigin
from mailtriage.backends.archive_http import ArchiveBadResponse, ArchiveNotFound, ArchiveServerError
from mailtriage.backends.contract import DraftRequest, Op, ThreadId
from mailtriage.backends.errors import BackendFailure, NotSupported, SignInNeeded, Unavailable
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.origins import secret_key
from mailtriage.core.secrets import set_secret
from mailtriage.core.trace import TRACE
from tests.archives.conftest import PM_DOMAIN, PM_LIST_RAW, SESSION_COOKIE
from tests.archives.fakehttp import Reply
from tests.archives.ponymail_server import make_mid

SQLI_ROOT = make_mid(PM_LIST_RAW, "<sqli-root@reporter.example>")
SQLI_REPLY = make_mid(PM_LIST_RAW, "<sqli-reply@example.org>")
BROKEN = make_mid(PM_LIST_RAW, "<broken@reporter.example>")


def endpoint_calls(server, name):
    return [r for r in server.requests if r.path == f"/api/{name}.lua"]


def sign_in(pm_server):
    set_secret(secret_key("ponymail", pm_server.base_url), SESSION_COOKIE)


def test_capabilities_are_exactly_the_three_read_ops(pm_source, now):
    source = pm_source()
    assert (source.kind, source.thread_id_kind) == ("ponymail", "ponymail")
    assert source.capabilities == {Op.LIST_RECENT_THREADS, Op.READ_THREAD, Op.THREAD_URL}
    tid = ThreadId("ponymail", SQLI_ROOT)
    for call in (lambda: source.list_drafts(tid), lambda: source.list_sent_since(tid, now),
                 lambda: source.create_draft(DraftRequest(tid, "b", ("a@example.org",)))):
        with pytest.raises(NotSupported):
            call()


def test_recent_threads_from_one_stats_request(pm_source, pm_server, now):
    listing = pm_source().list_recent_threads(None, now - timedelta(days=30))
    assert [s.subject for s in listing] == ["[SECURITY] SQL injection in search", "Heap overflow in decoder"]
    sqli = listing[0]
    assert sqli.thread_id == ThreadId("ponymail", SQLI_ROOT)
    assert sqli.root_message_id == "<sqli-root@reporter.example>"
    assert sqli.sender.name == "Mallory Reporter"
    assert sqli.sender.email == "ma...@reporter.example"  # anonymous view, shown as the archive gives it
    assert sqli.message_count == 3
    assert abs((sqli.last_activity - (now - timedelta(days=1))).total_seconds()) < 1
    stats = endpoint_calls(pm_server, "stats")
    assert len(stats) == 1
    assert (stats[0].param("list"), stats[0].param("domain"), stats[0].param("d")) == ("security", PM_DOMAIN,
                                                                                       "lte=30d")
    assert pm_server.paths() == ["/api/preferences.lua", "/api/stats.lua"]
    assert listing.requests == 2
    assert all("mailtriage" in r.headers["user-agent"] for r in pm_server.requests)


def test_since_sets_the_timespan_and_filters(pm_source, pm_server, now):
    listing = pm_source().list_recent_threads("security@example.org", now - timedelta(days=3, hours=1))
    assert [s.subject for s in listing] == ["[SECURITY] SQL injection in search"]
    assert endpoint_calls(pm_server, "stats")[0].param("d") == "lte=4d"


def test_anonymous_private_list_is_unavailable_not_empty(pm_source, pm_server, now):
    source = pm_source(list="private")
    with pytest.raises(Unavailable) as info:
        source.list_recent_threads(None, now - timedelta(days=30))
    reason = info.value.reason
    assert "private" in reason and "not visible anonymously" in reason
    assert secret_key("ponymail", pm_server.base_url) in reason  # where to put the cookie
    assert endpoint_calls(pm_server, "stats") == []  # hits:0 is never taken for "no threads"
    with pytest.raises(Unavailable):
        source.check_available()


def test_signed_in_session_reads_private_list_and_cookie_stays_out_of_trace(pm_source, pm_server, now):
    sign_in(pm_server)
    lines = []
    unsubscribe = TRACE.subscribe(lines.append)
    try:
        source = pm_source(list="private")
        listing = source.list_recent_threads(None, now - timedelta(days=30))
        thread = source.read_thread(listing[0].thread_id)
    finally:
        unsubscribe()
    assert [s.subject for s in listing] == ["Embargoed fix"]
    assert listing[0].sender.email == "eve@example.org"  # not anonymised when signed in
    assert thread.messages[0].body_text.strip() == "embargoed"
    assert all(f"ponymail={SESSION_COOKIE}" in r.headers.get("cookie", "") for r in pm_server.requests)
    assert lines and not any(SESSION_COOKIE in line.text for line in lines)


def test_expired_session_asks_to_sign_in_again(pm_source, pm_server, memory_keyring):
    set_secret(secret_key("ponymail", pm_server.base_url), "stale-cookie")
    with pytest.raises(SignInNeeded, match="sign in again"):
        pm_source(list="private").check_available()  # a public list stays readable (test below)




def test_missing_list_is_unavailable_with_reason(pm_source):
    with pytest.raises(Unavailable, match="nosuch@example.org is not visible"):
        pm_source(list="nosuch").check_available()


def test_check_available_is_one_cached_request(pm_source, pm_server):
    source = pm_source()
    source.check_available()
    source.check_available()
    assert pm_server.paths() == ["/api/preferences.lua"]


# -- read_thread ----------------------------------------------------------------------


def test_read_thread_walks_children_and_parses_raw_sources(pm_source, pm_server):
    thread = pm_source().read_thread(ThreadId("ponymail", SQLI_ROOT))
    assert thread.subject == "[SECURITY] SQL injection in search"
    assert [m.message_id for m in thread.messages] == [
        "<sqli-root@reporter.example>", "<sqli-reply@example.org>", "<broken@reporter.example>"]
    root, reply, broken = thread.messages
    assert root.sender.email == "mallory@reporter.example"  # the raw source is not anonymised
    assert root.body_text.startswith("The q= parameter reaches the SQL query unescaped.")
    assert [a.filename for a in root.attachments] == ["poc.txt"]
    assert reply.in_reply_to == "<sqli-root@reporter.example>"
    assert reply.backend_ref == SQLI_REPLY
    # the broken MIME message is listed, with what went wrong, and the rest is intact
    assert broken.subject == "Re: [SECURITY] SQL injection in search"
    assert broken.notes and broken.text_parts[0].note  # e.g. missing close boundary, bad base64
    assert root.notes == () and reply.notes == ()
    thread_calls = endpoint_calls(pm_server, "thread")
    assert thread_calls[0].param("find_parent") == "true" and thread_calls[0].param("id") == SQLI_ROOT
    assert sorted(r.param("id") for r in endpoint_calls(pm_server, "source")) == sorted(
        [SQLI_ROOT, SQLI_REPLY, BROKEN])


def test_read_thread_from_a_reply_climbs_to_the_root(pm_source):
    thread = pm_source().read_thread(ThreadId("ponymail", SQLI_REPLY))
    assert thread.thread_id == ThreadId("ponymail", SQLI_REPLY)
    assert thread.messages[0].message_id == "<sqli-root@reporter.example>"
    assert any(SQLI_ROOT in note for note in thread.notes)


def test_read_thread_by_message_id_sends_the_list_id(pm_source, pm_server):
    thread = pm_source().read_thread(ThreadId("ponymail", "<sqli-root@reporter.example>"))
    assert len(thread.messages) == 3
    call = endpoint_calls(pm_server, "thread")[0]
    assert (call.param("id"), call.param("listid")) == ("<sqli-root@reporter.example>", PM_LIST_RAW)


def test_missing_source_falls_back_to_email_json(pm_source, pm_server):
    pm_server.fail(lambda r: r.path == "/api/source.lua" and r.param("id") == SQLI_REPLY,
                   Reply.text("Email not found", 404))
    thread = pm_source().read_thread(ThreadId("ponymail", SQLI_ROOT))
    reply = thread.messages[1]
    assert reply.message_id == "<sqli-reply@example.org>"
    assert reply.body_text == "Confirmed, fixing.\n"
    assert reply.sender.email == "sam@example.org"  # from_raw
    assert "raw source unavailable" in reply.notes[0] and "HTTP 404" in reply.notes[0]
    assert thread.messages[0].notes == ()


def test_source_and_email_both_failing_keep_the_tree_entry(pm_source, pm_server):
    pm_server.fail(lambda r: r.param("id") == SQLI_REPLY and r.path in ("/api/source.lua", "/api/email.lua"),
                   Reply.text("API error occurred. Error ID: 1234", 500), times=None)
    thread = pm_source().read_thread(ThreadId("ponymail", SQLI_ROOT))
    reply = thread.messages[1]
    assert reply.message_id == "<sqli-reply@example.org>" and reply.subject.startswith("Re:")
    assert len(reply.notes) == 2 and "HTTP 500" in reply.notes[1]
    assert len(thread.messages) == 3


def test_unknown_thread_is_not_found(pm_source):
    with pytest.raises(ArchiveNotFound, match="HTTP 404"):
        pm_source().read_thread(ThreadId("ponymail", "0" * 32))


def test_private_thread_anonymously_is_unavailable(pm_source, pm_archive):
    mid = make_mid("<private.example.org>", "<embargo@example.org>")
    with pytest.raises(Unavailable, match="private"):
        pm_source(list="private").read_thread(ThreadId("ponymail", mid))


def test_thread_urls(pm_source, pm_server):
    source = pm_source()
    assert source.thread_url(ThreadId("ponymail", SQLI_ROOT)) == f"{pm_server.base_url}/thread/{SQLI_ROOT}"
    with pytest.raises(BackendFailure):
        source.thread_url(ThreadId("hyperkitty", "X"))
    assert len(pm_server.requests) == 1  # one thread lookup finds the root
    # The API failing now: the web UI's own forms, which climb to the root themselves.
    pm_server.fail("/api/thread", Reply.text("API error occurred. Error ID: 7", 500), times=None)
    assert source.thread_url(ThreadId("ponymail", "<a+b@x.org>")) == (
        f"{pm_server.base_url}/thread/%3Ca%2Bb%40x.org%3E?%3Csecurity.example.org%3E")
    assert source.thread_url(ThreadId("ponymail", SQLI_REPLY)) == (
        f"{pm_server.base_url}/thread/{SQLI_REPLY}?find_parent=true")


# -- server trouble -------------------------------------------------------------------


def test_stats_errors_are_distinct(pm_source, pm_server, now):
    pm_server.fail("/api/stats", Reply.text("API error occurred. Error ID: 42", 500))
    with pytest.raises(ArchiveServerError) as info:
        pm_source().list_recent_threads(None, now - timedelta(days=30))
    assert info.value.status == 500 and "Error ID: 42" in str(info.value)
    pm_server.fail("/api/stats", Reply.text('{"emails": [', 200, "application/json"))
    with pytest.raises(ArchiveBadResponse, match="not valid JSON"):
        pm_source().list_recent_threads(None, now - timedelta(days=30))


def test_stats_429_is_retried_after_retry_after(pm_source, pm_server, now):
    pm_server.fail("/api/stats", Reply.text("slow down", 429, **{"Retry-After": "0"}))
    listing = pm_source().list_recent_threads(None, now - timedelta(days=30))
    assert len(listing) == 2 and len(endpoint_calls(pm_server, "stats")) == 2


def test_unreadable_thread_entry_is_named(pm_source, pm_server, now):
    pm_server.fail("/api/stats", Reply.json({"emails": [], "hits": 0, "thread_struct": [
        {"subject": "no tid"}, {"tid": "abc", "subject": "ok", "epoch": int(now.timestamp()), "children": []}]}))
    listing = pm_source().list_recent_threads(None, now - timedelta(days=30))
    assert [s.subject for s in listing] == ["ok"]
    assert "no tid" in listing.notes[0]
    assert "sender unknown" in listing[0].notes[0]


# -- configuration ----------------------------------------------------------------------


@pytest.mark.parametrize("settings, key", [
    ({"list": "security", "domain": "example.org"}, "mail_sources.pony.base_url"),
    ({"base_url": "https://lists.example.org", "list": "security"}, "mail_sources.pony.domain"),
    ({"base_url": "https://lists.example.org", "list": "security@a.org", "domain": "b.org"},
     "mail_sources.pony.domain"),
    ({"base_url": "https://lists.example.org", "domain": "example.org"}, "mail_sources.pony.list"),
])
def test_config_errors_name_file_and_key(tmp_path, settings, key):
    from mailtriage.backends.ponymail import PonyMailSource

    with pytest.raises(ConfigError) as info:
        PonyMailSource("pony", {**settings}, origin=SourceOrigin(project_dir=Path(tmp_path)))
    assert info.value.key == key and info.value.file == str(tmp_path / "project.md")


def test_list_with_domain_needs_no_domain_key(pm_source, now):
    source = pm_source(list="security@example.org", domain=None)
    assert (source.list_name, source.domain, source.list_id) == ("security", "example.org", PM_LIST_RAW)
    assert len(source.list_recent_threads(None, now - timedelta(days=30))) == 2


def test_registry_builds_it_from_project_md(tmp_path, pm_server, memory_keyring, now):
    from mailtriage.backends.ponymail import PonyMailSource
    from mailtriage.backends.registry import SourceSet
    from mailtriage.core.projectconfig import load_project

    (tmp_path / "project.md").write_text(f"""# Demo

## Mail sources

| Backend | Role | Mandatory | Notes |
|---|---|---|---|
| `ponymail` | fallback | no | Read-only archive backstop |
| `other` | primary | no | stands in for Gmail |

## Configuration

```yaml
mail_sources:
  ponymail:
    base_url: {pm_server.base_url}
    list: security
    domain: example.org
  other:
    kind: ponymail
    base_url: {pm_server.base_url}
    list: private
    domain: example.org
```
""", encoding="utf-8")
    sources = SourceSet(load_project(tmp_path))
    try:
        assert isinstance(sources.backends["ponymail"], PonyMailSource)
        rows = {row["backend"]: row for row in sources.matrix()}
        assert rows["ponymail"]["available"] is True
        assert rows["other"]["available"] is False and "private" in rows["other"]["reason"]
        result = sources.dispatch(Op.LIST_RECENT_THREADS,
                                  lambda b: b.list_recent_threads(None, now - timedelta(days=30)))
        assert result.resolution.chosen == "ponymail"  # the unavailable primary was skipped
        assert len(result.value) == 2
    finally:
        sources.close()


def test_unreadable_keyring_reads_anonymously_and_says_why(pm_source, now):
    import keyring
    from keyring.backends import fail

    keyring.set_keyring(fail.Keyring())  # memory_keyring (via pm_source) restores the previous one
    assert len(pm_source().list_recent_threads(None, now - timedelta(days=30))) == 2
    with pytest.raises(Unavailable, match="keyring could not be read: NoKeyringError"):
        pm_source(list="private").check_available()


# -- the edges of the archive (issue 12 §7, issue 18 §1) ------------------------------------

OLD_ROOT = make_mid(PM_LIST_RAW, "<old-root@reporter.example>")


def add_old_conversation(pm_archive, now):
    """A report 40 days old, answered 2 and 1 days ago (one reply changed the subject)."""
    from tests.archives.ponymail_server import PMEmail

    epoch = lambda days: int((now - timedelta(days=days)).timestamp())  # noqa: E731
    pm_archive.add(PMEmail(PM_LIST_RAW, "<old-root@reporter.example>", "Olga Old <olga@reporter.example>",
                           "RCE in upload", epoch(40), "The upload handler runs what it gets.\n"))
    pm_archive.add(PMEmail(PM_LIST_RAW, "<old-reply-1@example.org>", "Sam Security <sam@example.org>",
                           "Re: RCE in upload", epoch(2), "Still open?\n",
                           in_reply_to="<old-root@reporter.example>", references="<old-root@reporter.example>"))
    pm_archive.add(PMEmail(PM_LIST_RAW, "<old-reply-2@reporter.example>", "Olga Old <olga@reporter.example>",
                           "Re: RCE in upload (CVE request)", epoch(1), "Yes.\n",
                           in_reply_to="<old-reply-1@example.org>",
                           references="<old-root@reporter.example> <old-reply-1@example.org>"))


def test_a_reply_to_a_root_before_since_is_listed_under_its_real_root(pm_source, pm_archive, now):
    add_old_conversation(pm_archive, now)
    source = pm_source()
    listing = source.list_recent_threads(None, now - timedelta(days=30))
    old = [s for s in listing if s.root_message_id == "<old-root@reporter.example>"]
    assert len(old) == 1, [str(s.thread_id) for s in listing]  # both replies, one thread
    assert old[0].thread_id == ThreadId("ponymail", OLD_ROOT)
    assert old[0].subject == "RCE in upload" and old[0].message_count == 3
    assert abs((old[0].last_activity - (now - timedelta(days=1))).total_seconds()) < 1
    assert any("started before" in n for n in old[0].notes)
    assert len(listing) == 3 and listing.complete
    # The thread ID does not depend on since.
    wider = source.list_recent_threads(None, now - timedelta(days=60))
    assert [s.thread_id for s in wider if s.root_message_id == "<old-root@reporter.example>"] == [old[0].thread_id]


def test_the_silent_max_hits_cap_marks_the_listing_incomplete(pm_source, pm_archive, now):
    from tests.archives.ponymail_server import PMEmail

    for i in range(20):
        pm_archive.add(PMEmail(PM_LIST_RAW, f"<burst-{i}@example.org>", "Bot <bot@example.org>", f"Burst {i}",
                               int((now - timedelta(hours=10 + i)).timestamp()), "x\n"))
    source = pm_source()
    assert source.list_recent_threads(None, now - timedelta(days=70)).complete  # under the cap: complete
    pm_archive.max_hits = 10
    listing = source.list_recent_threads(None, now - timedelta(days=70))
    assert listing.complete is False
    assert any("max_hits" in n and "11" in n for n in listing.notes), listing.notes
    assert "Heap overflow in decoder" not in [s.subject for s in listing]  # dropped by the server


def test_thread_url_of_a_reply_opens_the_whole_thread(pm_source, pm_server):
    source = pm_source()
    assert source.thread_url(ThreadId("ponymail", SQLI_REPLY)) == f"{pm_server.base_url}/thread/{SQLI_ROOT}"
    assert source.thread_url(ThreadId("ponymail", "<sqli-reply@example.org>")) == \
        f"{pm_server.base_url}/thread/{SQLI_ROOT}"
    assert source.thread_url(ThreadId("ponymail", SQLI_ROOT)) == f"{pm_server.base_url}/thread/{SQLI_ROOT}"
    with pytest.raises(ArchiveNotFound):
        source.thread_url(ThreadId("ponymail", "<nosuch@example.org>"))


def test_a_root_message_id_resolves_to_its_thread(pm_source, pm_server):
    source = pm_source()
    assert source.resolve_message_id("<sqli-root@reporter.example>") == ThreadId("ponymail", SQLI_ROOT)
    assert source.resolve_message_id("broken@reporter.example") == ThreadId("ponymail", SQLI_ROOT)
    call = endpoint_calls(pm_server, "thread")[0]
    assert (call.param("id"), call.param("listid"), call.param("find_parent")) == (
        "<sqli-root@reporter.example>", PM_LIST_RAW, "true")
    with pytest.raises(ArchiveNotFound, match="<nosuch@example.org>"):
        source.resolve_message_id("<nosuch@example.org>")


def test_an_expired_sign_in_leaves_public_lists_readable(pm_source, pm_server, now):
    set_secret(secret_key("ponymail", pm_server.base_url), "stale-cookie")
    source = pm_source()
    source.check_available()
    listing = source.list_recent_threads(None, now - timedelta(days=30))
    assert len(listing) == 2
    assert any("not signed in" in n and "public" in n for n in listing.notes)
    assert len(endpoint_calls(pm_server, "preferences")) == 1  # not asked again anonymously
    with pytest.raises(SignInNeeded, match="sign in again"):
        pm_source(list="private").check_available()


def test_preferences_are_asked_once_per_listing(pm_source, pm_server, now):
    source = pm_source()
    source.check_available()  # what the resolution rule does before dispatching
    source.list_recent_threads(None, now - timedelta(days=30))
    assert len(endpoint_calls(pm_server, "preferences")) == 1
    source.list_recent_threads(None, now - timedelta(days=30))  # a refresh asks again: sessions expire
    assert len(endpoint_calls(pm_server, "preferences")) == 2
    assert len(endpoint_calls(pm_server, "stats")) == 2



def test_a_late_reply_whose_root_cannot_be_looked_up_is_still_listed(pm_source, pm_archive, pm_server, now):
    add_old_conversation(pm_archive, now)
    pm_server.fail("/api/thread", Reply.text("API error occurred. Error ID: 9", 500), times=None)
    listing = pm_source().list_recent_threads(None, now - timedelta(days=30))
    late = [s for s in listing if s.subject.startswith("Re: RCE in upload")]
    assert late and all(any("could not be looked up" in n and "HTTP 500" in n for n in s.notes) for s in late)
    assert len(listing) == 2 + len(late)  # the other threads are listed as before


def test_a_message_id_looked_up_in_a_list_that_does_not_exist_fails_closed(pm_source, pm_server):
    """Issue 30: a 404 for a wrong list (or domain) is not "the archive does not hold this
    message": the lookup fails, naming the list, so the outgoing rule refuses to clear it."""
    from mailtriage.backends.errors import ThreadNotFound, Unavailable

    source = pm_source(list="no-such-list")
    for lookup in (lambda: source.thread_for_message_id("<sqli-root@reporter.example>"),
                   lambda: source.resolve_message_id("<sqli-root@reporter.example>"),
                   lambda: source.read_thread(ThreadId("ponymail", "<sqli-root@reporter.example>")),
                   lambda: source.thread_url(ThreadId("ponymail", "<sqli-root@reporter.example>"))):
        with pytest.raises(Unavailable, match="no-such-list") as caught:
            lookup()
        assert not isinstance(caught.value, (ThreadNotFound, ArchiveNotFound))
    assert pm_source().thread_for_message_id("<nosuch@example.org>") is None
    with pytest.raises(ThreadNotFound):  # a list that exists: the 404 is "no such thread"
        pm_source().thread_url(ThreadId("ponymail", "<nosuch@example.org>"))
