"""Message-IDs in header values: the one rule for what counts as an ID or a reference.

Moved out of :mod:`backends.mime` (issue 36).
"""

from __future__ import annotations

import re

__all__ = ["extract_msgid", "extract_msgids"]


# ---------------------------------------------------------------------------
# Message-IDs
# ---------------------------------------------------------------------------

_BRACKETED_ID = re.compile(rb"<[^<>\s]+>")
_BARE_ID = re.compile(rb"[^\s<>,;\"()]+@[^\s<>,;\"()]+")


def _id_text(raw: bytes) -> str:
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace")


# A reference must look like a Message-ID (RFC 5322: id-left "@" id-right). Values
# such as git-send-email's leftover "<yes>" would otherwise join unrelated threads.
REFERENCE_ID = re.compile(rb"<[^<>@ \t\n\r\f\v]*+@[^<> \t\n\r\f\v]++>")  # \s spelt out: faster


def extract_msgid(value: bytes | str | None, *, reference: bool = False) -> str | None:
    """The Message-ID in a header value, angle brackets kept; None when there is none.

    Takes the first ``<...>`` token; a bare ``local@domain`` (seen from broken
    clients) is wrapped in brackets. Anything else is no ID. With ``reference``
    (an In-Reply-To value) a token without ``@`` is no ID either.
    """
    if not value:
        return None
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    match = (REFERENCE_ID if reference else _BRACKETED_ID).search(value)
    if match is not None:
        return _id_text(match.group())
    match = _BARE_ID.search(value)
    if match is not None:
        return f"<{_id_text(match.group())}>"
    return None


def extract_msgids(value: bytes | str | None) -> tuple[str, ...]:
    """Every ``<...@...>`` Message-ID in a References value, in order, deduplicated.

    Tokens without ``@`` are not Message-IDs and are left out (see :func:`ignored_references`).
    """
    if not value:
        return ()
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    seen: dict[str, None] = {}
    for token in REFERENCE_ID.findall(value):
        seen.setdefault(_id_text(token), None)
    return tuple(seen)


def ignored_references(value: bytes | str | None) -> list[str]:
    """The ``<...>`` tokens of a References / In-Reply-To value that are not Message-IDs (no ``@``)."""
    if not value:
        return []
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    return [_id_text(t) for t in _BRACKETED_ID.findall(value) if b"@" not in t]
