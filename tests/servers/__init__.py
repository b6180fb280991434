"""Real servers for tests: Dovecot (IMAP), aiosmtpd (SMTP), a fault proxy and a test keyring.

Fixtures live in :mod:`tests.servers.fixtures`; tests/conftest.py offers them to every test
(one Dovecot per xdist worker).
"""
