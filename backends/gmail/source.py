"""``GmailSource``: the mail-source contract (the six triage operations) over the Gmail API.

Configured in project.md as ``mail_sources.<name>``::

    mail_sources:
      gmail:
        account: me                    # an [accounts.me] table with kind = "gmail"
        list: security@example.org     # the security list: List-Id, To, Cc or Delivered-To
        query: "-category:promotions"  # optional: more Gmail search terms

Thread IDs are Gmail thread IDs of kind ``gmail`` (``gmail:18e0f3a2b4c5d6e7``); a thread
whose first message has no Message-ID has kind ``gmail-synthetic``, like every backend's.
Drafts are created on the thread (``threadId``) with In-Reply-To and References of the
message answered, and never sent. ``thread_url`` opens the thread in Gmail's web UI.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import re
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence
from email.utils import getaddresses
from urllib.parse import quote

from mailtriage.backends import mime, mime_header_text, mime_headers, mime_ids
from mailtriage.backends.account_source import EPOCH, AccountSource
from mailtriage.backends.contract import (SourceOrigin, SourceFeatures, Draft, DraftRequest, Message, Op, Thread, ThreadId,
                                          ThreadSummary, reply_subject)
from mailtriage.backends.errors import BackendFailure, DraftAlreadyPending, ThreadNotFound
from mailtriage.backends.gmail.account import GoogleAccount, load_google_account
from mailtriage.backends.gmail.api import FETCH_CONCURRENCY, USER, GmailNotFound, deleted_note  # noqa: F401
from mailtriage.backends.gmail.adapter import GmailMailbox, b64decode, header_block, internal_date, quote_term
from mailtriage.backends.gmail import search as gmail_search
from mailtriage.backends.imap.headers import thread_root
from mailtriage.backends.search import SearchPage, SearchRequest
from mailtriage.backends.thread_reconstruction import synthetic_kind

THREAD_KIND = "gmail"
LIST_HEADERS = ("Message-ID", "References", "In-Reply-To", "Subject", "From", "Date")
DRAFT_HEADERS = ("Message-ID",)
DRAFT_SLOTS = 8  # drafts of mailtriage per thread (a second needs a confirmed proposal)
SIBLING_CANDIDATES = 20  # threads looked at when a read looks for the rest of a split conversation
_REPLY_PREFIX = re.compile(r"^(\s*(re|fwd?|aw|sv|wg)\s*(\[\d+\])?\s*:\s*)+", re.I)


class GmailSource(AccountSource):
    kind = "gmail"
    features = SourceFeatures(listing_limit=True, attachment_bytes=True, server_search=True,
                              server_search_fields=gmail_search.FIELDS, draft_attachments=True)
    thread_id_kind = THREAD_KIND
    account_label = "Google"
    account_table_hint = "the id of an [accounts.<id>] table with kind = \"gmail\""
    load_account = staticmethod(load_google_account)

    def __init__(self, name: str, settings: Mapping[str, Any] | None = None, *,
                 account: GoogleAccount | None = None, mailbox: GmailMailbox | None = None,
                 origin: SourceOrigin | None = None) -> None:
        super().__init__(name, settings, origin=origin)
        self.list_address = (str(self.settings.get("list") or "").strip().lower()) or None
        self.extra_query = str(self.settings.get("query") or "").strip()
        self._mailbox = mailbox
        # root Message-ID -> the Gmail threads seen holding that conversation (a split one)
        self._siblings: dict[str, set[str]] = {}
        self._init_account(account or (mailbox.account if mailbox else None))
        self.capabilities = self._declared_capabilities()  # type: ignore[misc]

    @property
    def mailbox(self) -> GmailMailbox:
        if self._mailbox is None:
            self._mailbox = GmailMailbox(self.account)
        return self._mailbox

    @property
    def api(self):
        return self.mailbox.api

    def check_available(self) -> None:
        """A token (refreshed if due) and a profile read. Raises SignInNeeded / Unavailable."""
        self.api.get(f"{USER}/profile", "getProfile")

    # -- list_recent_threads -------------------------------------------------------------------
    def _search(self, list_name: str | None, since: datetime) -> str:
        since = since if since.tzinfo else since.replace(tzinfo=timezone.utc)
        terms = []
        wanted = (list_name or self.list_address or "").strip()
        if wanted:
            # list: matches only the List-Id header; an alias or a forward carries none. So,
            # like GraphSource (To, Cc, List-Id), any of them, with braces as Gmail's OR
            # (support.google.com/mail/answer/7190).
            terms.append(f"{{list:{wanted} to:{wanted} cc:{wanted} deliveredto:{wanted}}}")
        terms.append(f"after:{max(0, int(since.timestamp()))}")
        if self.extra_query:
            terms.append(self.extra_query)
        return " ".join(terms)

    def list_recent_threads(self, list_name: str | None, since: datetime, *,
                            limit: int | None = None) -> Sequence[ThreadSummary]:
        """Threads on the list with a message since ``since``, most recent activity first.

        One threads.list walk (ids only), then the threads' metadata, FETCH_CONCURRENCY
        threads.get at a time (each backs off on Gmail's rate limits).
        """
        since = since if since.tzinfo else since.replace(tzinfo=timezone.utc)
        refs = list(self.api.pages(f"{USER}/threads", "threads", "threads.list", limit=limit,
                                   q=self._search(list_name, since), maxResults=min(limit or 100, 500)))

        def fetch(ref: dict) -> tuple[ThreadSummary, datetime] | None:
            try:
                thread = self.api.get(f"{USER}/threads/{ref['id']}", "threads.get", format="metadata",
                                      metadataHeaders=list(LIST_HEADERS))
                summary = self._summary(thread, since)  # may read a message without Message-ID raw
            except GmailNotFound:
                return None  # deleted between the list and the read
            return None if summary is None else (summary, _first_arrival(thread))

        out = self._merge_rows([row for row in self.api.fetch_all(fetch, refs) if row is not None])
        out.sort(key=lambda s: (s.last_activity or EPOCH, s.root_message_id), reverse=True)
        return out

    # -- split conversations ---------------------------------------------------------------------
    # Gmail starts a new thread when a reply's subject changes ("… (CVE-… assigned)") or a
    # thread holds 100 messages, so one conversation (one root Message-ID) can be several
    # Gmail threads. Rows merge by root and keep the Gmail thread that started first (the
    # root's, AccountSource._merge_rows); a read of any of them reads them all (_conversation).
    def _conversation(self, thread_id: ThreadId) -> tuple[list[dict], str | None]:
        """The members (minimal) of every Gmail thread of ``thread_id``'s conversation, oldest
        first, and its root: the thread itself, the thread holding its root Message-ID
        (``rfc822msgid:``), threads seen holding the root, and threads whose subject holds the
        root's (a retitled reply keeps it; a thread past 100 messages has it) and whose root
        is the same."""
        value = self._thread_value(thread_id)
        members = self._members(thread_id)
        inbound = [m for m in members if "DRAFT" not in (m.get("labelIds") or ())]
        if not inbound:
            return members, None
        try:
            first = self.mailbox.header(self.mailbox.metadata(inbound[0]["id"]))
        except GmailNotFound:
            return members, None
        root = thread_root(first.message_id, first.references, first.in_reply_to)
        values = {value} | self._siblings.get(root, set())
        origin = first
        if root != first.message_id:  # the root is in another thread (or gone)
            page = self.api.get(f"{USER}/messages", "messages.list", q=f"rfc822msgid:{root.strip('<>')}",
                                maxResults=10) or {}
            for found in page.get("messages") or ():
                values.add(str(found["threadId"]))
                try:
                    origin = self.mailbox.header(self.mailbox.metadata(str(found["id"])))
                except GmailNotFound:
                    pass
                break
        subject = _REPLY_PREFIX.sub("", origin.subject or "").strip()
        if subject:
            after = int((origin.date or first.date or EPOCH).timestamp()) - 86400
            # Within the list's mail when the source has a list: a common subject then finds
            # few threads that are not the conversation's.
            q = " ".join(t for t in (_list_scope(self.list_address or ""), f"subject:({quote_term(subject)})",
                                     f"after:{max(0, after)}") if t)
            refs = [r for r in self.api.pages(f"{USER}/threads", "threads", "threads.list", limit=SIBLING_CANDIDATES,
                                              q=q, maxResults=SIBLING_CANDIDATES) if str(r["id"]) not in values]

            def same_root(ref: dict) -> str | None:
                thread = self.api.get(f"{USER}/threads/{ref['id']}", "threads.get", format="metadata",
                                      metadataHeaders=list(LIST_HEADERS))
                summary = self._summary(thread, EPOCH)
                return str(ref["id"]) if summary is not None and summary.root_message_id == root else None

            found_values, _gone = self.api.fetch_present(same_root, refs)
            values.update(v for v in found_values if v)
        if len(values) > 1:
            self._remember(root, values)
        for other in sorted(values - {value}):
            try:
                members += self.mailbox.thread_messages(other)
            except GmailNotFound:
                continue  # deleted meanwhile
        members = list({str(m["id"]): m for m in members}.values())
        members.sort(key=lambda m: int(m.get("internalDate") or 0))
        return members, root

    def _summary(self, thread: dict, since: datetime) -> ThreadSummary | None:
        members = [m for m in thread.get("messages") or () if "DRAFT" not in (m.get("labelIds") or ())]
        if not members:
            return None
        members.sort(key=lambda m: int(m.get("internalDate") or 0))
        arrivals = [d for d in (internal_date(m) for m in members) if d is not None]
        if arrivals and max(arrivals) < since:
            return None
        first = members[0]
        block = header_block(first)
        fields = mime_headers.header_fields(block)
        own_id = mime_ids.extract_msgid(fields.get(b"message-id"))
        synthetic = own_id is None
        if synthetic:
            raw = b64decode(str(self.api.get(f"{USER}/messages/{first['id']}", "messages.get",
                                             format="raw").get("raw") or ""))
            own_id = mime_headers.synthetic_message_id(mime_headers.split_header_block(raw)[0])
        root = thread_root(own_id, mime_ids.extract_msgids(fields.get(b"references")),
                           mime_ids.extract_msgid(fields.get(b"in-reply-to")))
        subject, _notes = mime_header_text.decode_header_text(fields.get(b"subject"))
        participants = []
        for member in members:
            sender = mime_header_text.parse_address(mime_headers.header_fields(header_block(member), {b"from"}).get(b"from"))
            if sender.email and sender.email not in participants:
                participants.append(sender.email)
        kind = synthetic_kind(THREAD_KIND) if synthetic and root == own_id else THREAD_KIND
        return ThreadSummary(
            thread_id=ThreadId(kind, str(thread["id"]), root),
            subject=subject,
            root_message_id=root,
            sender=mime_header_text.parse_address(fields.get(b"from")),
            last_activity=max(arrivals) if arrivals else None,
            message_count=len(members),
            participants=tuple(participants),
            unread=any("UNREAD" in (m.get("labelIds") or ()) for m in members),
        )

    # -- search ------------------------------------------------------------------------------------
    def search(self, request: SearchRequest) -> SearchPage:
        """Gmail's own search (``messages.list`` with ``q``) within the list's mail; each
        matching message becomes the row of its Gmail thread (see backends/gmail/search.py)."""
        scope = _list_scope((request.list_name or self.list_address or "").strip())
        if self.extra_query:
            scope = f"{scope} {self.extra_query}".strip()
        refs, estimate, more, _q = gmail_search.message_page(self.api, request, scope, self.mailbox.page_tokens)
        found, gone = self.api.fetch_present(lambda ref: (self.mailbox.header(self.mailbox.metadata(ref["id"])), ref),
                                             refs)
        items = self._merge_hits([self._hit(header, ref) for header, ref in found])
        return gmail_search.search_page(self.name, request, items, estimate, more,
                                        notes=(deleted_note(gone),) if gone else ())

    def _hit(self, header, ref: dict) -> ThreadSummary:
        root = thread_root(header.message_id, header.references, header.in_reply_to)
        kind = synthetic_kind(THREAD_KIND) if header.synthetic_id and root == header.message_id else THREAD_KIND
        return ThreadSummary(thread_id=ThreadId(kind, str(ref.get("threadId") or header.thread_key), root),
                             subject=header.subject, root_message_id=root, sender=header.sender,
                             last_activity=header.date, message_count=1,
                             participants=(header.sender.email,) if header.sender.email else (),
                             unread=not header.read, notes=header.notes)

    def _merge_hits(self, items: list[ThreadSummary]) -> list[ThreadSummary]:
        """Hits of one conversation in several Gmail threads name one thread: the earliest hit's."""
        lead: dict[str, ThreadSummary] = {}
        for item in sorted(items, key=lambda i: i.last_activity or EPOCH):
            lead.setdefault(item.root_message_id, item)
            self._remember(item.root_message_id, [item.thread_id.value])
        return [item if lead[item.root_message_id] is item else
                dataclasses.replace(item, thread_id=lead[item.root_message_id].thread_id) for item in items]

    # -- read_thread, list_sent_since -------------------------------------------------------------
    def _members(self, thread_id: ThreadId) -> list[dict]:
        value = self._thread_value(thread_id)
        try:
            return self.mailbox.thread_messages(value)
        except GmailNotFound as exc:
            raise ThreadNotFound(self.name, f"Gmail has no thread {thread_id}") from exc

    def _message(self, gmail_id: str) -> Message:
        message, raw = self.mailbox.fetch_raw(gmail_id)
        return mime.parse_message(raw, backend_ref=self.mailbox.mid(gmail_id))

    # Cross-backend thread identity: a reference of another shape reaches Gmail by its root.
    resolves_message_ids = True

    def thread_for_message_id(self, message_id: str) -> ThreadId | None:
        """The Gmail thread holding ``message_id``: one messages.list with ``rfc822msgid:``."""
        page = self.api.get(f"{USER}/messages", "messages.list", q=f"rfc822msgid:{message_id.strip('<>')}",
                            maxResults=10) or {}
        for found in page.get("messages") or ():
            if found.get("threadId"):
                return ThreadId(THREAD_KIND, str(found["threadId"]))
        return None

    def read_thread(self, thread_id: ThreadId) -> Thread:
        """The Gmail thread, oldest first, drafts left out. Read state is not changed."""
        thread_id = self.own_thread_id(thread_id)
        members, root = self._conversation(thread_id)
        members = [m for m in members if "DRAFT" not in (m.get("labelIds") or ())]
        if not members:
            raise BackendFailure(self.name, f"thread {thread_id} holds no message")
        found, gone = self.api.fetch_present(lambda m: self._message(m["id"]), members)
        if not found:
            raise BackendFailure(self.name, f"every message of thread {thread_id} was deleted in Gmail while it "
                                            "was read")
        messages = tuple(found)
        return Thread(thread_id.with_root(root), messages[0].subject, messages,
                      notes=(deleted_note(gone),) if gone else ())

    def list_sent_since(self, thread_id: ThreadId, since: datetime) -> Sequence[Message]:
        since = since if since.tzinfo else since.replace(tzinfo=timezone.utc)
        out = []
        for member in self._conversation(thread_id)[0]:
            labels = member.get("labelIds") or ()
            when = internal_date(member)
            if "SENT" in labels and "DRAFT" not in labels and (when is None or when >= since):
                try:
                    out.append(self._message(member["id"]))
                except GmailNotFound:
                    continue  # deleted since the thread was listed
        return out

    # -- drafts ------------------------------------------------------------------------------------
    # Gmail threads a draft only when threadId, References/In-Reply-To and the Subject all
    # match (Gmail API, "Managing threads"); a draft with its own subject, or answering a
    # message that has no Message-ID, starts a thread of its own. So our drafts carry a
    # Message-ID made from the thread (one of DRAFT_SLOTS), and are found by it with one
    # drafts.list search (rfc822msgid:, Gmail's search syntax), together with the drafts
    # Gmail did thread; the whole drafts list is never walked. The draft names no tool (no
    # X-Mailtriage header): a request's slots are probed in an order made from the request,
    # so a retry reads the draft it made first and recognises it by its content.
    def _slot_ids(self, value: str) -> list[str]:
        digest = hashlib.sha256(f"{self.account.id}\0{value}".encode("utf-8")).digest()
        token = base64.b32encode(digest[:10]).decode("ascii").lower()
        domain = self.account.from_address.rpartition("@")[2] or "mailtriage.invalid"
        return [f"<{token}.{n}@{domain}>" for n in range(1, DRAFT_SLOTS + 1)]

    def _probe_order(self, value: str, fingerprint: str) -> list[str]:
        """The thread's slot IDs, starting at the one the request's fingerprint picks."""
        slots = self._slot_ids(value)
        start = int(hashlib.sha256(fingerprint.encode("utf-8")).hexdigest(), 16) % len(slots)
        return slots[start:] + slots[:start]

    def _pending(self, value: str) -> list[tuple[str, dict]]:
        """``(draft id, headers)`` of the thread's drafts: those Gmail put in the thread and
        ours that it did not. ``headers`` holds the message-id."""
        try:
            thread = self.api.get(f"{USER}/threads/{value}", "threads.get", format="metadata",
                                  metadataHeaders=list(DRAFT_HEADERS)) or {}
        except GmailNotFound as exc:
            raise ThreadNotFound(self.name, f"Gmail has no thread {value}") from exc
        known: dict[str, dict] = {}  # Gmail message id -> headers
        wanted = list(self._slot_ids(value))
        unnamed = False
        for member in thread.get("messages") or ():
            if "DRAFT" not in (member.get("labelIds") or ()):
                continue
            headers = _draft_headers(member)
            known[str(member["id"])] = headers
            if headers.get("message-id"):
                wanted.append(headers["message-id"])
            else:
                unnamed = True
        query = "{" + " ".join(f"rfc822msgid:{m.strip('<>')}" for m in dict.fromkeys(wanted)) + "}"
        found = {str(d["id"]): str((d.get("message") or {}).get("id"))
                 for d in self.api.pages(f"{USER}/drafts", "drafts", "drafts.list", q=query, maxResults=100)}
        if unnamed:  # a draft without Message-ID cannot be searched for: match it by message id
            found.update({str(d["id"]): str((d.get("message") or {}).get("id"))
                          for d in self.api.pages(f"{USER}/drafts", "drafts", "drafts.list", q="in:drafts",
                                                  maxResults=500)
                          if str((d.get("message") or {}).get("id")) in known})
        out = []
        for draft_id, message_id in found.items():
            headers = known.get(message_id)
            if headers is None:  # ours, outside the thread
                try:
                    headers = _draft_headers(self.api.get(f"{USER}/messages/{message_id}", "messages.get",
                                                          format="metadata", metadataHeaders=list(DRAFT_HEADERS)))
                except GmailNotFound:
                    continue
            out.append((draft_id, headers))
        return out

    def _draft(self, thread_id: ThreadId, draft_id: str) -> Draft:
        draft = self.api.get(f"{USER}/drafts/{draft_id}", "drafts.get", format="raw") or {}
        message = draft.get("message") or {}
        parsed = mime.parse_message(b64decode(str(message.get("raw") or "")))
        return Draft(thread_id=thread_id, draft_ref=str(draft.get("id") or draft_id), subject=parsed.subject,
                     to=tuple(str(a) for a in parsed.to), cc=tuple(str(a) for a in parsed.cc),
                     in_reply_to=parsed.in_reply_to, body=parsed.body_text,
                     date=parsed.date or internal_date(message))

    def list_drafts(self, thread_id: ThreadId) -> Sequence[Draft]:
        value = self._thread_value(thread_id)
        return [self._draft(thread_id, draft_id) for draft_id, _headers in self._pending(value)]

    def create_draft(self, request: DraftRequest) -> Draft:
        """Create a Gmail draft on the thread; never sends.

        Idempotent: a retried request (same thread, recipients, subject and body) returns
        the draft it already made, even when Gmail put that draft in a thread of its own.
        Raises DraftAlreadyPending when another draft of the thread is pending and the
        request does not allow a second one; NotSupported when the account's access is
        ``read``; BackendFailure when all DRAFT_SLOTS of the thread hold drafts.
        """
        if Op.CREATE_DRAFT not in self.capabilities:
            raise self._read_only(Op.CREATE_DRAFT)
        value = self._thread_value(request.thread_id)
        if not request.to:
            raise BackendFailure(self.name, "a draft needs at least one recipient")
        members = self._members(request.thread_id)
        candidates = [m for m in members if "DRAFT" not in (m.get("labelIds") or ())]
        if not candidates:
            raise BackendFailure(self.name, f"thread {request.thread_id} holds no message to answer")
        source = self._named(candidates, request.in_reply_to) or self._latest_inbound(candidates)
        source_message = self._message(source["id"])
        subject = request.subject or reply_subject(source_message.subject)
        fingerprint = self._draft_message_id(request, subject)
        pending = self._pending(value)
        by_id = {h.get("message-id"): d for d, h in pending if h.get("message-id")}
        probe = self._probe_order(value, fingerprint)
        for slot in probe:  # a retried request: the draft it made is there (its own slot first)
            if slot in by_id:
                draft = self._draft(request.thread_id, by_id[slot])
                if _same_request(draft, request, subject):
                    return draft
        if pending and not request.allow_second_draft:
            raise DraftAlreadyPending(self.name, str(request.thread_id), [d for d, _h in pending])
        message_id = next((m for m in probe if m not in by_id), None)
        if message_id is None:
            raise BackendFailure(self.name, f"thread {request.thread_id} already has {DRAFT_SLOTS} drafts "
                                            "made here; send or delete some first")
        references = [*source_message.references, source_message.message_id]
        references = [r for r in dict.fromkeys(references) if r and not r.endswith("@mailtriage.invalid>")]
        in_reply_to = source_message.message_id
        # A synthetic ID (the answered mail had no Message-ID) names nothing outside mailtriage.
        raw = self._compose_reply(request, subject, message_id,
                                  None if in_reply_to.endswith("@mailtriage.invalid>") else in_reply_to, references)
        created = self.api.upload_message("drafts", raw, {"message": {"threadId": value}}, "drafts.create") or {}
        return self._draft(request.thread_id, str(created.get("id")))

    def _named(self, candidates: list[dict], in_reply_to: str | None) -> dict | None:
        """The thread member whose Message-ID the request names (newest first), if any."""
        if not in_reply_to:
            return None
        for member in reversed(candidates):
            block = header_block(self.mailbox.metadata(member["id"]))
            if mime_ids.extract_msgid(mime_headers.header_fields(block, {b"message-id"}).get(b"message-id")) == in_reply_to:
                return member
        return None

    @staticmethod
    def _latest_inbound(candidates: list[dict]) -> dict:
        """The message a reply answers by default: the latest that is not ours (not SENT)."""
        inbound = [m for m in candidates if "SENT" not in (m.get("labelIds") or ())]
        return (inbound or candidates)[-1]

    # -- thread_url ------------------------------------------------------------------------------
    def thread_url(self, thread_id: ThreadId) -> str:
        """The thread in Gmail's web UI (``…/mail/?authuser=<address>#all/<thread id>``)."""
        value = self._thread_value(thread_id)
        base = self.account.web_url.rstrip("/") + "/"
        who = f"?authuser={quote(self.account.address, safe='@')}" if self.account.address else ""
        return f"{base}{who}#all/{quote(value, safe='')}"

    def close(self) -> None:
        if self._mailbox is not None:
            self._mailbox.close()
            self._mailbox = None


def _list_scope(wanted: str) -> str:
    """Gmail terms for mail of the list ``wanted`` (List-Id, To, Cc or Delivered-To), or ""."""
    return f"{{list:{wanted} to:{wanted} cc:{wanted} deliveredto:{wanted}}}" if wanted else ""


def _first_arrival(thread: dict) -> datetime:
    arrivals = [d for d in (internal_date(m) for m in thread.get("messages") or ()) if d is not None]
    return min(arrivals) if arrivals else EPOCH


def _draft_headers(message: dict) -> dict[str, str]:
    """The message-id of a metadata answer (lower-case key)."""
    fields = mime_headers.header_fields(header_block(message), {b"message-id"})
    return {"message-id": mime_ids.extract_msgid(fields.get(b"message-id")) or ""}


def _addresses_of(values) -> list[str]:
    return sorted(addr.lower() for _name, addr in getaddresses([str(v) for v in values]) if addr)


def _same_request(draft: Draft, request: DraftRequest, subject: str) -> bool:
    """Is ``draft`` what ``request`` writes (a retry)? Recipients, subject and text."""
    return (_addresses_of(draft.to) == _addresses_of(request.to) and _addresses_of(draft.cc) == _addresses_of(request.cc)
            and draft.subject == subject and draft.body.strip() == request.body.strip())
