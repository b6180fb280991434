"""Fixtures for the demo data tests: the bundled archive parsed with the stdlib only.

The mbox backend is not used here on purpose: these tests check the data itself, so a
bug in the backend can never hide a bug in the data (or the other way round).
"""

from __future__ import annotations

import mailbox
from collections import defaultdict
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path

import pytest

from mailtriage.demo import demo_archive


def parse_archive(path: Path) -> list[EmailMessage]:
    parser = BytesParser(policy=policy.default)
    box = mailbox.mbox(path, factory=lambda f: parser.parse(f), create=False)
    try:
        return list(box)
    finally:
        box.close()


def group_threads(messages: list[EmailMessage]) -> dict[str, list[EmailMessage]]:
    """Group by root: the first References/In-Reply-To ID found in the archive, else the
    message's own ID (a simple JWZ pass; enough for an archive whose threads are known)."""
    known = {str(m["Message-ID"]) for m in messages if m["Message-ID"]}
    threads: dict[str, list[EmailMessage]] = defaultdict(list)
    for n, m in enumerate(messages):
        chain = str(m["References"] or "").split() + ([str(m["In-Reply-To"])] if m["In-Reply-To"] else [])
        root = next((ref for ref in chain if ref in known), None)
        threads[root or str(m["Message-ID"] or f"(no id #{n})")].append(m)
    return dict(threads)


@pytest.fixture(scope="module")
def archive_path() -> Path:
    return demo_archive()


@pytest.fixture(scope="module")
def messages(archive_path) -> list[EmailMessage]:
    return parse_archive(archive_path)


@pytest.fixture(scope="module")
def threads(messages) -> dict[str, list[EmailMessage]]:
    return group_threads(messages)


@pytest.fixture(scope="module")
def by_id(messages) -> dict[str, EmailMessage]:
    return {str(m["Message-ID"]): m for m in messages if m["Message-ID"]}
