"""Small IMAP helpers imapclient lacks: UID sets, raw FETCH by UID or sequence, ESEARCH.

imapclient's ``fetch()`` post-filters its result with the IDs it was given, so it
cannot take a range such as ``1:*``; :func:`fetch` here takes any sequence set, and
callers pass UIDs in chunks of at most :data:`CHUNK`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable, Iterable, Iterator, Sequence

from imapclient import IMAPClient
from imapclient.response_parser import parse_fetch_response, parse_message_list, parse_response

from mailtriage.backends.imap import imaplib_private as private
from mailtriage.backends.imap.wire import stream_fetch

CHUNK = 500
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def compress(numbers: Iterable[int]) -> str:
    """``[1, 2, 3, 7, 9, 10]`` -> ``"1:3,7,9:10"``."""
    ordered = sorted(set(numbers))
    if not ordered:
        raise ValueError("empty UID set")
    parts, start, prev = [], ordered[0], ordered[0]
    for n in ordered[1:]:
        if n == prev + 1:
            prev = n
            continue
        parts.append(f"{start}:{prev}" if prev != start else str(start))
        start = prev = n
    parts.append(f"{start}:{prev}" if prev != start else str(start))
    return ",".join(parts)


def expand(seqset: str | bytes | int) -> list[int]:
    """``"1:3,7"`` -> ``[1, 2, 3, 7]`` (no ``*``: servers never send it in results)."""
    if isinstance(seqset, int):
        return [seqset]
    text = seqset.decode() if isinstance(seqset, bytes) else str(seqset)
    out: list[int] = []
    for part in text.split(","):
        if ":" in part:
            a, b = (int(x) for x in part.split(":"))
            lo, hi = min(a, b), max(a, b)
            out.extend(range(lo, hi + 1))
        elif part:
            out.append(int(part))
    return out


def chunks(items: Sequence[int], size: int = CHUNK) -> Iterator[list[int]]:
    for i in range(0, len(items), size):
        yield list(items[i:i + size])


def fetch(client: IMAPClient, seqset: str, items: Sequence[str], *, uid: bool = True) -> dict[int, dict]:
    """FETCH ``items`` for ``seqset`` (UIDs when ``uid``, else sequence numbers).

    The result is keyed by UID when ``uid`` else by sequence number; each value also
    carries ``b"UID"`` when asked for. Unsolicited FETCH responses are kept (harmless).
    """
    return dict(parse_fetch_response(fetch_raw(client, seqset, items, uid=uid), False, uid))


def fetch_raw(client: IMAPClient, seqset: str, items: Sequence[str], *, uid: bool = True) -> list:
    """FETCH ``items`` for ``seqset``; the untagged FETCH responses as imaplib collected
    them (a bytes line per response, a ``(line, literal)`` tuple before each literal), unparsed."""
    imap = private.imap_of(client)
    args = ["FETCH", seqset, "(" + " ".join(items) + ")"]
    if uid:
        args.insert(0, "UID")
    tag = private.send_command(imap, *args)
    typ, data = private.wait_completion(imap, "FETCH", tag)
    private.check_ok(client, "fetch", typ, data)
    typ, data = private.untagged(imap, typ, data, "FETCH")
    return data


def fetch_stream(client: IMAPClient, seqset: str, items: Sequence[str], consume: Callable[[list], None], *,
                 uid: bool = True, batch: int = 2000) -> None:
    """FETCH ``items`` for ``seqset``, handing the untagged FETCH responses to ``consume``
    (imaplib's shape, as :func:`fetch_raw` returns them) in batches of about ``batch``
    while the server still sends the rest: a large FETCH is parsed as it arrives, in
    bounded memory (see :func:`wire.stream_fetch`)."""
    imap = private.imap_of(client)
    args = ["FETCH", seqset, "(" + " ".join(items) + ")"]
    if uid:
        args.insert(0, "UID")
    tag = private.send_command(imap, *args)
    typ, data = stream_fetch(client, tag, consume, batch)
    private.check_ok(client, "fetch", typ, data)


def any_of(keys: Sequence[Sequence[bytes]]) -> list[bytes]:
    """Search keys matching what any of ``keys`` matches: ``OR`` in prefix form, as a balanced
    tree (nesting grows with the log of the count, never with the count)."""
    if not keys:
        raise ValueError("any_of needs at least one search key")
    if len(keys) == 1:
        return list(keys[0])
    half = len(keys) // 2
    return [b"OR", *any_of(keys[:half]), *any_of(keys[half:])]


def quote(text: str) -> bytes:
    """An IMAP string argument: quoted when ASCII, raw bytes (sent as a literal) when 8-bit."""
    raw = text.encode("utf-8")
    if any(b > 127 for b in raw) or b"\r" in raw or b"\n" in raw:
        # A literal: imapclient sends only 8-bit bytes as literals by itself, so a CR/LF
        # in plain ASCII would otherwise go inline and end the command.
        return private.literal(raw)
    return b'"' + raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


def imap_date(when: datetime) -> bytes:
    when = when.astimezone(timezone.utc) if when.tzinfo else when
    return f"{when.day}-{_MONTHS[when.month - 1]}-{when.year}".encode()


def search(client: IMAPClient, criteria: Sequence[bytes], *, esearch: bool) -> tuple[list[int], int]:
    """UID SEARCH ``criteria``; returns (UIDs ascending, count). Uses ESEARCH when the server has it."""
    criteria = list(criteria) or [b"ALL"]
    charset = [b"CHARSET", b"UTF-8"] if any(any(b > 127 for b in c) for c in criteria) else []
    if esearch:
        data = private.raw_command(client, b"SEARCH", [b"RETURN", b"(ALL COUNT)", *charset, *criteria],
                                   response_name="ESEARCH")
        return parse_esearch(data)
    data = private.raw_command(client, b"SEARCH", [*charset, *criteria])
    uids = sorted(parse_message_list(data))
    return uids, len(uids)


def parse_esearch(data: list) -> tuple[list[int], int]:
    uids: list[int] = []
    count = 0
    for line in data:
        if not line:
            continue
        items = list(parse_response([line]))
        i = 0
        while i < len(items):
            item = items[i]
            key = item.upper() if isinstance(item, bytes) else None
            if key == b"ALL" and i + 1 < len(items):
                uids.extend(expand(items[i + 1]))
                i += 2
                continue
            if key == b"COUNT" and i + 1 < len(items):
                count = int(items[i + 1])
                i += 2
                continue
            i += 1
    return sorted(uids), count


def store(client: IMAPClient, seqset: str, op: str, flags: Sequence[bytes], *, uid: bool = True) -> list:
    """UID STORE ``op`` (``+FLAGS`` / ``-FLAGS``, or their ``.SILENT`` forms) for a whole
    sequence set; the untagged FETCH responses it brought, unparsed (imaplib's shape, as
    :func:`fetch_raw` returns them: the flags of each message as the STORE left them)."""
    args = [b"STORE", seqset.encode(), op.encode(), b"(" + b" ".join(flags) + b")"]
    return private.raw_command(client, args[0], args[1:], response_name="FETCH", uid=uid) or []


def uid_expunge(client: IMAPClient, seqset: str) -> None:
    """UID EXPUNGE of exactly ``seqset`` (UIDPLUS); never a plain EXPUNGE."""
    private.raw_command(client, b"EXPUNGE", [seqset.encode()], response_name="EXPUNGE", uid=True)
