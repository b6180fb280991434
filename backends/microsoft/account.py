"""Microsoft 365 accounts: one ``[accounts.<id>]`` table with ``kind = "microsoft"``.

Example::

    [accounts.work]
    kind = "microsoft"
    address = "me@contoso.com"        # login hint, From: of drafts
    access = "draft"                  # read | draft | send
    client_id = "00000000-0000-0000-0000-000000000000"   # your app registration (public client)
    tenant = "organizations"          # a tenant ID or domain, or organizations | common | consumers
    organize = false                  # true: flags, categories, moves (adds Mail.ReadWrite, MailboxSettings.ReadWrite)
    timeout = 30
    send_cap = 20
    authserv_id = "contoso.mail.protection.outlook.com"
    # Endpoints (defaults are Microsoft's; tests point them at a loopback emulator):
    authority = "https://login.microsoftonline.com/organizations"
    graph_base = "https://graph.microsoft.com/v1.0"
    ca_file = "/path/ca.pem"

Tokens: msal's token cache, serialized into keyring (service ``mailtriage``, key
``msal-cache:<id>`` naming the pieces ``msal-cache:<id>:<generation>:<n>``, each small
enough for Windows Credential Manager). Nothing secret goes in this file: a public client has no secret.
An IMAP account (Outlook over IMAP with XOAUTH2) names ``oauth = "microsoft"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from mailtriage.backends.account_table import ACCESS_LEVELS, AccessLevels, AccountTable
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.settings import load_settings

DEFAULT_LOGIN = "https://login.microsoftonline.com"
DEFAULT_GRAPH = "https://graph.microsoft.com/v1.0"
DEFAULT_TIMEOUT = 30.0
DEFAULT_SEND_CAP = 20
IMAP_SCOPE = "https://outlook.office.com/IMAP.AccessAsUser.All"


def cache_key(account_id: str) -> str:
    return f"msal-cache:{account_id}"


@frozen_dataclass
class MicrosoftAccount(AccessLevels):
    id: str
    client_id: str
    address: str = ""
    access: str = "read"
    organize: bool = False
    imap: bool = False
    authority: str = f"{DEFAULT_LOGIN}/organizations"
    graph_base: str = DEFAULT_GRAPH
    timeout: float = DEFAULT_TIMEOUT
    send_cap: int = DEFAULT_SEND_CAP
    authserv_id: str | None = None
    ca_file: str | None = None

    @property
    def scopes(self) -> tuple[str, ...]:
        """The narrowest Graph scopes for the access (see docs/microsoft.md).

        read: Mail.Read + MailboxSettings.Read (category names and colours). draft:
        Mail.ReadWrite (Graph creates drafts only with it). send: + Mail.Send.
        organize: Mail.ReadWrite + MailboxSettings.ReadWrite (categories).
        msal adds openid, profile and offline_access itself.
        """
        if self.imap:
            return (IMAP_SCOPE,)
        writes = self.can_draft or self.organize
        scopes = ["Mail.ReadWrite" if writes else "Mail.Read",
                  "MailboxSettings.ReadWrite" if self.organize else "MailboxSettings.Read"]
        if self.can_send:
            scopes.append("Mail.Send")
        return tuple(scopes)

    @classmethod
    def from_settings(cls, account_id: str, body: Mapping[str, Any], file: Path | str) -> "MicrosoftAccount":
        table = AccountTable(account_id, body, file)
        key, text, number = table.key, table.text, table.number
        kind = body.get("kind", "microsoft")
        if kind not in ("microsoft", "graph", "imap"):
            raise ConfigError(file, key("kind"), f"not a Microsoft account (kind = {kind!r})", "microsoft")
        access = table.choice("access", ACCESS_LEVELS, "read")
        organize = table.flag("organize")
        tenant = text("tenant", "organizations")
        authority = (text("authority") or f"{DEFAULT_LOGIN}/{tenant}").rstrip("/")
        if not authority.startswith("https://"):
            raise ConfigError(file, key("authority"), f"must be an https:// URL, not {authority!r}",
                              f"{DEFAULT_LOGIN}/<tenant>")
        graph = (text("graph_base") or DEFAULT_GRAPH).rstrip("/")
        if not graph.startswith("https://"):
            raise ConfigError(file, key("graph_base"), f"must be an https:// URL, not {graph!r}", DEFAULT_GRAPH)
        return cls(
            id=account_id, client_id=text("client_id", required=True) or "",
            address=text("address") or (text("username") if kind == "imap" else None) or "",
            access=access, organize=organize, imap=kind == "imap", authority=authority, graph_base=graph,
            timeout=number("timeout", DEFAULT_TIMEOUT, float, minimum=1), send_cap=number("send_cap", DEFAULT_SEND_CAP),
            authserv_id=text("authserv_id"), ca_file=text("ca_file"),
        )


def load_microsoft_account(account_id: str, settings=None) -> MicrosoftAccount:
    settings = settings or load_settings()
    return MicrosoftAccount.from_settings(account_id, settings.account(account_id), settings.path)
