"""Apache Pony Mail (Foal) list archives, read-only.

Kind ``ponymail``; thread IDs of kind ``ponymail`` (Foal's permalink ``mid`` of the
thread's first message, e.g. ``c396ps3p5pb05srb4269dzcg9j7sof42``; an RFC 5322
Message-ID in angle brackets is accepted too). Supports ``list_recent_threads``,
``read_thread`` and ``thread_url``; every other op is declined by the base class.

The calls (legacy ``GET /api/<name>.lua?…`` form, which the web UI uses):

* ``preferences`` — which lists this session may see, and who is signed in;
  ``check_available`` (cached briefly). Foal lists a private list only for a session
  allowed to read it, so an anonymous view of a private list is *Unavailable* (with
  the reason), never an empty archive: stats would answer ``hits: 0``.
* ``stats?list=&domain=&d=lte=<N>d`` — the emails of the last N days (short bodies)
  and ``thread_struct``; one request lists the threads since ``since``. Foal keeps only
  the newest ``max_hits`` (+1) emails and says nothing; ``hits`` and the uncapped
  ``active_months`` give it away, and the listing is then marked incomplete.
* ``thread?id=<mid>&find_parent=true`` — the root with its nested ``children`` tree.
  ``emails`` holds only the root (the docs say otherwise; the code wins), so the tree
  is walked. The same request finds the real root of a window's reply whose root is
  older than ``since``, the thread a Message-ID belongs to (``resolve_message_id``),
  and the root a ``thread_url`` links to.
* ``source?id=<mid>`` — each message's raw RFC 5322 text, parsed by
  :func:`mailtriage.backends.mime.parse_message`. When the source cannot be had,
  ``email?id=<mid>`` (JSON) stands in and the message says so.

Private lists need the ``ponymail`` session cookie of a signed-in browser session;
mailtriage reads it from keyring under the key of ``base_url``'s exact origin,
``ponymail:<scheme>://<host>:<port>`` (:mod:`mailtriage.core.origins`), and never writes it
to a file or the trace. project.md cannot name another keyring entry (``session_key`` is
refused), and plain http carries the cookie to loopback only.

Settings (``mail_sources.<name>`` in project.md): ``base_url`` (required), ``list``
(required; ``security`` or ``security@example.org``), ``domain`` (required unless
``list`` carries it), ``timeout``, ``parallel_requests``.
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import quote, urlsplit

from mailtriage.backends.mailbox_contract import InvalidQuery
from mailtriage.backends.search import SearchField, SearchPage, SearchRequest, page_of
from mailtriage.backends.archive_http import (
    AVAILABILITY_TTL,
    ArchiveBadResponse,
    ArchiveHttp,
    ArchiveNotFound,
    ArchiveThreadNotFound,
    ArchiveServerError,
    SourceSettings,
    ThreadListing,
    aware,
    from_epoch,
    html_text_part,
    with_brackets,
)
from mailtriage.backends.contract import (
    SourceOrigin,
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
from mailtriage.backends.errors import BackendFailure, SignInNeeded, Unavailable
from mailtriage.backends.mime import AttachmentNotFound, attachment_bytes, parse_message
from mailtriage.backends.mime_header_text import parse_address, parse_address_list
from mailtriage.backends.mime_ids import extract_msgids
from mailtriage.core.origins import OriginRefused, secret_key
from mailtriage.core.secrets import missing_secret_hint, origin_secret

MAX_TREE_DEPTH = 250  # Foal's own bound on thread walks


class PonyMailSource(MailSource):
    """A Pony Mail Foal archive read through its JSON API."""

    signs_in_without_tokens = True  # a session cookie from keyring, read, never refreshed

    # search: stats.lua with q; attachments: from the message's raw source (source.lua)
    features = SourceFeatures(server_search=True, attachment_bytes=True, list_archive=True)
    kind = "ponymail"
    thread_id_kind = "ponymail"
    resolves_message_ids = True  # thread.lua with find_parent (see thread_for_message_id)
    capabilities = frozenset({Op.LIST_RECENT_THREADS, Op.READ_THREAD, Op.THREAD_URL})

    def __init__(self, name: str, settings: Mapping[str, object] | None = None, *,
                 origin: SourceOrigin | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> None:
        """Raises ConfigError (naming project.md and the key) for a bad setting.

        ``clock`` is "now" for turning a ``since`` into Foal's whole-day ``d=lte=Nd`` (tests
        pin it with the emulator's, so a window's position in the month is chosen, not today's)."""
        super().__init__(name, settings, origin=origin)
        self._clock = clock
        conf = SourceSettings(name, self.settings, self.origin.project_file)
        self._conf = conf
        self.base_url = conf.base_url()
        self.host = urlsplit(self.base_url).netloc
        list_text = conf.text("list", required=True, valid="the list name, e.g. security (or security@example.org)")
        domain = conf.text("domain", required=False, valid="the list's domain, e.g. example.org")
        name_part, at, domain_part = (list_text or "").partition("@")
        if at:
            if domain and domain.lower() != domain_part.lower():
                raise conf.error("domain", f"{domain!r} differs from the domain in list {list_text!r}",
                                 "leave domain out, or give list without @domain")
            domain = domain_part
        if not name_part or any(c in name_part for c in "@/ <>"):
            raise conf.error("list", f"{list_text!r} is not a list name", "e.g. security")
        if not domain:
            raise conf.error("domain", "is missing (and list has no @domain)", "the list's domain, e.g. example.org")
        if any(c in domain for c in "@/ <>"):
            raise conf.error("domain", f"{domain!r} is not a domain", "e.g. example.org")
        self.list_name = name_part
        self.domain = domain
        if "session_key" in self.settings:
            # project.md is team data: it may not pick which keyring entry goes to base_url
            raise conf.error("session_key", "is refused: a project file may not choose a keyring entry",
                             "leave it out; the cookie is read from the keyring key of base_url's origin")
        refused: str | None = None
        try:
            self.session_key: str | None = secret_key("ponymail", self.base_url)
        except OriginRefused as exc:  # plain http to another host: read anonymously, never send a cookie
            self.session_key, refused = None, str(exc)
        self._timeout = conf.timeout()
        self.parallel = int(conf.number("parallel_requests", 4, low=1, high=8, integer=True))
        self._http: ArchiveHttp | None = None
        self._aborted = False
        # why we are anonymous: keyring failed, or base_url may not carry a cookie
        self._session_note: str | None = refused
        self._signed_in = False
        self._lock = threading.Lock()
        # (when, preferences JSON or Unavailable, already used by a listing)
        self._prefs: tuple[float, Any, bool] | None = None
        self._session_expired = False

    # -- identity of the list ----------------------------------------------------------
    @property
    def list_address(self) -> str:
        return f"{self.list_name}@{self.domain}"

    @property
    def list_id(self) -> str:
        """The List-ID form Foal stores as ``list_raw``: ``<security.example.org>``."""
        return f"<{self.list_name}.{self.domain}>"

    # -- session -------------------------------------------------------------------
    @property
    def http(self) -> ArchiveHttp:
        """The HTTP session, built on first use with the keyring cookie when there is one."""
        with self._lock:
            if self._http is None:
                cookie = self.session_cookie()
                self._signed_in = cookie is not None
                self._http = ArchiveHttp(self.name, self.base_url, timeout=self._timeout,
                                         cookies={"ponymail": cookie} if cookie else None,
                                         forbidden=lambda what: f"{self.host} refused {what}")
                if self._aborted:
                    self._http.abort()
            return self._http

    @property
    def session_note(self) -> str | None:
        """Why the session is anonymous (keyring unreadable, plain http), else None."""
        return self._session_note

    def session_cookie(self) -> str | None:
        """The cookie stored for ``base_url``'s origin; None (anonymous) when there is none."""
        if self.session_key is None:
            return None
        try:
            value = origin_secret("ponymail", self.base_url)
        except Exception as exc:  # no keyring backend, locked keyring, …: read anonymously
            first = str(exc).split(". ")[0].strip()
            self._session_note = f"keyring could not be read: {type(exc).__name__}" + (f": {first}" if first else "")
            return None
        return value.strip() if value and value.strip() else None

    def _api(self, endpoint: str) -> str:
        return f"{self.base_url}/api/{endpoint}.lua"

    # -- availability -----------------------------------------------------------------
    def check_available(self) -> None:
        """One ``preferences`` request, remembered for a minute.

        Raises:
            SignInNeeded: the stored session cookie is no longer signed in.
            Unavailable: unreachable server, not a Foal API, or the list is not visible
                to this session (private, or no such list).
        """
        self._require_visible(self.list_name, self.domain)

    def _preferences(self, *, for_listing: bool = False) -> dict:
        """Foal's preferences: which lists this session sees, and who is signed in.

        Remembered for a minute for availability checks. A listing asks once: it uses
        an answer fetched since the previous listing (the resolution rule's check just
        before it) and otherwise asks again, so a session that expired, or a list that
        became private, shows at the next refresh.
        """
        with self._lock:
            cached = self._prefs
        fresh = cached is not None and time.monotonic() - cached[0] < AVAILABILITY_TTL
        if fresh and not (for_listing and cached[2]):
            if for_listing:
                self._remember(cached[1], used=True, when=cached[0])
            if isinstance(cached[1], Unavailable):
                raise cached[1]
            return cached[1]
        try:
            prefs = self.http.get_json(self._api("preferences"), None, what="the preferences")
            if not isinstance(prefs, dict) or not isinstance(prefs.get("lists"), dict):
                raise Unavailable(self.name, f"{self.base_url} did not answer Pony Mail Foal's preferences; "
                                             f"check {self._conf.key('base_url')}")
            login = prefs.get("login")
            credentials = login.get("credentials") if isinstance(login, dict) else None
            # A stored cookie Foal no longer knows reads as anonymous: public lists stay
            # readable; only a list that needs the session asks for a new sign-in.
            self._session_expired = bool(self._signed_in and not credentials)
        except BackendFailure as exc:
            error = Unavailable(self.name, exc.detail)
            self._remember(error, used=for_listing)
            raise error from exc
        except Unavailable as exc:
            self._remember(exc, used=for_listing)
            raise
        self._remember(prefs, used=for_listing)
        return prefs

    def _remember(self, value: Any, *, used: bool = False, when: float | None = None) -> None:
        with self._lock:
            self._prefs = (time.monotonic() if when is None else when, value, used)

    def _expired_text(self) -> str:
        return (f"the PonyMail session stored in keyring as {self.session_key} is not signed in at {self.host} "
                "any more")

    def _store_hint(self) -> str:
        if self.session_key is None:
            return str(self._session_note)
        return missing_secret_hint("ponymail", self.base_url)

    def _require_visible(self, list_name: str, domain: str, notes: list[str] | None = None,
                         *, for_listing: bool = False) -> None:
        prefs = self._preferences(for_listing=for_listing)
        lists = prefs["lists"].get(domain)
        address = f"{list_name}@{domain}"
        if isinstance(lists, dict) and list_name in lists:
            if self._session_expired and notes is not None:
                notes.append(f"{self._expired_text()}: {address} was read anonymously, so only its public "
                             "mail is shown; sign in again and store the new ponymail cookie")
            return
        if self._session_expired:
            raise SignInNeeded(self.name, f"{self._expired_text()}, and {address} is not visible anonymously; "
                                          "sign in again and store the new ponymail cookie")
        if self._signed_in:
            credentials = (prefs.get("login") or {}).get("credentials") or {}
            who = credentials.get("uid") or credentials.get("email") or "this session"
            raise Unavailable(self.name, f"{address} is not visible to {who} at {self.host}: no such list, or "
                                         "the account may not read it")
        why = f" ({self._session_note})" if self._session_note and self.session_key else ""
        raise Unavailable(self.name, f"{address} is not visible anonymously at {self.host}: it is a private "
                                     f"list, or there is no such list; sign in to Pony Mail, then "
                                     f"{self._store_hint()}{why}")

    # -- list_recent_threads --------------------------------------------------------------
    def list_recent_threads(self, list_name: str | None, since: datetime) -> Sequence[ThreadSummary]:
        """Threads of the list with a message at or after ``since``, newest first.

        Returns a :class:`ThreadListing` whose ``notes`` name unreadable entries. A thread
        is always listed under its real root, whatever ``since`` is: a reply whose root
        lies before the window is looked up (``thread`` with ``find_parent``). When the
        server's silent ``max_hits`` cap dropped the oldest mail, the listing is marked
        incomplete with a note.

        Raises:
            Unavailable / SignInNeeded: as :meth:`check_available` (a private list read
                anonymously is unavailable, not empty).
            ArchiveServerError / ArchiveBadResponse: the stats request failed.
        """
        lname, domain = self._split_list(list_name)
        since = aware(since)
        before = self.http.requests_sent
        notes: list[str] = []
        self._require_visible(lname, domain, notes, for_listing=True)
        # Whole days for Foal's d=lte=Nd; a minute of slack so "30 days ago" computed a
        # moment before this call still asks for 30 days, not 31.
        span = (self._clock() - since).total_seconds() - 60
        days = max(1, math.ceil(span / 86400))
        what = f"the stats of {lname}@{domain} (last {days} days)"
        stats = self.http.get_json(self._api("stats"), {"list": lname, "domain": domain, "d": f"lte={days}d"},
                                   what=what)
        if not isinstance(stats, dict) or not isinstance(stats.get("emails"), list):
            raise ArchiveBadResponse(self.name, f"{what}: not a stats answer (no emails list)")
        tree = stats.get("thread_struct")
        if not isinstance(tree, list):
            raise ArchiveBadResponse(self.name, f"{what}: no thread_struct in the answer")
        emails = {e.get("mid"): e for e in stats["emails"] if isinstance(e, dict) and e.get("mid")}
        capped = _cap_note(stats, since, f"{lname}@{domain}") or self._cap_probe(stats, since, lname, domain, notes)
        if capped:
            notes.append(capped)
        summaries: dict[str, ThreadSummary] = {}
        late_replies: list[dict] = []
        for index, node in enumerate(tree):
            if not isinstance(node, dict) or not isinstance(node.get("tid"), str) or not node["tid"]:
                notes.append(f"thread {index} of {lname}@{domain}: no tid; skipped")
                continue
            if (emails.get(node["tid"]) or {}).get("in-reply-to"):
                late_replies.append(node)  # its root is older than the window
            else:
                summaries.setdefault(node["tid"], self._summary(node, emails))
        if late_replies:
            with ThreadPoolExecutor(max_workers=self.parallel) as pool:
                found = list(pool.map(lambda n: self._under_real_root(n, emails, since), late_replies))
            for summary in found:
                known = summaries.get(summary.thread_id.value)
                if known is None or summary.message_count > known.message_count:
                    summaries[summary.thread_id.value] = summary
        listed = [s for s in summaries.values() if s.last_activity is None or s.last_activity >= since]
        listed.sort(key=lambda s: s.last_activity or datetime.min.replace(tzinfo=timezone.utc), reverse=True)
        return ThreadListing(listed, notes=notes, complete=not capped, requests=self.http.requests_sent - before)

    def _cap_probe(self, stats: Mapping[str, Any], since: datetime, lname: str, domain: str,
                   notes: list[str]) -> str | None:
        """The ``max_hits`` check for any window (``_cap_note`` needs a whole month inside it):
        a small ``quick`` stats request (epochs only) for the days from ``since`` to the oldest
        message returned. The cap keeps the newest mail, so any message it finds at or after
        ``since`` and before that oldest one (or more at its very second than came back) was
        dropped. The probe is capped as well; when it saw only the listing's own mail, the days
        before the oldest one's are asked alone, and a window whose days hold more than the cap
        cannot be told apart by whole days (a note says so). Asked only when ``active_months`` leaves room for dropped mail (see
        ``_months_leave_room``); nothing returned: nothing to check."""
        returned = [e["epoch"] for e in stats.get("emails") or []
                    if isinstance(e, dict) and isinstance(e.get("epoch"), (int, float)) and not isinstance(e.get("epoch"), bool)]
        if not returned:
            return None
        oldest_epoch = min(returned)
        oldest = from_epoch(oldest_epoch)
        if oldest is None or oldest < since:
            return None  # the answer reaches back past the window: nothing inside it was cut
        if not _months_leave_room(stats.get("active_months"), returned, since, oldest):
            return None
        address = f"{lname}@{domain}"
        since_epoch = since.timestamp()
        epochs = self._probe_epochs(lname, domain, since, oldest, notes)
        if epochs is None:
            return None
        missing = sum(1 for x in epochs if since_epoch <= x < oldest_epoch)
        missing += max(0, epochs.count(oldest_epoch) - returned.count(oldest_epoch))
        # The probe is capped too: when it came back as full as the listing with nothing older
        # than the listing's oldest, it saw only the same newest mail. Its days are whole UTC
        # days, so the days before the oldest one's can still be asked on their own.
        full = len(epochs) >= len(returned) and not any(x < oldest_epoch for x in epochs)
        if not missing and full and since.date() < oldest.date():
            earlier = self._probe_epochs(lname, domain, since, oldest - timedelta(days=1), notes)
            missing = sum(1 for x in earlier or [] if since_epoch <= x < oldest_epoch)
            full = earlier is not None and not missing and len(earlier) >= len(returned) \
                and not any(x < since_epoch for x in earlier)
        if not missing:
            if full:  # a UTC day holds more mail than the cap returns: whole days cannot tell
                notes.append(f"could not check whether Pony Mail's max_hits cap cut the listing of {address}: "
                             f"the days from {since:%Y-%m-%d} to {oldest:%Y-%m-%d} hold more mail than it returns "
                             f"at once; threads with mail before {oldest:%Y-%m-%d %H:%M} may be missing")
            return None
        return (f"Pony Mail returned only the newest {len(returned)} messages of {address} (its silent max_hits "
                f"cap): at least {missing} older ones since {since:%Y-%m-%d %H:%M} were not returned, so threads "
                f"with mail before {oldest:%Y-%m-%d %H:%M} may be missing; the listing is incomplete")

    def _probe_epochs(self, lname: str, domain: str, since: datetime, until: datetime,
                      notes: list[str]) -> list[float] | None:
        """The epochs of a ``quick`` stats request for the whole UTC days from ``since`` to
        ``until`` (Foal's ``dfr``/``dto``); None, with a note, when the request fails."""
        address = f"{lname}@{domain}"
        try:
            probe = self.http.get_json(self._api("stats"), {
                "list": lname, "domain": domain, "quick": "1",
                "d": f"dfr={since:%Y-%m-%d}|dto={until:%Y-%m-%d}"}, what=f"the max_hits check of {address}")
        except (ArchiveServerError, ArchiveBadResponse) as exc:
            notes.append(f"could not check whether Pony Mail's max_hits cap cut the listing of {address}: {exc}")
            return None
        epochs = [e.get("epoch") for e in (probe.get("emails") if isinstance(probe, dict) else None) or []
                  if isinstance(e, dict)]
        return [x for x in epochs if isinstance(x, (int, float)) and not isinstance(x, bool)]

    def _under_real_root(self, node: dict, emails: dict[str, dict], since: datetime) -> ThreadSummary:
        """The summary of the whole thread a window's reply belongs to (one thread request)."""
        irt = str((emails.get(node["tid"]) or {}).get("in-reply-to") or "")
        try:
            root = self._thread_root(node["tid"])
        except Unavailable:
            raise
        except BackendFailure as exc:
            summary = self._summary(node, emails)
            return _with_note(summary, f"its first message here answers {irt}, whose thread could not be "
                                       f"looked up ({exc.detail}); listed under that reply")
        if root.get("mid") == node["tid"]:
            summary = self._summary(node, emails)
            return _with_note(summary, f"its first message answers {irt}, which this archive does not hold")
        notes: list[str] = []
        nodes = [n for n in _walk_tree(root, "children", notes) if isinstance(n, dict)]
        known = [e for e in (from_epoch(n.get("epoch")) for n in nodes) if e is not None]
        participants: list[str] = []
        for n in nodes:
            sender = n.get("from")
            if isinstance(sender, str) and sender and sender not in participants:
                participants.append(sender)
        started = from_epoch(root.get("epoch"))
        when = f" ({started:%Y-%m-%d})" if started else ""
        notes.insert(0, f"the thread started before {since:%Y-%m-%d}{when}; listed under its first message")
        subject = root.get("subject")
        return ThreadSummary(
            thread_id=ThreadId(self.thread_id_kind, str(root["mid"])),
            subject=subject if isinstance(subject, str) else "",
            root_message_id=with_brackets(str(root.get("message-id") or "")),
            sender=parse_address(str(root.get("from") or "")),
            last_activity=max(known) if known else None,
            message_count=len(nodes),
            participants=tuple(participants),
            notes=tuple(notes),
        )

    def _thread_root(self, ident: str) -> dict:
        """The root of the thread holding ``ident`` (a permalink, or a Message-ID of this list),
        with its ``children`` tree: ``thread`` with ``find_parent``.

        Raises ArchiveNotFound (no such message here), ArchiveBadResponse, and the rest
        as :meth:`ArchiveHttp.get`."""
        value = ident.strip()
        params = {"id": value, "find_parent": "true"}
        if value.startswith("<"):
            params["listid"] = self.list_id  # Foal needs the list to look a Message-ID up
        what = f"thread {value}"
        answer = self.http.get_json(self._api("thread"), params, what=what)
        root = answer.get("thread") if isinstance(answer, dict) else None
        if not isinstance(root, dict) or not root.get("mid"):
            raise ArchiveBadResponse(self.name, f"{what}: no thread in the answer")
        return root

    def thread_for_message_id(self, message_id: str) -> ThreadId | None:
        """Cross-backend thread identity: the thread holding ``message_id``, None when the
        archive has no such message (see :meth:`resolve_message_id`)."""
        try:
            return self.resolve_message_id(message_id)
        except ArchiveNotFound:
            return None

    def resolve_message_id(self, message_id: str) -> ThreadId:
        """The thread holding ``message_id`` (a root's or a reply's), by its root's permalink.

        Raises:
            ArchiveNotFound: the list's archive has no such message (the list is visible).
            Unavailable: no such list, or not visible to this session; or as the request.
            SignInNeeded / ArchiveServerError / ArchiveBadResponse: as the request.
        """
        wanted = with_brackets(message_id)
        try:
            root = self._thread_root(wanted)
        except ArchiveNotFound as exc:
            # a 404 for a list (or domain) this server does not have is no "no such message":
            # Unavailable, naming the list (fail closed); only a visible list makes it one
            self.check_available()
            raise ArchiveNotFound(self.name, f"no message {wanted} in the archive of {self.list_address} "
                                             "(HTTP 404)") from exc
        return ThreadId(self.thread_id_kind, str(root["mid"]))

    def _split_list(self, list_name: str | None) -> tuple[str, str]:
        if not list_name:
            return self.list_name, self.domain
        name, at, domain = list_name.strip().partition("@")
        return name, (domain if at else self.domain)

    def _summary(self, node: dict, emails: dict[str, dict]) -> ThreadSummary:
        notes: list[str] = []
        nodes = list(_walk_tree(node, "children", notes))
        root_email = emails.get(node["tid"]) or {}
        if not root_email:
            notes.append("the first message is not in the answer; sender unknown")
        epochs = [from_epoch(n.get("epoch")) for n in nodes]
        known = [e for e in epochs if e is not None]
        participants: list[str] = []
        for n in nodes:
            sender = (emails.get(n.get("tid")) or {}).get("from")
            if isinstance(sender, str) and sender and sender not in participants:
                participants.append(sender)
        subject = node.get("subject")
        return ThreadSummary(
            thread_id=ThreadId(self.thread_id_kind, node["tid"]),
            subject=subject if isinstance(subject, str) else "",
            root_message_id=with_brackets(str(root_email.get("message-id") or "")),
            sender=parse_address(root_email.get("from") or ""),
            last_activity=max(known) if known else None,
            message_count=len(nodes),
            participants=tuple(participants),
            notes=tuple(notes),
        )

    # -- search --------------------------------------------------------------------------------
    def search(self, request: SearchRequest) -> SearchPage:
        """Foal's own search: ``stats`` with ``q`` (from, body and subject) or ``header_from`` /
        ``header_subject`` / ``header_body``, ``emailsOnly``; every hit in one answer (capped
        silently at the server's ``max_hits``, said in a note), paged here newest first. Each
        hit is the row of its thread (read from the real root, ``find_parent``)."""
        lname, domain = self._split_list(request.list_name)
        self._require_visible(lname, domain)
        days = 36500
        if request.since is not None:
            days = max(1, math.ceil(((self._clock() - aware(request.since)).total_seconds() - 60) / 86400))
        params = {"list": lname, "domain": domain, "d": f"lte={days}d", "emailsOnly": "true",
                  **ponymail_search_params(request)}
        what = f"the search of {lname}@{domain}"
        stats = self.http.get_json(self._api("stats"), params, what=what)
        if not isinstance(stats, dict) or not isinstance(stats.get("emails"), list):
            raise ArchiveBadResponse(self.name, f"{what}: not a stats answer (no emails list)")
        hits = [e for e in stats["emails"] if isinstance(e, dict) and e.get("mid")]
        since = aware(request.since) if request.since is not None else None
        hits = [e for e in hits if since is None or (from_epoch(e.get("epoch")) or since) >= since]
        hits.sort(key=lambda e: (from_epoch(e.get("epoch")) or datetime.min.replace(tzinfo=timezone.utc)),
                  reverse=True)
        capped = _cap_note(stats, since or datetime(1970, 1, 1, tzinfo=timezone.utc), f"{lname}@{domain}")
        return page_of(self.name, request, [self._hit(e) for e in hits], method="Pony Mail stats q",
                       searched=(f"{lname}@{domain}",), notes=(capped,) if capped else ())

    def _hit(self, email: dict) -> ThreadSummary:
        reply = bool(email.get("in-reply-to"))
        subject = email.get("subject")
        return ThreadSummary(thread_id=ThreadId(self.thread_id_kind, str(email["mid"])),
                             subject=subject if isinstance(subject, str) else "",
                             root_message_id="" if reply else with_brackets(str(email.get("message-id") or "")),
                             sender=parse_address(email.get("from") or ""),
                             last_activity=from_epoch(email.get("epoch")), message_count=1)

    # -- read_thread ------------------------------------------------------------------------
    def read_thread(self, thread_id: ThreadId) -> Thread:
        """The whole thread (from its real root), each message parsed from its raw source.

        A message whose source cannot be had or parsed is still listed, from the JSON
        Foal gives, with a note saying why.

        Raises:
            BackendFailure: a thread ID of another kind.
            Unavailable / SignInNeeded: as :meth:`check_available`.
            ArchiveNotFound: no such thread on this list.
            ArchiveServerError / ArchiveBadResponse: the thread request failed.
        """
        thread_id = self.own_thread_id(thread_id)  # another shape: found by its root Message-ID
        value = thread_id.value.strip()
        try:
            root = self._thread_root(value)
        except ArchiveNotFound as exc:
            self._require_visible(self.list_name, self.domain)  # private and anonymous: say so
            raise ArchiveThreadNotFound(self.name, exc.detail) from exc
        notes: list[str] = []
        nodes = list(_walk_tree(root, "children", notes))
        nodes = [n for n in nodes if isinstance(n.get("mid"), str) and n["mid"]]
        order = {id(n): i for i, n in enumerate(nodes)}
        nodes.sort(key=lambda n: (n.get("epoch") if isinstance(n.get("epoch"), (int, float)) else 0, order[id(n)]))
        with ThreadPoolExecutor(max_workers=self.parallel) as pool:
            messages = list(pool.map(self._message, nodes))
        if root["mid"] != value and not value.startswith("<"):
            notes.append(f"the thread starts earlier than {value}, at {root['mid']}")
        subject = root.get("subject") if isinstance(root.get("subject"), str) else messages[0].subject
        return Thread(ThreadId(self.thread_id_kind, value), subject, tuple(messages), tuple(notes))

    def _message(self, node: dict) -> Message:
        mid = node["mid"]
        try:
            response = self.http.get(self._api("source"), {"id": mid}, what=f"the source of {mid}")
            raw = _strip_mbox_from_line(response.content)
            if not raw.strip():
                raise ArchiveBadResponse(self.name, f"the source of {mid} is empty")
            message = parse_message(raw, backend_ref=mid)
            return message
        except Unavailable:
            raise
        except BackendFailure as exc:
            problem = f"raw source unavailable: {exc.detail}"
        try:
            email = self.http.get_json(self._api("email"), {"id": mid}, what=f"email {mid}")
            if not isinstance(email, dict):
                raise ArchiveBadResponse(self.name, f"email {mid}: not an email object")
            return _message_from_json(email, mid, [problem + "; shown from the archive's JSON"])
        except Unavailable:
            raise
        except BackendFailure as exc:
            return _message_from_json(node, mid, [problem, f"email unavailable too: {exc.detail}"])

    # -- attachment bytes ------------------------------------------------------------------
    def attachment(self, message_ref: str, index: int) -> bytes:
        """Bytes of attachment ``index`` of the email whose permalink is ``message_ref`` (a
        read message's ``backend_ref``), decoded from its raw source (``source?id=``).

        Raises:
            BackendFailure: no such attachment, or the source cannot be had (a message shown
                from the archive's JSON has no source to take parts from).
            Unavailable / SignInNeeded: as :meth:`check_available`.
        """
        mid = (message_ref or "").strip()
        if not mid:
            raise BackendFailure(self.name, "no message reference for the attachment")
        response = self.http.get(self._api("source"), {"id": mid}, what=f"the source of {mid}")
        raw = _strip_mbox_from_line(response.content)
        if not raw.strip():
            raise ArchiveBadResponse(self.name, f"the source of {mid} is empty")
        try:
            return attachment_bytes(raw, index)
        except AttachmentNotFound as exc:
            raise BackendFailure(self.name, f"{mid}: {exc}") from exc

    # -- thread_url ----------------------------------------------------------------------------
    def thread_url(self, thread_id: ThreadId) -> str:
        """``https://<host>/thread/<root mid>`` of the thread holding the ID (a permalink or a
        Message-ID, a root's or a reply's).

        When the lookup fails for a server error, the web UI's own forms stand in:
        ``…/thread/<mid>?find_parent=true``, or ``…/thread/<Message-ID>?<list.id>`` (the UI
        reads the id as a Message-ID whenever a list ID follows ``?``). Raises
        BackendFailure for another kind's ID, ArchiveNotFound for an unknown one on a list
        that exists, Unavailable (naming the list) when the list does not.
        """
        thread_id = self.own_thread_id(thread_id)  # another shape: found by its root Message-ID
        value = thread_id.value.strip()
        # The page of a reply's permalink shows that reply alone: link the root, which
        # opens the whole thread (one thread request with find_parent).
        try:
            value = str(self._thread_root(value)["mid"])
        except ArchiveNotFound as exc:
            self.check_available()  # a 404 for a list this server does not have: Unavailable (fail closed)
            raise ArchiveThreadNotFound(self.name, f"thread {value}: no such message in the archive of "
                                             f"{self.list_address} (HTTP 404)") from exc
        except Unavailable:
            raise
        except BackendFailure:  # the API is down now: let the web UI climb to the root itself
            if value.startswith("<"):
                return f"{self.base_url}/thread/{quote(value, safe='')}?{quote(self.list_id, safe='')}"
            return f"{self.base_url}/thread/{quote(value, safe='')}?find_parent=true"
        return f"{self.base_url}/thread/{quote(value, safe='')}"

    def abort(self, opening_only: bool = False) -> None:
        """From another thread (the app quits): end the HTTP connections (see ``MailSource.abort``)."""
        self._aborted = True  # a session made after is ended as it is made
        http = self._http
        if http is not None:
            http.abort(opening_only)

    def close(self) -> None:
        with self._lock:
            if self._http is not None:
                self._http.close()
                self._http = None


