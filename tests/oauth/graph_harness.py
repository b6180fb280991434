"""The Microsoft Graph harness of the mail-source contract suite (tests/contract).

The corpus is delivered into the emulator's Inbox (each message received at its Date);
the source signs in with a real msal device-code flow against the emulator's authority,
reached only through account settings. The snapshot is the emulator's whole store
(messages with read state, flags, categories and folders; folders; categories).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oauth.fixtures import microsoft_account, sign_in_microsoft


def load_graph(request: pytest.FixtureRequest, tmp: Path, corpus) -> "Loaded":  # noqa: F821
    from mailtriage.backends.microsoft.source import GraphSource
    from tests.contract.conftest import Loaded

    emulator = request.getfixturevalue("microsoft_emulator")
    request.getfixturevalue("memory_keyring")
    for message in corpus:
        emulator.add_message(message.raw, received=message.date.timestamp())
    account = microsoft_account(emulator, access="draft")
    sign_in_microsoft(emulator, account)
    source = GraphSource("graph", {"list": "security@example.org"}, account=account)
    return Loaded(source, emulator.snapshot)
