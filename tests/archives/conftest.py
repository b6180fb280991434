"""Fixtures for the list-archive backends: emulated HyperKitty and PonyMail servers on loopback."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tests.archives.fakehttp import FakeHttpServer
from tests.archives.hyperkitty_server import HKEmail, HyperKittyArchive

LIST = "security@example.org"
PRIVATE_LIST = "private@example.org"
SELF_CHECK_ID = "87myycy5eh.fsf@uwakimon.sk.tsukuba.ac.jp"
SELF_CHECK_HASH = "JJIGKPKB6CVDX6B2CUG4IHAJRIQIOUTP"


def days_ago(now: datetime, days: float) -> datetime:
    return now - timedelta(days=days)


def build_hyperkitty(now: datetime) -> HyperKittyArchive:
    """A security list with a few realistic threads plus 30 fillers spread over 60 days."""
    archive = HyperKittyArchive()
    archive.add_list(LIST)
    archive.add_list(PRIVATE_LIST, archive_policy="private")
    archive.add_thread(PRIVATE_LIST, [HKEmail("secret-1@example.org", "eve@example.org", "Eve", "Embargoed",
                                              days_ago(now, 1), "embargoed text")])
    archive.add_thread(LIST, [
        HKEmail("xss-root@reporter.example", "alice@reporter.example", "Alice Reporter",
                "[SECURITY] XSS in login form", days_ago(now, 2.5),
                "The login form reflects the next= parameter.\n", attachments=[
                    {"name": "poc.html", "content_type": "text/html", "size": 312, "encoding": None}]),
        HKEmail("xss-reply-1@example.org", "bob@example.org", "Bob Triager", "Re: [SECURITY] XSS in login form",
                days_ago(now, 2), "Thanks, confirmed.\n", parent="xss-root@reporter.example"),
        HKEmail("xss-reply-2@reporter.example", "alice@reporter.example", "Alice Reporter",
                "Re: [SECURITY] XSS in login form", days_ago(now, 1), "Any CVE yet?\n",
                parent="xss-reply-1@example.org"),
    ])
    archive.add_thread(LIST, [
        HKEmail("overflow@reporter.example", "carol@reporter.example", "Carol",
                "Buffer overflow in parser", days_ago(now, 5), "Crash with a 70k header.\n"),
    ])
    archive.add_thread(LIST, [
        HKEmail(SELF_CHECK_ID, "turnbull@example.jp", "Stephen", "Mailman hash check", days_ago(now, 9),
                "The hash of my Message-ID is the thread id.\n"),
    ])
    for i in range(30):
        archive.add_thread(LIST, [
            HKEmail(f"filler-{i}@example.org", f"user{i}@example.org", f"User {i}", f"Filler thread {i}",
                    days_ago(now, 12 + i * 1.6), f"filler body {i}\n"),
        ])
    return archive


@pytest.fixture
def now() -> datetime:
    return datetime.now(timezone.utc)


@pytest.fixture
def hk_archive(now) -> HyperKittyArchive:
    return build_hyperkitty(now)


@pytest.fixture
def hk_server(hk_archive):
    with FakeHttpServer(hk_archive) as server:
        yield server


@pytest.fixture
def hk_source(hk_server, tmp_path):
    """Build HyperKittySource objects against the emulated server; closed after the test."""
    from mailtriage.backends.contract import SourceOrigin
    from mailtriage.backends.hyperkitty import HyperKittySource

    made = []

    def make(name: str = "archive", **overrides):
        settings = {"base_url": hk_server.base_url, "list": LIST, "page_size": 5}
        settings.update(overrides)
        source = HyperKittySource(name, settings, origin=SourceOrigin(project_dir=tmp_path))
        made.append(source)
        return source

    yield make
    for source in made:
        source.close()


# -- Pony Mail -------------------------------------------------------------------

PM_LIST = "security"
PM_DOMAIN = "example.org"
PM_LIST_RAW = "<security.example.org>"
PM_PRIVATE_RAW = "<private.example.org>"
SESSION_COOKIE = "3c1a1f0e-6f55-4b8e-9e2f-7d1f2a8f0b11"

BROKEN_MIME = (b"From: Broken Sender <broken@reporter.example>\n"
               b"Subject: Re: [SECURITY] SQL injection in search\n"
               b"Message-ID: <broken@reporter.example>\n"
               b"In-Reply-To: <sqli-root@reporter.example>\n"
               b"Content-Type: multipart/mixed; boundary=\"zzz\"\n\n"
               b"--zzz\nContent-Type: text/plain\nContent-Transfer-Encoding: base64\n\n"
               b"!!!this is not base64!!!\n")


def build_ponymail(now: datetime):
    from tests.archives.ponymail_server import PMEmail, PonyMailArchive

    archive = PonyMailArchive()
    epoch = lambda days: int((now - timedelta(days=days)).timestamp())  # noqa: E731
    archive.add(PMEmail(PM_LIST_RAW, "<sqli-root@reporter.example>", "Mallory Reporter <mallory@reporter.example>",
                        "[SECURITY] SQL injection in search", epoch(2.5),
                        "The q= parameter reaches the SQL query unescaped.\n" + "x" * 300,
                        attachments=[{"content_type": "text/plain", "size": 42, "filename": "poc.txt",
                                      "hash": "c0ffee"}]))
    archive.add(PMEmail(PM_LIST_RAW, "<sqli-reply@example.org>", "Sam Security <sam@example.org>",
                        "Re: [SECURITY] SQL injection in search", epoch(2), "Confirmed, fixing.\n",
                        in_reply_to="<sqli-root@reporter.example>", references="<sqli-root@reporter.example>"))
    archive.add(PMEmail(PM_LIST_RAW, "<broken@reporter.example>", "Broken Sender <broken@reporter.example>",
                        "Re: [SECURITY] SQL injection in search", epoch(1), "see attachment",
                        in_reply_to="<sqli-root@reporter.example>", references="<sqli-root@reporter.example>",
                        raw=BROKEN_MIME))
    archive.add(PMEmail(PM_LIST_RAW, "<heap@reporter.example>", "Heap Finder <heap@reporter.example>",
                        "Heap overflow in decoder", epoch(6), "A crafted file overflows the heap.\n"))
    archive.add(PMEmail(PM_LIST_RAW, "<old@reporter.example>", "Old Timer <old@reporter.example>",
                        "Ancient report", epoch(45), "old\n"))
    archive.add(PMEmail(PM_PRIVATE_RAW, "<embargo@example.org>", "Eve <eve@example.org>", "Embargoed fix",
                        epoch(1), "embargoed\n", private=True))
    archive.sign_in(SESSION_COOKIE)
    return archive


@pytest.fixture
def pm_archive(now):
    return build_ponymail(now)


@pytest.fixture
def pm_server(pm_archive):
    with FakeHttpServer(pm_archive) as server:
        yield server


@pytest.fixture
def memory_keyring(request):
    """keyring with an in-memory backend, so no test reads or writes a real keyring."""
    from tests.archives.keyrings import use_memory_keyring

    return use_memory_keyring(request)


@pytest.fixture
def pm_source(pm_server, tmp_path, memory_keyring):
    """Build PonyMailSource objects against the emulated server; closed after the test."""
    from mailtriage.backends.contract import SourceOrigin
    from mailtriage.backends.ponymail import PonyMailSource

    made = []

    def make(name: str = "pony", clock=None, **overrides):
        settings = {"base_url": pm_server.base_url, "list": PM_LIST, "domain": PM_DOMAIN}
        settings.update(overrides)
        source = PonyMailSource(name, settings, origin=SourceOrigin(project_dir=tmp_path),
                                **({"clock": clock} if clock else {}))
        made.append(source)
        return source

    yield make
    for source in made:
        source.close()