# -- helpers -------------------------------------------------------------------------------


def ponymail_search_params(request: SearchRequest) -> dict[str, str]:
    """The request's text as Foal's parameters. ``q`` is split shell-style by Foal (``-word``
    excludes, quotes group, ``:`` is dropped), so the text goes as one quoted phrase with its
    quotes, backslashes and leading dashes removed: nothing typed becomes Foal syntax."""
    text = " ".join(request.query.replace('"', " ").replace("\\", " ").replace(":", " ").split()).lstrip("-").strip()
    if not text:
        raise InvalidQuery("nothing is left to search for once Pony Mail's own syntax (quotes, -, :) is taken out")
    if request.field is SearchField.TEXT:
        return {"q": f'"{text}"'}
    return {f"header_{request.field.value}": text}


def _walk_tree(node: dict, key: str, notes: list[str], depth: int = 0):
    """Pre-order walk of a Foal tree (``children`` lists), bounded like Foal's own walk."""
    yield node
    children = node.get(key)
    if not children:
        return
    if not isinstance(children, list):
        notes.append(f"unreadable children under {node.get('mid') or node.get('tid')}")
        return
    if depth >= MAX_TREE_DEPTH:
        notes.append(f"thread deeper than {MAX_TREE_DEPTH} levels; the rest is not shown")
        return
    for child in children:
        if isinstance(child, dict):
            yield from _walk_tree(child, key, notes, depth + 1)
        else:
            notes.append("an unreadable entry in the thread tree was skipped")


