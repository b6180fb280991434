"""Gmail: Google sign-in (google-auth), the Gmail REST API mailbox and the mail-source backend.

The registry names ``mailtriage.backends.gmail:GmailSource`` for kind ``gmail``.
See docs/gmail.md.
"""

from __future__ import annotations


def __getattr__(name: str):
    if name == "GmailSource":
        # lazy: the account model is importable without the backend
        from mailtriage.backends.gmail.source import GmailSource

        return GmailSource
    if name == "GmailMailbox":
        # lazy: the REST adapter pulls in google-auth (about 0.5 s)
        from mailtriage.backends.gmail.adapter import GmailMailbox

        return GmailMailbox
    raise AttributeError(name)


__all__ = ["GmailSource", "GmailMailbox"]
