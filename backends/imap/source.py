"""``ImapSource``: the mail-source contract (the six triage operations) over an IMAP account.

Configured in project.md as ``mail_sources.<name>``::

    mail_sources:
      imap:
        account: work                 # an [accounts.work] table of the user settings
        folder: INBOX                 # the folder that holds the security list (default INBOX)
        list: security@example.org    # only mail to/from this list (To, Cc, List-Id, List-Post)
        archive:                      # optional: thread_url gives an archive link
          kind: hyperkitty            # hyperkitty | pipermail | ponymail
          url: https://lists.example.org/archives

Thread IDs are root Message-IDs (angle brackets kept) of kind ``imap`` (a thread rooted
at a message without a Message-ID has kind ``imap-synthetic``); ``backends.identity``
ties them to other backends' IDs of the same conversation by that root Message-ID.
``create_draft`` and ``list_drafts`` depend on the server: without a writable Drafts
folder they are declined, and ``create_draft`` also needs ``access = "draft"`` or
``"send"``. Drafts only: nothing here sends mail.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence
from urllib.parse import quote

from mailtriage.backends.account_source import AccountSource
from mailtriage.backends.contract import (SourceOrigin, SourceFeatures, MESSAGE_ID_KIND, Draft, DraftRequest, Message, Op,
                                          RecentChanges, Thread, ThreadId, ThreadSummary, reply_subject)
from mailtriage.backends.errors import (BackendFailure, ConnectionLost, DraftAlreadyPending, MailError,
                                        NotSupported, ThreadNotFound, Unavailable)
from mailtriage.backends.imap import ids, message_reads, protocol, recent, recent_rows, recent_threads, summary_cache
from mailtriage.backends.imap.account import ImapAccount, load_account
from mailtriage.backends.imap.adapter import ImapMailbox
from mailtriage.backends.imap.headers import aware, thread_root
from mailtriage.backends.imap.listed import ListedThreads, SentRows
from mailtriage.backends.imap.query import criteria_for, fetch_headers
from mailtriage.backends.mailbox_contract import MailQuery
from mailtriage.backends.thread_reconstruction import synthetic_kind
from mailtriage.core.collector import collector_paused
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.trace import TRACE

if TYPE_CHECKING:
    from mailtriage.backends.search import SearchPage, SearchRequest

THREAD_KIND = MESSAGE_ID_KIND  # root Message-IDs (old "imap:" tags read back as this shape)
ARCHIVE_KINDS = ("hyperkitty", "pipermail", "ponymail")
_DRAFT_OPS = frozenset({Op.LIST_DRAFTS, Op.CREATE_DRAFT})
#: A poller's source (hold_window_only) walks its window whole again this often (issue 39): the
#: polls between read only what changed (the new UIDs, CHANGEDSINCE, the cached range when
#: EXISTS says a message left) and answer from the last answer; the walk is the safety net
#: against anything they could have missed (a server bending a rule), at the cost of one walk.
RELIST_SECONDS = 600.0
# Message-IDs per ORed search of threads_for_message_ids (two keys each: some 6 KB a command).
IDS_PER_SEARCH = 40


def _sent_since(found: list[message_reads.FullMessage], since: datetime) -> list[Message]:
    """A thread's messages of Sent that reached it since ``since``, oldest first."""
    out = []
    for item in sorted(found, key=lambda m: m.sort_key):
        # When it reached Sent is when it was sent (the Date header is the sender's clock).
        when = item.header.date or item.header.sent_date
        if when is None or when >= since:
            out.append(item.parsed().content)
    return out


_MAILBOX_MADE = threading.Lock()


