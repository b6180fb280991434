"""HyperKittySource against an emulated HyperKitty REST API on loopback."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pathlib import Path

from mailtriage.backends.contract import SourceOrigin
from mailtriage.backends.archive_http import ArchiveBadResponse, ArchiveNotFound, ArchiveServerError
from mailtriage.backends.contract import DraftRequest, Op, ThreadId
from mailtriage.backends.errors import BackendFailure, NotSupported, Unavailable
from mailtriage.backends.identity import hyperkitty_hash
from mailtriage.core.projectconfig import ConfigError
from tests.archives.conftest import LIST, PRIVATE_LIST, SELF_CHECK_HASH, SELF_CHECK_ID
from tests.archives.fakehttp import Reply


def thread_pages(server):
    return [r for r in server.requests if r.path.endswith("/threads/")]


def test_thread_hash_self_check():
    assert hyperkitty_hash("<87myycy5eh.fsf@uwakimon.sk.tsukuba.ac.jp>") == "JJIGKPKB6CVDX6B2CUG4IHAJRIQIOUTP"
    assert hyperkitty_hash("87myycy5eh.fsf@uwakimon.sk.tsukuba.ac.jp") == "JJIGKPKB6CVDX6B2CUG4IHAJRIQIOUTP"


def test_capabilities_are_exactly_the_three_read_ops(hk_source):
    source = hk_source()
    assert source.kind == "mailman3"
    assert source.thread_id_kind == "hyperkitty"
    assert source.capabilities == {Op.LIST_RECENT_THREADS, Op.READ_THREAD, Op.THREAD_URL}
    tid = ThreadId("hyperkitty", SELF_CHECK_HASH)
    with pytest.raises(NotSupported):
        source.list_drafts(tid)
    with pytest.raises(NotSupported):
        source.list_sent_since(tid, source_now())
    with pytest.raises(NotSupported):
        source.create_draft(DraftRequest(tid, "body", ("a@example.org",)))


def source_now():
    from datetime import datetime, timezone

    return datetime.now(timezone.utc)


def test_recent_threads_newest_first_with_sender_and_root_id(hk_source, hk_server, now):
    listing = hk_source().list_recent_threads(None, now - timedelta(days=10))
    subjects = [s.subject for s in listing]
    assert subjects == ["[SECURITY] XSS in login form", "Buffer overflow in parser", "Mailman hash check"]
    xss = listing[0]
    assert xss.thread_id == ThreadId("hyperkitty", hyperkitty_hash("xss-root@reporter.example"))
    assert xss.root_message_id == "<xss-root@reporter.example>"
    assert xss.sender.name == "Alice Reporter"
    assert xss.sender.email == "alice (a) reporter.example"  # shown as the archive gives it
    assert xss.message_count == 3
    assert abs((xss.last_activity - (now - timedelta(days=1))).total_seconds()) < 1
    assert listing[2].thread_id.value == SELF_CHECK_HASH
    assert listing[2].root_message_id == f"<{SELF_CHECK_ID}>"
    assert listing.complete and listing.notes == []


def test_paging_stops_at_since_and_always_sends_limit(hk_source, hk_server, now):
    # 33 threads over ~60 days at 5 per page; 20 days back needs 2 pages, not 7.
    listing = hk_source(page_size=5).list_recent_threads(LIST, now - timedelta(days=19.5))
    assert len(listing) == 3 + 5  # fillers at 12, 13.6, 15.2, 16.8, 18.4 days
    pages = thread_pages(hk_server)
    # two pages, then the head once more for threads that moved up during the walk
    assert [r.param("offset") for r in pages] == ["0", "5", "0"]
    for request in hk_server.requests:
        if request.path.endswith(("/threads/", "/emails/")):
            assert request.param("limit"), f"{request.path} sent without limit"
    # one request per page plus one starting email per thread shown
    assert listing.requests == len(pages) + len(listing) == len(hk_server.requests)


def test_user_agent_names_mailtriage(hk_source, hk_server, now):
    hk_source().list_recent_threads(None, now - timedelta(days=3))
    assert hk_server.requests
    assert all("mailtriage" in r.headers.get("user-agent", "") for r in hk_server.requests)


def test_naive_since_is_read_as_utc(hk_source, now):
    naive = (now - timedelta(days=3)).replace(tzinfo=None)
    assert [s.subject for s in hk_source().list_recent_threads(None, naive)] == ["[SECURITY] XSS in login form"]


def test_read_thread_gives_every_email_with_content_and_attachments(hk_source, hk_server):
    source = hk_source()
    thread = source.read_thread(ThreadId("hyperkitty", hyperkitty_hash("xss-root@reporter.example")))
    assert thread.subject == "[SECURITY] XSS in login form"
    ids = [m.message_id for m in thread.messages]
    assert ids == ["<xss-root@reporter.example>", "<xss-reply-1@example.org>", "<xss-reply-2@reporter.example>"]
    root, reply1, reply2 = thread.messages
    assert root.body_text == "The login form reflects the next= parameter.\n"
    assert [(a.filename, a.content_type, a.size) for a in root.attachments] == [("poc.html", "text/html", 312)]
    assert root.in_reply_to is None
    assert reply1.in_reply_to == "<xss-root@reporter.example>"
    assert reply2.in_reply_to == "<xss-reply-1@example.org>"
    assert reply1.sender.email == "bob (a) example.org" and reply1.sender.name == "Bob Triager"
    assert root.backend_ref == hyperkitty_hash("xss-root@reporter.example")
    assert all(m.notes == () for m in thread.messages)
    email_requests = [r for r in hk_server.requests if "/email/" in r.path]
    assert len(email_requests) == 3


def test_thread_url(hk_source, hk_server):
    source = hk_source()
    url = source.thread_url(ThreadId("hyperkitty", SELF_CHECK_HASH))
    assert url == f"{hk_server.base_url}/list/{LIST}/thread/{SELF_CHECK_HASH}/"
    assert hk_server.requests == []  # no request needed


def test_ids_of_another_kind_are_refused(hk_source):
    source = hk_source()
    with pytest.raises(BackendFailure, match="kind 'ponymail'"):
        source.read_thread(ThreadId("ponymail", "c396ps3p5pb05srb4269dzcg9j7sof42"))
    with pytest.raises(BackendFailure):
        source.thread_url(ThreadId("imap", "<x@y>"))


# -- refusals and errors ---------------------------------------------------------


def test_private_archive_is_unavailable_never_empty(hk_source, now):
    source = hk_source(list=PRIVATE_LIST)
    with pytest.raises(Unavailable, match="private archive"):
        source.check_available()
    with pytest.raises(Unavailable, match="private archive"):
        source.list_recent_threads(None, now - timedelta(days=30))
    with pytest.raises(Unavailable, match="HTTP 403"):
        source.read_thread(ThreadId("hyperkitty", hyperkitty_hash("secret-1@example.org")))


def test_missing_list_and_missing_thread_are_not_found(hk_source, tmp_path, now):
    source = hk_source(list="nosuch@example.org")
    with pytest.raises(ArchiveNotFound, match="HTTP 404"):
        source.list_recent_threads(None, now - timedelta(days=30))
    with pytest.raises(Unavailable) as info:
        source.check_available()
    assert "mail_sources.archive.list" in info.value.reason and str(tmp_path) in info.value.reason
    with pytest.raises(ArchiveNotFound, match="no such thread"):
        hk_source().read_thread(ThreadId("hyperkitty", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"))


def test_server_error_is_distinct_from_not_found(hk_source, hk_server, now):
    hk_server.fail("/threads/", Reply.text("Internal Server Error", 500), times=None)
    with pytest.raises(ArchiveServerError) as info:
        hk_source().list_recent_threads(None, now - timedelta(days=30))
    assert info.value.status == 500
    assert not isinstance(info.value, ArchiveNotFound)


def test_429_with_retry_after_is_retried(hk_source, hk_server, now):
    hk_server.fail("/threads/", Reply.json({"detail": "Request was throttled."}, 429, **{"Retry-After": "0"}))
    listing = hk_source().list_recent_threads(None, now - timedelta(days=3))
    assert [s.subject for s in listing] == ["[SECURITY] XSS in login form"]
    assert len(thread_pages(hk_server)) == 2  # the throttled try and the retry


def test_503_that_never_clears_is_a_server_error(hk_source, hk_server, now):
    hk_server.fail("/threads/", Reply.text("busy", 503, **{"Retry-After": "0"}), times=None)
    with pytest.raises(ArchiveServerError) as info:
        hk_source().list_recent_threads(None, now - timedelta(days=3))
    assert info.value.status == 503
    assert len(thread_pages(hk_server)) == 3  # bounded retries


def test_unreachable_server_is_unavailable(tmp_path, now):
    from mailtriage.backends.hyperkitty import HyperKittySource
    from tests.archives.fakehttp import FakeHttpServer

    server = FakeHttpServer(lambda req: Reply()).start()
    base = server.base_url
    server.stop()  # nothing listens on that port any more
    source = HyperKittySource("archive", {"base_url": base, "list": LIST, "timeout": 5})
    try:
        with pytest.raises(Unavailable, match="cannot reach"):
            source.check_available()
    finally:
        source.close()


def test_malformed_json_page_keeps_earlier_pages(hk_source, hk_server, now):
    hk_server.fail(lambda r: r.path.endswith("/threads/") and r.param("offset") == "5",
                   Reply.text('{"count": 33, "results": [', 200, "application/json"))
    listing = hk_source(page_size=5).list_recent_threads(None, now - timedelta(days=40))
    assert len(listing) == 5
    assert listing.complete is False
    assert "offset 5" in listing.notes[0] and "not valid JSON" in listing.notes[0]


def test_truncated_page_keeps_earlier_pages(hk_source, hk_server, hk_archive, now):
    hk_server.fail(lambda r: r.path.endswith("/threads/") and r.param("offset") == "5",
                   Reply.json({"count": 33, "next": None, "previous": None, "results": []} | {"pad": "x" * 500},
                              truncate_at=40))
    listing = hk_source(page_size=5).list_recent_threads(None, now - timedelta(days=40))
    assert len(listing) == 5 and listing.complete is False
    assert "offset 5" in listing.notes[0] and "cut off" in listing.notes[0]


def test_bad_first_page_is_a_clear_error(hk_source, hk_server, now):
    hk_server.fail("/threads/", Reply.text("<html>maintenance</html>", 200, "text/html"))
    with pytest.raises(ArchiveBadResponse, match="offset 0.*not valid JSON"):
        hk_source().list_recent_threads(None, now - timedelta(days=3))


def test_bad_row_is_named_and_the_rest_listed(hk_source, hk_server, now):
    good = {"thread_id": hyperkitty_hash("overflow@reporter.example"), "subject": "ok",
            "date_active": (now - timedelta(hours=1)).isoformat(), "replies_count": 0}
    hk_server.fail("/threads/", Reply.json({"count": 2, "next": None, "previous": None, "results": [
        {"subject": "no id"}, good]}))
    listing = hk_source().list_recent_threads(None, now - timedelta(days=3))
    assert [s.subject for s in listing] == ["ok"]
    assert listing[0].sender.name == "Carol"
    assert "thread row 0" in listing.notes[0] and "no thread_id" in listing.notes[0]


def test_broken_email_detail_is_noted_and_others_kept(hk_source, hk_server):
    digest = hyperkitty_hash("xss-reply-1@example.org")
    hk_server.fail(f"/email/{digest}/", Reply.text('{"content": "Thanks', 200, "application/json"))
    thread = hk_source().read_thread(ThreadId("hyperkitty", hyperkitty_hash("xss-root@reporter.example")))
    assert len(thread.messages) == 3
    broken = thread.messages[1]
    assert broken.message_id == "<xss-reply-1@example.org>"
    assert broken.subject == "Re: [SECURITY] XSS in login form"  # from the thread listing
    assert broken.text_parts == ()
    assert "content unavailable" in broken.notes[0] and "not valid JSON" in broken.notes[0]
    assert thread.messages[2].body_text == "Any CVE yet?\n"


def test_starting_email_failure_keeps_the_summary(hk_source, hk_server, now):
    digest = hyperkitty_hash("overflow@reporter.example")
    hk_server.fail(f"/thread/{digest}/emails/", Reply.text("oops", 500))
    listing = hk_source().list_recent_threads(None, now - timedelta(days=6))
    assert [s.subject for s in listing] == ["[SECURITY] XSS in login form", "Buffer overflow in parser"]
    assert listing[1].root_message_id == "" and "HTTP 500" in listing[1].notes[0]
    assert listing[0].notes == ()


def test_server_that_ignores_limit_is_still_read(hk_source, hk_archive, now):
    hk_archive.ignore_limit = True  # answers every thread as one bare array
    listing = hk_source().list_recent_threads(None, now - timedelta(days=6))
    assert [s.subject for s in listing] == ["[SECURITY] XSS in login form", "Buffer overflow in parser"]
    assert "ignored the page limit" in listing.notes[0]


def test_check_available_is_one_cached_request(hk_source, hk_server):
    source = hk_source()
    source.check_available()
    source.check_available()
    assert hk_server.paths() == [f"/api/list/{LIST}/"]


def test_private_answer_is_cached_too(hk_source, hk_server):
    source = hk_source(list=PRIVATE_LIST)
    for _ in range(2):
        with pytest.raises(Unavailable):
            source.check_available()
    assert len(hk_server.requests) == 1


# -- configuration -------------------------------------------------------------


@pytest.mark.parametrize("settings, key", [
    ({"list": LIST}, "mail_sources.archive.base_url"),
    ({"base_url": "ftp://lists.example.org", "list": LIST}, "mail_sources.archive.base_url"),
    ({"base_url": "https://lists.example.org"}, "mail_sources.archive.list"),
    ({"base_url": "https://lists.example.org", "list": "security"}, "mail_sources.archive.list"),
    ({"base_url": "https://lists.example.org", "list": LIST, "page_size": 0}, "mail_sources.archive.page_size"),
])
def test_config_errors_name_file_and_key(tmp_path, settings, key):
    from mailtriage.backends.hyperkitty import HyperKittySource

    with pytest.raises(ConfigError) as info:
        HyperKittySource("archive", {**settings}, origin=SourceOrigin(project_dir=Path(tmp_path)))
    assert info.value.key == key
    assert info.value.file == str(tmp_path / "project.md")
    assert info.value.valid


def test_registry_builds_it_from_project_md(tmp_path, hk_server, now):
    from mailtriage.backends.hyperkitty import HyperKittySource
    from mailtriage.backends.registry import SourceSet
    from mailtriage.core.projectconfig import load_project

    (tmp_path / "project.md").write_text(f"""# Demo project

