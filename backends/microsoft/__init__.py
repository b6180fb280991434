"""Microsoft 365: msal sign-in, the Microsoft Graph mailbox and the mail-source backend.

The registry names ``mailtriage.backends.microsoft:GraphSource`` for kinds ``graph`` and
``microsoft``. See docs/microsoft.md.
"""

from __future__ import annotations


def __getattr__(name: str):
    if name == "GraphSource":
        # lazy: importing the package for the account model does not load the backend
        from mailtriage.backends.microsoft.source import GraphSource

        return GraphSource
    if name == "GraphMailbox":
        # lazy: the Graph adapter pulls in msal (about 0.7 s)
        from mailtriage.backends.microsoft.adapter import GraphMailbox

        return GraphMailbox
    raise AttributeError(name)


__all__ = ["GraphSource", "GraphMailbox"]