class ImapSource(AccountSource):
    kind = "imap"
    features = SourceFeatures(listing_limit=True, attachment_bytes=True, server_search=True, search_all_folders=True,
                              cached_listing=True, draft_attachments=True)
    thread_id_kind = THREAD_KIND
    account_label = "IMAP"
    load_account = staticmethod(load_account)

    def __init__(self, name: str, settings: Mapping[str, Any] | None = None, *,
                 account: ImapAccount | None = None, origin: SourceOrigin | None = None) -> None:
        super().__init__(name, settings, origin=origin)
        self.folder = str(self.settings.get("folder") or "INBOX")
        self.list_address = (str(self.settings["list"]).strip().lower() or None) if self.settings.get("list") else None
        self._mailbox: ImapMailbox | None = None
        self._drafts_folder: str | None | bool = False  # False: not probed yet
        self._opened_state: Any = None  # the list folder's selection prepare_read last read a message of
        self._store: summary_cache.SummaryStore | None = None
        self._cache: summary_cache.FolderCache | None = None
        self._listed: tuple[Any, int] | None = None  # the folder state of the last listing, and the call count after it
        #: The list folder's selection prepare_read made, and the call count after it: a first listing
        #: right after it (start-up's child signs in, then lists) takes it instead of a second SELECT.
        self._prepared: tuple[Any, int] | None = None
        self._listed_threads: ListedThreads | None = None  # the last listing's rows (read_thread fetches by UID)
        self._sent_rows: SentRows | None = None  # the Sent folder's rows as the last read saw them
        self._window_only = False  # a poller's source: no persisted cache (hold_window_only)
        self._trimmed: tuple[Any, float] = (None, 0.0)  # the window-only cache last trimmed, and to when
        self._walked_at = 0.0  # time.monotonic() of this source's last walk of a whole window
        self._summaries = recent_threads.SummaryMemo()  # the last listing's summaries: a poll sums up what changed
        # (memo rows, ListedThreads, wanted) when the last listing's ListedThreads holds the memo's rows
        self._listed_memo: tuple | None = None
        self._changed_uids: tuple | None = None  # (state, UIDs) of the last catch-up (_caught_up)
        self._feed_token: object = None  # the token of the last change feed answer (list_recent_changes)
        # The list folder as the last listing saw it (UIDVALIDITY, EXISTS, UIDNEXT) and how many
        # times messages were seen to leave it since this source started (message_ids_epoch).
        self._folder_marks: tuple[int, int, int, int] | None = None
        # The same of Sent, once a root was found there (threads_for_message_ids), and its name.
        self._sent_marks: tuple[int, int, int, int] | None = None
        self._sent_watched: str | None = None
        self.archive = self._archive_settings()
        self._init_account(account)
        self._declared = self._declared_capabilities()

    # -- configuration ---------------------------------------------------------------
    def _archive_settings(self) -> dict | None:
        archive = self.settings.get("archive")
        if archive is None:
            return None
        key = f"mail_sources.{self.name}.archive"
        if not isinstance(archive, dict) or archive.get("kind") not in ARCHIVE_KINDS or not archive.get("url"):
            raise ConfigError(self._project_file(), key, f"must be {{kind, url}}, not {archive!r}",
                              "kind: hyperkitty | pipermail | ponymail, url: https://…")
        if not (archive.get("list") or self.list_address):
            raise ConfigError(self._project_file(), key, "an archive link needs the list address",
                              f"mail_sources.{self.name}.list or archive.list")
        return dict(archive)

    @property
    def mailbox(self) -> ImapMailbox:
        if self._mailbox is None:
            with _MAILBOX_MADE:  # start-up's child signs in on a thread beside its cache read: one mailbox
                if self._mailbox is None:
                    self._mailbox = ImapMailbox(self.account)
        return self._mailbox

    def prepare_read(self, *, open_message: bool = False) -> None:
        """Sign in and select the list folder (and learn which folder is Sent), as a read of a
        listed thread starts: that read then finds them done (a NOOP, no SELECT).

        ``open_message``: also read the first byte of the folder's newest message, once per
        selection. Dovecot's first read of a message after a SELECT of a large folder costs what
        the SELECT left undone (0.6-1.2 s at 100k messages, its UID list and caches): the app asks
        this while it is idle (after the row marks, which select Drafts and Sent), so the next
        Enter finds the folder open and warm (issue 33); the Sent folder's rows, where a listed
        thread's replies are looked up, are brought up to date first (a read then STATUSes Sent)."""
        sent = self.mailbox.folders.role_folder("sent")
        if open_message and sent and sent != self.folder:
            # The Sent rows a listed thread's read looks its replies up in (one STATUS when known).
            self._sent_rows = message_reads.sent_rows(self.mailbox, sent, self._sent_rows)
        conn = self.mailbox.conn
        state = conn.select(self.folder)
        self._prepared = (state, conn.calls)
        if not open_message or state.exists == 0 or self._opened_state is state:
            return
        conn.call("UID FETCH newest", lambda c: protocol.fetch(c, "*", ["UID", "BODY.PEEK[]<0.1>"]))
        self._opened_state = state

    # -- availability and capabilities ----------------------------------------------------
    def check_available(self) -> None:
        """Log in and check the list folder exists. Raises Unavailable / SignInNeeded."""
        account = self.account
        try:
            self.mailbox.folders.forget()
            self.mailbox.folders.info(self.folder)
        except (NotSupported, BackendFailure) as exc:
            if isinstance(exc, Unavailable):
                raise
            raise Unavailable(self.name, f"folder {self.folder!r} of account {account.id}: {exc}") from exc

    def _drafts(self) -> str | None:
        """The writable Drafts folder, or None (probed once per connection)."""
        if self._drafts_folder is False:
            folder = self.mailbox.folders.role_folder("drafts")
            if folder is not None:
                info = self.mailbox.folders.info(folder)
                state = self.mailbox.conn.select(folder) if info.selectable else None
                if state is None or not state.writable:
                    folder = None
            self._drafts_folder = folder
        return self._drafts_folder

    @property
    def capabilities(self) -> frozenset[Op]:  # type: ignore[override]
        """All six ops, less ``create_draft`` for a read-only account, less both draft ops
        when the server has no writable Drafts folder (learned at the first login).
        When the server cannot be asked now, the declared set stands and the
        availability check says why."""
        caps = self._declared
        if _DRAFT_OPS & caps and self._account is not None:
            try:
                if self._drafts() is None:
                    caps = caps - _DRAFT_OPS
            except MailError:
                pass
        return caps

    def supports(self, op: Op) -> bool:
        """As :attr:`capabilities` says, but only a draft op probes the Drafts folder: resolving a
        read (or a listing) selects nothing it does not read (issue 33: a read ahead on a 100k
        folder selected Drafts, then the list folder again)."""
        if op in _DRAFT_OPS:
            return op in self.capabilities
        return op in self._declared

    def _require_drafts(self, op: Op) -> str:
        if op not in self._declared:
            raise self._read_only(op)
        folder = self._drafts()
        if folder is None:
            raise NotSupported(self.name, op.value, f"{self.account.host} has no writable Drafts folder")
        return folder

    # -- list_recent_threads ---------------------------------------------------------------
    @property
    def signs_in_without_tokens(self) -> bool:  # type: ignore[override]
        return self._account is not None and self._account.auth == "password"

    @property
    def caches_summaries(self) -> bool:
        """Whether listings keep the persisted summary cache (``cache_summaries``)."""
        return self._account is not None and self._account.cache_summaries and not self._window_only

    def hold_window_only(self) -> None:
        """A poller's source (see ``MailSource.hold_window_only``): the persisted cache is
        neither read nor written here; the first listing walks its window and later ones
        reconcile those rows in memory, so a 3-day poll beside a 20-day list holds 3 days."""
        self._window_only = True

    @property
    def rows_held(self) -> int:
        """How many listing rows this source holds in memory (decoded or not)."""
        return self._cache.size if self._cache is not None else 0

    def _summary_store(self) -> summary_cache.SummaryStore:
        if self._store is None:
            self._store = summary_cache.SummaryStore(self.account, self.folder, self.mailbox.conn.channel)
        return self._store

    def list_recent_changes(self, list_name: str | None, since: datetime, token: object = None) -> RecentChanges:
        """The change feed (``MailSource.list_recent_changes``): with the token of this
        source's last answer, and no other listing since, only the threads whose summaries
        changed (the UIDs the reconcile touched, regrouped by ``recent_threads.SummaryMemo``), without
        making the whole list. Whole on the first call, after another listing, and whenever
        the memo ranked everything anew (a walk: the first listing, a UIDVALIDITY change, the
        RELIST_SECONDS safety net; many changes at once)."""
        known = token is not None and token is self._feed_token
        found = self._listing(list_name, since, None, whole=not known)
        delta = recent_threads.ranked_delta(self._summaries) if known else None
        self._feed_token = token = object()
        if delta is None:
            if known and not found:  # (only the delta was made; the ranking holds the whole)
                found = self._summaries_listed()
            return RecentChanges(found, token=token)
        changed, removed = delta
        return RecentChanges(None, changed, removed, token)

    def _summaries_listed(self) -> list[ThreadSummary]:
        ranked = self._summaries.ranked
        return [entry[0] for entry in reversed(ranked)] if ranked is not None else []

    def list_recent_threads(self, list_name: str | None, since: datetime, *,
                            limit: int | None = None) -> Sequence[ThreadSummary]:
        """Threads of the list folder with activity since ``since``, most recent activity first.

        Reads the rows from the summary cache brought up to date with the server (only what
        changed is read), else walks the folder newest first in windows of headers only, so
        the cost follows what is returned (see :mod:`backends.imap.recent`); a cache that
        holds the window's newest part (a first page's walk) is extended downwards. With ``limit``,
        stops once ``limit`` threads are known: counts and participants then cover the
        messages walked (back to the oldest listed activity).
        """
        return self._listing(list_name, since, limit)

    def _listing(self, list_name: str | None, since: datetime, limit: int | None, *,
                 whole: bool = True) -> list[ThreadSummary]:
        """:meth:`list_recent_threads`; ``whole=False``: where the answer continues the last one
        (``recent_threads.summaries_of_changes``), ``[]`` rather than the whole list (a change feed)."""
        self._feed_token = None  # the memo changes below: a feed's token is no longer its state's
        # (set again once this listing's rows are kept: a failure below leaves none to reuse)
        listed_memo, self._listed_memo = self._listed_memo, None
        since = aware(since)
        wanted = (list_name or self.list_address or "").strip().lower() or None
        # The cache changes below: a write of it still to come is called off (and owed), so a
        # first page's rows are not written just before the whole window's replace them.
        owed = self._store is not None and self._store.take_back(self._cache)
        writes = self._store.writes if self._store is not None else 0
        try:
            conn = self.mailbox.conn
            state = self._folder_state(conn)
            self._mark_folder(state)
            with collector_paused():  # tens of thousands of rows and summaries, no cycles
                touched: list[int] = []  # the UIDs the reconcile added, changed or dropped
                if (self._window_only and self._cache is not None and not limit
                        and time.monotonic() - self._walked_at > RELIST_SECONDS):
                    self._cache = None  # the safety net (RELIST_SECONDS): walked whole below
                cache = self._reconciled_cache(state, touched)
                found = None
                rows: Any  # a list, or a function that makes it (_rows_of), or None
                if cache is not None and self._cache is cache and not limit:
                    # Issue 39: the last answer of this cache, brought up to date by what changed
                    # (no pass over the window); None when there is none to continue from.
                    found = recent_threads.summaries_of_changes(self._summaries, cache, touched, since, wanted,
                                                                THREAD_KIND, whole=whole)
                if found is not None:
                    memo = self._summaries
                    if (memo.regrouped == 0 and memo.delta == ([], []) and memo.rows is not None
                            and listed_memo is not None and listed_memo[0] is memo.rows
                            and listed_memo[1] is self._listed_threads and listed_memo[2] == wanted):
                        rows = None  # the answer did not change: the last listing's rows, kept (no copy)
                    else:
                        rows = _rows_of(memo)  # (made at the first read of a thread: no copy per poll)
                    answered = cache
                else:
                    rows = self._answer_from_cache(cache, since, wanted, limit) if cache is not None else None
                    answered = cache if rows is not None else None
                    if rows is None and cache is not None and self._cache is cache and not limit:
                        # The cache (not dropped as damaged) holds the window's newest part: read the rest.
                        rows = self._extended_cache(cache, since, wanted)
                        answered = cache if rows is not None else None
                    if rows is None:
                        walked = recent.walk(conn, state, since, wanted, limit)
                        if not limit:
                            self._walked_at = time.monotonic()
                        if state.highestmodseq is not None:
                            self._keep(recent.cache_from_walk(state, walked, since))
                        rows = recent.pick(walked.rows, since, wanted, limit, exhausted=True) or []
                        answered = self._cache if state.highestmodseq is not None else None
                if self._window_only and self._cache is not None and not limit:
                    # A poller holds its window only: trimmed after a walk, then hourly.
                    if self._trimmed[0] is not self._cache or since.timestamp() - self._trimmed[1] > recent.TRIM_SLACK:
                        recent.trim_to_window(self._cache, since)
                        self._trimmed = (self._cache, since.timestamp())
                self._listed = (state, conn.calls)
                if rows is None and self._listed_threads is not None:
                    # (the UIDs given out since held nothing the listing keeps)
                    uidnext = state.uidnext if state.uidnext is not None else self._listed_threads.uidnext
                    self._listed_threads = replace(self._listed_threads, uidnext=max(uidnext, self._listed_threads.uidnext))
                else:
                    self._remember(state.uidvalidity, state.uidnext, rows or [], wanted)
                # What the rows kept were made from: the memo's rows, when answered from them
                self._listed_memo = ((self._summaries.rows, self._listed_threads, wanted) if found is not None
                                     and self._summaries.rows is not None else None)
                if found is None:
                    found = recent_threads.summaries(rows, THREAD_KIND, self._summaries)
                    if answered is not None and answered is self._cache and not limit:
                        recent_threads.answered_whole(self._summaries, answered, wanted, since)
        finally:
            # Not kept anew (answered as it was, or failed) nor written meanwhile (reconciled):
            # written as it would have been, unless a wider cache is on disk by now.
            if owed and self._cache is not None and not self._store.waiting() and self._store.writes == writes:
                if not self._store.save_unless_narrower(self._cache):
                    self._cache = None
        return found[:limit] if limit else found

    def _mark_folder(self, state) -> None:
        """Count a departure when the list folder lost messages since the last listing (EXISTS
        fell short of what it held plus the UIDs given out since: an expunge) or was re-created
        (a new UIDVALIDITY). Without UIDNEXT any change of EXISTS counts (rather too often)."""
        self._folder_marks = _marked(self._folder_marks, state.uidvalidity, state.exists, state.uidnext)

    def message_ids_epoch(self) -> object:
        """The list folder's UIDVALIDITY and the departures counted since (see
        :meth:`_mark_folder`): a root found there may be gone once either changes. Once a root
        was found in Sent, Sent's departures count too (one STATUS of Sent per call; when it
        cannot be asked, an epoch of its own: what was found is asked again)."""
        marks = self._folder_marks
        if marks is None:
            return None
        if self._sent_watched is None:
            return marks[0], marks[3]
        sent = self._sent_watched
        try:
            status = self.mailbox.conn.call(
                f"STATUS {sent}", lambda c: c.folder_status(sent, [b"MESSAGES", b"UIDNEXT", b"UIDVALIDITY"]))
        except MailError:
            return object()
        messages, uidnext, uidvalidity = (int(status.get(k) or 0) for k in (b"MESSAGES", b"UIDNEXT", b"UIDVALIDITY"))
        self._sent_marks = _marked(self._sent_marks, uidvalidity, messages, uidnext or None)
        return marks[0], marks[3], self._sent_marks[0], self._sent_marks[3]

    def wait_for_mail(self, timeout: float, cancel: threading.Event | None = None) -> bool:
        """Block up to ``timeout`` s for new mail in the list's folder (IMAP IDLE on this
        source's connection when the server has it); mail that came since this source's last
        listing counts too. True when the server announced mail (see ``poll.wait_for_mail``)."""
        listed = self._listed
        return self.mailbox.wait_for_mail(timeout, self.folder, seen=listed[0] if listed else None, cancel=cancel)

    def look_for_wait(self) -> None:
        """Select the list folder on this source's connection unless it is selected: the next
        ``wait_for_mail`` compares its SELECT with this look, so mail that lands in the folder
        from now on wakes it even before IDLE starts (a fallback's folder, that no listing
        selects). Called before a poll; nothing is fetched."""
        conn = self.mailbox.conn
        state = conn.state
        if state is None or state.name != self.folder or not conn.is_open:
            conn.select(self.folder)  # as the wait selects it

    def _folder_state(self, conn):
        """The list folder's state as of now: a fresh SELECT (the HIGHESTMODSEQ of now), unless
        this source's previous listing (or, before any listing, :meth:`prepare_read` with nothing
        run since) selected it and the selection still holds:

        * nothing ran on the connection since (the app lists a first page, then the whole
          window) and one NOOP brings no news (no new, expunged or changed message): that
          state is kept, which the cache is reconciled with, and a SELECT is spared (0.15-0.2 s
          on a 100k Maildir in Dovecot);
        * otherwise, when the summary cache is in step with that state (CONDSTORE), the NOOP's
          news (or what other commands read since) is caught up by :meth:`_caught_up`: one
          ``UID SEARCH MODSEQ`` instead of a SELECT (issue 39: a poll after one new mail cost
          a SELECT, ~200 ms of Dovecot at 20,000 messages).

        A connection the server dropped meanwhile (a killed session, a restart) fails that
        NOOP: the SELECT then reconnects, as ``ImapConnection.select`` does (issue 39: the poll
        failed instead)."""
        listed, prepared = self._listed, self._prepared
        self._listed = self._prepared = None
        if listed is None and prepared is not None and prepared[0].news == 0 and prepared[1] == conn.calls:
            # Nothing ran on the connection since prepare_read selected the folder (start-up's child
            # signs in, then lists at once): that SELECT is as fresh as a second one would be, which
            # cost Dovecot another read of its index (~50 ms at 100k messages); the NOOP below
            # still brings what came since (benchmarks/bench_read_newest.py, cold).
            listed = prepared
        if listed is not None and conn.state is listed[0] and conn.is_open:
            state = listed[0]
            # Not when mail came or went while that listing ran: its walk may not have seen it
            # (the catch-up asks the server what changed since the state, whatever the walk saw).
            quiet = state.news == 0 and conn.calls == listed[1]
            if quiet or self._in_step(state):
                try:
                    _done, news = conn.call(f"NOOP ({self.folder})", lambda c: c.noop())
                except ConnectionLost:  # the SELECT reconnects (after abort() it refuses: Unavailable)
                    return conn.reselect(self.folder)
                if conn.state is state:
                    if quiet and not news:
                        return state
                    caught = self._caught_up(conn, state, news)
                    if caught is not None:
                        return caught
        return conn.reselect(self.folder)

    def _in_step(self, state) -> bool:
        """Whether this source's cache was brought up to ``state`` (its UIDVALIDITY, UIDNEXT and
        HIGHESTMODSEQ), so that what changed since can be asked by modseq."""
        cache = self._cache
        return (cache is not None and state.highestmodseq is not None and state.uidnext is not None
                and (cache.uidvalidity, cache.uidnext, cache.highestmodseq)
                == (state.uidvalidity, state.uidnext, state.highestmodseq))

    def _caught_up(self, conn, state, news: list):
        """The selected folder's state after ``news`` (a NOOP's untagged responses) without a
        SELECT, or None (then SELECT): only with the cache in step (:meth:`_in_step`) and news
        that are messages arriving, leaving or changing (an untagged NO or BYE, a FLAGS
        response, anything else asks for a SELECT). ``UID SEARCH MODSEQ <n+1>`` names every
        message added or changed since the state's HIGHESTMODSEQ ``n`` and the highest modseq
        among them (RFC 7162): the new UIDNEXT and HIGHESTMODSEQ, for the reconcile. What left
        shows in EXISTS, which the session keeps live (the reconcile's count check). A
        HIGHESTMODSEQ raised by an expunge alone is not learnt: the next listing that selects
        compares and asks once more (never less)."""
        if not self._in_step(state) or not all(_plain_news(r) for r in news):
            return None
        since, before = state.highestmodseq, state.news
        try:
            found = conn.call("UID SEARCH MODSEQ", lambda c: c.search(["MODSEQ", str(since + 1)]))
        except ConnectionLost:  # dropped after the NOOP: the SELECT reconnects, as after a failed NOOP
            return None
        modseq = found.modseq if isinstance(found.modseq, int) else since
        # Mail that landed after the search ran is announced in its answer (Dovecot: EXISTS after
        # the SEARCH line) but not named: that news stays counted, so the next poll asks again.
        caught = conn.caught_up(state, uidnext=max(found, default=0) + 1, highestmodseq=modseq,
                                news=state.news - before)
        if caught is not None:
            self._changed_uids = (caught, list(found))  # the reconcile reads these flags by UID
        return caught

    def _changed_since(self, state) -> list[int] | None:
        """The UIDs the catch-up that made ``state`` found changed (:meth:`_caught_up`), else None."""
        caught, self._changed_uids = self._changed_uids, None
        return caught[1] if caught is not None and caught[0] is state else None

    def _flush_cache(self) -> None:
        if self._store is not None:
            self._store.flush()

    def _keep(self, cache: summary_cache.FolderCache) -> None:
        """Save a listing's cache (soon: the listing is answered first, see
        ``summary_cache.SAVE_AFTER``), unless a wider one is on disk: that one stays, and this
        source then reads (and reconciles) it next time. With ``cache_summaries`` off the
        cache is kept in memory only, for this source's next listing (a watch's next poll
        reads what changed, not the window again), and never written."""
        if not self.caches_summaries:
            self._cache = cache
            return
        self._cache = cache if self._summary_store().save_unless_narrower(cache) else None

    def _extended_cache(self, cache: summary_cache.FolderCache, since: datetime, wanted: str | None) -> list | None:
        """The whole window from a cache that holds its newest part only (the first page's
        walk, a shorter window's): the messages below the cache's floor are read and added
        (:func:`recent.walk_below`), so what the cache holds is not read again. None when the
        server cannot say where the window starts (the caller walks)."""
        try:
            rows = cache.rows
            below = recent.walk_below(self.mailbox.conn, cache.floor_uid, since,
                                      guess=recent.guess_below(rows.values(), since))
            if below is None:
                return None
            floor, fresh = below
        except summary_cache.Damaged as exc:
            self._cache = None
            self._summary_store().drop(f"{exc}; rebuilt")
            return None
        for row in fresh:
            rows[row[summary_cache.UID]] = row
        since_epoch = since.timestamp()
        cache.floor_uid = min(cache.floor_uid, floor)
        if cache.complete_since is None or cache.complete_since > since_epoch:
            cache.complete_since = since_epoch
        self._keep(cache)
        return recent.answer_from_cache(cache, since, wanted, None)

    def _reconciled_cache(self, state, touched: list[int] | None = None) -> summary_cache.FolderCache | None:
        """The summary cache brought up to the server's ``state``, or None (off, none yet,
        no CONDSTORE, or dropped after a UIDVALIDITY change). The UIDs it added, changed or
        dropped are added to ``touched``."""
        if state.highestmodseq is None:
            return None
        if not self.caches_summaries:  # the cache of this source's last listing, in memory only
            return self._reconciled_in_memory(state, touched)
        store = self._summary_store()
        cache = self._cache if self._cache is not None else store.load()
        if cache is None:
            return None
        try:
            outcome = recent.reconcile(self.mailbox.conn, state, cache, store.note, touched,
                                       self._changed_since(state))
        except summary_cache.Damaged as exc:
            outcome = "drop"
            store.note(f"{exc}; rebuilt")
        if outcome == "drop":
            self._cache = None
            store.drop("not used")
            return None
        if outcome == "changed":
            # Written a moment later (a poll in a storm answers first; the next listing takes
            # the write back, or waits for one under way, before it changes the cache again).
            store.save_soon(cache)
        self._cache = cache
        return cache

    def _reconciled_in_memory(self, state, touched: list[int] | None = None) -> summary_cache.FolderCache | None:
        """The in-memory cache (``cache_summaries`` off) brought up to ``state``, or None."""
        cache = self._cache
        if cache is None:
            return None
        if recent.reconcile(self.mailbox.conn, state, cache,
                            lambda text: TRACE.log(self.mailbox.conn.channel, "!", f"listing of {self.folder}: {text}"),
                            touched, self._changed_since(state)) == "drop":
            self._cache = None
        return self._cache

    def _answer_from_cache(self, cache: summary_cache.FolderCache, since: datetime, wanted: str | None,
                           limit: int | None) -> list | None:
        """The cached rows of a listing, or None (a damaged section drops the cache: rebuilt)."""
        try:
            return recent.answer_from_cache(cache, since, wanted, limit)
        except summary_cache.Damaged as exc:
            self._cache = None
            self._summary_store().drop(f"{exc}; rebuilt")
            return None

    def cached_recent_threads(self, list_name: str | None, since: datetime, *,
                              limit: int | None = None) -> Sequence[ThreadSummary] | None:
        """The threads as the summary cache last saw them, without asking the server (stale:
        to paint at once while :meth:`list_recent_threads` reconciles), or None when the
        cache is off, empty, or does not reach back to ``since``."""
        if not self.caches_summaries:
            return None
        self._flush_cache()  # reading a section decodes it into the cache: no write meanwhile
        cache = self._cache if self._cache is not None else self._summary_store().load()
        if cache is None:
            return None
        self._cache = cache
        since = aware(since)
        wanted = (list_name or self.list_address or "").strip().lower() or None
        rows = self._answer_from_cache(cache, since, wanted, limit)
        if rows is None:
            return None
        self._remember(cache.uidvalidity, cache.uidnext, rows, wanted)
        self._feed_token = None  # the memo changes: a change feed's token no longer names its state
        found = recent_threads.summaries(rows, THREAD_KIND, self._summaries)
        return found[:limit] if limit else found

    # -- search ----------------------------------------------------------------------------
    def search(self, request: SearchRequest) -> SearchPage:
        """Server search in the list folder (or ``request.folder``, or every folder of the
        account with ``all_folders``); each matching message becomes the row of its thread."""
        from mailtriage.backends.imap import search as imap_search  # with the first search: not the open's

        mb = self.mailbox
        if request.all_folders:
            folders = imap_search.account_folders(mb)
        else:
            folders = [request.folder or self.folder]
            mb.folders.info(folders[0])
        page = imap_search.search_folders(mb, folders, request, self.name)
        return replace(page, items=tuple(_summary_of(h, self._listed_thread_of(h)) for h in page.items))

    def _listed_thread_of(self, header) -> tuple[str, bool] | None:
        """The thread the last listing names for a search hit in the list folder, or None."""
        listed = self._listed_threads
        if listed is None or header.folder_id != listed.folder:
            return None
        ref = ids.parse_message_id(header.id)
        return listed.thread_of(ref.uidvalidity, ref.uid)

    # -- read_thread, list_sent_since ---------------------------------------------------------
    resolves_message_ids = True

    def thread_for_message_id(self, message_id: str) -> ThreadId | None:
        """The thread holding ``message_id`` (root or reply): a ``HEADER Message-ID`` search
        in the list folder, then Sent; the root is the found message's first reference."""
        sent = self.mailbox.folders.role_folder("sent")
        for folder in dict.fromkeys(f for f in (self.folder, sent) if f):
            state = self.mailbox.conn.select(folder)
            if state.exists == 0:
                continue
            esearch = self.mailbox.conn.has("ESEARCH")
            uids: list[int] = []
            # As written, else without brackets (a bare or unterminated Message-ID, keyed <...>).
            for written in dict.fromkeys((message_id, message_id.strip("<>") or message_id)):
                keys = [b"HEADER", b"Message-ID", protocol.quote(written)]
                uids, _count = self.mailbox.conn.call("UID SEARCH Message-ID",
                                                      lambda c: protocol.search(c, keys, esearch=esearch))
                if uids:
                    break
            for found in message_reads.fetch_full(self.mailbox, folder, state.uidvalidity, uids[:5]):
                if found.header.message_id == message_id:
                    header = found.header
                    return ThreadId(MESSAGE_ID_KIND, thread_root(header.message_id, header.references,
                                                                 header.in_reply_to))
        return None

    def threads_for_message_ids(self, message_ids: Sequence[str]) -> dict[str, ThreadId]:
        """:meth:`thread_for_message_id` for many Message-IDs at once (a poll's roots): one
        ``UID SEARCH`` of ORed ``HEADER Message-ID`` keys per :data:`IDS_PER_SEARCH` IDs in the
        list folder, then one in Sent for those it did not hold, and one FETCH of the headers
        found. Returns the IDs found, each with its thread."""
        wanted = list(dict.fromkeys(m for m in message_ids if m))
        found: dict[str, ThreadId] = {}
        sent = self.mailbox.folders.role_folder("sent")
        for folder in dict.fromkeys(f for f in (self.folder, sent) if f):
            missing = [m for m in wanted if m not in found]
            if not missing:
                break
            state = self.mailbox.conn.select(folder)
            if state.exists == 0:
                continue
            esearch = self.mailbox.conn.has("ESEARCH")
            for start in range(0, len(missing), IDS_PER_SEARCH):
                batch = set(missing[start:start + IDS_PER_SEARCH])
                # As written and without brackets (a bare or unterminated Message-ID, keyed <...>).
                written = dict.fromkeys(w for m in sorted(batch) for w in (m, m.strip("<>") or m))
                keys = protocol.any_of([[b"HEADER", b"Message-ID", protocol.quote(w)] for w in written])
                uids, _count = self.mailbox.conn.call("UID SEARCH Message-ID",
                                                      lambda c: protocol.search(c, keys, esearch=esearch))
                # HEADER matches substrings: at most a few messages per ID are read and compared.
                headers = fetch_headers(self.mailbox, folder, state.uidvalidity, uids[:5 * len(batch)])
                for header in headers.values():
                    if header.message_id in batch and header.message_id not in found:
                        if folder == sent and folder != self.folder and self._sent_watched != folder:
                            # Found in Sent: its departures now count in message_ids_epoch.
                            self._sent_watched = folder
                            self._sent_marks = _marked(None, state.uidvalidity, state.exists, state.uidnext)
                        found[header.message_id] = ThreadId(MESSAGE_ID_KIND, thread_root(
                            header.message_id, header.references, header.in_reply_to))
        return found

    def _listed_members(self, thread_id: ThreadId) -> list[message_reads.FullMessage] | None:
        """The list folder's messages of a thread the last listing holds, or None (not listed,
        folder reset, all gone). A listed thread without its root (it started before the
        window, or the root never came) is completed by the search by root."""
        if thread_id.kind not in (THREAD_KIND, synthetic_kind(THREAD_KIND)):
            return None
        listed = self._listed_threads or self._listed_from_cache()
        if listed is None:
            return None
        rows = listed.members(thread_id)
        if rows is None:
            return None
        synthetic = thread_id.kind != THREAD_KIND
        read = message_reads.listed_members(self.mailbox, listed, rows, thread_id.value, synthetic)
        if read is None:
            return None
        found, rows = read
        if not synthetic and not any(m.header.message_id == thread_id.value for m in found):
            known = {m.header.id for m in found}
            found += [m for m in message_reads.thread_members(self.mailbox, self.folder, thread_id.value)
                      if m.header.id not in known]
        sent = self.mailbox.folders.role_folder("sent")
        if sent and sent != self.folder:
            self._sent_rows = message_reads.sent_rows(self.mailbox, sent, self._sent_rows)
            if self._sent_rows is not None:
                replies = message_reads.sent_replies(self.mailbox, sent, self._sent_rows, rows, thread_id.value,
                                                     synthetic)
                found += message_reads.sent_copies_dropped(found, replies)
        return found

    def _listed_from_cache(self) -> ListedThreads | None:
        """The summary cache's rows as a listing (``mail read-thread`` in a new process: what
        ``mailtriage list`` or the app wrote), or None (no cache, or a damaged one)."""
        if not self.caches_summaries:
            return None
        self._flush_cache()  # reading every section decodes them into the cache: no write meanwhile
        cache = self._cache if self._cache is not None else self._summary_store().load()
        if cache is None:
            return None
        try:
            rows = list(cache.rows.values())
        except summary_cache.Damaged:
            return None
        wanted = self.list_address
        if wanted:
            rows = [row for row in rows if recent_rows.on_list(row, wanted)]
        self._remember(cache.uidvalidity, cache.uidnext, rows, wanted)
        return self._listed_threads

    def _remember(self, uidvalidity: int, uidnext: int | None, rows, wanted: str | None) -> None:
        """Keep a listing's rows (or the function that makes them, :func:`_rows_of`): opening
        one of its threads then fetches its UIDs."""
        if uidnext is None:  # a server that does not say: everything up to the highest UID seen
            made = rows() if callable(rows) else rows
            rows = made if made is not None else []
            uidnext = 1 + max((row[summary_cache.UID] for row in rows), default=0)
        self._listed_threads = ListedThreads(self.folder, uidvalidity, uidnext, rows, wanted)

    def _root(self, thread_id: ThreadId) -> tuple[ThreadId, str]:
        """The thread's own reference and root: a reply's Message-ID leads to its thread's root."""
        own = self.own_thread_id(thread_id)
        if own.is_message_id and own.kind == MESSAGE_ID_KIND:
            found = self.thread_for_message_id(own.value)
            if found is not None and found.value != own.value:
                own = found
        return own, own.value

    def read_thread(self, thread_id: ThreadId) -> Thread:
        """The thread across the list folder and Sent, chronological. BackendFailure if not found.

        A thread of this source's last listing is read by the UIDs the listing knows, plus
        what arrived since (no SEARCH of the list folder: :mod:`backends.imap.listed`).
        Otherwise ``thread_id`` may name any message of the thread (a reply's own
        Message-ID finds the thread that holds it) or be another backend's reference with a root."""
        listed = self._listed_members(thread_id)
        if listed is not None:
            root = thread_id.value
            members = message_reads.thread_of(self.mailbox, root, self.folder, found=listed, include_sent=False)
        else:
            thread_id, root = self._root(thread_id)
            members = message_reads.thread_of(self.mailbox, root, self.folder)
        if not members:
            raise ThreadNotFound(self.name, f"no message of thread {thread_id} in {self.folder!r} or Sent")
        parsed = [m.parsed().content for m in members]
        first = next((m for m in parsed if m.message_id == root), parsed[0])
        return Thread(thread_id, first.subject, tuple(parsed))

    def thread_heads(self, thread_ids: Sequence[ThreadId]) -> dict:
        """The Message-ID and Date of each message of the threads of ``thread_ids`` that this
        source's last listing holds, read at once (:mod:`backends.imap.thread_heads`): a
        sync compares them with what its rollups cover. A thread left out must be read."""
        from mailtriage.backends.imap import thread_heads  # a sync's only: not the open's

        if self._listed_threads is None:
            return {}
        heads, self._sent_rows = thread_heads.listed_heads(
            self.mailbox, self._listed_threads, self.mailbox.folders.role_folder("sent"), self._sent_rows, thread_ids)
        return heads

    def list_sent_since(self, thread_id: ThreadId, since: datetime) -> Sequence[Message]:
        root = self._thread_value(thread_id)
        sent = self.mailbox.folders.role_folder("sent")
        if sent is None:
            raise NotSupported(self.name, Op.LIST_SENT_SINCE.value, f"{self.account.host} has no Sent folder")
        since = aware(since)
        keys = criteria_for(MailQuery(folder=sent, since=since), within=self.mailbox.conn.has("WITHIN"))
        return _sent_since(message_reads.thread_members(self.mailbox, sent, root, keys), since)

    def list_sent_since_of(self, thread_ids: Sequence[ThreadId],
                           since: datetime) -> dict[ThreadId, Sequence[Message]]:
        """:meth:`list_sent_since` for many threads: Sent is selected and searched once for
        all (:func:`message_reads.threads_members`), not once per thread."""
        sent = self.mailbox.folders.role_folder("sent")
        if sent is None:
            raise NotSupported(self.name, Op.LIST_SENT_SINCE.value, f"{self.account.host} has no Sent folder")
        start = aware(since) or since
        roots = self._roots_of(thread_ids)
        keys = criteria_for(MailQuery(folder=sent, since=start), within=self.mailbox.conn.has("WITHIN"))
        found = message_reads.threads_members(self.mailbox, sent, list(dict.fromkeys(roots.values())), keys)
        return {thread_id: _sent_since(found[root], start) for thread_id, root in roots.items() if root in found}

    def _roots_of(self, thread_ids: Sequence[ThreadId]) -> dict[ThreadId, str]:
        """Each thread's root here; a thread whose reference does not resolve is left out."""
        roots: dict[ThreadId, str] = {}
        for thread_id in dict.fromkeys(thread_ids):
            try:
                roots[thread_id] = self._thread_value(thread_id)
            except BackendFailure:
                continue
        return roots

    # -- drafts ---------------------------------------------------------------------------
    def list_drafts_of(self, thread_ids: Sequence[ThreadId]) -> dict[ThreadId, Sequence[Draft]]:
        """:meth:`list_drafts` for many threads: Drafts is selected and searched once for all."""
        folder = self._require_drafts(Op.LIST_DRAFTS)
        roots = self._roots_of(thread_ids)
        found = message_reads.threads_members(self.mailbox, folder, list(dict.fromkeys(roots.values())))
        return {thread_id: [self._draft(thread_id, m) for m in found[root]]
                for thread_id, root in roots.items() if root in found}  # a root the server refused: untold

    def list_drafts(self, thread_id: ThreadId) -> Sequence[Draft]:
        root = self._thread_value(thread_id)
        folder = self._require_drafts(Op.LIST_DRAFTS)
        return [self._draft(thread_id, m) for m in message_reads.thread_members(self.mailbox, folder, root)]

    def _draft(self, thread_id: ThreadId, item: message_reads.FullMessage) -> Draft:
        content = item.parsed().content
        return Draft(
            thread_id=thread_id,
            draft_ref=item.header.id,
            subject=content.subject,
            to=tuple(str(a) for a in content.to),
            cc=tuple(str(a) for a in content.cc),
            in_reply_to=content.in_reply_to,
            body=content.body_text,
            date=content.date or item.header.date,
            message_id=item.header.message_id,
        )

    def draft_message_id(self, request: DraftRequest) -> str | None:
        """The Message-ID :meth:`create_draft` gives this request's draft (None without a
        subject: then it comes from the answered message). A rerun finds its own draft by it."""
        return self._draft_message_id(request, request.subject) if request.subject else None

    def create_draft(self, request: DraftRequest) -> Draft:
        """APPEND a reply to the Drafts folder with ``\\Draft``; never sends.

        Idempotent: a retried request (same thread, recipients, subject and body) returns
        the draft it already made. Raises DraftAlreadyPending when another draft for the
        thread is pending and the request does not allow a second one; NotSupported
        without a writable Drafts folder or with ``access = "read"``.
        """
        folder = self._require_drafts(Op.CREATE_DRAFT)
        root = self._thread_value(request.thread_id)
        if not request.to:
            raise BackendFailure(self.name, "a draft needs at least one recipient")
        thread = message_reads.thread_of(self.mailbox, root, self.folder)
        source = _source_message(thread, request.in_reply_to, self.folder)
        in_reply_to = source.header.message_id if source else request.in_reply_to
        if in_reply_to is None:
            raise BackendFailure(self.name, f"thread {request.thread_id} not found in {self.folder!r}; "
                                            "cannot thread the reply")
        references = _references(source, request, root)
        subject = request.subject or reply_subject(source.header.subject if source else None)
        message_id = self._draft_message_id(request, subject)

        pending = message_reads.thread_members(self.mailbox, folder, root)
        ours = [p for p in pending if p.header.message_id == message_id]
        if ours:
            return self._draft(request.thread_id, self._one_copy(folder, ours))  # a retry: already there
        if pending and not request.allow_second_draft:
            raise DraftAlreadyPending(self.name, str(request.thread_id), [p.header.id for p in pending])

        raw = self._compose_reply(request, subject, message_id, in_reply_to, references)
        draft_ref = self.mailbox.append_draft(folder, raw, message_id)
        # Another run may have passed the pending check too and appended the same draft (the
        # Message-ID derives from the request): look again, after our APPEND, and keep one.
        created = [p for p in message_reads.thread_members(self.mailbox, folder, root) if p.header.message_id == message_id]
        if not created:
            raise BackendFailure(self.name, f"the draft {draft_ref} in {folder!r} is not in its thread")
        return self._draft(request.thread_id, self._one_copy(folder, created))

    def _one_copy(self, folder: str, copies: list[message_reads.FullMessage]) -> message_reads.FullMessage:
        """Of copies of one draft (one Message-ID), keep the first appended (lowest UID) and
        delete the later ones by UID: every run picks the same one, so concurrent runs leave
        one. Without UIDPLUS nothing is deleted (a plain EXPUNGE could remove other mail)."""
        ordered = sorted(copies, key=lambda p: self.mailbox.ref(p.header.id).uid)
        later = [self.mailbox.ref(p.header.id).uid for p in ordered[1:]]
        if later and self.mailbox.conn.has("UIDPLUS"):
            self.mailbox.expunge_uids(folder, later)
        return ordered[0]

    # -- thread_url -----------------------------------------------------------------------
    def thread_url(self, thread_id: ThreadId) -> str:
        """An archive link when ``archive`` is configured, else ``imap://`` (RFC 5092) to the root."""
        root = self._thread_value(thread_id)
        if self.archive is not None:
            return self._archive_url(root)
        members = message_reads.thread_members(self.mailbox, self.folder, root)
        if not members:
            raise ThreadNotFound(self.name, f"no message of thread {thread_id} in {self.folder!r}")
        first = next((m for m in members if m.header.message_id == root), min(members, key=lambda m: m.sort_key))
        return self.mailbox.message_url(first.header.id)

    def _archive_url(self, root: str) -> str:
        archive = self.archive or {}
        base = str(archive["url"]).rstrip("/")
        list_address = str(archive.get("list") or self.list_address)
        kind = archive["kind"]
        if kind == "hyperkitty":
            digest = base64.b32encode(hashlib.sha1(root.strip("<>").encode("utf-8")).digest()).decode()
            return f"{base}/list/{list_address}/thread/{digest}/"
        if kind == "ponymail":
            return f"{base}/thread/{quote(root, safe='')}?{list_address}"
        # pipermail: no per-message permalink exists; link the month's thread index of the root.
        members = message_reads.thread_members(self.mailbox, self.folder, root)
        if not members:
            raise BackendFailure(self.name, f"no message of thread {root} in {self.folder!r} to date the archive link")
        first = next((m for m in members if m.header.message_id == root), min(members, key=lambda m: m.sort_key))
        when = first.header.sent_date or first.header.date
        month = when.strftime("%Y-%B")
        return f"{base}/{list_address.split('@')[0]}/{month}/thread.html"

    def close(self) -> None:
        self._flush_cache()
        if self._mailbox is not None:
            self._mailbox.close()
        self._drafts_folder = False

    def abort(self, opening_only: bool = False) -> None:
        mailbox = self._mailbox
        if mailbox is not None:
            mailbox.abort(opening_only)


