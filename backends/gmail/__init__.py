"""Gmail: Google sign-in (google-auth), the Gmail REST API mailbox and the mail-source backend.

The registry names ``mailtriage.backends.gmail:GmailSource`` for kind ``gmail``.
See docs/gmail.md.
"""

from __future__ import annotations


def __getattr__(name: str):
    # Lazy: importing the package (e.g. for the account model) does not load the backend.
    if name == "GmailSource":
        from mailtriage.backends.gmail.source import GmailSource

        return GmailSource
    if name == "GmailMailbox":
        from mailtriage.backends.gmail.adapter import GmailMailbox

        return GmailMailbox
    raise AttributeError(name)


__all__ = ["GmailSource", "GmailMailbox"]
