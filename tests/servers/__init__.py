"""Real servers for tests: Dovecot (IMAP), aiosmtpd (SMTP), a fault proxy and a test keyring.

Fixtures live in :mod:`tests.servers.fixtures`; an area's ``conftest.py`` pulls them in
with ``from tests.servers.fixtures import *``.
"""
