"""Mailman 3 list archives through HyperKitty's REST API (read-only).

Kind ``mailman3``; thread IDs of kind ``hyperkitty`` (HyperKitty's thread hash,
``base32(sha1(root Message-ID without <>))``). Supports ``list_recent_threads``,
``read_thread`` and ``thread_url``; every other op is declined by the base class.

The calls (all ``GET``, always with a page ``limit``):

* ``<base>/api/list/<list>/`` — list info; ``check_available`` (cached briefly).
* ``<base>/api/list/<list>/threads/?limit=&offset=`` — ``{count, next, previous,
  results}``, newest activity first. Pages are followed only until threads are older
  than ``since``, so the cost grows with what is shown, not with the archive. (Without
  ``limit`` a stock server answers every thread as one bare array.) Pages shift while
  the list is live: rows are kept by thread ID and the head is read again.
* ``…/email/<hash>/`` of a Message-ID's hash — its ``thread``: how a Message-ID (a
  root's or a reply's) becomes a thread ID (``resolve_message_id``).
* ``…/thread/<id>/emails/?limit=&offset=`` — the thread's emails in thread order (short
  form: ``message_id``, ``sender``, ``sender_name``, ``subject``, ``date``, ``parent``,
  ``children``, ``url``). ``?limit=1`` gives a listed thread its starting email.
* each email's ``url`` — the email with ``content`` and ``attachments``.

HyperKitty answers 403 for a private archive: the backend is then Unavailable with
that reason, never an empty list. Sender addresses come obfuscated as ``x (a) y``;
they are shown as the archive gives them.

Settings (``mail_sources.<name>`` in project.md): ``base_url`` (required), ``list``
(required, the list address), ``page_size`` (threads per page, default 25),
``timeout`` (seconds), ``parallel_requests`` (default 4).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence
from urllib.parse import parse_qs, quote, urlsplit

from mailtriage.backends.mailbox_contract import InvalidQuery
from mailtriage.backends.search import SearchPage, SearchRequest
from mailtriage.backends.archive_http import (
    ArchiveBadResponse,
    ArchiveHttp,
    ArchiveNotFound,
    ArchiveThreadNotFound,
    AvailabilityMemo,
    SourceSettings,
    ThreadListing,
    aware,
    html_text_part,
    parse_datetime,
    with_brackets,
)
from mailtriage.backends.contract import (
    SourceOrigin,
    Address,
    AttachmentInfo,
    MailSource,
    SourceFeatures,
    Message,
    Op,
    TextPart,
    Thread,
    ThreadId,
    ThreadSummary,
)
from mailtriage.backends.errors import BackendFailure, Unavailable
from mailtriage.backends.identity import hyperkitty_hash

# The search results page: "<n> messages" in the header, one link per matching email.
_SEARCH_TOTAL = re.compile(r'class="icomoon discussion"></span>\s*(\d+)\s')
_SEARCH_HIT = re.compile(r'href="[^"]*/message/([A-Z0-9]{32})/"')
EMAILS_PAGE_SIZE = 100  # emails of one thread per request
MAX_HEAD_PAGES = 4  # pages of the head read again after a walk, while they show news


class HyperKittySource(MailSource):
    """A Mailman 3 archive read through HyperKitty's JSON API."""

    signs_in_without_tokens = True  # a public archive: read anonymously

    # HyperKitty's search is full text (subject, content, sender); no field restrictions.
    # search: its web search page; attachments: the archive's attachment download route
    features = SourceFeatures(server_search=True, server_search_fields=("text",), attachment_bytes=True,
                              list_archive=True)
    kind = "mailman3"
    thread_id_kind = "hyperkitty"
    resolves_message_ids = True  # the Message-ID hash (see thread_for_message_id)
    capabilities = frozenset({Op.LIST_RECENT_THREADS, Op.READ_THREAD, Op.THREAD_URL})

    def __init__(self, name: str, settings: Mapping[str, object] | None = None, *,
                 origin: SourceOrigin | None = None) -> None:
        """Raises ConfigError (naming project.md and the key) for a bad setting."""
        super().__init__(name, settings, origin=origin)
        conf = SourceSettings(name, self.settings, self.origin.project_file)
        self._conf = conf
        self.base_url = conf.base_url()
        address = conf.text("list", required=True, valid="the list address, e.g. security@example.org") or ""
        if "@" not in address or address.startswith("@") or address.endswith("@") or "/" in address:
            raise conf.error("list", f"{address!r} is not a list address", "e.g. security@example.org")
        self.list_address = address
        self.page_size = int(conf.number("page_size", 25, low=1, high=200, integer=True))
        self.parallel = int(conf.number("parallel_requests", 4, low=1, high=8, integer=True))
        self.http = ArchiveHttp(name, self.base_url, timeout=conf.timeout(), forbidden=self._forbidden)
        self._availability = AvailabilityMemo()

    # -- URLs -----------------------------------------------------------------
    def _api(self, address: str, tail: str = "") -> str:
        return f"{self.base_url}/api/list/{quote(address, safe='@')}/{tail}"

    def _forbidden(self, what: str, address: str | None = None) -> str:
        return (f"{address or self.list_address} is a private archive at {self.base_url}: HyperKitty refused "
                f"{what}; this backend reads public archives only")

    # -- availability -----------------------------------------------------------
    def check_available(self) -> None:
        """One request for the list's info, remembered for a minute.

        Raises:
            Unavailable: unreachable server, private archive (403), no such list (404),
                server error, or an answer that is not HyperKitty's list info.
        """
        self._availability.check(self._probe)

    def _probe(self) -> None:
        what = f"the list info of {self.list_address}"
        try:
            info = self.http.get_json(self._api(self.list_address), None, what=what)
        except ArchiveNotFound as exc:
            raise Unavailable(self.name, f"no list {self.list_address} at {self.base_url} (HTTP 404); "
                                         f"check {self._conf.key('list')} in {self._conf.file}") from exc
        except BackendFailure as exc:
            raise Unavailable(self.name, exc.detail) from exc
        if not isinstance(info, dict) or "name" not in info:
            raise Unavailable(self.name, f"{self.base_url} did not answer HyperKitty's list info for "
                                         f"{self.list_address}; check {self._conf.key('base_url')}")
        if info.get("archive_policy") == "never":
            raise Unavailable(self.name, f"{self.list_address} is not archived (archive_policy: never)")

    # -- list_recent_threads -----------------------------------------------------
    def list_recent_threads(self, list_name: str | None, since: datetime) -> Sequence[ThreadSummary]:
        """Threads of the list active at or after ``since``, newest first.

        Returns a :class:`ThreadListing` (a list) whose ``notes`` name any page or row
        that could not be read; the rest is still listed.

        Raises:
            Unavailable: private archive (403) or server unreachable.
            ArchiveNotFound: no such list (404).
            ArchiveServerError / ArchiveBadResponse: the first page failed.
        """
        address = (list_name or self.list_address).strip()
        if "@" not in address:
            raise BackendFailure(self.name, f"{address!r} is not a list address (HyperKitty names lists "
                                            "by address, e.g. security@example.org)")
        since = aware(since)
        before = self.http.requests_sent
        rows, notes, complete = self._recent_rows(address, since)
        with ThreadPoolExecutor(max_workers=self.parallel) as pool:
            summaries = list(pool.map(lambda row: self._summary(address, row), rows))
        return ThreadListing(summaries, notes=notes, complete=complete,
                             requests=self.http.requests_sent - before)

    def _threads_page(self, address: str, offset: int) -> Any:
        """One page of the thread list. A 403/404 names the list that was asked for."""
        what = f"the thread list of {address} (offset {offset})"
        try:
            return self.http.get_json(self._api(address, "threads/"), {"limit": self.page_size, "offset": offset},
                                      what=what, forbidden=lambda w: self._forbidden(w, address))
        except ArchiveNotFound as exc:
            if offset == 0:
                raise ArchiveNotFound(self.name, f"no list {address} at {self.base_url} (HTTP 404)") from exc
            raise

    def _recent_rows(self, address: str, since: datetime) -> tuple[list[dict], list[str], bool]:
        """The rows active since ``since``, each thread once, newest first.

        The pages are cut from the live list at each request, so a thread that arrives
        during the walk pushes a row onto the next page (a repeat) and a thread that gets
        a reply jumps to page 1 behind us (a miss). Rows are kept by thread ID, and when
        the walk took more than one page the head is read again for what moved up.
        """
        rows, notes, complete, pages = self._walk_pages(address, since)
        by_id: dict[str, dict] = {}
        repeats = 0
        for row in rows:
            known = by_id.get(row["thread_id"])
            if known is not None:
                repeats += 1
                if parse_datetime(row.get("date_active")) <= parse_datetime(known.get("date_active")):
                    continue
            by_id[row["thread_id"]] = row
        moved = self._reread_head(address, since, by_id, notes) if pages > 1 else 0
        if repeats or moved:
            notes.append(f"the thread list of {address} changed while it was read ({repeats} repeated, "
                         f"{moved} new or moved up); each thread is listed once, as it is now")
        undated = datetime.min.replace(tzinfo=timezone.utc)
        ordered = sorted(by_id.values(), key=lambda r: parse_datetime(r.get("date_active")) or undated, reverse=True)
        return ordered, notes, complete

    def _reread_head(self, address: str, since: datetime, by_id: dict[str, dict], notes: list[str]) -> int:
        """Read page 1 (and on, while it shows news) again; returns how many rows were new or newer."""
        changed = 0
        offset = 0
        for _ in range(MAX_HEAD_PAGES):
            try:
                page = self._threads_page(address, offset)
            except BackendFailure as exc:
                notes.append(f"{exc.detail}; threads that moved up during the walk may be missing")
                return changed
            results = page.get("results") if isinstance(page, dict) else None
            if not isinstance(results, list):
                return changed
            news = 0
            for row in results:
                if not isinstance(row, dict) or not isinstance(row.get("thread_id"), str) or not row["thread_id"]:
                    continue
                active = parse_datetime(row.get("date_active"))
                if active is None:
                    continue
                if active < since:
                    return changed + news
                known = by_id.get(row["thread_id"])
                if known is None or active > (parse_datetime(known.get("date_active")) or active):
                    by_id[row["thread_id"]] = row
                    news += 1
            changed += news
            if not news or not results or not page.get("next"):
                return changed
            offset += len(results)
        return changed

    def _walk_pages(self, address: str, since: datetime) -> tuple[list[dict], list[str], bool, int]:
        rows: list[dict] = []
        notes: list[str] = []
        offset = 0
        pages = 0
        seen_offsets: set[int] = set()
        while True:
            seen_offsets.add(offset)
            what = f"the thread list of {address} (offset {offset})"
            try:
                page = self._threads_page(address, offset)
                pages += 1
            except BackendFailure as exc:
                if offset == 0:
                    raise
                notes.append(f"{exc.detail}; older threads are not listed")
                return rows, notes, False, pages
            if isinstance(page, list):
                # The server ignored the limit and sent everything: use it, say so.
                results, next_url = page, None
                notes.append(f"{self.base_url} ignored the page limit and sent {len(page)} threads at once")
            elif isinstance(page, dict) and isinstance(page.get("results"), list):
                results, next_url = page["results"], page.get("next")
            else:
                problem = ArchiveBadResponse(self.name, f"{what}: not a page of threads "
                                                        "(expected {count, next, previous, results})")
                if offset == 0:
                    raise problem
                notes.append(f"{problem.detail}; older threads are not listed")
                return rows, notes, False, pages
            reached_older = False
            for index, row in enumerate(results):
                where = f"thread row {offset + index} of {address}"
                if not isinstance(row, dict) or not isinstance(row.get("thread_id"), str) or not row["thread_id"]:
                    notes.append(f"{where}: no thread_id; skipped")
                    continue
                active = parse_datetime(row.get("date_active"))
                if active is None:
                    notes.append(f"{where} ({row['thread_id']}): unreadable date_active "
                                 f"{row.get('date_active')!r}; skipped")
                    continue
                if active < since:
                    reached_older = True  # newest first: everything after this is older
                    break
                rows.append(row)
            if reached_older or not results or not next_url:
                return rows, notes, True, pages
            offset = _next_offset(next_url, offset + len(results))
            if offset in seen_offsets:
                notes.append(f"the thread list of {address} pointed back to offset {offset}; stopped there")
                return rows, notes, False, pages

    def _summary(self, address: str, row: dict) -> ThreadSummary:
        thread_id = row["thread_id"]
        notes: list[str] = []
        replies = row.get("replies_count")
        count = replies + 1 if isinstance(replies, int) and not isinstance(replies, bool) and replies >= 0 else 0
        if not count:
            notes.append(f"unreadable replies_count {replies!r}")
        root_id, sender = "", Address("", "")
        what = f"the starting email of thread {thread_id}"
        try:
            first = self.http.get_json(self._api(address, f"thread/{quote(thread_id, safe='')}/emails/"),
                                       {"limit": 1, "offset": 0}, what=what)
            email = _first_result(first)
            if email is None:
                raise ArchiveBadResponse(self.name, f"{what}: no email in the answer")
            root_id = with_brackets(str(email.get("message_id") or ""))
            sender = _sender(email)
        except Unavailable:
            raise
        except BackendFailure as exc:
            notes.append(f"sender and Message-ID unknown: {exc.detail}")
        subject = row.get("subject")
        return ThreadSummary(
            thread_id=ThreadId(self.thread_id_kind, thread_id),
            subject=subject if isinstance(subject, str) else "",
            root_message_id=root_id,
            sender=sender,
            last_activity=parse_datetime(row.get("date_active")),
            message_count=count,
            notes=tuple(notes),
        )

    # -- search -------------------------------------------------------------------------
    def search(self, request: SearchRequest) -> SearchPage:
        """HyperKitty's own search. It has no search in its REST API: the web search page
        (``<base>/search?q=&mlist=&page=&count=&sort=date-desc``) is read for the hashes of
        the matching emails and its ``<n> messages`` total, then each email is read from the
        REST API (``…/email/<hash>/``, a few at a time) for its thread, sender and date."""
        address = request.list_name or self.list_address
        what = f"the search of {address}"
        response = self.http.get(f"{self.base_url}/search", {
            "q": hyperkitty_query(request), "mlist": address, "page": request.page + 1,
            "count": request.page_size, "sort": "date-desc"}, what=what)
        text = response.content.decode("utf-8", "replace")
        found = _SEARCH_TOTAL.search(text)
        if found is None:
            raise ArchiveBadResponse(self.name, f"{what}: not HyperKitty's search results page (no message count)")
        total = int(found.group(1))
        hashes = list(dict.fromkeys(_SEARCH_HIT.findall(text)))
        if request.offset >= total:
            hashes = []  # the paginator answers the last page for a page past the end
        with ThreadPoolExecutor(max_workers=self.parallel) as pool:
            items = list(pool.map(lambda digest: self._hit(address, digest), hashes))
        since = aware(request.since) if request.since is not None else None
        kept = [i for i in items if since is None or i.last_activity is None or i.last_activity >= since]
        notes = ("the window (since) is applied to each page's results: HyperKitty's search has no date "
                 "filter",) if since is not None else ()
        return SearchPage(self.name, request, tuple(kept), total, request.offset + request.page_size < total,
                          method="HyperKitty search", searched=(address,), notes=notes)

    def _hit(self, address: str, digest: str) -> ThreadSummary:
        email = self.http.get_json(self._api(address, f"email/{quote(digest, safe='')}/"), None,
                                   what=f"email {digest}")
        if not isinstance(email, dict):
            raise ArchiveBadResponse(self.name, f"email {digest}: not an email")
        thread = _hash_from_url(email.get("thread"), "thread") or digest
        reply = bool(email.get("parent"))
        subject = email.get("subject")
        return ThreadSummary(thread_id=ThreadId(self.thread_id_kind, thread),
                             subject=subject if isinstance(subject, str) else "",
                             root_message_id="" if reply else with_brackets(str(email.get("message_id") or "")),
                             sender=_sender(email), last_activity=parse_datetime(email.get("date")),
                             message_count=1)

    # -- read_thread ----------------------------------------------------------------
    def read_thread(self, thread_id: ThreadId) -> Thread:
        """Every email of the thread, in thread order, with content and attachments.

        An email whose detail cannot be read is kept with what the thread listing
        gave and a note saying why.

        Raises:
            BackendFailure: a thread ID of another kind.
            Unavailable: private archive (403) or server unreachable.
            ArchiveNotFound: no such thread or list.
            ArchiveServerError / ArchiveBadResponse: the email listing failed.
        """
        thread_id = self.own_thread_id(thread_id)  # another shape: found by its root Message-ID
        value = self._thread_value(thread_id)
        base = self._api(self.list_address, f"thread/{quote(value, safe='')}/emails/")
        emails: list[dict] = []
        notes: list[str] = []
        offset = 0
        while True:
            what = f"the emails of thread {value} (offset {offset})"
            page = self.http.get_json(base, {"limit": EMAILS_PAGE_SIZE, "offset": offset}, what=what)
            if isinstance(page, list):
                results, next_url = page, None
            elif isinstance(page, dict) and isinstance(page.get("results"), list):
                results, next_url = page["results"], page.get("next")
            else:
                raise ArchiveBadResponse(self.name, f"{what}: not a page of emails")
            for index, email in enumerate(results):
                if isinstance(email, dict) and email.get("message_id"):
                    emails.append(email)
                else:
                    notes.append(f"email {offset + index} of thread {value}: no message_id; skipped")
            if not results or not next_url:
                break
            new_offset = _next_offset(next_url, offset + len(results))
            if new_offset <= offset:
                break
            offset = new_offset
        if not emails:
            # A stock server lists an unknown thread as zero emails rather than 404.
            raise ArchiveThreadNotFound(self.name, f"thread {value} has no emails in {self.list_address} "
                                             "(no such thread)")
        by_hash = {e.get("message_id_hash"): with_brackets(str(e["message_id"])) for e in emails}
        with ThreadPoolExecutor(max_workers=self.parallel) as pool:
            messages = list(pool.map(lambda e: self._message(e, by_hash), emails))
        subject = messages[0].subject  # the starting email comes first in thread order
        # Thread order is depth first; the contract wants the history in date order.
        undated = datetime.min.replace(tzinfo=timezone.utc)
        messages.sort(key=lambda m: m.date or undated)
        return Thread(ThreadId(self.thread_id_kind, value), subject, tuple(messages), tuple(notes))

    def _email_url(self, email: dict) -> str:
        """The email's own ``url`` when it points at our archive, else rebuilt from its hash."""
        url = email.get("url")
        ours = urlsplit(self.base_url)
        if isinstance(url, str):
            parts = urlsplit(url)
            if (parts.scheme, parts.netloc) == (ours.scheme, ours.netloc) and "/api/list/" in parts.path:
                return url
        digest = email.get("message_id_hash") or ""
        return self._api(self.list_address, f"email/{quote(str(digest), safe='')}/")

    def _message(self, short: dict, by_hash: dict) -> Message:
        message_id = with_brackets(str(short["message_id"]))
        notes: list[str] = []
        detail: dict = {}
        what = f"email {message_id}"
        try:
            got = self.http.get_json(self._email_url(short), None, what=what)
            if isinstance(got, dict):
                detail = got
            else:
                notes.append(f"content unavailable: {what}: not an email object")
        except Unavailable:
            raise
        except BackendFailure as exc:
            notes.append(f"content unavailable: {exc.detail}")
        merged = {**short, **detail}
        content = merged.get("content")
        parts: tuple[TextPart, ...] = ()
        if isinstance(content, str) and content.strip():
            parts = (TextPart("text/plain", content),)
        elif detail:
            # HyperKitty's scrubber keeps HTML parts as attachments: an HTML-only
            # message has empty content and its text in "attachment.html".
            html = self._html_attachment(merged, notes)
            if html is not None:
                parts = (html,)
            elif isinstance(content, str):
                parts = (TextPart("text/plain", content),)
            else:
                notes.append("the archive gave no text content for this email")
        parent_hash = _hash_from_url(merged.get("parent"))
        in_reply_to = by_hash.get(parent_hash) if parent_hash else None
        subject = merged.get("subject") if isinstance(merged.get("subject"), str) else ""
        sender = _sender(merged)
        date_text = merged.get("date") if isinstance(merged.get("date"), str) else ""
        headers = [("Message-ID", message_id), ("Subject", subject), ("From", str(sender)), ("Date", date_text)]
        if in_reply_to:
            headers.append(("In-Reply-To", in_reply_to))
        return Message(
            message_id=message_id,
            subject=subject,
            sender=sender,
            date=parse_datetime(date_text),
            in_reply_to=in_reply_to,
            text_parts=parts,
            attachments=tuple(_attachments(merged.get("attachments"), notes)),
            headers=tuple(headers),
            notes=tuple(notes),
            backend_ref=str(merged.get("message_id_hash") or "") or None,
        )

    def _html_attachment(self, email: Mapping[str, Any], notes: list[str]) -> TextPart | None:
        """The archived HTML part of an HTML-only email, as text (one request)."""
        attachments = email.get("attachments")
        if not isinstance(attachments, list):
            return None
        html = next((a for a in attachments if isinstance(a, dict) and a.get("content_type") == "text/html"), None)
        if html is None:
            return None
        url = html.get("download")
        ours = urlsplit(self.base_url)
        if not isinstance(url, str) or urlsplit(url)[:2] != (ours.scheme, ours.netloc):
            url = (f"{self.base_url}/list/{quote(self.list_address, safe='@')}/message/"
                   f"{quote(str(email.get('message_id_hash') or ''), safe='')}/attachment/"
                   f"{html.get('counter')}/{quote(str(html.get('name') or 'attachment.html'))}")
        try:
            response = self.http.get(url, None, what=f"the HTML part of {with_brackets(str(email.get('message_id')))}")
        except Unavailable:
            raise
        except BackendFailure as exc:
            notes.append(f"HTML-only email; its HTML part could not be read: {exc.detail}")
            return None
        encoding = html.get("encoding")
        return html_text_part(response.content, encoding if isinstance(encoding, str) else None)

    # -- attachment bytes ---------------------------------------------------------
    def attachment(self, message_ref: str, index: int) -> bytes:
        """Bytes of attachment ``index`` of the email whose hash is ``message_ref`` (a read
        message's ``backend_ref``): the email's ``attachments`` entry, then its ``download``
        (HyperKitty's ``/list/<list>/message/<hash>/attachment/<counter>/<name>`` route).

        Raises:
            BackendFailure: no such attachment (ArchiveNotFound: no such email).
            Unavailable / ArchiveServerError / ArchiveBadResponse: as the requests.
        """
        digest = (message_ref or "").strip()
        if not digest:
            raise BackendFailure(self.name, "no message reference for the attachment")
        what = f"email {digest}"
        email = self.http.get_json(self._api(self.list_address, f"email/{quote(digest, safe='')}/"), None, what=what)
        listed = email.get("attachments") if isinstance(email, dict) else None
        items = [a for a in listed if isinstance(a, dict)] if isinstance(listed, list) else []
        if not 0 <= index < len(items):
            raise BackendFailure(self.name, f"{what}: no attachment {index}; the email has {len(items)}")
        item = items[index]
        # The archive's own route, built here rather than taken from ``download``: that link
        # could name another host, and the sender's file name in it keeps its "/" and "..",
        # which a client resolves as path segments. The name is one quoted segment.
        url = (f"{self.base_url}/list/{quote(self.list_address, safe='@')}/message/{quote(digest, safe='')}/"
               f"attachment/{quote(str(item.get('counter')), safe='')}/"
               f"{quote(str(item.get('name') or 'attachment'), safe='')}")
        return bytes(self.http.get(url, None, what=f"attachment {index} of {what}").content)

    # -- Message-IDs -------------------------------------------------------------
    def thread_for_message_id(self, message_id: str) -> ThreadId | None:
        """Cross-backend thread identity: the thread holding ``message_id``, None when the
        archive has no such message (see :meth:`resolve_message_id`)."""
        try:
            return self.resolve_message_id(message_id)
        except ArchiveNotFound:
            return None

    def resolve_message_id(self, message_id: str) -> ThreadId:
        """The thread that holds ``message_id`` (a root's or a reply's), by its hash.

        HyperKitty names an email by ``base32(sha1(Message-ID))`` and a thread by its
        starting email's hash, so one request for the email gives its ``thread``.

        Raises:
            ArchiveNotFound: no such message in this list's archive (the list exists).
            Unavailable: no such list (404 for the list too), or as the email request.
            ArchiveServerError / ArchiveBadResponse: as the email request.
        """
        wanted = with_brackets(message_id)
        digest = hyperkitty_hash(wanted)
        what = f"email {wanted}"
        try:
            email = self.http.get_json(self._api(self.list_address, f"email/{digest}/"), None, what=what)
        except ArchiveNotFound as exc:
            # HyperKitty answers 404 for a list that does not exist too: only a list that is
            # there makes it "no such message" (else Unavailable, naming the list: fail closed)
            self.check_available()
            raise ArchiveNotFound(self.name, f"no message {wanted} in the archive of {self.list_address} "
                                             "(HTTP 404)") from exc
        thread = _hash_from_url(email.get("thread"), "thread") if isinstance(email, dict) else None
        if not thread:
            raise ArchiveBadResponse(self.name, f"{what}: the answer names no thread")
        return ThreadId(self.thread_id_kind, thread)

    def _thread_value(self, thread_id: ThreadId) -> str:
        """A thread hash; a Message-ID (``hyperkitty:<id@host>``) is looked up first."""
        value = thread_id.value.strip()
        if value.startswith("<") or "@" in value:
            return self.resolve_message_id(value).value
        return value

    # -- thread_url -------------------------------------------------------------
    def thread_url(self, thread_id: ThreadId) -> str:
        """``<base>/list/<list>/thread/<id>/``; a Message-ID costs one request to find its
        thread. Raises BackendFailure for another kind's ID."""
        thread_id = self.own_thread_id(thread_id)  # another shape: found by its root Message-ID
        value = self._thread_value(thread_id)
        return f"{self.base_url}/list/{quote(self.list_address, safe='@')}/thread/{quote(value, safe='')}/"

    def abort(self, opening_only: bool = False) -> None:
        """From another thread (the app quits): end the HTTP connections (see ``MailSource.abort``)."""
        self.http.abort(opening_only)

    def close(self) -> None:
        self.http.close()