## Mail sources

| Backend | Role | Mandatory | Notes |
|---|---|---|---|
| `archive` | primary | no | Mailman 3 archive of the security list |

## Configuration

```yaml
mail_sources:
  archive:
    kind: mailman3
    base_url: {hk_server.base_url}
    list: {LIST}
```
""", encoding="utf-8")
    sources = SourceSet(load_project(tmp_path))
    try:
        backend = sources.backends["archive"]
        assert isinstance(backend, HyperKittySource)
        row = sources.matrix()[0]
        assert row["available"] is True and row["kind"] == "mailman3"
        assert row["capabilities"] == {"list_recent_threads": True, "read_thread": True, "list_drafts": False,
                                       "list_sent_since": False, "create_draft": False, "thread_url": True}
        result = sources.dispatch(Op.LIST_RECENT_THREADS,
                                  lambda b: b.list_recent_threads(None, now - timedelta(days=3)))
        assert result.resolution.chosen == "archive"
        assert [s.subject for s in result.value] == ["[SECURITY] XSS in login form"]
    finally:
        sources.close()


def test_cli_lists_an_archive_and_names_what_it_skipped(tmp_path, hk_server, capsys):
    import json

    from mailtriage.cli.main import main

    hk_server.fail(lambda r: r.path.endswith("/threads/") and r.param("offset") == "5",
                   Reply.text("{", 200, "application/json"), times=None)
    (tmp_path / "project.md").write_text(f"""# CLI project

