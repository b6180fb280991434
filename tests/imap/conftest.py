"""Fixtures of the IMAP tests: a real Dovecot per worker, a fresh user and account per test."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mailtriage.backends.imap.account import ImapAccount, password_key
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.core.secrets import set_secret
from mailtriage.core.trace import TRACE
from tests.servers.dovecot import DovecotServer, DovecotUser

BASE_TIME = datetime(2026, 1, 10, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def trace():
    """Every protocol line and note of the test, as (direction, text)."""
    lines: list[tuple[str, str]] = []
    unsubscribe = TRACE.subscribe(lambda line: lines.append((line.direction, line.text)))
    yield lines
    unsubscribe()


def write_work_account(config_dir, server: DovecotServer, user: DovecotUser):
    """``config.toml`` with the IMAP account ``work`` (draft access) on ``server``; returns the folder."""
    config_dir.mkdir(exist_ok=True)
    (config_dir / "config.toml").write_text(f"""
[accounts.work]
kind = "imap"
host = "127.0.0.1"
port = {server.port}
security = "plain"
username = "{user.name}"
access = "draft"
""", encoding="utf-8")
    return config_dir


def write_imap_project(project, list_name: str, *, extra_rows: str = "", extra_sources: str = ""):
    """A ``project.md`` whose mandatory primary source is the ``work`` account's ``list_name`` folder."""
    project.mkdir(exist_ok=True)
    (project / "project.md").write_text(f"""# Project

## Mail sources

| Backend | Role | Mandatory | Notes |
|---|---|---|---|
| `imap` | primary | yes | the security list folder |
{extra_rows}
## Configuration

```yaml
security_list: {list_name}
mail_sources:
  imap:
    account: work
    list: {list_name}
{extra_sources}```
""", encoding="utf-8")
    return project


def make_mail(n: int = 0, *, subject: str | None = None, sender: str = "Reporter <reporter@example.net>",
              to: str = "security@example.org", cc: str | None = None, message_id: str | None = "auto",
              references: str | None = None, in_reply_to: str | None = None, date: datetime | None = None,
              body: str = "Hello\n", extra: str = "") -> bytes:
    """A small RFC 5322 message as bytes (CRLF line ends)."""
    date = date or (BASE_TIME + timedelta(minutes=n))
    lines = [f"From: {sender}", f"To: {to}"]
    if cc:
        lines.append(f"Cc: {cc}")
    lines.append(f"Subject: {subject if subject is not None else f'Message {n}'}")
    lines.append(f"Date: {date.strftime('%a, %d %b %Y %H:%M:%S +0000')}")
    if message_id == "auto":
        message_id = f"<m{n}@example.net>"
    if message_id:
        lines.append(f"Message-ID: {message_id}")
    if references:
        lines.append(f"References: {references}")
    if in_reply_to:
        lines.append(f"In-Reply-To: {in_reply_to}")
    if extra:
        lines.extend(extra.strip("\n").split("\n"))
    lines += ["MIME-Version: 1.0", "Content-Type: text/plain; charset=utf-8", "", body]
    return "\r\n".join(lines).encode("utf-8")


def account_for(server: DovecotServer, user: DovecotUser, *, security: str = "plain", **overrides) -> ImapAccount:
    port = server.tls_port if security == "tls" else server.port
    fields = dict(id="acct-" + user.name, host="127.0.0.1", port=port, security=security, username=user.name,
                  access="draft", timeout=10.0, ca_file=str(server.cert.cert))
    fields.update(overrides)
    return ImapAccount(**fields)


@pytest.fixture
def account(dovecot, dovecot_user, memory_keyring) -> ImapAccount:
    acct = account_for(dovecot, dovecot_user)
    set_secret(password_key(acct.id), dovecot_user.password)
    return acct


@pytest.fixture
def mailbox(account):
    mb = ImapMailbox(account)
    try:
        yield mb
    finally:
        mb.close()


@pytest.fixture
def seed(dovecot, dovecot_user):
    """``seed(folder, raw, flags=(), when=None) -> uid`` appends mail for the test's user."""

    def append(folder: str, raw: bytes, flags: tuple = (), when: datetime | None = None) -> int:
        return dovecot.append(dovecot_user, folder, raw, flags=flags, when=when)

    return append


@pytest.fixture
def minimal_user(dovecot_minimal):
    return dovecot_minimal.add_user()


@pytest.fixture
def minimal_mailbox(dovecot_minimal, minimal_user, memory_keyring):
    """An account on the server that offers only IMAP4rev1 basics (fallback paths)."""
    acct = account_for(dovecot_minimal, minimal_user)
    set_secret(password_key(acct.id), minimal_user.password)
    mb = ImapMailbox(acct)
    try:
        yield mb
    finally:
        mb.close()