def _with_note(summary: ThreadSummary, note: str) -> ThreadSummary:
    return replace(summary, notes=(*summary.notes, note))


def _cap_note(stats: Mapping[str, Any], since: datetime, address: str) -> str | None:
    """Whether Foal's silent ``max_hits`` cap dropped the oldest mail of the window.

    Foal answers ``hits == len(emails)`` and keeps the newest ``max_hits + 1`` emails
    without a word. Two checks: a ``hits`` larger than what came back (a server that does
    report the total), and ``active_months`` (counted without the cap): a month wholly
    inside the window, no newer than the oldest email returned, must have come back in
    full. (Only those months: the cap cuts from the oldest end, while a shortfall in a
    newer month is mail an administrator hid, which the histogram still counts.)
    """
    returned = [e for e in stats.get("emails") or [] if isinstance(e, dict)]
    hits = stats.get("hits")
    if isinstance(hits, int) and not isinstance(hits, bool) and hits > len(returned):
        return (f"Pony Mail matched {hits} messages on {address} but returned only {len(returned)} (its max_hits "
                f"cap): threads older than the oldest returned message may be missing")
    months = stats.get("active_months")
    epochs = sorted(e["epoch"] for e in returned
                    if isinstance(e.get("epoch"), (int, float)) and not isinstance(e.get("epoch"), bool))
    if not isinstance(months, dict) or not epochs:
        return None
    oldest = from_epoch(epochs[0])
    if oldest is None:
        return None
    missing = 0
    for key, count in months.items():
        try:
            start = datetime.strptime(str(key), "%Y-%m").replace(tzinfo=timezone.utc)
        except ValueError:
            continue
        if not isinstance(count, int) or isinstance(count, bool) or start < since or start > oldest:
            continue
        end = (start + timedelta(days=32)).replace(day=1)
        # A day of slack on each side: the archive's month is the mail's Date, not its epoch.
        low, high = (start - timedelta(days=1)).timestamp(), (end + timedelta(days=1)).timestamp()
        got = sum(1 for epoch in epochs if low <= epoch < high)
        missing += max(0, count - got)
    if missing:
        return (f"Pony Mail returned only the newest {len(returned)} messages of {address} (its silent max_hits "
                f"cap): at least {missing} older ones since {since:%Y-%m-%d} were not returned, so threads with "
                f"mail before {oldest:%Y-%m-%d %H:%M} may be missing; the listing is incomplete")
    return None