def _summary_of(header, listed: tuple[str, bool] | None = None) -> ThreadSummary:
    """A search hit as a thread row: the thread (by its root) that holds the matching message:
    the one the listing names when it holds the message (``listed``: root, synthetic), else
    the thread of the message's own first reference."""
    if listed is not None:
        root, synthetic = listed
    else:
        root = header.thread_key
        synthetic = root.endswith("@mailtriage.invalid>")
    return ThreadSummary(
        thread_id=ThreadId(synthetic_kind(THREAD_KIND) if synthetic else THREAD_KIND, root),
        subject=header.subject,
        root_message_id=root,
        sender=header.sender,
        last_activity=header.date or header.sent_date,
        message_count=1,
        participants=(header.sender.email,) if header.sender.email else (),
        unread=not header.read,
        notes=tuple(header.notes) + ((f"found in {header.folder_id}",) if header.folder_id else ()),
        date_marker="undated" if header.sent_date is None and header.date is not None else "",
    )


def _source_message(thread: list[message_reads.FullMessage], in_reply_to: str | None,
                    folder: str) -> message_reads.FullMessage | None:
    """The message a reply answers: the one the request names, else the thread's latest
    message in the list folder (not our own copy in Sent, not a draft)."""
    if in_reply_to:
        for item in thread:
            if item.header.message_id == in_reply_to:
                return item
    candidates = [m for m in thread if not m.header.draft]
    inbound = [m for m in candidates if m.header.folder_id == folder]
    pool = inbound or candidates
    return pool[-1] if pool else None


