"""The Gmail harness of the mail-source contract suite (tests/contract).

The corpus is delivered into the Google emulator's INBOX (each message with its Date as
Gmail's internalDate); the source reaches the emulator only through account settings
(token URI, API base) and a saved sign-in in the memory keyring. The snapshot is the
emulator's whole store (messages, labels, drafts), so any write would show.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oauth.fixtures import google_account, save_google_sign_in


def load_gmail(request: pytest.FixtureRequest, tmp: Path, corpus) -> "Loaded":  # noqa: F821
    from mailtriage.backends.gmail.source import GmailSource
    from tests.contract.conftest import Loaded

    emulator = request.getfixturevalue("google_emulator")
    request.getfixturevalue("memory_keyring")
    for message in corpus:
        emulator.add_message(message.raw, labels=("INBOX", "UNREAD"), date=message.date.timestamp())
    account = google_account(emulator, access="draft")
    save_google_sign_in(emulator, account)
    source = GmailSource("gmail", {"list": "security@example.org"}, account=account)
    return Loaded(source, emulator.snapshot)
