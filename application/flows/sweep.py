"""The feedback sweep's email source: read-only.

It reads through the mail backends: an IMAP folder through the IMAP adapter
(:class:`mailtriage.backends.imap.adapter.ImapMailbox`), an mbox file or a Maildir through
the archive backend (:class:`mailtriage.backends.mbox.MboxSource`). Given a mailbox or query, a cursor (a received-date instant) and the sweep's
config-entry id, map every feedback email received at or after the cursor to the
sweep's item schema and report the list. Facts only:

* **Availability probe**, once, before any fetch: one cheap read of the configured
  mailbox. No way to read it → exactly :data:`UNAVAILABLE`, and the run stops with no
  items. Readable, but no acknowledgment primitive the identity can set and read back →
  exactly :data:`NO_ACK_PRIMITIVE`, and every item is ``ack_deferred``. On IMAP the
  primitive is a keyword (``$MailtriageAck`` by default): it counts when the server
  keeps new keywords (``\\*`` in PERMANENTFLAGS, or the keyword itself listed there) in a
  folder selected read-write. ``existing_ack`` / ``existing_closeout`` are read from the
  keywords and from nothing else — never inferred from what a mail says.
* **Items**: ``id`` (the Message-ID), ``source`` (the config-entry id), ``origin``
  (a URL that reads the message again), ``author_class``, ``body`` (a summary: subject,
  sender and the first words of the new text, as data), ``media`` (attachment names,
  types, sizes), ``existing_ack``, ``existing_closeout``, ``ack_deferred``, plus
  ``received`` and ``subject``.
* **Skipped**, with the rule that matched: bounces (DSN ``multipart/report``,
  ``X-Failed-Recipients``, MAILER-DAEMON / postmaster), auto-replies (``Auto-Submitted``
  other than ``no``, ``X-Autoreply`` / ``X-Autorespond``, ``Precedence: auto_reply``),
  and system notifications (``Precedence: bulk | junk``, no-reply senders, read
  receipts). ``Precedence: list`` alone is *kept*: a person writing through a mailing
  list is feedback, and the spec says be over-inclusive when unsure.
* **Over-inclusive, deduped by Message-ID**, oldest first (by received second, then by
  Message-ID); at ``cap`` items the result is marked ``truncated`` instead of silently
  dropping the rest, and ``resume_cursor`` says where it stopped: the received second and
  the Message-ID of the last message it looked at (``2026-11-02T09:00:00Z#<id@host>``).
  Given as ``--cursor``, it starts after that message, so runs with a cap see every
  message once even when more than ``cap`` were received in the same second.
* **Never writes**: no STORE, APPEND, COPY, MOVE or EXPUNGE; bodies are read with
  ``BODY.PEEK`` so not even ``\\Seen`` changes. The cursor is echoed, never moved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Protocol
from urllib.parse import parse_qs, quote

from mailtriage.backends.contract import Message
from mailtriage.backends.errors import MailError, Unavailable
from mailtriage.backends.mailbox_contract import MailQuery
from mailtriage.backends.mbox import MboxSource
from mailtriage.backends.mime import parse_message
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.projectconfig import ConfigError
from mailtriage.application.flows.errors import ApplicationError
from mailtriage.application.flows.linking import iso_utc
from mailtriage.application.flows.text import display_address, excerpt, one_line
from typing import Any
from mailtriage.application.flows.errors import UsageError
from mailtriage.core.projectconfig import ConfigError, load_project

if TYPE_CHECKING:  # the IMAP adapter loads with an IMAP sweep only (ImapReader.probe)
    from mailtriage.backends.imap.adapter import ImapMailbox

UNAVAILABLE = "Email tools unavailable — source skipped this run."
NO_ACK_PRIMITIVE = ("Email acknowledgment primitive unavailable — items from this source are always marked "
                    "ack_deferred; the orchestrator records acknowledgment in state only.")
DEFAULT_ACK_KEYWORD = "$MailtriageAck"
DEFAULT_CLOSEOUT_KEYWORD = "$MailtriageCloseout"
BODY_SUMMARY_CHARS = 600
QUERY_KEYS = ("text", "from")
_KEYWORD = re.compile(r"^[!#-'*+\-.0-9:<-Z^-z|~$]{1,64}$")  # an IMAP atom without specials


class SourceError(ApplicationError, ValueError):
    """``--source`` cannot be understood (a usage error)."""


@frozen_dataclass
class MailboxLocation:
    """``--source ACCOUNT[/FOLDER][?text=…&from=…]``: a folder of an IMAP account, with an
    optional query."""

    account: str
    folder: str = "INBOX"
    text: str | None = None
    sender: str | None = None

    def describe(self) -> str:
        query = [f"{k}={v}" for k, v in (("text", self.text), ("from", self.sender)) if v]
        return f"{self.account}/{self.folder}" + (f"?{'&'.join(query)}" if query else "")

    def open(self, settings=None) -> Reader:
        return ImapReader(self, settings)


@frozen_dataclass
class ArchiveLocation:
    """``--source mbox:PATH`` or ``maildir:PATH``: an archive on disk."""

    format: str  # "mbox" | "maildir"
    path: Path

    def describe(self) -> str:
        return f"{self.format}:{self.path}"

    def open(self, settings=None) -> Reader:
        return ArchiveReader(self)


# What ``--source`` names.
SweepSource = MailboxLocation | ArchiveLocation
ARCHIVE_FORMATS = ("mbox", "maildir")


def parse_source(text: str) -> SweepSource:
    """``ACCOUNT[/FOLDER][?text=…&from=…]``, ``mbox:PATH`` or ``maildir:PATH``.

    Raises SourceError naming what is wrong."""
    value = (text or "").strip()
    if not value:
        raise SourceError("--source is empty: give ACCOUNT/FOLDER (e.g. work/INBOX), mbox:PATH or maildir:PATH")
    for archive_format in ARCHIVE_FORMATS:
        if value.startswith(archive_format + ":"):
            path = value[len(archive_format) + 1:].strip()
            if not path:
                raise SourceError(f"--source {value!r}: {archive_format}: needs a path")
            return ArchiveLocation(archive_format, Path(path).expanduser())
    location, _, query = value.partition("?")
    account, _, folder = location.partition("/")
    if not account.strip():
        raise SourceError(f"--source {value!r}: the account id is missing (ACCOUNT/FOLDER)")
    params = parse_qs(query, keep_blank_values=False) if query else {}
    unknown = sorted(set(params) - set(QUERY_KEYS))
    if unknown:
        raise SourceError(f"--source {value!r}: unknown query key{'s' if len(unknown) != 1 else ''} {', '.join(unknown)} "
                          f"(valid: {', '.join(QUERY_KEYS)})")
    first = {k: v[0] for k, v in params.items() if v}
    return MailboxLocation(account=account.strip(), folder=folder.strip() or "INBOX",
                           text=first.get("text"), sender=first.get("from"))


def parse_cursor(text: str) -> datetime:
    """The cursor: an ISO 8601 instant (a date means its midnight UTC). Raises SourceError."""
    try:
        value = datetime.fromisoformat((text or "").strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise SourceError(f"--cursor {text!r} is not an ISO 8601 instant (e.g. 2026-11-01T00:00:00Z)") from exc
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _second(when: datetime) -> datetime:
    return when.replace(microsecond=0)


@frozen_dataclass
class SweepCursor:
    """Where a sweep starts: every message received at or after ``at``; with ``after`` (a
    resume cursor) only those received after ``at``'s second, or in it with a Message-ID
    sorting after ``after``. Messages are taken in that same order, so a resume cursor
    names exactly what the last run looked at."""

    at: datetime
    after: str | None = None

    def text(self) -> str:
        return iso_utc(self.at) + (f"#{self.after}" if self.after is not None else "")

    def order(self, received: datetime | None, key: str) -> tuple[datetime, str]:
        """The sort key of a message (no received time: the cursor's own second, over-inclusive)."""
        return (_second(received) if received is not None else _second(self.at), key)

    def admits(self, received: datetime | None, key: str) -> bool:
        if self.after is None:
            return received is None or received >= self.at
        return self.order(received, key) > (_second(self.at), self.after)


def parse_sweep_cursor(text: str) -> SweepCursor:
    """``ISO`` or a resume cursor ``ISO#MESSAGE-ID`` as a truncated result gives it. Raises SourceError."""
    when, mark, after = (text or "").partition("#")
    if mark and not after.strip():
        raise SourceError(f"--cursor {text!r}: nothing after '#' (a resume cursor is ISO#<message-id>)")
    return SweepCursor(parse_cursor(when), after.strip() if mark else None)


# -- classification -----------------------------------------------------------------------------

_NO_REPLY_LOCAL = re.compile(r"no[-_.]?reply|do[-_.]?not[-_.]?reply|^(notifications?|notify|bounces?)(\+.*)?$",
                             re.IGNORECASE)
# Out-of-office replies that carry only "Auto-Submitted: auto-generated" (Exchange does).
_OOF_SUBJECT = re.compile(r"^\s*(automatic reply|auto(matische antwort)?|autoreply|out of (the )?office|"
                          r"r[ée]ponse automatique|abwesenheitsnotiz)\b", re.IGNORECASE)


def classify(message: Message) -> tuple[str, str] | None:
    """(reason, rule) when the message is not feedback, else None. Reads headers only,
    never the text: a person's mail that *talks* about bounces is still feedback."""

    def header(name: str) -> str:
        return one_line(message.header(name) or "", 300).lower()

    content_type = header("content-type")
    local = message.sender.email.split("@", 1)[0].lower() if message.sender.email else ""
    if content_type.startswith("multipart/report"):
        if "disposition-notification" in content_type:
            return "system notification", "Content-Type: multipart/report; report-type=disposition-notification"
        return "bounce", "Content-Type: multipart/report (delivery status notification)"
    if message.header("X-Failed-Recipients"):
        return "bounce", "X-Failed-Recipients"
    if local in ("mailer-daemon", "postmaster"):
        return "bounce", f"sender {message.sender.email}"
    auto = header("auto-submitted")
    if auto and not auto.startswith("no"):
        if auto.startswith("auto-replied"):
            return "auto-reply", f"Auto-Submitted: {auto}"
        if message.header("X-Auto-Response-Suppress") or _OOF_SUBJECT.match(message.subject or ""):
            return "auto-reply", f"Auto-Submitted: {auto} on an out-of-office reply"
        return "system notification", f"Auto-Submitted: {auto}"
    for name in ("X-Autoreply", "X-Autorespond", "X-Autoresponder"):
        if message.header(name):
            return "auto-reply", name
    precedence = header("precedence")
    if precedence in ("auto_reply", "auto-reply"):
        return "auto-reply", f"Precedence: {precedence}"
    if precedence in ("bulk", "junk"):
        return "system notification", f"Precedence: {precedence}"
    if header("return-path") == "<>":
        return "bounce", "Return-Path: <> (null sender)"
    if local and _NO_REPLY_LOCAL.match(local):
        return "system notification", f"no-reply sender {message.sender.email}"
    return None


def author_class(message: Message, internal_domains: frozenset[str]) -> str:
    """``internal`` (a configured internal domain), ``external``, or ``unknown`` (no address)."""
    address = message.sender.email or ""
    if "@" not in address:
        return "unknown"
    domain = address.rsplit("@", 1)[1].lower()
    if any(domain == d or domain.endswith("." + d) for d in internal_domains):
        return "internal"
    return "external"


def summary(message: Message) -> str:
    """Subject, sender and the first words of the new text, as one line of data."""
    who = display_address(message.sender.name, message.sender.email)
    subject = one_line(message.subject, 160) or "(no subject)"
    words = excerpt(message.body_text, BODY_SUMMARY_CHARS) or "(no text)"
    return f"Email from {who}, subject “{subject}”. Text (quoted as data): “{words}”"


# -- readers -----------------------------------------------------------------------------------------

@dataclass
class Probe:
    available: bool
    ack_primitive: bool = False
    detail: str = ""


@dataclass
class Candidate:
    """One message the cursor admits, read in full; ``key`` is its tiebreaker (Message-ID)."""

    message: Message
    received: datetime | None
    origin: str
    keywords: frozenset[str] = frozenset()
    key: str = ""


class Reader(Protocol):
    def probe(self, ack_keyword: str) -> Probe: ...
    def candidates(self, cursor: SweepCursor) -> Iterator[Candidate]: ...
    def pending(self) -> int: ...
    def close(self) -> None: ...


class ArchiveReader:
    """An mbox file or a Maildir, read through the archive backend
    (:class:`mailtriage.backends.mbox.MboxSource`), which only ever reads. An archive
    has no acknowledgment primitive: every item is ack_deferred."""

    def __init__(self, source: ArchiveLocation) -> None:
        self.source = source
        # No size cap: the sweep reports every attachment's real size.
        self.archive = MboxSource("sweep", {"path": str(source.path), "max_message_bytes": 0})
        self._left = 0

    def probe(self, ack_keyword: str) -> Probe:
        try:
            found = self.archive.archive_format()  # the single cheap read
        except Unavailable as exc:
            return Probe(False, detail=exc.reason)
        if found != self.source.format:
            return Probe(False, detail=f"{self.source.path} is not an {self.source.format} archive (it is {found})")
        return Probe(True, False, "an archive has no keyword or flag to read an acknowledgment from")

    def candidates(self, cursor: SweepCursor) -> Iterator[Candidate]:
        keyed = [(item, (item.index.message_ids[item.row] or b"").decode("utf-8", "replace"))
                 for item in self.archive.received_since(cursor.at)]
        found = [(item, key) for item, key in keyed if cursor.admits(item.received, key)]
        found.sort(key=lambda pair: cursor.order(pair[0].received, pair[1]))  # stable: archive order among equals
        self._left = len(found)
        base = Path(self.source.path).resolve().as_uri()
        for item, key in found:
            self._left -= 1
            message = parse_message(self.archive.archived_bytes(item))
            yield Candidate(message, item.received, f"{base}#{quote(message.message_id, safe='')}", key=key)

    def pending(self) -> int:
        return self._left

    def close(self) -> None:
        pass


class ImapReader:
    """One folder of an IMAP account (the user settings' ``[accounts.<id>]``), read through
    the IMAP adapter with SEARCH, FETCH and ``BODY.PEEK[]`` only."""

    PAGE = 500
    CHUNK = 50  # whole messages per adapter call

    def __init__(self, source: MailboxLocation, settings=None) -> None:
        self.source = source
        self.settings = settings
        self.mb: ImapMailbox | None = None
        self._left = 0

    def probe(self, ack_keyword: str) -> Probe:
        # why: the IMAP client loads with an IMAP sweep only; the queue imports this module for
        # its rules (classify) and would otherwise load imapclient for nothing (~0.1 s)
        from mailtriage.backends.imap.account import load_account
        from mailtriage.backends.imap.adapter import ImapMailbox

        try:
            account = load_account(self.source.account, self.settings)
        except ConfigError as exc:
            return Probe(False, detail=str(exc))
        self.mb = ImapMailbox(account)
        try:
            kept, why = self.mb.keyword_support(self.source.folder, ack_keyword)  # the single cheap read
        except MailError as exc:
            return Probe(False, detail=str(exc))
        return Probe(True, kept, why)

    def candidates(self, cursor: SweepCursor) -> Iterator[Candidate]:
        mb, folder = self.mb, self.source.folder
        assert mb is not None, "probe() first"
        headers = []
        page = 0
        while True:
            result = mb.list(MailQuery(folder=folder, page=page, page_size=self.PAGE, since=cursor.at,
                                       text=self.source.text, from_=self.source.sender))
            headers += list(result.messages)
            page += 1
            if not result.messages or page * self.PAGE >= result.total:
                break
        # IMAP SINCE is whole days on servers without WITHIN: keep the exact instant here.
        wanted = [h for h in headers if cursor.admits(h.date, h.message_id)]
        wanted.sort(key=lambda h: (*cursor.order(h.date, h.message_id), mb.ref(h.id).uid))
        self._left = len(wanted)
        for start in range(0, len(wanted), self.CHUNK):
            part = wanted[start:start + self.CHUNK]
            full = mb.get_many([h.id for h in part])
            for h in part:
                self._left -= 1
                item = full.get(h.id)
                if item is None:
                    continue  # expunged meanwhile by someone else
                keywords = frozenset(k.lower() for k in item.header.labels)
                yield Candidate(item.content, h.date, mb.message_url(h.id), keywords, h.message_id)

    def pending(self) -> int:
        return self._left

    def close(self) -> None:
        if self.mb is not None:
            self.mb.close()


def open_reader(source: SweepSource, settings=None) -> Reader:
    """The reader of a parsed ``--source``."""
    return source.open(settings)


# -- the sweep ----------------------------------------------------------------------------------------------

@dataclass
class SweepResult:
    entry: str
    source: str
    cursor: SweepCursor
    available: bool
    ack_primitive: bool = False
    notices: list[str] = field(default_factory=list)
    items: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    truncated: bool = False
    cap: int | None = None
    probe_detail: str = ""
    resume: SweepCursor | None = None  # where a truncated run stopped

    def to_json(self) -> dict:
        return {
            "source": self.entry,
            "mailbox": self.source,
            "cursor": self.cursor.text(),  # echoed: the sweep never moves it
            "available": self.available,
            "ack_primitive": self.ack_primitive,
            "probe": self.probe_detail,
            "notices": list(self.notices),
            "items": list(self.items),
            "skipped": list(self.skipped),
            "truncated": self.truncated,
            # Given as --cursor, the next run starts after the last message this one looked at.
            "resume_cursor": self.resume.text() if self.truncated and self.resume is not None else None,
            "cap": self.cap,
            "count": len(self.items),
        }


def check_keyword(name: str, option: str) -> str:
    if not _KEYWORD.match(name or "") or name.startswith("\\"):
        raise SourceError(f"{option} {name!r} is not an IMAP keyword (letters, digits and $ . _ - …, no spaces)")
    return name


def run_sweep(reader: Reader, *, entry: str, cursor: datetime | SweepCursor, source: str, cap: int | None = None,
              ack_keyword: str = DEFAULT_ACK_KEYWORD, closeout_keyword: str = DEFAULT_CLOSEOUT_KEYWORD,
              internal_domains: frozenset[str] = frozenset()) -> SweepResult:
    """Probe, then map every message received at or after ``cursor``; reads only."""
    if cap is not None and cap < 1:
        raise SourceError("--cap must be at least 1")
    if not isinstance(cursor, SweepCursor):
        cursor = SweepCursor(cursor)
    result = SweepResult(entry, source, cursor, available=False, cap=cap, resume=cursor)
    probe = reader.probe(ack_keyword)
    result.probe_detail = probe.detail
    if not probe.available:
        result.notices.append(UNAVAILABLE)
        return result
    result.available = True
    result.ack_primitive = probe.ack_primitive
    if not probe.ack_primitive:
        result.notices.append(NO_ACK_PRIMITIVE)
    ack, closeout = ack_keyword.lower(), closeout_keyword.lower()
    seen: set[str] = set()
    try:
        for candidate in reader.candidates(cursor):
            message = candidate.message
            received = iso_utc(candidate.received) if candidate.received else None
            if cap is not None and len(result.items) >= cap and classify(message) is None \
                    and message.message_id not in seen:
                result.truncated = True  # this one is the next run's first
                break
            # Looked at: a resume starts after it (the next run neither repeats nor skips it).
            result.resume = SweepCursor(cursor.order(candidate.received, candidate.key)[0], candidate.key)
            if message.message_id in seen:
                result.skipped.append({"id": message.message_id, "reason": "duplicate", "rule": "same Message-ID",
                                       "received": received})
                continue
            seen.add(message.message_id)
            skip = classify(message)
            if skip:
                result.skipped.append({"id": message.message_id, "reason": skip[0], "rule": skip[1],
                                       "received": received})
                continue
            result.items.append({
                "id": message.message_id,
                "source": entry,
                "origin": candidate.origin,
                "author_class": author_class(message, internal_domains),
                "body": summary(message),
                "media": [{"name": one_line(a.filename, 200) or "(unnamed)", "content_type": a.content_type,
                           "size": a.size} for a in message.attachments],
                "existing_ack": (ack in candidate.keywords) if probe.ack_primitive else None,
                "existing_closeout": (closeout in candidate.keywords) if probe.ack_primitive else None,
                "ack_deferred": not probe.ack_primitive,
                "received": received,
                "subject": one_line(message.subject, 200),
                "synthetic_id": message.synthetic_id,
            })
    except MailError as exc:
        # A failure mid-fetch: report what was mapped, marked truncated, rather than nothing.
        result.truncated = True
        result.notices.append(f"the fetch stopped early: {exc}")
    finally:
        reader.close()
    return result


@frozen_dataclass
class SweepRequest:
    """A checked sweep request (see :meth:`SweepFlow.request`)."""

    source: Any
    cursor: datetime
    entry: str
    cap: int | None
    ack_keyword: str
    closeout_keyword: str


class SweepFlow:
    """The read-only feedback sweep of one mailbox or archive since a cursor."""

    DEFAULT_ACK_KEYWORD = DEFAULT_ACK_KEYWORD
    DEFAULT_CLOSEOUT_KEYWORD = DEFAULT_CLOSEOUT_KEYWORD

    @staticmethod
    def request(source: str, cursor: str, entry: str, *, cap: int | None = None, ack_keyword: str | None = None,
                closeout_keyword: str | None = None) -> SweepRequest:
        """Read the sweep's inputs.

        Raises:
            UsageError: a source, cursor, keyword, cap or entry that cannot be used.
        """
        try:
            parsed = parse_source(source)
            when = parse_sweep_cursor(cursor)  # ISO, or a truncated run's ISO#<message-id>
            ack = check_keyword(ack_keyword or DEFAULT_ACK_KEYWORD, "--ack-keyword")
            closeout = check_keyword(closeout_keyword or DEFAULT_CLOSEOUT_KEYWORD,
                                                "--closeout-keyword")
            if cap is not None and cap < 1:
                raise SourceError("--cap must be at least 1")
            if not entry.strip():
                raise SourceError("--entry is empty")
        except SourceError as exc:
            raise UsageError(str(exc)) from exc
        return SweepRequest(parsed, when, entry.strip(), cap, ack, closeout)

    @staticmethod
    def internal_domains(directory: Path) -> frozenset[str]:
        """``sweep.internal_domains`` of project.md when there is one (optional for a sweep).

        Raises:
            ConfigError: the setting is not a list of domains.
        """
        try:
            config = load_project(directory)
        except ConfigError:
            return frozenset()
        value = config.get("sweep.internal_domains") or []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise ConfigError(config.file, "sweep.internal_domains", "must be a list of domains", "[example.org]")
        return frozenset(str(v).strip().lower().lstrip("@") for v in value if str(v).strip())

    @staticmethod
    def run(request: SweepRequest, internal_domains: frozenset[str] = frozenset()):
        """Probe the source, then map every message received at or after the cursor; reads only."""
        return run_sweep(open_reader(request.source), entry=request.entry,
                                    cursor=request.cursor, source=request.source.describe(), cap=request.cap,
                                    ack_keyword=request.ack_keyword, closeout_keyword=request.closeout_keyword,
                                    internal_domains=internal_domains)
