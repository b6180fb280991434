"""Opening an IMAP project and listing its first page load no sending and no search (issue 15).

The same guard as tests/tui/test_startup_imports.py (a fresh interpreter, then a look at
``sys.modules``), over a project whose primary source is an account on a real Dovecot: the
open and the first listing are the critical path of a cold start, and what sends mail
(SMTP, the send policy, the stdlib's MIME writer), searches the server or polls for new mail
loads when first used (python -X importtime: about 25 ms of the open otherwise).
"""

from __future__ import annotations

import stat
import textwrap
from datetime import datetime, timedelta, timezone

import pytest

from tests.imap.conftest import make_mail, write_imap_project, write_work_account
from tests.tui.test_startup_imports import _loaded_after

LIST = "security@example.org"

#: Not loaded by opening an IMAP project, nor by listing its first page.
NOT_FOR_LISTING = (
    # sending: SMTP, the send policy and ledger, composing (the stdlib's MIME writer and policies)
    "aiosmtplib", "mailtriage.backends.imap.smtp", "mailtriage.backends.outgoing", "mailtriage.backends.send_policy",
    "mailtriage.backends.send_ledger", "email.policy", "email.generator",
    # server search and the new-mail poll
    "mailtriage.backends.search", "mailtriage.backends.imap.search", "mailtriage.backends.imap.poll",
)

OPEN = textwrap.dedent("""
    import os
    from pathlib import Path

    from mailtriage.core.settings import load_settings
    from mailtriage.application.service import Service

    session = Service(Path(os.environ["GUARD_PROJECT"]), demo=False, settings=load_settings())
    session.open()
""")

LIST_FIRST_PAGE = OPEN + textwrap.dedent("""
    assert session.check_sources()[2] is None  # the server answered: no mandatory backend down
    assert session.listing_can_be_limited()
    listed = session.list_threads(session.lists()[0].list_name, limit=2).value
    assert [t.subject for t in listed] == ["Report 2", "Report 1"], listed
""")


@pytest.fixture
def imap_project(tmp_path, monkeypatch, dovecot, dovecot_user):
    """A project on a Dovecot account whose password a command prints (the child has no keyring of ours)."""
    write_work_account(tmp_path / "config", dovecot, dovecot_user)
    script = tmp_path / "password.sh"
    script.write_text(f"#!/bin/sh\necho '{dovecot_user.password}'\n", encoding="utf-8")
    script.chmod(stat.S_IRWXU)
    with (tmp_path / "config" / "config.toml").open("a", encoding="utf-8") as config:
        config.write(f'password_command = "{script}"\n')
    since = datetime.now(timezone.utc) - timedelta(days=2)
    for n in (1, 2):
        dovecot.append(dovecot_user, "INBOX", make_mail(n, subject=f"Report {n}", date=since + timedelta(hours=n)),
                       when=since + timedelta(hours=n))
    monkeypatch.setenv("GUARD_PROJECT", str(write_imap_project(tmp_path / "project", LIST)))
    monkeypatch.setenv("MAILTRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_opening_an_imap_project_loads_no_sending_and_no_search(imap_project):
    assert _loaded_after(OPEN, NOT_FOR_LISTING, imap_project) == []


def test_listing_the_first_page_of_an_imap_project_loads_no_sending_and_no_search(imap_project):
    assert _loaded_after(LIST_FIRST_PAGE, NOT_FOR_LISTING, imap_project) == []


def test_the_imap_guard_can_fail(imap_project):
    """The check sees what a send would load, in the same child after the same listing."""
    loaded = _loaded_after(LIST_FIRST_PAGE + "import mailtriage.backends.imap.smtp\n", NOT_FOR_LISTING, imap_project)
    assert {"aiosmtplib", "mailtriage.backends.imap.smtp", "mailtriage.backends.outgoing"} <= set(loaded)
