"""``GraphMailbox``: the personal-account mailbox adapter over Microsoft Graph.

* Folders are Graph mail folders with ``unreadItemCount``/``totalItemCount`` and their
  child folders; roles come from the well-known names (inbox, drafts, sentitems,
  deleteditems, junkemail, archive), which cannot be renamed or deleted.
* Labels are Outlook categories (``/me/outlook/masterCategories``) with their preset
  colours mapped to the canonical names. Graph cannot rename a category, so
  ``rename_label`` is declined; ``recolor_label`` works (the adapter contract).
* ``list(MailQuery)`` uses ``$filter`` + ``$orderby`` + ``$skip``/``$top`` + ``$count``;
  free text uses ``$search`` (which Graph does not combine with ``$filter``; the other
  filters then apply to the search results, and ``searchLimit`` says Graph's cap).
* Threads are conversations (``conversationId``); message IDs are immutable Graph IDs.
* Drafts go through createReply / createReplyAll / createForward on the source message,
  so Exchange threads them; polling is a per-folder delta query of created messages.

Writes other than drafts and sending need ``organize = true`` on the account.
"""

from __future__ import annotations

import base64
from datetime import datetime, timezone
from email.utils import getaddresses
from typing import Any, Sequence

from mailtriage.backends import mime, mime_headers, mime_ids
from mailtriage.backends.contract import Address, reply_subject
from mailtriage.backends.errors import BackendFailure, NotSupported, SignInNeeded, Unavailable
from mailtriage.backends.imap.headers import parse_list_unsubscribe, thread_root
from mailtriage.backends.mailbox_contract import (Compose, InvalidQuery, LabelList, MailAttachment, MailboxAdapter, MailFolder,
                                         MailHeader, MailLabel, MailMessage, MailPage, MailQuery, MailThread,
                                         PartialFailure, PollResult, StaleMessageId, check_bulk, flags_and_date_match,
                                         with_thread_counts)
from mailtriage.backends.microsoft.account import MicrosoftAccount
from mailtriage.backends.microsoft.api import GraphApi, GraphGone, GraphNotFound, GraphThrottled
from mailtriage.backends.microsoft.ids import decode_message_id, encode_message_id
from mailtriage.backends.microsoft.search import kql_phrase
from mailtriage.backends.outgoing import SendNotConfirmed
from mailtriage.backends.send_ledger import SendLedger
from mailtriage.backends.send_policy import SendRefused, check_send
from mailtriage.core.http import HttpError

ROLES = {"inbox": "inbox", "drafts": "drafts", "sentitems": "sent", "deleteditems": "trash", "junkemail": "junk",
         "archive": "archive"}
SELECT = ("id,conversationId,internetMessageId,subject,from,toRecipients,ccRecipients,receivedDateTime,"
          "sentDateTime,isRead,isDraft,flag,hasAttachments,categories,parentFolderId,internetMessageHeaders,webLink")
LARGE_ATTACHMENT = 3 * 1024 * 1024  # from 3 MB Graph refuses contentBytes: an upload session instead
UPLOAD_CHUNK = 10 * 320 * 1024  # 3.125 MB per PUT: under Graph's 4 MB a range, a multiple of 320 KiB
SEARCH_CAP = 1000  # Graph's $search returns at most this many messages
# Outlook's category presets -> the canonical colour names (MAIL_LABEL_COLORS).
PRESET_COLORS = ("red", "orange", "orange", "yellow", "green", "teal", "green", "blue", "purple", "pink", "gray",
                 "gray", "gray", "gray", "gray", "red", "orange", "orange", "yellow", "green", "teal", "green", "blue",
                 "purple", "pink")
COLOR_PRESETS = {"red": "preset0", "orange": "preset1", "yellow": "preset3", "green": "preset4", "teal": "preset5",
                 "blue": "preset7", "purple": "preset8", "pink": "preset9", "gray": "preset12"}
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def preset_color(preset: str | None) -> str | None:
    if not preset or not preset.startswith("preset"):
        return None
    try:
        return PRESET_COLORS[int(preset[6:])]
    except (ValueError, IndexError):
        return None


def odata_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def graph_time(value: datetime) -> str:
    value = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def address(item: dict | None) -> Address:
    email = (item or {}).get("emailAddress") or {}
    return Address(str(email.get("name") or ""), str(email.get("address") or ""))


