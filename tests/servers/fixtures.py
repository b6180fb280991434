"""pytest fixtures for the real test servers, offered to every test by tests/conftest.py.
Do not import them into a test module or an area's conftest.py: a session fixture is one per
definition, and each import started its own servers in every worker.

* ``dovecot``: one Dovecot per xdist worker (session scope); ``dovecot_user`` gives a
  fresh user with an empty mailbox for each test.
* ``smtp_server``: a real aiosmtpd with AUTH + STARTTLS per test.
* ``memory_keyring``: a keyring that stores secrets in memory for one test.
"""

from __future__ import annotations

import pytest

from tests.servers.certs import make_certificate
from tests.servers.dovecot import DovecotServer, DovecotUser
from tests.servers.keyring_backend import MemoryKeyring
from tests.servers.smtp import SmtpServer

__all__ = ["dovecot", "dovecot_acl", "dovecot_minimal", "dovecot_user", "smtp_server", "smtp_tls_server", "memory_keyring", "test_certificate"]


@pytest.fixture(scope="session")
def dovecot():
    server = DovecotServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def dovecot_acl():
    """A Dovecot with the ``acl`` and ``imap_acl`` plugins: folders can be read-only to
    their owner (``server.set_rights(user, folder, "lr")``)."""
    server = DovecotServer(acl=True).start()
    try:
        yield server
    finally:
        server.stop()


# What a plain IMAP4rev1 server offers: no SORT/THREAD/ESEARCH/UIDPLUS/MOVE/SPECIAL-USE/WITHIN.
MINIMAL_CAPABILITY = "IMAP4rev1 LITERAL+ IDLE NAMESPACE"


@pytest.fixture(scope="session")
def dovecot_minimal():
    """A Dovecot that advertises only IMAP4rev1 basics and has no SPECIAL-USE flags on its
    folders (named the Outlook way), for the fallback paths."""
    server = DovecotServer(capability=MINIMAL_CAPABILITY, special_use={
        "Drafts": None, "Sent Items": None, "Deleted Items": None, "Spam": None}).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def dovecot_user(dovecot: DovecotServer) -> DovecotUser:
    return dovecot.add_user()


@pytest.fixture(scope="session")
def test_certificate(tmp_path_factory):
    return make_certificate(tmp_path_factory.mktemp("smtp-tls"))


@pytest.fixture
def smtp_server(test_certificate):
    server = SmtpServer(test_certificate, mode="starttls").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def smtp_tls_server(test_certificate):
    server = SmtpServer(test_certificate, mode="tls").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def memory_keyring():
    import keyring

    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)
