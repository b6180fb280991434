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
    from mailtriage.backends.hyperkitty import HyperKittySource

    made = []

    def make(name: str = "archive", **overrides):
        settings = {"base_url": hk_server.base_url, "list": LIST, "page_size": 5, "_project_dir": str(tmp_path)}
        settings.update(overrides)
        source = HyperKittySource(name, settings)
        made.append(source)
        return source

    yield make
    for source in made:
        source.close()