def recipients(values: Sequence[str]) -> list[dict]:
    return [{"emailAddress": {"address": addr, **({"name": name} if name else {})}}
            for name, addr in getaddresses(list(values)) if addr]


def header_map(message: dict) -> dict[str, str]:
    return {str(h.get("name", "")).lower(): str(h.get("value", ""))
            for h in message.get("internetMessageHeaders") or ()}


class GraphMailbox(MailboxAdapter):
    def __init__(self, account: MicrosoftAccount, *, api: GraphApi | None = None) -> None:
        self.account = account
        self.account_id = account.id
        self.api = api or GraphApi(account)
        self._roles: dict[str, str] | None = None  # folder id -> role
        self._categories: list[dict] | None = None

    # -- ids ----------------------------------------------------------------------------------
    def gid(self, message_id: str) -> str:
        return decode_message_id(message_id, self.account_id)

    def mid(self, graph_id: str) -> str:
        return encode_message_id(self.account_id, graph_id)

    def _gone(self, message_id: str, exc: GraphNotFound) -> StaleMessageId:
        return StaleMessageId(self.account_id, message_id, f"Graph has no such message any more ({exc.detail})")

    # -- well-known folders and categories ------------------------------------------------------
    def roles(self) -> dict[str, str]:
        """Folder id -> role, from the well-known folder names (asked once per mailbox)."""
        if self._roles is None:
            roles = {}
            for name, role in ROLES.items():
                try:
                    folder = self.api.get(f"/me/mailFolders/{name}", f"mailFolders/{name}", **{"$select": "id"})
                except GraphNotFound:
                    continue  # e.g. no Archive folder yet
                roles[str(folder["id"])] = role
            self._roles = roles
        return self._roles

    def role_folder(self, role: str) -> str | None:
        return next((fid for fid, r in self.roles().items() if r == role), None)

    def categories(self, refresh: bool = False) -> list[dict]:
        if self._categories is None or refresh:
            self._categories = list((self.api.get("/me/outlook/masterCategories", "masterCategories") or {})
                                    .get("value") or [])
        return self._categories

    def _category_ids(self, names: Sequence[str]) -> tuple[str, ...]:
        by_name = {str(c.get("displayName")): str(c.get("id")) for c in self.categories()}
        return tuple(by_name.get(name, name) for name in names)

    # -- headers and messages ------------------------------------------------------------------------
    def header(self, message: dict, raw: bytes | None = None) -> MailHeader:
        headers = header_map(message)
        notes: list[str] = []
        message_id = mime_ids.extract_msgid(message.get("internetMessageId"))
        synthetic = message_id is None
        if synthetic:
            raw = raw if raw is not None else self.raw_of(str(message["id"]))
            message_id = mime_headers.synthetic_message_id(mime_headers.split_header_block(raw)[0])
            notes.append("no Message-ID; a synthetic one stands in")
        references = mime_ids.extract_msgids(headers.get("references"))
        in_reply_to = mime_ids.extract_msgid(headers.get("in-reply-to"))
        if raw is not None and not headers:
            fields = mime_headers.header_fields(mime_headers.split_header_block(raw)[0])
            references = mime_ids.extract_msgids(fields.get(b"references"))
            in_reply_to = mime_ids.extract_msgid(fields.get(b"in-reply-to"))
            unsubscribe = fields.get(b"list-unsubscribe")
            headers["list-unsubscribe"] = unsubscribe.decode("utf-8", "replace") if unsubscribe else ""
        folder = str(message.get("parentFolderId") or "")
        return MailHeader(
            id=self.mid(str(message["id"])), account_id=self.account_id, folder_id=folder,
            subject=str(message.get("subject") or ""), sender=address(message.get("from")),
            to=tuple(address(r) for r in message.get("toRecipients") or ()),
            cc=tuple(address(r) for r in message.get("ccRecipients") or ()),
            date=parse_time(message.get("receivedDateTime")), sent_date=parse_time(message.get("sentDateTime")),
            message_id=message_id, in_reply_to=in_reply_to, references=references,
            read=bool(message.get("isRead")),
            flagged=((message.get("flag") or {}).get("flagStatus") == "flagged"),
            answered=False, draft=bool(message.get("isDraft")),
            labels=self._category_ids(message.get("categories") or ()) if message.get("categories") else (),
            has_attachments=bool(message.get("hasAttachments")),
            thread_key=str(message.get("conversationId") or thread_root(message_id, references, in_reply_to)),
            thread_count=1,
            list_unsubscribe=parse_list_unsubscribe(headers.get("list-unsubscribe") or None),
            synthetic_id=synthetic, notes=tuple(notes),
        )

    def metadata(self, graph_id: str) -> dict:
        return self.api.get(f"/me/messages/{graph_id}", "messages.get", **{"$select": SELECT})

    def raw_of(self, graph_id: str) -> bytes:
        """The message's MIME bytes by Graph's own id."""
        return self.api.call("GET", f"/me/messages/{graph_id}/$value", what="messages.$value", raw=True)

    def raw(self, message_id: str) -> bytes:
        try:
            return self.raw_of(self.gid(message_id))
        except GraphNotFound as exc:
            raise self._gone(message_id, exc) from exc

    def full(self, graph_id: str, message: dict | None = None, raw: bytes | None = None) -> MailMessage:
        message = message or self.metadata(graph_id)
        raw = raw if raw is not None else self.raw_of(graph_id)
        header = self.header(message, raw)
        content = mime.parse_message(raw, backend_ref=header.id)
        attachments = tuple(MailAttachment(i, a.filename, a.content_type, a.size)
                            for i, a in enumerate(content.attachments))
        return MailMessage(header, content, attachments)

    # -- reads ---------------------------------------------------------------------------------------
    def _source_path(self, query: MailQuery) -> tuple[str, list[str]]:
        if query.folder is not None:
            return f"/me/mailFolders/{query.folder}/messages", []
        clauses = [f"categories/any(c:c eq {odata_string(self._category_name(query.label))})"]
        for role in ("trash", "junk"):  # a label source leaves Trash and Junk out
            folder = self.role_folder(role)
            if folder:
                clauses.append(f"parentFolderId ne {odata_string(folder)}")
        return "/me/messages", clauses

    def _category_name(self, label_id: str | None) -> str:
        for category in self.categories():
            if str(category.get("id")) == label_id:
                return str(category.get("displayName"))
        return str(label_id)

    def list(self, query: MailQuery) -> MailPage:
        path, clauses = self._source_path(query)
        if query.text:
            return self._search_page(path, clauses, query)
        since = query.since or datetime(1900, 1, 1, tzinfo=timezone.utc)
        # receivedDateTime first: Graph wants the $orderby property leading the $filter.
        filters = [f"receivedDateTime ge {graph_time(since)}", *self._flag_clauses(query), *clauses]
        page = self.api.get(path, "messages.list", **{
            "$filter": " and ".join(filters), "$orderby": "receivedDateTime desc", "$top": query.page_size,
            "$skip": query.offset, "$count": "true", "$select": SELECT}) or {}
        headers = [self.header(m) for m in page.get("value") or ()]
        total = int(page.get("@odata.count") or (query.offset + len(headers)))
        return MailPage(tuple(with_thread_counts(headers)), total, query.page, query.page_size)

    def _flag_clauses(self, query: MailQuery) -> list[str]:
        out = []
        if query.unread is not None:
            out.append(f"isRead eq {'false' if query.unread else 'true'}")
        if query.flagged is not None:
            out.append(f"flag/flagStatus {'eq' if query.flagged else 'ne'} 'flagged'")
        if query.has_attachment is not None:
            out.append(f"hasAttachments eq {'true' if query.has_attachment else 'false'}")
        if query.from_:
            out.append(f"from/emailAddress/address eq {odata_string(query.from_.strip())}")
        return out

    def _search_page(self, path: str, clauses: list[str], query: MailQuery) -> MailPage:
        terms = [kql_phrase(query.text)]  # KQL: each value one phrase, or its words split apart
        if query.from_:
            terms.append(kql_phrase(query.from_, "from"))
        wanted = query.offset + query.page_size
        matched: list[MailHeader] = []
        exhausted = True
        for message in self.api.pages(path, "messages.search", limit=SEARCH_CAP, **{
                "$search": '"' + " AND ".join(t for t in terms if t) + '"', "$top": min(query.page_size, 250),
                "$select": SELECT}):
            header = self.header(message)
            if self._keeps(header, query, clauses):
                matched.append(header)
                if len(matched) > wanted:
                    exhausted = False
                    break
        matched.sort(key=lambda h: h.date or _EPOCH, reverse=True)
        window = matched[query.offset:wanted]
        total = len(matched) if exhausted else wanted + 1
        notes = () if exhausted else ("more results than this page; the total is a lower bound",)
        return MailPage(tuple(with_thread_counts(window)), total, query.page, query.page_size,
                        search_limit=SEARCH_CAP, notes=notes)

    def _keeps(self, header: MailHeader, query: MailQuery, clauses: list[str]) -> bool:
        if not flags_and_date_match(header, query):
            return False
        if query.label is not None:
            excluded = {self.role_folder("trash"), self.role_folder("junk")}
            return header.folder_id not in excluded and query.label in header.labels
        return True

    def get(self, message_id: str) -> MailMessage:
        graph_id = self.gid(message_id)
        try:
            return self.full(graph_id)
        except GraphNotFound as exc:
            raise self._gone(message_id, exc) from exc

    def conversation(self, conversation_id: str, *, drafts: bool = False, select: str = SELECT) -> list[dict]:
        """Every message of a conversation (all folders), oldest first. ``select``: the
        properties wanted (a read that fetches the contents needs only the ID)."""
        messages = list(self.api.pages("/me/messages", "messages.conversation", **{
            "$filter": f"conversationId eq {odata_string(conversation_id)}", "$select": select, "$top": 100}))
        if not drafts:
            messages = [m for m in messages if not m.get("isDraft")]
        messages.sort(key=lambda m: str(m.get("receivedDateTime") or ""))
        return messages

    def thread(self, message_id: str) -> MailThread:
        graph_id = self.gid(message_id)
        try:
            first = self.metadata(graph_id)
        except GraphNotFound as exc:
            raise self._gone(message_id, exc) from exc
        conversation = str(first.get("conversationId"))
        members = self.conversation(conversation)
        # The contents in $batch calls (GraphApi.get_many), not one request a message; a
        # message deleted since the listing (None) is left out.
        raws = self.api.get_many([f"/me/messages/{m['id']}/$value" for m in members], "messages.$value", raw=True)
        return MailThread(conversation, tuple(self.full(str(m["id"]), m, raw) for m in members
                                              if (raw := raws.get(f"/me/messages/{m['id']}/$value")) is not None))

    def attachment(self, message_id: str, index: int) -> bytes:
        graph_id = self.gid(message_id)
        try:
            raw = self.raw_of(graph_id)
        except GraphNotFound as exc:
            raise self._gone(message_id, exc) from exc
        try:
            return mime.attachment_bytes(raw, index)
        except mime.AttachmentNotFound as exc:
            raise BackendFailure(self.account_id, f"{message_id}: {exc}") from exc

    def poll(self, cursor: str | None) -> PollResult:
        """Inbox polling with a delta query of created messages. ``poll(None)`` (or a
        delta token Graph forgot, 410) sets a silent baseline at the current time."""
        if cursor is None or not self.api.owns(cursor):
            return self._baseline()
        messages: list[MailHeader] = []
        link: str | None = cursor
        delta_link = cursor
        try:
            while link:
                page = self.api.get(link, "messages.delta") or {}
                for message in page.get("value") or ():
                    if "@removed" in message or message.get("isDraft"):
                        continue
                    messages.append(self.header(message))
                link = page.get("@odata.nextLink")
                delta_link = page.get("@odata.deltaLink") or delta_link
        except GraphGone:
            return self._baseline()
        return PollResult(delta_link, tuple(messages), baseline=False)

    def _baseline(self) -> PollResult:
        link: str | None = None
        page = self.api.get("/me/mailFolders/inbox/messages/delta", "messages.delta", **{
            "changeType": "created", "$select": SELECT,
            "$filter": f"receivedDateTime ge {graph_time(datetime.now(timezone.utc))}"}) or {}
        while True:  # the first round lists what matches now; it is not new mail
            link = page.get("@odata.deltaLink")
            if link or not page.get("@odata.nextLink"):
                break
            page = self.api.get(page["@odata.nextLink"], "messages.delta") or {}
        return PollResult(str(link or ""), (), baseline=True)

    # -- folders ----------------------------------------------------------------------------------------
    _root_id: str | None = None

    def list_folders(self) -> list[MailFolder]:
        """Every folder with unread/total counts, children after their parent (childFolders)."""
        top = list(self.api.pages("/me/mailFolders", "mailFolders", **{"$top": 100}))
        self._root_id = str(top[0].get("parentFolderId")) if top else None
        out: list[MailFolder] = []
        queue = top
        while queue:
            folder = queue.pop(0)
            parent = folder.get("parentFolderId")
            out.append(MailFolder(str(folder["id"]), str(folder.get("displayName") or ""),
                                  None if parent == self._root_id else (str(parent) if parent else None),
                                  self.roles().get(str(folder["id"])), int(folder.get("unreadItemCount") or 0),
                                  int(folder.get("totalItemCount") or 0)))
            if int(folder.get("childFolderCount") or 0):
                queue[0:0] = list(self.api.pages(f"/me/mailFolders/{folder['id']}/childFolders", "childFolders",
                                                 **{"$top": 100}))
        return out

    def _require_organize(self, op: str) -> None:
        if not self.account.organize:
            raise NotSupported(self.account_id, op, f"account {self.account_id!r} does not organize mail; set "
                                                    "organize = true (adds Mail.ReadWrite and "
                                                    "MailboxSettings.ReadWrite) and sign in again")

    def _not_role(self, folder_id: str, op: str) -> None:
        if folder_id in self.roles() or folder_id in ROLES:
            raise NotSupported(self.account_id, op, f"{self.roles().get(folder_id, folder_id)} is a role folder")

    def create_folder(self, name: str, parent_id: str | None = None) -> MailFolder:
        self._require_organize("createFolder")
        path = f"/me/mailFolders/{parent_id}/childFolders" if parent_id else "/me/mailFolders"
        created = self.api.post(path, {"displayName": name}, "mailFolders.create")
        return MailFolder(str(created["id"]), name, parent_id, None, 0, 0)

    def rename_folder(self, folder_id: str, name: str) -> MailFolder:
        self._require_organize("renameFolder")
        self._not_role(folder_id, "renameFolder")
        updated = self.api.patch(f"/me/mailFolders/{folder_id}", {"displayName": name}, "mailFolders.update")
        return MailFolder(folder_id, name, None, None, int(updated.get("unreadItemCount") or 0),
                          int(updated.get("totalItemCount") or 0))

    def delete_folder(self, folder_id: str) -> None:
        self._require_organize("deleteFolder")
        self._not_role(folder_id, "deleteFolder")
        self.api.call("DELETE", f"/me/mailFolders/{folder_id}", what="mailFolders.delete")

    def mark_folder_read(self, folder_id: str) -> None:
        self._require_organize("markFolderRead")
        unread = [str(m["id"]) for m in self.api.pages(f"/me/mailFolders/{folder_id}/messages", "messages.list", **{
            "$filter": "isRead eq false", "$select": "id", "$top": 100})]
        self._each([self.mid(i) for i in unread], "markFolderRead",
                   lambda gid: self.api.patch(f"/me/messages/{gid}", {"isRead": True}, "messages.update"),
                   bulk=False)

    def empty_folder(self, folder_id: str) -> None:
        self._require_organize("emptyFolder")
        role = self.roles().get(folder_id)
        if role not in ("trash", "junk"):
            raise NotSupported(self.account_id, "emptyFolder", "only Deleted Items and Junk Email can be emptied")
        ids = [str(m["id"]) for m in self.api.pages(f"/me/mailFolders/{folder_id}/messages", "messages.list",
                                                      **{"$select": "id", "$top": 100})]
        self._each([self.mid(i) for i in ids], "emptyFolder",
                   lambda gid: self.api.call("DELETE", f"/me/messages/{gid}", what="messages.delete"), bulk=False)

    # -- categories (labels) ---------------------------------------------------------------------------
    def _label(self, category: dict) -> MailLabel:
        return MailLabel(str(category["id"]), str(category.get("displayName") or ""),
                         preset_color(category.get("color")))

    def list_labels(self) -> LabelList:
        labels = sorted((self._label(c) for c in self.categories(refresh=True)), key=lambda label: label.name.lower())
        return LabelList(supported=True, folder_backed=False, labels=tuple(labels))

    def create_label(self, name: str) -> MailLabel:
        self._require_organize("createLabel")
        created = self.api.post("/me/outlook/masterCategories", {"displayName": name, "color": "none"},
                                "masterCategories.create")
        self._categories = None
        return self._label(created)

    def rename_label(self, label_id: str, name: str) -> MailLabel:
        raise NotSupported(self.account_id, "renameLabel", "Microsoft Graph cannot rename an Outlook category")

    def recolor_label(self, label_id: str, color: str) -> MailLabel:
        self._require_organize("recolorLabel")
        if color not in COLOR_PRESETS:
            raise InvalidQuery(f"colour must be one of {', '.join(COLOR_PRESETS)}, not {color!r}")
        updated = self.api.patch(f"/me/outlook/masterCategories/{label_id}", {"color": COLOR_PRESETS[color]},
                                 "masterCategories.update")
        self._categories = None
        return self._label(updated)

    def delete_label(self, label_id: str) -> None:
        self._require_organize("deleteLabel")
        self.api.call("DELETE", f"/me/outlook/masterCategories/{label_id}", what="masterCategories.delete")
        self._categories = None

    # -- bulk writes -------------------------------------------------------------------------------------
    def _each(self, ids: Sequence[str], op: str, action, *, bulk: bool = True) -> None:
        """Run ``action(graph id)`` per message; never report a batch with failures as done.

        Says per message what happened (:class:`PartialFailure`: ``done`` changed on the
        server; ``failed`` maps each other ID to why, starting "not changed", "perhaps
        changed" or "not attempted"). A message Graph refuses is skipped and the rest go
        on; an outage (throttling past the backoff, no answer, sign-in needed) stops the
        batch, and the PartialFailure then carries it as ``stopped_by``. When nothing was
        attempted but the first call, the outage is raised as it is."""
        ids = check_bulk(ids) if bulk else list(ids)
        graph_ids = [self.gid(i) for i in ids]  # every ID checked before the first request
        failed: dict[str, str] = {}
        done: list[str] = []
        for index, (message_id, graph_id) in enumerate(zip(ids, graph_ids)):
            try:
                action(graph_id)
                done.append(message_id)
            except BackendFailure as exc:
                failed[message_id] = f"not changed: {exc.detail}"
            except Unavailable as exc:
                if not done and not failed and index == len(ids) - 1:
                    raise  # one message, nothing else to report: the outage as it is
                state = "not changed" if isinstance(exc, (GraphThrottled, SignInNeeded)) else \
                    "perhaps changed (no clear answer; refresh to see)"
                failed[message_id] = f"{state}: {exc.reason}"
                for rest in ids[index + 1:]:
                    failed[rest] = f"not attempted: the batch stopped ({exc.reason})"
                partial = PartialFailure(self.account_id, op, failed, done)
                partial.stopped_by = exc  # type: ignore[attr-defined]  # organize stops its batches too
                raise partial from exc
        if failed:
            raise PartialFailure(self.account_id, op, failed, done)

    def set_flags(self, ids: Sequence[str], *, read: bool | None = None, flagged: bool | None = None) -> None:
        if read is None and flagged is None:
            raise InvalidQuery("setFlags needs at least one of read, flagged")
        self._require_organize("setFlags")
        body: dict[str, Any] = {}
        if read is not None:
            body["isRead"] = read
        if flagged is not None:
            body["flag"] = {"flagStatus": "flagged" if flagged else "notFlagged"}
        self._each(ids, "setFlags", lambda gid: self.api.patch(f"/me/messages/{gid}", body, "messages.update"))

    def set_labels(self, ids: Sequence[str], add: Sequence[str], remove: Sequence[str]) -> None:
        self._require_organize("setLabels")
        names = {str(c["id"]): str(c.get("displayName")) for c in self.categories(refresh=True)}
        unknown = [label for label in (*add, *remove) if label not in names]
        if unknown:
            raise BackendFailure(self.account_id, f"setLabels: no category {', '.join(map(repr, unknown))}")
        adding, removing = [names[a] for a in add], {names[r] for r in remove}

        def change(gid: str) -> None:
            current = list(self.api.get(f"/me/messages/{gid}", "messages.get", **{"$select": "categories"})
                           .get("categories") or [])
            wanted = [c for c in current if c not in removing] + [a for a in adding if a not in current]
            self.api.patch(f"/me/messages/{gid}", {"categories": wanted}, "messages.update")

        self._each(ids, "setLabels", change)

    def move(self, ids: Sequence[str], folder_id: str) -> None:
        self._require_organize("move")
        self._each(ids, "move", lambda gid: self.api.post(f"/me/messages/{gid}/move", {"destinationId": folder_id},
                                                          "messages.move"))

    def archive(self, ids: Sequence[str]) -> None:
        self.move(ids, "archive")

    def trash(self, ids: Sequence[str]) -> None:
        self.move(ids, "deleteditems")

    def delete_permanently(self, ids: Sequence[str]) -> None:
        """Only mail already in Deleted Items; the whole request is refused otherwise."""
        self._require_organize("deletePermanently")
        ids = check_bulk(ids)
        trash = self.role_folder("trash")
        graph_ids = [self.gid(i) for i in ids]
        for message_id, graph_id in zip(ids, graph_ids):
            folder = self.api.get(f"/me/messages/{graph_id}", "messages.get", **{"$select": "parentFolderId"})
            if folder.get("parentFolderId") != trash:
                raise NotSupported(self.account_id, "deletePermanently", f"{message_id} is not in Deleted Items; "
                                                                         "permanent deletion is Trash-only")
        self._each(ids, "deletePermanently",
                   lambda gid: self.api.call("DELETE", f"/me/messages/{gid}", what="messages.delete"))

    # -- compose -------------------------------------------------------------------------------------------
    def compose_draft(self, compose: Compose) -> tuple[str, MailMessage | None]:
        """Create the draft on Graph: createReply/createReplyAll/createForward on the source
        (Exchange threads it), or a new message. Returns (graph id, source message)."""
        source = None
        body = {"contentType": "Text", "content": compose.body}
        if compose.kind == "new":
            created = self.api.post("/me/messages", {
                "subject": compose.subject or "", "body": body, "toRecipients": recipients(compose.to),
                "ccRecipients": recipients(compose.cc), "bccRecipients": recipients(compose.bcc)}, "messages.create")
        else:
            source_gid = self.gid(compose.source_id)
            try:
                source = self.full(source_gid)
            except GraphNotFound as exc:
                raise self._gone(compose.source_id, exc) from exc
            action = {"reply": "createReply", "reply_all": "createReplyAll", "forward": "createForward"}[compose.kind]
            initial = {"toRecipients": recipients(compose.to)} if compose.kind == "forward" else {}
            created = self.api.post(f"/me/messages/{source_gid}/{action}", initial or {}, f"messages.{action}")
            update: dict[str, Any] = {"body": body}
            if compose.to and compose.kind != "forward":
                update["toRecipients"] = recipients(compose.to)
            if compose.cc:
                update["ccRecipients"] = recipients(compose.cc)
            if compose.bcc:
                update["bccRecipients"] = recipients(compose.bcc)
            if compose.subject:
                update["subject"] = compose.subject
            elif compose.kind != "forward":
                update["subject"] = reply_subject(source.content.subject)
            try:
                self.api.patch(f"/me/messages/{created['id']}", update, "messages.update")
            except (BackendFailure, Unavailable) as exc:
                raise self._abandon(str(created["id"]), "setting the draft's body and recipients", exc) from exc
        draft_id = str(created["id"])
        for attachment in compose.attachments:
            try:
                self._attach(draft_id, attachment)
            except (BackendFailure, Unavailable) as exc:
                raise self._abandon(draft_id, f"attaching {attachment.filename!r}", exc) from exc
        return draft_id, source

    def _attach(self, draft_id: str, attachment) -> None:
        """One file onto the draft: a plain POST under 3 MB, an upload session from 3 MB
        (Graph, "Attach large files to Outlook messages or events": POST is for files
        under 3 MB; createUploadSession, then PUTs of at most 4 MB, up to 150 MB)."""
        data = attachment.data
        if len(data) < LARGE_ATTACHMENT:
            self.api.post(f"/me/messages/{draft_id}/attachments", {
                "@odata.type": "#microsoft.graph.fileAttachment", "name": attachment.filename,
                "contentType": attachment.content_type,
                "contentBytes": base64.b64encode(data).decode("ascii")}, "attachments.create")
            return
        session = self.api.post(f"/me/messages/{draft_id}/attachments/createUploadSession", {"AttachmentItem": {
            "attachmentType": "file", "name": attachment.filename, "size": len(data),
            "contentType": attachment.content_type}}, "attachments.createUploadSession") or {}
        url = str(session.get("uploadUrl") or "")
        if not url.startswith("https://"):
            raise BackendFailure(self.account_id, "Graph gave no https upload URL for the attachment")
        for start in range(0, len(data), UPLOAD_CHUNK):
            chunk = data[start:start + UPLOAD_CHUNK]
            end = start + len(chunk) - 1
            # The upload URL carries its own token: no Authorization header (Graph's docs say
            # sending one may fail the PUT), and our bearer token never leaves graph_base.
            try:
                response = self.api.http.request("PUT", url, content=chunk, headers={
                    "Content-Type": "application/octet-stream", "Content-Range": f"bytes {start}-{end}/{len(data)}"})
            except HttpError as exc:
                raise Unavailable(self.account_id, f"Graph attachment upload: {exc.detail}") from None
            if response.status_code not in (200, 201):
                raise BackendFailure(self.account_id, f"Graph attachment upload: {response.status_code} at bytes "
                                                      f"{start}-{end} of {len(data)}")

    def _abandon(self, draft_id: str, step: str, exc: Exception) -> BackendFailure:
        """A compose failed after the draft was made: remove it, or say exactly what is left."""
        reason = getattr(exc, "detail", None) or getattr(exc, "reason", None) or str(exc)
        try:
            self.api.call("DELETE", f"/me/messages/{draft_id}", what="messages.delete")
        except (BackendFailure, Unavailable) as failed:
            left = getattr(failed, "detail", None) or getattr(failed, "reason", None) or str(failed)
            return BackendFailure(self.account_id, f"{step} failed ({reason}); the incomplete draft "
                                                   f"{self.mid(draft_id)} is left in Drafts (removing it failed: "
                                                   f"{left}): delete it in Outlook")
        return BackendFailure(self.account_id, f"{step} failed ({reason}); the incomplete draft "
                                               "was removed, nothing is left behind")

    def save_draft(self, compose: Compose) -> str:
        if not self.account.can_draft:
            raise NotSupported(self.account_id, "createDraft", f"account access is {self.account.access!r}; "
                                                               "drafts need \"draft\" or \"send\"")
        return self.mid(self.compose_draft(compose)[0])

    def send(self, compose: Compose, *, confirmed: bool, ledger: SendLedger | None = None) -> str:
        """Send after Principle 10 (a draft is made, then sent). Returns the message's ID."""
        if not confirmed:
            raise SendNotConfirmed(self.account_id)
        if not self.account.can_send:
            raise NotSupported(self.account_id, "send", f"account access is {self.account.access!r}; sending needs "
                                                        "access = \"send\"")
        ledger = ledger or SendLedger()
        source = None
        if compose.kind in ("reply", "reply_all"):
            try:
                source = self.full(self.gid(compose.source_id))
            except GraphNotFound as exc:
                raise self._gone(compose.source_id, exc) from exc
        refusal = check_send(list(source.content.headers) if source else None, authserv_id=self.account.authserv_id,
                             sent_recently=ledger.count(self.account_id), send_cap=self.account.send_cap)
        if refusal is not None:
            raise SendRefused(refusal)
        draft_id, _source = self.compose_draft(compose)
        self.api.post(f"/me/messages/{draft_id}/send", None, "messages.send")
        ledger.record(self.account_id)
        return self.mid(draft_id)

    def verify(self) -> dict:
        inbox = self.api.get("/me/mailFolders/inbox", "mailFolders/inbox")
        return {"account": self.account_id, "inbox_total": inbox.get("totalItemCount"),
                "scopes": list(self.account.scopes)}

    def abort(self, opening_only: bool = False) -> None:
        self.api.abort(opening_only)

    def close(self) -> None:
        self.api.close()