def _references(source: message_reads.FullMessage | None, request: DraftRequest, root: str) -> tuple[str, ...]:
    if source is not None:
        chain = [*source.header.references, source.header.message_id]
    else:
        chain = [*request.references, *( [request.in_reply_to] if request.in_reply_to else [])]
    if root not in chain:
        chain.insert(0, root)
    return tuple(dict.fromkeys(c for c in chain if c and not c.endswith("@mailtriage.invalid>")))


def _rows_of(memo: recent_threads.SummaryMemo) -> Callable[[], list | None]:
    """The memo's rows as they are now, made when first asked for (``ListedThreads.given``):
    None once the memo's rows changed since (another listing changed them in place)."""
    rows, version = memo.rows, memo.version

    def take() -> list | None:
        if rows is None or memo.rows is not rows or memo.version != version:
            return None
        return list(rows.values())

    return take


_NEWS = (b"EXISTS", b"RECENT", b"EXPUNGE", b"FETCH")


def _plain_news(response) -> bool:
    """Whether an untagged response of a NOOP is a message arriving, leaving or changing
    (``(n, b"EXISTS")``, ``(n, b"EXPUNGE")``, ``(n, b"FETCH", ...)``, ``(n, b"RECENT")``)."""
    return (isinstance(response, tuple) and len(response) >= 2 and isinstance(response[0], int)
            and response[1] in _NEWS)


def _marked(marks: tuple[int, int, int, int] | None, uidvalidity: int, exists: int,
            uidnext: int | None) -> tuple[int, int, int, int]:
    """A folder's marks (UIDVALIDITY, EXISTS, UIDNEXT, departures) after seeing it in this
    state: one departure more when it lost messages (EXISTS fell short of what it held plus
    the UIDs given out since: an expunge) or was re-created (a new UIDVALIDITY). Without
    UIDNEXT any change of EXISTS counts (rather too often)."""
    departures = 0
    if marks is not None:
        validity, held, next_before, departures = marks
        if uidnext is None:
            lost = exists != held
        else:
            lost = held + max(0, uidnext - next_before) > exists
        if validity != uidvalidity or lost:
            departures += 1
    return uidvalidity, exists, uidnext or 0, departures
