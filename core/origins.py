"""Which origin a stored secret belongs to, and the keyring key that says so.

A secret (a Pony Mail session cookie, a GitHub or Jira token) is stored under a key made of
its purpose and the exact origin it was stored for, ``<purpose>:<scheme>://<host>:<port>``
(plus ``/<name>`` where one origin serves several, e.g. GitHub's ``/<owner>/<repo>``). A
project file (team data: it may come from someone else's pull request) only names URLs; the
key follows from the URL, so a URL that points elsewhere finds no secret, and no setting
can name a keyring entry. Plain http carries a secret only to this machine (loopback).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from mailtriage.core.errors import CoreError
from mailtriage.core.lean_dataclass import frozen_dataclass

DEFAULT_PORTS = {"http": 80, "https": 443}
#: What each purpose's secret is, for messages.
PURPOSES = {"ponymail": "Pony Mail session cookie", "github": "GitHub token", "jira": "Jira token"}


class OriginRefused(CoreError, ValueError):
    """A URL cannot carry a secret: not http(s), no host, user info, or plain http to another host."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine: ``localhost`` or a loopback address (IPv6 with or
    without brackets). The one check behind every "plain text only to this machine" rule
    (IMAP/SMTP security, modes endpoints, http origins that may carry secrets)."""
    host = host.strip().lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@frozen_dataclass
class Origin:
    scheme: str
    host: str  # lower case; an IPv6 address without brackets
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    @property
    def carries_secrets(self) -> bool:
        """https, or http to this machine only (a secret over plain http is readable on the way)."""
        return self.scheme == "https" or self.loopback


def origin_of(url: str) -> Origin:
    """The (scheme, host, port) of an http(s) URL, the port made explicit.

    Raises:
        OriginRefused: not an http(s) URL with a host, a bad port, or user info in it.
    """
    parts = urlsplit(str(url).strip())
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        raise OriginRefused(f"{url!r} is not an http(s) URL with a host")
    if parts.username is not None or parts.password is not None:
        raise OriginRefused(f"{url!r} carries user info; credentials come from the keyring only")
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError as exc:
        raise OriginRefused(f"{url!r} has no valid port") from exc
    return Origin(scheme, parts.hostname.lower().rstrip("."), port)


def secret_key(purpose: str, url: str, name: str | None = None) -> str:
    """The keyring key of ``purpose``'s secret for the origin of ``url`` (and ``name`` there).

    Raises:
        OriginRefused: as :func:`origin_of`, or the URL is plain http to a host other than
            this machine (no secret is kept or sent for it).
    """
    origin = secret_origin(url)
    return f"{purpose}:{origin}" + (f"/{name}" if name else "")


def secret_origin(url: str) -> Origin:
    """:func:`origin_of`, refused when the origin may not carry a secret."""
    origin = origin_of(url)
    if not origin.carries_secrets:
        raise OriginRefused(f"{url!r} is plain http to {origin.host}, which would carry the secret in clear; "
                            "use https (plain http is accepted for loopback only)")
    return origin


def legacy_key(purpose: str, url: str, name: str | None = None) -> str:
    """The key of an entry stored before keys named the origin (``ponymail:<host[:port]>``,
    ``jira:<host[:port]>``, ``github:<owner>/<repo>``). It is never read to send a secret;
    :func:`mailtriage.cli.accounts` moves it to :func:`secret_key` when the user asks."""
    if purpose == "github":
        return f"github:{name}"
    return f"{purpose}:{urlsplit(str(url).strip()).netloc}"


def store_command(purpose: str, url: str, name: str | None = None, *, migrate: bool = False) -> str:
    """The command line that stores (or, with ``migrate``, moves an old entry to) the key."""
    repo = f" --repo {name}" if purpose == "github" and name else ""
    return f"mailtriage account store-secret {purpose} {url}{repo}" + (" --from-old-key" if migrate else "")