# -- helpers --------------------------------------------------------------------


def hyperkitty_query(request: SearchRequest) -> str:
    """The text as one quoted phrase for haystack's auto_query: quotes and leading dashes
    (exclusions) taken out, so nothing typed becomes search syntax."""
    words = [w.lstrip("-") for w in request.query.replace('"', " ").split()]
    text = " ".join(w for w in words if w)
    if not text:
        raise InvalidQuery("nothing is left to search for once HyperKitty's search syntax (quotes, -) is taken out")
    return f'"{text}"'


def _next_offset(next_url: Any, fallback: int) -> int:
    """The ``offset`` DRF put in ``next``; our own base URL and limit are used for the request."""
    if isinstance(next_url, str):
        values = parse_qs(urlsplit(next_url).query).get("offset")
        if values and values[0].isdigit():
            return int(values[0])
    return fallback


def _first_result(page: Any) -> dict | None:
    if isinstance(page, dict) and isinstance(page.get("results"), list):
        page = page["results"]
    if isinstance(page, list) and page and isinstance(page[0], dict):
        return page[0]
    return None


def _sender(email: Mapping[str, Any]) -> Address:
    """Name and address as the archive gives them (HyperKitty writes ``x (a) y``)."""
    sender = email.get("sender")
    address = sender.get("address") if isinstance(sender, dict) else None
    name = email.get("sender_name")
    return Address(name if isinstance(name, str) else "", address if isinstance(address, str) else "")


def _hash_from_url(url: Any, kind: str = "email") -> str | None:
    """``…/email/<hash>/`` (or ``…/thread/<hash>/``) -> ``<hash>``."""
    if not isinstance(url, str):
        return None
    parts = [p for p in urlsplit(url).path.split("/") if p]
    if len(parts) >= 2 and parts[-2] == kind:
        return parts[-1]
    return None


def _attachments(value: Any, notes: list[str]) -> list[AttachmentInfo]:
    found: list[AttachmentInfo] = []
    if value is None:
        return found
    if not isinstance(value, list):
        notes.append("unreadable attachment list")
        return found
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            notes.append(f"attachment {index}: unreadable")
            continue
        size = item.get("size")
        found.append(AttachmentInfo(
            filename=str(item.get("name") or f"attachment-{item.get('counter', index)}"),
            content_type=str(item.get("content_type") or "application/octet-stream"),
            size=size if isinstance(size, int) and not isinstance(size, bool) else 0,
        ))
    return found