## Mail sources

| Backend | Role | Mandatory | Notes |
|---|---|---|---|
| `archive` | primary | no | Mailman 3 archive |

## Configuration

```yaml
security_list: {LIST}
mail_sources:
  archive:
    kind: mailman3
    base_url: {hk_server.base_url}
    list: {LIST}
    page_size: 5
```
""", encoding="utf-8")
    assert main(["--project", str(tmp_path), "mail", "list-recent-threads", "--since", "40d"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["backend"] == "archive" and len(doc["result"]) == 5
    assert doc["complete"] is False and "offset 5" in doc["notes"][0]
    assert main(["--project", str(tmp_path), "list", "--since", "40d"]) == 0
    out, err = capsys.readouterr()
    assert "[SECURITY] XSS in login form" in out and "note: " in err and "offset 5" in err
    assert main(["--project", str(tmp_path), "mail", "thread-url", f"hyperkitty:{SELF_CHECK_HASH}"]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out)["result"] == f"{hk_server.base_url}/list/{LIST}/thread/{SELF_CHECK_HASH}/"


def test_urls_built_for_another_host_are_not_followed(hk_source, hk_server, hk_archive, now):
    # A proxy makes DRF write https://lists.example.org/... into next/url; requests stay on base_url.
    hk_archive.public_root = "https://lists.example.org"
    source = hk_source(page_size=5)
    listing = source.list_recent_threads(None, now - timedelta(days=19.5))
    thread = source.read_thread(listing[0].thread_id)
    assert len(listing) == 8 and len(thread.messages) == 3 and thread.messages[0].body_text
    assert [r.param("offset") for r in thread_pages(hk_server)] == ["0", "5", "0"]  # the head read again
    assert all(r.host == hk_server.base_url.split("//")[1] for r in hk_server.requests)


def test_read_thread_is_in_date_order_though_the_archive_lists_depth_first(hk_source, hk_archive, now):
    from tests.archives.hyperkitty_server import HKEmail

    root = HKEmail("tree-root@x.org", "a@x.org", "A", "Tree", now - timedelta(days=4), "root\n")
    first = HKEmail("tree-a@x.org", "b@x.org", "B", "Re: Tree", now - timedelta(days=3), "a\n",
                    parent="tree-root@x.org")
    second = HKEmail("tree-b@x.org", "c@x.org", "C", "Re: Tree", now - timedelta(days=2), "b\n",
                     parent="tree-root@x.org")
    late = HKEmail("tree-a2@x.org", "d@x.org", "D", "Re: Tree", now - timedelta(days=1), "a2\n",
                   parent="tree-a@x.org")
    thread = hk_archive.add_thread(LIST, [root, first, second, late])
    assert [e.message_id for e in thread.in_thread_order()] == [
        "tree-root@x.org", "tree-a@x.org", "tree-a2@x.org", "tree-b@x.org"]
    read = hk_source().read_thread(ThreadId("hyperkitty", thread.thread_id))
    assert [m.message_id for m in read.messages] == [
        "<tree-root@x.org>", "<tree-a@x.org>", "<tree-b@x.org>", "<tree-a2@x.org>"]
    assert read.messages[3].in_reply_to == "<tree-a@x.org>"


def test_html_only_email_is_read_from_its_archived_html_part(hk_source, hk_archive, hk_server):
    raw = (b"From: Dave <dave@reporter.example>\nTo: security@example.org\nSubject: HTML report\n"
           b"Date: Fri, 01 Mar 2024 09:00:00 +0000\nMessage-ID: <html-only@reporter.example>\n"
           b"MIME-Version: 1.0\nContent-Type: text/html; charset=utf-8\n\n"
           b"<html><body><p>See <b>this</b> <img src=\"https://tracker.invalid/p.png\" alt=\"pixel\"></p>"
           b"</body></html>\n")
    email = hk_archive.import_message(LIST, raw)
    assert email.content == "" and email.attachments[0]["content_type"] == "text/html"  # as the Scrubber does
    thread = hk_source().read_thread(ThreadId("hyperkitty", email.hash))
    (part,) = thread.messages[0].text_parts
    assert part.from_html and "this" in part.text and "<p>" not in part.text
    assert any("/attachment/2/" in r.path for r in hk_server.requests)
    assert not any("tracker.invalid" in r.host for r in hk_server.requests)


# -- a live list, other lists, server error pages, Message-IDs (issue 12 §7, issue 18 §1) ------


def _project(tmp_path, hk_server, **extra) -> None:
    lines = "".join(f"    {k}: {v}\n" for k, v in extra.items())
    (tmp_path / "project.md").write_text(f"""# CLI project

