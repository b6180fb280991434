"""The msal cache in keyring: read at start, when a refresh is due or on a 401, never per
Graph request; and a reader never catches another process's save half done."""

from __future__ import annotations

import keyring
import pytest

from mailtriage.backends.mailbox_contract import MailQuery
from mailtriage.backends.microsoft.adapter import GraphMailbox
from mailtriage.backends.microsoft.auth import MicrosoftSignIn, load_cache, save_cache
from tests.oauth.fixtures import microsoft_account, sign_in_microsoft
from tests.oauth.test_graph_mailbox import deliver
from tests.servers.keyring_backend import MemoryKeyring


def cache_reads(ring) -> int:
    return sum(1 for _service, key in ring.reads if key.startswith("msal-cache:"))


@pytest.fixture
def mailbox(graph_account):
    mb = GraphMailbox(graph_account)
    yield mb
    mb.close()


def test_graph_requests_do_not_read_the_keyring_each_time(microsoft_emulator, memory_keyring, mailbox):
    gids = [deliver(microsoft_emulator, n) for n in range(1, 11)]
    memory_keyring.reads.clear()
    mailbox.list(MailQuery(folder="inbox"))
    first = cache_reads(memory_keyring)
    assert 2 <= first <= 12  # the index and the pieces, once
    for gid in gids:
        mailbox.get(mailbox.mid(gid))  # 20 more Graph requests
    assert cache_reads(memory_keyring) == first
    assert microsoft_emulator.token_calls == []  # and no refresh either


def test_a_401_reloads_the_cache_and_refreshes(microsoft_emulator, memory_keyring, mailbox):
    gid = deliver(microsoft_emulator, 1)
    mailbox.get(mailbox.mid(gid))
    memory_keyring.reads.clear()
    microsoft_emulator.expire_access_tokens()  # revoked early on the server: Graph answers 401
    assert mailbox.get(mailbox.mid(gid)).header.subject == "Message 1"
    assert cache_reads(memory_keyring) >= 2 and microsoft_emulator.token_calls == ["refresh_token"]


def test_a_token_near_its_expiry_is_refreshed_from_the_keyring(microsoft_emulator, memory_keyring):
    microsoft_emulator.token_lifetime = 200  # under the 5-minute margin: a refresh is due at once
    account = microsoft_account(microsoft_emulator, access="draft")
    sign_in_microsoft(microsoft_emulator, account)
    signin = MicrosoftSignIn(account)
    try:
        first = signin.access_token()
        memory_keyring.reads.clear()
        assert signin.access_token() != first
        assert cache_reads(memory_keyring) >= 2  # due: the cache is read again before msal refreshes
    finally:
        signin.close()


class SaveMidRead(MemoryKeyring):
    """A keyring where another process saves a new cache just as this one reads the first
    piece of the old one (the interleaving of two processes on one keyring)."""

    def __init__(self, account_id: str, new_text: str) -> None:
        super().__init__()
        self.account_id, self.new_text, self.fired = account_id, new_text, False

    def get_password(self, service, username):
        if not self.fired and username.startswith(f"msal-cache:{self.account_id}:") and username.endswith(":0"):
            self.fired = True
            save_cache(self.account_id, self.new_text)
        return super().get_password(service, username)


def test_a_reader_never_catches_a_save_half_done():
    old, new = "O" * 2500, "N" * 3700
    previous = keyring.get_keyring()
    ring = SaveMidRead("work", new)
    keyring.set_keyring(ring)
    try:
        ring.fired = True  # no interleaving while the first cache is saved
        save_cache("work", old)
        ring.fired = False
        assert load_cache("work") == new  # the save happened mid-read: the new cache, whole
        assert ring.fired
        assert load_cache("work") == new
    finally:
        keyring.set_keyring(previous)