def _months_leave_room(months: Any, returned: list, since: datetime, oldest: datetime) -> bool:
    """Whether a month from ``since`` to ``oldest`` has more mail (``active_months``, uncapped,
    whole months) than came back in it: then mail before ``oldest`` may have been cut (or it
    predates ``since``, or an administrator hid it; the probe tells). When every such month
    came back whole, nothing was cut; without ``active_months`` the probe always runs."""
    if not isinstance(months, dict):
        return True
    month = since.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    while month <= oldest:
        following = (month + timedelta(days=32)).replace(day=1)
        count = months.get(f"{month:%Y-%m}")
        if isinstance(count, int) and not isinstance(count, bool):
            # No slack (unlike _cap_note): a message whose Date falls in the next month only
            # makes the probe run, never hides a cut.
            low, high = month.timestamp(), following.timestamp()
            if count > sum(1 for epoch in returned if low <= epoch < high):
                return True
        month = following
    return False


def _strip_mbox_from_line(raw: bytes) -> bytes:
    """Foal keeps the mbox ``From `` separator line when the import had one; it is no header."""
    if raw.startswith(b"From "):
        end = raw.find(b"\n")
        return raw[end + 1:] if end >= 0 else b""
    return raw


def _message_from_json(email: Mapping[str, Any], mid: str, notes: list[str]) -> Message:
    """A Message from Foal's email JSON (or a thread-tree entry) when the raw source fails."""
    sender_text = email.get("from_raw") or email.get("from") or ""
    irt = email.get("in-reply-to") or email.get("irt") or ""
    body = email.get("body")
    parts: tuple[TextPart, ...] = ()
    if isinstance(body, str):
        if email.get("html_source_only"):
            parts = (html_text_part(body),)
        else:
            parts = (TextPart("text/plain", body),)
    attachments = []
    for item in email.get("attachments") or []:
        if isinstance(item, dict):
            size = item.get("size")
            attachments.append(AttachmentInfo(str(item.get("filename") or "attachment"),
                                              str(item.get("content_type") or "application/octet-stream"),
                                              size if isinstance(size, int) and not isinstance(size, bool) else 0))
    subject = email.get("subject")
    return Message(
        message_id=with_brackets(str(email.get("message-id") or "")) or f"<{mid}@ponymail.invalid>",
        synthetic_id=not email.get("message-id"),
        subject=subject if isinstance(subject, str) else "",
        sender=parse_address(str(sender_text)),
        to=parse_address_list(str(email.get("to") or "")),
        cc=parse_address_list(str(email.get("cc") or "")),
        date=from_epoch(email.get("epoch")),
        in_reply_to=with_brackets(str(irt)) or None,
        references=extract_msgids(str(email.get("references") or "")),
        text_parts=parts,
        attachments=tuple(attachments),
        notes=tuple(notes),
        backend_ref=mid,
    )

