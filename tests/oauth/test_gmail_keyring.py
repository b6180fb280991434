"""The Google tokens in keyring: read at start, when a refresh is due or on a 401, never
once per Gmail request (a 500-message read made ~501 reads; the Secret Service backend
opens a D-Bus session for each). As backends/microsoft/auth.py does for the msal cache."""

from __future__ import annotations

from datetime import timedelta

from mailtriage.backends.contract import ThreadId
from mailtriage.backends.gmail.account import token_key
from mailtriage.backends.gmail.auth import GoogleSignIn
from mailtriage.backends.gmail.source import GmailSource
from tests.oauth.fixtures import google_account, save_google_sign_in
from tests.oauth.mail import BASE, make_mail

ROOT = "<m1@example.net>"


def token_reads(ring, account_id: str = "me") -> int:
    return sum(1 for _service, key in ring.reads if key == token_key(account_id))


def _thread(emulator, n: int) -> str:
    first = emulator.add_message(make_mail(1, subject="Fuzzing campaign"),
                                 date=(BASE + timedelta(minutes=1)).timestamp())
    for i in range(2, n + 1):
        emulator.add_message(make_mail(i, subject="Re: Fuzzing campaign", in_reply_to=f"<m{i - 1}@example.net>",
                                       references=f"{ROOT} <m{i - 1}@example.net>"),
                             date=(BASE + timedelta(minutes=i)).timestamp())
    return emulator.messages[first].thread_id


def test_a_thread_read_reads_the_keyring_once(google_emulator, memory_keyring, gmail_account):
    value = _thread(google_emulator, 40)
    source = GmailSource("gmail", {"list": "security@example.org"}, account=gmail_account)
    try:
        memory_keyring.reads.clear()
        read = source.read_thread(ThreadId("gmail", value))
        assert len(read.messages) == 40  # 40 message gets and more
        assert source.api.requests_sent > 40
        assert token_reads(memory_keyring) == 1
        source.read_thread(ThreadId("gmail", value))
        assert token_reads(memory_keyring) == 1  # a second read: none
    finally:
        source.close()


def test_a_401_reads_the_keyring_again_and_refreshes(google_emulator, memory_keyring, gmail_account):
    value = _thread(google_emulator, 3)
    source = GmailSource("gmail", {"list": "security@example.org"}, account=gmail_account)
    try:
        source.read_thread(ThreadId("gmail", value))
        memory_keyring.reads.clear()
        google_emulator.expire_access_tokens()  # revoked early on the server: Gmail answers 401
        assert len(source.read_thread(ThreadId("gmail", value)).messages) == 3
        assert token_reads(memory_keyring) >= 1 and source.api.signin.refreshes == 1
    finally:
        source.close()


def test_a_token_due_for_refresh_is_read_again_first(google_emulator, memory_keyring):
    """Another process refreshed meanwhile: the due token is read again from keyring and
    that process's token is used, no second refresh."""
    account = google_account(google_emulator, access="draft")
    save_google_sign_in(google_emulator, account, expired=True)
    signin, other = GoogleSignIn(account), GoogleSignIn(account)
    token = other.access_token()  # "another process" refreshed and saved
    memory_keyring.reads.clear()
    assert signin.access_token() == token
    assert signin.refreshes == 0 and token_reads(memory_keyring) >= 1
    memory_keyring.reads.clear()
    assert signin.access_token() == token and token_reads(memory_keyring) == 0
