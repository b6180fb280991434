"""``GraphSource``: the mail-source contract (the six triage operations) over Microsoft Graph.

Configured in project.md as ``mail_sources.<name>`` (kind ``graph``, alias ``microsoft``)::

    mail_sources:
      m365:
        kind: graph
        account: work                  # an [accounts.work] table with kind = "microsoft"
        folder: inbox                  # a well-known name, a folder's name or path, or its id
        list: security@example.org     # only mail to the list (To, Cc, List-Id, Delivered-To)

Thread IDs are Graph conversation IDs of kind ``graph``; a conversation whose first
message has no Message-ID has kind ``graph-synthetic``. Drafts are made with
createReply on the message answered (Exchange sets In-Reply-To and References and keeps
the conversation), never sent. ``thread_url`` is the first message's Outlook ``webLink``.
Exchange starts a new conversation when a reply's subject changes; conversations that
share a root Message-ID are one thread here (rows merge, a read reads them all).

Graph addresses a folder by a well-known name (``inbox``, ``archive`` …) or its opaque ID
only; a display name in the path is refused (400 ErrorInvalidIdMalformed). So a ``folder``
that is neither is looked up once among the mailbox's folders by display name (``Embargoed``)
or path (``Inbox/Embargoed``); no match is an error that lists the folders there are.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime, timezone
from email.utils import getaddresses
from typing import Any, Mapping, Sequence
from urllib.parse import urlencode

from mailtriage.backends import mime, mime_ids
from mailtriage.backends.account_source import EPOCH, AccountSource
from mailtriage.backends.contract import (SourceOrigin, SourceFeatures, Draft, DraftRequest, Message, Op, Thread, ThreadId,
                                          ThreadSummary, reply_subject)
from mailtriage.backends.errors import BackendFailure, DraftAlreadyPending, NotSupported, ThreadNotFound, Unavailable
from mailtriage.backends.imap.headers import thread_root
from mailtriage.backends.microsoft.account import MicrosoftAccount, load_microsoft_account
from mailtriage.backends.microsoft import search as graph_search
from mailtriage.backends.microsoft.api import GraphNotFound
from mailtriage.backends.microsoft.adapter import (SELECT, GraphMailbox, address, graph_time, header_map,
                                                   odata_string, parse_time, recipients)
from mailtriage.backends.search import SearchPage, SearchRequest
from mailtriage.backends.thread_reconstruction import synthetic_kind
from mailtriage.core.inert import terminal_line

THREAD_KIND = "graph"
# Graph's well-known folder names (mailFolder resource, "Use well-known folder names").
WELL_KNOWN_FOLDERS = frozenset({"archive", "clutter", "conflicts", "conversationhistory", "deleteditems", "drafts",
                                "inbox", "junkemail", "localfailures", "msgfolderroot", "outbox",
                                "recoverableitemsdeletions", "scheduled", "searchfolders", "sentitems",
                                "serverfailures", "syncissues"})
SIBLING_CANDIDATES = 25  # messages a read looks at for the rest of a split conversation
_REPLY_PREFIX = re.compile(r"^(\s*(re|fwd?|aw|sv|wg)\s*(\[\d+\])?\s*:\s*)+", re.I)
_ID_SHAPE = re.compile(r"^[A-Za-z0-9_=+-]{24,}$")  # an opaque Graph ID (base64), never a display name


def _folder_path(folder, by_id: dict) -> str:
    names, seen = [folder.name], {folder.id}
    parent = by_id.get(folder.parent_id) if folder.parent_id else None
    while parent is not None and parent.id not in seen:
        names.append(parent.name)
        seen.add(parent.id)
        parent = by_id.get(parent.parent_id) if parent.parent_id else None
    return "/".join(reversed(names))


class GraphSource(AccountSource):
    kind = "graph"
    features = SourceFeatures(listing_limit=True, attachment_bytes=True, server_search=True,
                              search_all_folders=True)
    thread_id_kind = THREAD_KIND
    account_label = "Microsoft"
    account_table_hint = "the id of an [accounts.<id>] table with kind = \"microsoft\""
    load_account = staticmethod(load_microsoft_account)

    def __init__(self, name: str, settings: Mapping[str, Any] | None = None, *,
                 account: MicrosoftAccount | None = None, mailbox: GraphMailbox | None = None,
                 origin: SourceOrigin | None = None) -> None:
        super().__init__(name, settings, origin=origin)
        self.folder_setting = str(self.settings.get("folder") or "inbox")
        self._folder_id: str | None = None
        self.list_address = (str(self.settings.get("list") or "").strip().lower()) or None
        self._mailbox = mailbox
        # root Message-ID -> the conversations seen holding that thread (a split one)
        self._siblings: dict[str, set[str]] = {}
        self._init_account(account or (mailbox.account if mailbox else None))
        self.capabilities = self._declared_capabilities()  # type: ignore[misc]

    @property
    def mailbox(self) -> GraphMailbox:
        if self._mailbox is None:
            self._mailbox = GraphMailbox(self.account)
        return self._mailbox

    @property
    def api(self):
        return self.mailbox.api

    @property
    def folder(self) -> str:
        """The list folder as Graph addresses it: a well-known name or an ID (resolved once)."""
        if self._folder_id is None:
            self._folder_id = self._resolve_folder(self.folder_setting)
        return self._folder_id

    def _resolve_folder(self, wanted: str) -> str:
        if wanted.lower() in WELL_KNOWN_FOLDERS:
            return wanted.lower()
        folders = self.mailbox.list_folders()
        by_id = {f.id: f for f in folders}
        if wanted in by_id:
            return wanted
        paths = {f.id: _folder_path(f, by_id) for f in folders}
        key = wanted.strip("/").lower()
        found = [fid for fid, path in paths.items() if path.lower() == key] or \
            [f.id for f in folders if f.name.lower() == key]
        if len(found) == 1:
            return found[0]
        if not found and _ID_SHAPE.match(wanted):
            return wanted  # an ID of a folder the walk does not show (hidden); Graph decides
        listed = ", ".join(sorted(terminal_line(p) for p in paths.values()))
        if found:
            raise Unavailable(self.name, f"folder {wanted!r} names {len(found)} folders of account "
                                         f"{self.account.id}: {', '.join(terminal_line(paths[f]) for f in found)}; "
                                         "give its path (Parent/Name) or its ID")
        raise Unavailable(self.name, f"account {self.account.id} has no folder {wanted!r}; its folders: {listed} "
                                     "(folder: takes a well-known name such as inbox, a folder's name or path, or "
                                     "its ID)")

    def check_available(self) -> None:
        """A token (refreshed if due) and the list folder read. Raises SignInNeeded / Unavailable."""
        try:
            self.api.get(f"/me/mailFolders/{self.folder}", "mailFolders.get", **{"$select": "id"})
        except GraphNotFound as exc:
            raise Unavailable(self.name, f"account {self.account.id} has no folder {self.folder!r}") from exc

    # -- list_recent_threads ------------------------------------------------------------------------
    def _on_list(self, message: dict, wanted: str | None) -> bool:
        if not wanted:
            return True
        local, _, domain = wanted.partition("@")
        people = [address(r).email.lower() for r in (*(message.get("toRecipients") or ()),
                                                     *(message.get("ccRecipients") or ()))]
        headers = header_map(message)
        list_id = headers.get("list-id", "").lower()
        # The same rule as GmailSource's query: To, Cc, List-Id or Delivered-To (a forward).
        return (wanted in people or (bool(domain) and f"{local}.{domain}" in list_id)
                or wanted in headers.get("delivered-to", "").lower())

    def list_recent_threads(self, list_name: str | None, since: datetime, *,
                            limit: int | None = None) -> Sequence[ThreadSummary]:
        """Conversations of the list folder with mail since ``since``, most recent first.

        One ``$filter=receivedDateTime ge`` walk of the folder (newest first, headers only).
        """
        since = since if since.tzinfo else since.replace(tzinfo=timezone.utc)
        wanted = (list_name or self.list_address or "").strip().lower() or None
        groups: dict[str, list[dict]] = {}
        for message in self.api.pages(f"/me/mailFolders/{self.folder}/messages", "messages.list", **{
                "$filter": f"receivedDateTime ge {graph_time(since)}", "$orderby": "receivedDateTime desc",
                "$select": SELECT, "$top": 100}):
            if message.get("isDraft") or not self._on_list(message, wanted):
                continue
            conversation = str(message.get("conversationId"))
            if conversation not in groups and limit is not None and len(groups) >= limit:
                break
            groups.setdefault(conversation, []).append(message)
        counts = self._counts(list(groups))
        rows = [self._summary(conversation, members, counts.get(conversation)) for conversation, members in
                groups.items()]
        out = self._merge_rows(rows)
        out.sort(key=lambda s: (s.last_activity or EPOCH, s.root_message_id), reverse=True)
        return out

    def _counts(self, conversations: list[str]) -> dict[str, int]:
        """Each conversation's messages in every folder, drafts left out: what its
        ``read_thread`` reads (the contract's count; a Gmail row counts its whole thread
        too). ``$count`` in ``$batch`` calls of 20, not a walk of the messages."""
        paths = {c: "/me/messages?" + urlencode({
            "$filter": f"conversationId eq {odata_string(c)} and isDraft eq false", "$count": "true",
            "$top": "1", "$select": "id"}) for c in conversations}
        answers = self.api.get_many(list(paths.values()), "messages.count") if paths else {}
        out = {}
        for conversation, path in paths.items():
            answer = answers.get(path)
            if isinstance(answer, dict) and isinstance(answer.get("@odata.count"), int):
                out[conversation] = answer["@odata.count"]
        return out

    # -- split conversations ---------------------------------------------------------------------
    # Exchange starts a new conversation when a reply's topic (the subject without RE:/FW:)
    # changes ("… (CVE-… assigned)"), so one thread (one root Message-ID) can be several
    # conversations. Rows merge by root and keep the conversation that started first (the
    # root's, AccountSource._merge_rows); a read of any of them reads them all (_conversations).
    def _conversations(self, thread_id: ThreadId) -> tuple[list[str], str | None, list[dict]]:
        """The conversations of ``thread_id``'s thread, the asked one first, its root, and
        the asked conversation's messages (listed once, so a read lists it only once):
        the conversation itself, the one holding the root Message-ID (``internetMessageId
        eq``), those seen holding the root, and those of up to SIBLING_CANDIDATES messages
        whose subject holds the root's (``$search``) and whose References start at the root."""
        value = self._thread_value(thread_id)
        # The members only (a 500-message thread's headers are megabytes); the first one's headers.
        members = self._members(thread_id, select="id,isDraft,receivedDateTime")
        try:
            header = self.mailbox.header(self.mailbox.metadata(str(members[0]["id"])))
        except GraphNotFound:
            return [value], None, members  # deleted since the listing: the conversation as it is
        root = thread_root(header.message_id, header.references, header.in_reply_to)
        if header.synthetic_id and root == header.message_id:
            return [value], None, members  # no Message-ID: nothing can name this thread elsewhere
        values = dict.fromkeys([value, *sorted(self._siblings.get(root, ()))])
        subject = header.subject
        if root != header.message_id:  # the root is in another conversation (or gone)
            for found in self.api.pages("/me/messages", "messages.byInternetMessageId", limit=10, **{
                    "$filter": f"internetMessageId eq {odata_string(root)}",
                    "$select": "id,conversationId,subject", "$top": 10}):
                if found.get("conversationId"):
                    values.setdefault(str(found["conversationId"]))
                    subject = str(found.get("subject") or subject)
                    break
        topic = _REPLY_PREFIX.sub("", subject or "").strip()
        if topic:
            for found in self.api.pages("/me/messages", "messages.search", limit=SIBLING_CANDIDATES, **{
                    "$search": f'"{graph_search.kql_phrase(topic, "subject")}"', "$select": SELECT,
                    "$top": SIBLING_CANDIDATES}):
                if found.get("isDraft") or str(found.get("conversationId")) in values:
                    continue
                other = self.mailbox.header(found)
                if thread_root(other.message_id, other.references, other.in_reply_to) == root:
                    values.setdefault(str(found["conversationId"]))
        if len(values) > 1:
            self._remember(root, values)
        return list(values), root, members

    def _summary(self, conversation: str, members: list[dict], count: int | None = None
                 ) -> tuple[ThreadSummary, str]:
        members = sorted(members, key=lambda m: str(m.get("receivedDateTime") or ""))
        first = members[0]
        header = self.mailbox.header(first)
        root = thread_root(header.message_id, header.references, header.in_reply_to)
        arrivals = [d for d in (parse_time(m.get("receivedDateTime")) for m in members) if d]
        participants = tuple(dict.fromkeys(address(m.get("from")).email for m in members
                                           if address(m.get("from")).email))
        kind = synthetic_kind(THREAD_KIND) if header.synthetic_id and root == header.message_id else THREAD_KIND
        summary = ThreadSummary(thread_id=ThreadId(kind, conversation, root), subject=header.subject,
                                root_message_id=root, sender=header.sender,
                                last_activity=max(arrivals) if arrivals else None,
                                message_count=max(count or 0, len(members)), participants=participants,
                                unread=any(not m.get("isRead") for m in members))
        return summary, str(first.get("receivedDateTime") or "")

    # -- search ------------------------------------------------------------------------------------------
    def search(self, request: SearchRequest) -> SearchPage:
        """Graph's ``$search`` on the list folder (``request.folder``, or all mail with
        ``all_folders``); the list scope and ``since`` apply to the results (Graph does not
        combine ``$search`` with ``$filter``). See backends/microsoft/search.py."""
        wanted = (request.list_name or self.list_address or "").strip().lower() or None
        since = request.since
        path = "/me/messages" if request.all_folders else f"/me/mailFolders/{request.folder or self.folder}/messages"

        def keep(message: dict) -> bool:
            if message.get("isDraft") or not self._on_list(message, wanted):
                return False
            received = parse_time(message.get("receivedDateTime"))
            return since is None or received is None or received >= since

        found, ended = graph_search.walk(self.api, path, request, keep, SELECT)
        window = found[request.offset:request.offset + request.page_size]
        items = tuple(self._merge_hits([self._hit(m) for m in window]))
        notes = () if ended else ("Graph gives no count for a search: more results follow",)
        return SearchPage(self.name, request, items, len(found) if ended else None, not ended,
                          method="Microsoft Graph $search", searched=("all mail",) if request.all_folders
                          else (request.folder or self.folder,), notes=notes)

    def _hit(self, message: dict) -> ThreadSummary:
        header = self.mailbox.header(message)
        root = thread_root(header.message_id, header.references, header.in_reply_to)
        kind = synthetic_kind(THREAD_KIND) if header.synthetic_id and root == header.message_id else THREAD_KIND
        return ThreadSummary(thread_id=ThreadId(kind, str(message.get("conversationId")), root),
                             subject=header.subject, root_message_id=root, sender=header.sender,
                             last_activity=parse_time(message.get("receivedDateTime")), message_count=1,
                             participants=(header.sender.email,) if header.sender.email else (),
                             unread=not message.get("isRead"), notes=header.notes)

    def _merge_hits(self, items: list[ThreadSummary]) -> list[ThreadSummary]:
        """Hits of one thread in several conversations name one: the earliest hit's."""
        lead: dict[str, ThreadSummary] = {}
        for item in sorted(items, key=lambda i: i.last_activity or EPOCH):
            lead.setdefault(item.root_message_id, item)
            self._remember(item.root_message_id, [item.thread_id.value])
        return [item if lead[item.root_message_id] is item else
                dataclasses.replace(item, thread_id=lead[item.root_message_id].thread_id) for item in items]

    # -- reads ---------------------------------------------------------------------------------------------
    def _message(self, graph_id: str) -> Message:
        return mime.parse_message(self.mailbox.raw_of(graph_id), backend_ref=self.mailbox.mid(graph_id))

    def _members(self, thread_id: ThreadId, *, drafts: bool = False, select: str = SELECT) -> list[dict]:
        members = self.mailbox.conversation(self._thread_value(thread_id), drafts=drafts, select=select)
        if not members:
            raise ThreadNotFound(self.name, f"Graph has no conversation {thread_id}")
        return members

    # Cross-backend thread identity: a reference of another shape reaches Graph by its root.
    resolves_message_ids = True

    def thread_for_message_id(self, message_id: str) -> ThreadId | None:
        """The conversation holding ``message_id``: ``$filter=internetMessageId eq …``."""
        for found in self.api.pages("/me/messages", "messages.byInternetMessageId", **{
                "$filter": f"internetMessageId eq {odata_string(message_id)}",
                "$select": "id,conversationId", "$top": 10}):
            if found.get("conversationId"):
                return ThreadId(THREAD_KIND, str(found["conversationId"]))
        return None

    def read_thread(self, thread_id: ThreadId) -> Thread:
        """The conversation across folders (inbox, Sent Items, …), oldest first, drafts left out."""
        thread_id = self.own_thread_id(thread_id)
        values, root, members = self._conversations(thread_id)
        listed = {str(m["id"]): m for m in members}
        for value in values[1:]:  # the rest of a split thread: the members only (the contents carry headers)
            for m in self.mailbox.conversation(value, select="id,isDraft,receivedDateTime"):
                listed.setdefault(str(m["id"]), m)
        ids = [gid for gid, _m in sorted(listed.items(), key=lambda kv: str(kv[1].get("receivedDateTime") or ""))]
        # In $batch calls of 20, four at a time (Graph's limits), not one request a message.
        raws = self.api.get_many([f"/me/messages/{gid}/$value" for gid in ids], "messages.$value", raw=True)
        messages, gone = [], 0
        for gid in ids:
            raw = raws.get(f"/me/messages/{gid}/$value")
            if raw is None:  # deleted (in Outlook, on a phone) between the listing and this get
                gone += 1
                continue
            messages.append(mime.parse_message(raw, backend_ref=self.mailbox.mid(gid)))
        if not messages:
            raise BackendFailure(self.name, f"every message of the conversation {thread_id} was deleted while "
                                            "it was read")
        notes: tuple[str, ...] = ()
        if gone == 1:
            notes = ("1 message of the conversation was deleted while it was read; it is left out",)
        elif gone:
            notes = (f"{gone} messages of the conversation were deleted while it was read; they are left out",)
        return Thread(thread_id.with_root(root), messages[0].subject, tuple(messages), notes=notes)

    def list_sent_since(self, thread_id: ThreadId, since: datetime) -> Sequence[Message]:
        since = since if since.tzinfo else since.replace(tzinfo=timezone.utc)
        found = [m for conversation in self._conversations(thread_id)[0]
                 for m in self.api.pages("/me/mailFolders/sentitems/messages", "messages.sent", **{
                     "$filter": f"conversationId eq {odata_string(conversation)} and sentDateTime ge "
                                f"{graph_time(since)}", "$select": SELECT, "$top": 100})]
        ordered = sorted(found, key=lambda m: str(m.get("sentDateTime") or ""))
        return [self._message(str(m["id"])) for m in ordered if not m.get("isDraft")]

    # -- drafts --------------------------------------------------------------------------------------------
    def _pending(self, conversation: str) -> list[dict]:
        return [m for m in self.api.pages("/me/mailFolders/drafts/messages", "messages.drafts", **{
            "$filter": f"conversationId eq {odata_string(conversation)}", "$select": SELECT, "$top": 100})
            if m.get("isDraft", True)]

    def _draft(self, thread_id: ThreadId, message: dict) -> Draft:
        parsed = self._message(str(message["id"]))
        return Draft(thread_id=thread_id, draft_ref=self.mailbox.mid(str(message["id"])), subject=parsed.subject,
                     to=tuple(str(a) for a in parsed.to), cc=tuple(str(a) for a in parsed.cc),
                     in_reply_to=parsed.in_reply_to, body=parsed.body_text,
                     date=parsed.date or parse_time(message.get("receivedDateTime")))

    def list_drafts(self, thread_id: ThreadId) -> Sequence[Draft]:
        return [self._draft(thread_id, m) for m in self._pending(self._thread_value(thread_id))]

    def create_draft(self, request: DraftRequest) -> Draft:
        """createReply on the message answered, then the body and recipients; never sends.

        Idempotent: a pending draft of the thread with the same recipients, subject and
        body is returned instead of a second one. Raises DraftAlreadyPending when another
        draft is pending and the request does not allow a second; NotSupported for a
        read-only account.
        """
        if Op.CREATE_DRAFT not in self.capabilities:
            raise self._read_only(Op.CREATE_DRAFT)
        if request.attachments:  # never drop a file silently (features.draft_attachments is off)
            raise NotSupported(self.name, Op.CREATE_DRAFT.value, "Graph drafts carry no attachments here; "
                                                                 "attach the files in Outlook")
        if not request.to:
            raise BackendFailure(self.name, "a draft needs at least one recipient")
        conversation = self._thread_value(request.thread_id)
        members = self._members(request.thread_id)
        source = self._source(members, request.in_reply_to)
        subject = request.subject or reply_subject(str(source.get("subject") or ""))
        pending = self._pending(conversation)
        for message in pending:
            existing = self._draft(request.thread_id, message)
            if self._same(existing, request, subject):
                return existing  # a retried request: the draft is already there
        if pending and not request.allow_second_draft:
            raise DraftAlreadyPending(self.name, str(request.thread_id),
                                      [self.mailbox.mid(str(m["id"])) for m in pending])
        created = self.api.post(f"/me/messages/{source['id']}/createReply", {}, "messages.createReply")
        self.api.patch(f"/me/messages/{created['id']}", {
            "subject": subject, "body": {"contentType": "Text", "content": request.body},
            "toRecipients": recipients(request.to), "ccRecipients": recipients(request.cc)}, "messages.update")
        return self._draft(request.thread_id, created)

    @staticmethod
    def _same(draft: Draft, request: DraftRequest, subject: str) -> bool:
        def emails(values):
            return sorted(a.lower() for _n, a in getaddresses(list(values)))

        return (draft.subject == subject and draft.body.strip() == request.body.strip()
                and emails(draft.to) == emails(request.to) and emails(draft.cc) == emails(request.cc))

    def _source(self, members: list[dict], in_reply_to: str | None) -> dict:
        if in_reply_to:
            for message in reversed(members):
                if mime_ids.extract_msgid(message.get("internetMessageId")) == in_reply_to:
                    return message
        sent = self.mailbox.role_folder("sent")
        inbound = [m for m in members if m.get("parentFolderId") != sent]
        return (inbound or members)[-1]

    # -- thread_url ------------------------------------------------------------------------------------------
    def thread_url(self, thread_id: ThreadId) -> str:
        """Outlook on the web for the conversation's first message (Graph's ``webLink``)."""
        members = self._members(thread_id)
        link = members[0].get("webLink")
        if not link:
            raise BackendFailure(self.name, f"Graph gave no webLink for conversation {thread_id}")
        return str(link)

    def close(self) -> None:
        if self._mailbox is not None:
            self._mailbox.close()
            self._mailbox = None
