"""One loopback rule for every "plain text only to this machine" check.

It used to be written three times and the copies disagreed: `LOCALHOST` and `[::1]` were this
machine for IMAP but not for the modes endpoints, `localhost.localdomain` only for IMAP."""

import pytest

from mailtriage.core.origins import Origin, is_loopback
from mailtriage.backends.imap import account as imap_account
from mailtriage.modes import config as modes_config
from mailtriage.modes import server as modes_server


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST", "127.0.0.1", "127.8.9.10", "::1", "[::1]", " localhost "])
def test_this_machine(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["localhost.localdomain", "example.org", "10.0.0.1", "::ffff:10.0.0.1", "", "localhost.evil.example"])
def test_not_this_machine(host):
    assert not is_loopback(host)


def test_every_plain_text_rule_uses_the_one_check():
    assert imap_account.is_loopback is is_loopback
    assert modes_config.is_loopback is is_loopback
    assert modes_server.is_loopback is is_loopback
    assert Origin("http", "::1", 80).loopback