## Mail sources

| Backend | Role | Mandatory | Notes |
|---|---|---|---|
| `archive` | primary | no | Mailman 3 archive |

## Configuration

```yaml
security_list: {LIST}
mail_sources:
  archive:
    kind: mailman3
    base_url: {hk_server.base_url}
    list: {LIST}
{lines}```
""", encoding="utf-8")


def test_paging_a_live_list_lists_each_thread_once_and_catches_threads_that_moved_up(hk_source, hk_archive,
                                                                                     hk_server, now):
    from tests.archives.hyperkitty_server import HKEmail

    moved = hk_archive.lists[LIST].sorted_threads()[15]  # on page 4 of 5-thread pages
    arrived = []

    def traffic(req):  # while the client reads page 2: a new thread, and a reply to an old one
        if req.path.endswith("/threads/") and req.param("offset") == "5" and not arrived:
            arrived.append(hk_archive.add_thread(LIST, [HKEmail("fresh@reporter.example", "dan@reporter.example",
                                                                "Dan", "Fresh report", now, "new\n")]))
            hk_archive.lists[LIST].add_email(moved, HKEmail("late-reply@example.org", "bob@example.org", "Bob",
                                                            "Re: " + moved.subject, now, "still here\n",
                                                            parent=moved.emails[0].message_id))

    hk_archive.on_request.append(traffic)
    since = now - timedelta(days=40)
    listing = hk_source(page_size=5).list_recent_threads(None, since)
    ids = [s.thread_id.value for s in listing]
    assert len(ids) == len(set(ids)), "a thread was listed twice"
    expected = [t.thread_id for t in hk_archive.lists[LIST].sorted_threads() if t.date_active >= since]
    assert ids == expected  # the new thread and the one that moved up are there, newest first
    assert arrived and arrived[0].thread_id in ids and moved.thread_id in ids
    by_id = {s.thread_id.value: s for s in listing}
    assert by_id[moved.thread_id].message_count == 2
    assert any("changed while it was read" in n for n in listing.notes)


def test_a_list_walked_in_one_page_reads_no_head_again(hk_source, hk_server, now):
    hk_source(page_size=50).list_recent_threads(None, now - timedelta(days=10))
    assert [r.param("offset") for r in thread_pages(hk_server)] == ["0"]


def test_errors_for_another_list_name_the_list_asked_for(hk_source, now):
    source = hk_source()  # configured for LIST
    with pytest.raises(Unavailable) as info:
        source.list_recent_threads(PRIVATE_LIST, now - timedelta(days=30))
    assert PRIVATE_LIST in info.value.reason and LIST not in info.value.reason
    with pytest.raises(ArchiveNotFound) as missing:
        source.list_recent_threads("nosuch@example.org", now - timedelta(days=30))
    assert "no list nosuch@example.org" in missing.value.detail and LIST not in missing.value.detail


def test_a_500_page_is_summarised_never_printed_as_html(hk_source, hk_server, now):
    from tests.archives.hyperkitty_server import server_error_page

    hk_server.fail("/threads/", Reply.text(server_error_page(), 500, "text/html; charset=utf-8"), times=None)
    with pytest.raises(ArchiveServerError) as info:
        hk_source().list_recent_threads(None, now - timedelta(days=30))
    detail = info.value.detail
    assert "HTTP 500" in detail and "server hiccup" in detail
    assert "<" not in detail and "DOCTYPE" not in detail and "contentBox" not in detail and "$(" not in detail
    assert len(detail) < 300


def test_cli_names_the_asked_list_and_summarises_a_500(tmp_path, hk_server, capsys):
    from mailtriage.cli.main import main
    from tests.archives.hyperkitty_server import server_error_page

    _project(tmp_path, hk_server)
    assert main(["--project", str(tmp_path), "mail", "list-recent-threads", "--list", PRIVATE_LIST]) == 4
    _, err = capsys.readouterr()
    assert PRIVATE_LIST in err and LIST not in err
    hk_server.fail("/threads/", Reply.text(server_error_page(), 500, "text/html; charset=utf-8"), times=None)
    assert main(["--project", str(tmp_path), "mail", "list-recent-threads"]) == 4
    _, err = capsys.readouterr()
    assert "HTTP 500" in err and "server hiccup" in err and "<" not in err


def test_a_message_id_is_hashed_into_the_thread_id(hk_source, hk_server, tmp_path, capsys):
    from mailtriage.backends.identity import hyperkitty_hash
    from mailtriage.cli.main import main

    source = hk_source()
    root_hash = hyperkitty_hash("xss-root@reporter.example")
    thread = source.read_thread(ThreadId("hyperkitty", "<xss-root@reporter.example>"))
    assert thread.thread_id == ThreadId("hyperkitty", root_hash)
    assert [m.message_id for m in thread.messages][0] == "<xss-root@reporter.example>"
    assert len(thread.messages) == 3
    # A reply's Message-ID finds the thread that holds it (its hash is no thread ID).
    assert source.read_thread(ThreadId("hyperkitty", "<xss-reply-2@reporter.example>")).thread_id == \
        ThreadId("hyperkitty", root_hash)
    assert source.resolve_message_id("<xss-reply-1@example.org>") == ThreadId("hyperkitty", root_hash)
    assert source.thread_url(ThreadId("hyperkitty", "<xss-reply-1@example.org>")) == \
        f"{hk_server.base_url}/list/{LIST}/thread/{root_hash}/"
    with pytest.raises(ArchiveNotFound, match="<nosuch@example.org>"):
        source.resolve_message_id("<nosuch@example.org>")
    _project(tmp_path, hk_server)
    assert main(["--project", str(tmp_path), "mail", "read-thread", "hyperkitty:<xss-root@reporter.example>"]) == 0
    import json

    doc = json.loads(capsys.readouterr()[0])
    assert len(doc["result"]["messages"]) == 3


def test_the_emulator_fails_like_hyperkitty_does(hk_archive, hk_server, hk_source, now):
    # Any error inside the site gives its 500.html page, as Django does with DEBUG off.
    def broken(req):
        if req.path.endswith("/threads/"):
            raise RuntimeError("database is locked")

    hk_archive.on_request.append(broken)
    with pytest.raises(ArchiveServerError) as info:
        hk_source().list_recent_threads(None, now - timedelta(days=3))
    assert "server hiccup" in info.value.detail and "database is locked" not in info.value.detail


def test_a_message_id_looked_up_in_a_list_that_does_not_exist_fails_closed(hk_source, hk_server):
    """Issue 30: HyperKitty answers 404 both for "no such email" and for "no such list". A wrong
    list address must not read as "the archive does not hold this message" (that would clear a
    reply to a security thread as personal mail): the lookup fails, naming the list."""
    from mailtriage.backends.errors import ThreadNotFound

    source = hk_source(list="no-such-list@example.org")
    for lookup in (lambda: source.thread_for_message_id("<xss-root@reporter.example>"),
                   lambda: source.resolve_message_id("<xss-reply-1@example.org>"),
                   lambda: source.read_thread(ThreadId("hyperkitty", "<xss-reply-2@reporter.example>"))):
        with pytest.raises(Unavailable, match="no list no-such-list@example.org") as caught:
            lookup()
        assert not isinstance(caught.value, (ThreadNotFound, ArchiveNotFound))
    # the right list still says "not here" for a message it does not hold
    assert hk_source().thread_for_message_id("<nosuch@example.org>") is None
