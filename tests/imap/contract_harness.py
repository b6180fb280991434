"""The IMAP harness of the mail-source contract suite (tests/contract).

``load_imap`` gives the suite an ImapSource over a fresh Dovecot user whose INBOX holds
the corpus (each message APPENDed with its date as the arrival time). The snapshot is
every folder's UIDVALIDITY, UIDs and flags, read through a separate EXAMINE session, so
a read that set \\Seen, expunged or appended anything would show.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mailtriage.backends.imap import protocol
from mailtriage.backends.imap.account import password_key
from mailtriage.backends.imap.source import ImapSource
from mailtriage.core.secrets import set_secret
from tests.imap.conftest import account_for


def mailbox_state(server, user):
    with server.client(user) as client:
        state = []
        for _flags, _delim, name in sorted(client.list_folders(), key=lambda f: f[2]):
            info = client.select_folder(name, readonly=True)
            # imapclient's fetch() cannot take "1:*"; our helper takes any sequence set.
            messages = protocol.fetch(client, "1:*", ["UID", "FLAGS"]) if info.get(b"EXISTS") else {}
            state.append((name, info.get(b"UIDVALIDITY"),
                          sorted((uid, tuple(sorted(f for f in data.get(b"FLAGS", ()) if f != b"\\Recent")))
                                 for uid, data in messages.items())))
        return state


def load_imap(request: pytest.FixtureRequest, tmp: Path, corpus) -> "Loaded":  # noqa: F821
    from tests.contract.conftest import Loaded

    server = request.getfixturevalue("dovecot")
    request.getfixturevalue("memory_keyring")
    user = server.add_user()
    with server.client(user) as client:
        for message in corpus:
            client.append("INBOX", message.raw, msg_time=message.date)
    account = account_for(server, user)
    set_secret(password_key(account.id), user.password)
    source = ImapSource("imap", {"folder": "INBOX", "list": "security@example.org"}, account=account)
    return Loaded(source, lambda: mailbox_state(server, user))
