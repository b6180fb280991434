"""``GmailMailbox``: the personal-account mailbox adapter over the Gmail API.

Gmail has labels, not folders: the system labels INBOX, DRAFT, SENT, SPAM and TRASH
are the role folders, "All Mail" (no label) is the archive, and user labels are both
folders (``folderBacked``: Gmail's labels are its folders) and labels. Label colours
are read (mapped to the canonical colour names) but never written: the adapter
contract has Gmail reject colour writes. Permanent deletion needs Google's full
``https://mail.google.com/`` scope, which mailtriage never asks for, so it is declined.

Writes to flags, labels and placement need ``organize = true`` on the account (it adds
the gmail.modify scope); without it they are declined with NotSupported.
"""

from __future__ import annotations

import base64
import colorsys
import threading
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any, Sequence

from mailtriage.backends import mime, mime_dates, mime_header_text, mime_headers, mime_ids
from mailtriage.backends.contract import Address
from mailtriage.backends.errors import BackendFailure, NotSupported, SignInNeeded, Unavailable
from mailtriage.backends.gmail.account import GoogleAccount
from mailtriage.backends.gmail.api import USER, GmailApi, GmailNotFound, PageTokens, deleted_note
from mailtriage.backends.gmail.ids import decode_message_id, encode_message_id
from mailtriage.backends.imap.headers import parse_list_unsubscribe, thread_root
from mailtriage.backends.mailbox_contract import (MAIL_LABEL_COLORS, Compose, InvalidQuery, LabelList, MailAttachment,
                                                  MailboxAdapter, MailFolder, MailHeader, MailLabel, MailMessage, MailPage,
                                                  MailQuery, MailThread, PartialFailure, PollResult, StaleMessageId,
                                                  check_bulk, with_thread_counts)
from mailtriage.backends.outgoing import SendNotConfirmed, as_bytes, compose_message
from mailtriage.backends.send_ledger import SendLedger
from mailtriage.backends.send_policy import SendRefused, check_send

# (label id, display name, role) of the role folders; ALL is Gmail's "All Mail" (no label).
SYSTEM_FOLDERS = (("INBOX", "Inbox", "inbox"), ("DRAFT", "Drafts", "drafts"), ("SENT", "Sent", "sent"),
                  ("SPAM", "Spam", "junk"), ("TRASH", "Trash", "trash"), ("ALL", "All Mail", "archive"))
ALL_MAIL = "ALL"
# The labels that place a message (a "move" replaces them); user labels stay.
PLACEMENT = ("INBOX", "SPAM", "TRASH")
# Raw messages kept after a read (newest first out), so that saving an attachment of a
# thread just read does not download the message again. A message's bytes never change in
# Gmail (its labels do, and are never taken from here).
RAW_CACHE_BYTES = 64 * 1024 * 1024
METADATA_HEADERS = ("From", "To", "Cc", "Subject", "Date", "Message-ID", "In-Reply-To", "References",
                    "List-Unsubscribe")


def nearest_color(hex_color: str | None) -> str | None:
    """The canonical colour name (MAIL_LABEL_COLORS) nearest to a ``#rrggbb`` colour."""
    if not hex_color or len(hex_color) != 7 or not hex_color.startswith("#"):
        return None
    try:
        r, g, b = (int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    except ValueError:
        return None
    hue, _light, saturation = colorsys.rgb_to_hls(r, g, b)
    if saturation < 0.2 or max(r, g, b) - min(r, g, b) < 0.08:
        return "gray"
    degrees = hue * 360
    for limit, name in ((15, "red"), (40, "orange"), (70, "yellow"), (160, "green"), (200, "teal"),
                        (250, "blue"), (290, "purple"), (345, "pink"), (361, "red")):
        if degrees < limit:
            return name
    return None  # pragma: no cover


def nest(name: str, names) -> tuple[str | None, str]:
    """A user label's place in the folder tree: (its nearest ancestor label's name or None,
    the name shown). Gmail's labels have only names (``labels.list`` gives no parent); the
    web UI nests them by "/". A missing ancestor label is skipped, so "Vendors/Acme" without
    a "Vendors" label is a top folder named "Vendors/Acme", never a second bare "Acme"."""
    parts = name.split("/")
    for cut in range(len(parts) - 1, 0, -1):
        ancestor = "/".join(parts[:cut])
        if ancestor in names:
            return ancestor, "/".join(parts[cut:])
    return None, name


def b64decode(data: str) -> bytes:
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


def b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def internal_date(message: dict) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(message["internalDate"]) / 1000, tz=timezone.utc)
    except (KeyError, TypeError, ValueError):
        return None


def header_block(message: dict) -> bytes:
    """The ``payload.headers`` of a metadata/full message as a raw header block."""
    lines = []
    for item in (message.get("payload") or {}).get("headers") or ():
        name, value = str(item.get("name", "")), str(item.get("value", ""))
        if name:
            lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n").encode("utf-8", "surrogateescape")


def quote_term(text: str) -> str:
    """A Gmail search term that cannot turn into an operator."""
    cleaned = " ".join(text.replace('"', " ").split())
    return f'"{cleaned}"' if cleaned else ""


def query_terms(query: MailQuery) -> str:
    terms = []
    if query.text:
        terms.append(quote_term(query.text))
    if query.from_:
        terms.append(f"from:({quote_term(query.from_)})")
    for value, word in ((query.unread, "is:unread"), (query.flagged, "is:starred"),
                        (query.has_attachment, "has:attachment")):
        if value is not None:
            terms.append(word if value else f"-{word}")
    if query.since is not None:
        since = query.since if query.since.tzinfo else query.since.replace(tzinfo=timezone.utc)
        terms.append(f"after:{int(since.timestamp())}")
    return " ".join(t for t in terms if t)


class GmailMailbox(MailboxAdapter):
    """The mailbox of one Google account. Thread-safe enough to share (HTTP only, no session state)."""

    def __init__(self, account: GoogleAccount, *, api: GmailApi | None = None) -> None:
        self.account = account
        self.account_id = account.id
        self.api = api or GmailApi(account)
        self._labels: dict[str, dict] | None = None
        self.page_tokens = PageTokens()
        self._raw_kept: OrderedDict[str, bytes] = OrderedDict()
        self._raw_lock = threading.Lock()

    # -- ids and message reads -----------------------------------------------------------
    def gid(self, message_id: str) -> str:
        return decode_message_id(message_id, self.account_id)

    def mid(self, gmail_id: str) -> str:
        return encode_message_id(self.account_id, gmail_id)

    def _not_found(self, message_id: str, exc: GmailNotFound) -> StaleMessageId:
        return StaleMessageId(self.account_id, message_id, f"Gmail has no such message any more ({exc.detail})")

    def metadata(self, gmail_id: str) -> dict:
        return self.api.get(f"{USER}/messages/{gmail_id}", "messages.get", format="metadata",
                            metadataHeaders=list(METADATA_HEADERS))

    def raw(self, message_id: str) -> bytes:
        gmail_id = self.gid(message_id)
        try:
            return self.raw_bytes(gmail_id)
        except GmailNotFound as exc:
            raise self._not_found(message_id, exc) from exc

    def fetch_raw(self, gmail_id: str) -> tuple[dict, bytes]:
        """messages.get in raw format by Gmail's own id: the answer and the RFC 822 bytes."""
        message = self.api.get(f"{USER}/messages/{gmail_id}", "messages.get", format="raw")
        raw = b64decode(str(message.get("raw") or ""))
        self._keep(gmail_id, raw)
        return message, raw

    def _keep(self, gmail_id: str, raw: bytes) -> None:
        if len(raw) > RAW_CACHE_BYTES:
            return
        with self._raw_lock:
            self._raw_kept[gmail_id] = raw
            self._raw_kept.move_to_end(gmail_id)
            while sum(len(r) for r in self._raw_kept.values()) > RAW_CACHE_BYTES:
                self._raw_kept.popitem(last=False)

    def raw_bytes(self, gmail_id: str) -> bytes:
        """The message's RFC 822 bytes: kept from a recent read, else downloaded."""
        with self._raw_lock:
            kept = self._raw_kept.get(gmail_id)
        return kept if kept is not None else self.fetch_raw(gmail_id)[1]

    def header(self, message: dict, raw: bytes | None = None) -> MailHeader:
        """A :class:`MailHeader` from a messages.get answer (metadata, or raw with ``raw``)."""
        block = mime_headers.split_header_block(raw)[0] if raw is not None else header_block(message)
        fields = mime_headers.header_fields(block)
        notes: list[str] = []
        subject, found = mime_header_text.decode_header_text(fields.get(b"subject"))
        notes.extend(f"subject: {n}" for n in found)
        senders = mime_header_text.parse_address_list(fields.get(b"from"))
        message_id = mime_ids.extract_msgid(fields.get(b"message-id"))
        synthetic = message_id is None
        if synthetic:
            if raw is None:  # the synthetic ID hashes the whole header block, as the MIME parser does
                _, raw = self.fetch_raw(message["id"])
                return self.header(message, raw)
            message_id = mime_headers.synthetic_message_id(block)
            notes.append("no Message-ID; a synthetic one stands in")
        references = mime_ids.extract_msgids(fields.get(b"references"))
        in_reply_to = mime_ids.extract_msgid(fields.get(b"in-reply-to"))
        labels = tuple(message.get("labelIds") or ())
        unsubscribe = fields.get(b"list-unsubscribe")
        mime_type = str((message.get("payload") or {}).get("mimeType") or "")
        if raw is not None:
            content_type = mime_headers.header_fields(block, {b"content-type"}).get(b"content-type", b"")
            mime_type = content_type.decode("ascii", "replace").split(";")[0].strip()
        return MailHeader(
            id=self.mid(message["id"]),
            account_id=self.account_id,
            folder_id=next((f for f, _n, _r in SYSTEM_FOLDERS if f in labels), ALL_MAIL),
            subject=subject,
            sender=senders[0] if senders else Address("", ""),
            to=mime_header_text.parse_address_list(fields.get(b"to")),
            cc=mime_header_text.parse_address_list(fields.get(b"cc")),
            date=internal_date(message),
            sent_date=mime_dates.parse_date(fields.get(b"date")),
            message_id=message_id,
            in_reply_to=in_reply_to,
            references=references,
            read="UNREAD" not in labels,
            flagged="STARRED" in labels,
            answered=False,
            draft="DRAFT" in labels,
            labels=tuple(label for label in labels if label.startswith("Label_")),
            has_attachments=mime_type.lower() == "multipart/mixed",
            thread_key=str(message.get("threadId") or thread_root(message_id, references, in_reply_to)),
            thread_count=1,
            list_unsubscribe=parse_list_unsubscribe(unsubscribe.decode("utf-8", "replace") if unsubscribe else None),
            size=message.get("sizeEstimate"),
            synthetic_id=synthetic,
            notes=tuple(dict.fromkeys(notes)),
        )

    def full(self, gmail_id: str) -> tuple[MailMessage, bytes]:
        message, raw = self.fetch_raw(gmail_id)
        header = self.header(message, raw)
        content = mime.parse_message(raw, backend_ref=header.id)
        attachments = tuple(MailAttachment(i, a.filename, a.content_type, a.size)
                            for i, a in enumerate(content.attachments))
        return MailMessage(header, content, attachments), raw

    # -- reads ----------------------------------------------------------------------------
    def list(self, query: MailQuery) -> MailPage:
        """One page of messages, newest first. ``total`` is Gmail's ``resultSizeEstimate``."""
        source = query.folder if query.folder is not None else query.label
        params: dict[str, Any] = {"maxResults": query.page_size}
        if source != ALL_MAIL:
            params["labelIds"] = source
        q = query_terms(query)
        if q:
            params["q"] = q
        if source in ("SPAM", "TRASH"):
            params["includeSpamTrash"] = True
        page, _more, total = self.page_tokens.page(self.api, f"{USER}/messages", "messages.list", params, query.page)
        refs = page.get("messages") or []
        headers, gone = self.api.fetch_present(lambda ref: self.header(self.metadata(ref["id"])), refs)
        headers.sort(key=lambda h: (h.date or datetime.min.replace(tzinfo=timezone.utc)), reverse=True)
        total = max(total, query.offset + len(headers))
        notes = ("total is Gmail's estimate (resultSizeEstimate)",) + ((deleted_note(gone),) if gone else ())
        return MailPage(tuple(with_thread_counts(headers)), total, query.page, query.page_size, notes=notes)

    def get(self, message_id: str) -> MailMessage:
        gmail_id = self.gid(message_id)
        try:
            return self.full(gmail_id)[0]
        except GmailNotFound as exc:
            raise self._not_found(message_id, exc) from exc

    def thread(self, message_id: str) -> MailThread:
        """The Gmail thread of a message, chronological (drafts left out)."""
        gmail_id = self.gid(message_id)
        try:
            first = self.api.get(f"{USER}/messages/{gmail_id}", "messages.get", format="minimal")
        except GmailNotFound as exc:
            raise self._not_found(message_id, exc) from exc
        thread_id = str(first["threadId"])
        members = self.thread_messages(thread_id)
        wanted = [m for m in members if "DRAFT" not in (m.get("labelIds") or ())]
        messages, _gone = self.api.fetch_present(lambda m: self.full(m["id"])[0], wanted)  # deleted meanwhile: left out
        return MailThread(thread_id, tuple(messages))

    def thread_messages(self, thread_id: str) -> list[dict]:
        """The thread's messages (id, labelIds, internalDate), oldest first."""
        thread = self.api.get(f"{USER}/threads/{thread_id}", "threads.get", format="minimal") or {}
        members = list(thread.get("messages") or ())
        members.sort(key=lambda m: int(m.get("internalDate") or 0))
        return members

    def attachment(self, message_id: str, index: int) -> bytes:
        gmail_id = self.gid(message_id)
        try:
            raw = self.raw_bytes(gmail_id)
        except GmailNotFound as exc:
            raise self._not_found(message_id, exc) from exc
        try:
            return mime.attachment_bytes(raw, index)
        except mime.AttachmentNotFound as exc:
            raise BackendFailure(self.account_id, f"{message_id}: {exc}") from exc

    def poll(self, cursor: str | None) -> PollResult:
        """Inbox polling by Gmail history. ``poll(None)`` (or an expired cursor) sets a silent
        baseline; later polls return the INBOX mail added since the cursor."""
        if cursor is None:
            return self._baseline()
        messages: list[MailHeader] = []
        seen: set[str] = set()
        token, latest = None, cursor
        while True:
            try:
                page = self.api.get(f"{USER}/history", "history.list", startHistoryId=cursor,
                                    historyTypes="messageAdded", labelId="INBOX",
                                    **({"pageToken": token} if token else {})) or {}
            except GmailNotFound:
                return self._baseline()  # the cursor is too old: Gmail forgot it
            latest = str(page.get("historyId") or latest)
            for record in page.get("history") or ():
                for added in record.get("messagesAdded") or ():
                    ref = added.get("message") or {}
                    if ref.get("id") in seen or "INBOX" not in (ref.get("labelIds") or ("INBOX",)):
                        continue
                    seen.add(ref["id"])
                    try:
                        messages.append(self.header(self.metadata(ref["id"])))
                    except GmailNotFound:
                        continue  # deleted again before we looked
            token = page.get("nextPageToken")
            if not token:
                break
        return PollResult(latest, tuple(messages), baseline=False)

    def _baseline(self) -> PollResult:
        profile = self.api.get(f"{USER}/profile", "getProfile") or {}
        return PollResult(str(profile.get("historyId") or "0"), (), baseline=True)

    # -- folders and labels ---------------------------------------------------------------
    def _label_map(self, refresh: bool = False) -> dict[str, dict]:
        if self._labels is None or refresh:
            labels = (self.api.get(f"{USER}/labels", "labels.list") or {}).get("labels") or []
            self._labels = {str(label["id"]): label for label in labels}
        return self._labels

    def _label_details(self, label_id: str) -> dict:
        return self.api.get(f"{USER}/labels/{label_id}", "labels.get") or {}

    def list_folders(self) -> list[MailFolder]:
        """Role folders (with counts) and user labels (nested by ``/``, see :func:`nest`)."""
        out = []
        for label_id, name, role in SYSTEM_FOLDERS:
            if label_id == ALL_MAIL:
                profile = self.api.get(f"{USER}/profile", "getProfile") or {}
                out.append(MailFolder(label_id, name, None, role, 0, int(profile.get("messagesTotal") or 0)))
                continue
            details = self._label_details(label_id)
            out.append(MailFolder(label_id, name, None, role, int(details.get("messagesUnread") or 0),
                                  int(details.get("messagesTotal") or 0)))
        users = [label for label in self._label_map(refresh=True).values() if label.get("type") == "user"]
        by_name = {str(label["name"]): str(label["id"]) for label in users}
        for label in sorted(users, key=lambda item: str(item["name"])):
            details = self._label_details(str(label["id"]))
            ancestor, shown = nest(str(label["name"]), by_name)
            out.append(MailFolder(str(label["id"]), shown, by_name.get(ancestor) if ancestor else None, None,
                                  int(details.get("messagesUnread") or 0), int(details.get("messagesTotal") or 0)))
        return out

    def list_labels(self) -> LabelList:
        labels = []
        for label in self._label_map(refresh=True).values():
            if label.get("type") != "user":
                continue
            color = nearest_color((label.get("color") or {}).get("backgroundColor"))
            labels.append(MailLabel(str(label["id"]), str(label["name"]), color))
        labels.sort(key=lambda item: item.name.lower())
        return LabelList(supported=True, folder_backed=True, labels=tuple(labels))

    def _require_organize(self, op: str) -> None:
        if not self.account.organize:
            raise NotSupported(self.account_id, op, f"account {self.account_id!r} does not organize mail; set "
                                                    "organize = true (adds the gmail.modify scope) and sign in again")

    def _user_label(self, label_id: str, op: str) -> dict:
        label = self._label_map().get(label_id) or self._label_map(refresh=True).get(label_id)
        if label is None:
            raise BackendFailure(self.account_id, f"{op}: no label {label_id!r}")
        if label.get("type") != "user":
            raise NotSupported(self.account_id, op, f"{label_id} is a Gmail system label")
        return label

    def _label(self, label: dict) -> MailLabel:
        return MailLabel(str(label["id"]), str(label["name"]),
                         nearest_color((label.get("color") or {}).get("backgroundColor")))

    def create_label(self, name: str) -> MailLabel:
        self._require_organize("createLabel")
        created = self.api.post(f"{USER}/labels", {"name": name, "labelListVisibility": "labelShow",
                                                   "messageListVisibility": "show"}, "labels.create")
        self._labels = None
        return self._label(created)

    def rename_label(self, label_id: str, name: str) -> MailLabel:
        self._require_organize("renameLabel")
        self._user_label(label_id, "renameLabel")
        updated = self.api.call("PATCH", f"{USER}/labels/{label_id}", body={"name": name}, what="labels.patch")
        self._labels = None
        return self._label(updated)

    def recolor_label(self, label_id: str, color: str) -> MailLabel:
        raise NotSupported(self.account_id, "recolorLabel", "Gmail label colours are not written by mailtriage "
                                                            "(the adapter contract has Gmail reject colour writes)")

    def delete_label(self, label_id: str) -> None:
        self._require_organize("deleteLabel")
        self._user_label(label_id, "deleteLabel")
        self.api.call("DELETE", f"{USER}/labels/{label_id}", what="labels.delete")
        self._labels = None

    def create_folder(self, name: str, parent_id: str | None = None) -> MailFolder:
        full = name
        if parent_id is not None:
            full = f"{self._user_label(parent_id, 'createFolder')['name']}/{name}"
        label = self.create_label(full)
        return MailFolder(label.id, name, parent_id, None, 0, 0)

    def rename_folder(self, folder_id: str, name: str) -> MailFolder:
        old = self._user_label(folder_id, "renameFolder")
        names = {str(label["name"]) for label in self._label_map().values() if label.get("type") == "user"}
        prefix = nest(str(old["name"]), names)[0]  # the name shown is replaced, its parent kept
        label = self.rename_label(folder_id, f"{prefix}/{name}" if prefix else name)
        details = self._label_details(label.id)
        return MailFolder(label.id, name, None, None, int(details.get("messagesUnread") or 0),
                          int(details.get("messagesTotal") or 0))

    def delete_folder(self, folder_id: str) -> None:
        self.delete_label(folder_id)

    def mark_folder_read(self, folder_id: str) -> None:
        self._require_organize("markFolderRead")
        params: dict[str, Any] = {"q": "is:unread", "maxResults": 500}
        if folder_id != ALL_MAIL:
            params["labelIds"] = folder_id
        ids = [m["id"] for m in self.api.pages(f"{USER}/messages", "messages", "messages.list", **params)]
        for start in range(0, len(ids), 1000):
            self.api.post(f"{USER}/messages/batchModify", {"ids": ids[start:start + 1000],
                                                           "removeLabelIds": ["UNREAD"]}, "messages.batchModify")

    def empty_folder(self, folder_id: str) -> None:
        raise NotSupported(self.account_id, "emptyFolder", "permanent deletion needs Google's full mail scope, "
                                                           "which mailtriage does not request")

    # -- bulk writes ----------------------------------------------------------------------
    # A write that fails as an outage (a 429 past the backoff deadline, a timeout, a 5xx) may
    # or may not have happened: the labels are read back, so that the error says exactly
    # which messages changed (PartialFailure: done / failed, as application/flows/organize.py reads it).
    def _labels_now(self, gmail_ids: Sequence[str]) -> dict[str, set[str]] | None:
        """Each message's labels now (a deleted one left out); None when Gmail cannot be read."""
        def labels(gmail_id: str):
            message = self.api.get(f"{USER}/messages/{gmail_id}", "messages.get", format="minimal") or {}
            return gmail_id, set(message.get("labelIds") or ())

        try:
            found, _gone = self.api.fetch_present(labels, gmail_ids)
        except Unavailable:
            return None
        return dict(found)

    def _modify(self, ids: Sequence[str], add: Sequence[str], remove: Sequence[str], op: str) -> None:
        self._require_organize(op)
        gmail_ids = [self.gid(i) for i in check_bulk(ids)]  # all refused before any request when one is foreign
        try:
            self.api.post(f"{USER}/messages/batchModify", {"ids": gmail_ids, "addLabelIds": list(add),
                                                           "removeLabelIds": list(remove)}, "messages.batchModify")
        except SignInNeeded:
            raise
        except Unavailable as exc:
            now = self._labels_now(gmail_ids)
            if now is None:
                raise PartialFailure(self.account_id, op, {i: f"unknown whether it changed ({exc}); Gmail could "
                                                              f"not be read to check" for i in ids}, []) from exc
            changed = [i for i, g in zip(ids, gmail_ids)
                       if g in now and set(add) <= now[g] and not set(remove) & now[g]]
            if len(changed) == len(ids):
                return  # the write happened; only its answer was lost
            if not changed:
                raise
            raise PartialFailure(self.account_id, op, {i: str(exc) for i in ids if i not in changed},
                                 changed) from exc

    def set_flags(self, ids: Sequence[str], *, read: bool | None = None, flagged: bool | None = None) -> None:
        if read is None and flagged is None:
            raise InvalidQuery("setFlags needs at least one of read, flagged")
        add, remove = [], []
        if read is not None:
            (remove if read else add).append("UNREAD")
        if flagged is not None:
            (add if flagged else remove).append("STARRED")
        self._modify(ids, add, remove, "setFlags")

    def set_labels(self, ids: Sequence[str], add: Sequence[str], remove: Sequence[str]) -> None:
        for label_id in (*add, *remove):
            self._user_label(label_id, "setLabels")
        self._modify(ids, add, remove, "setLabels")

    def move(self, ids: Sequence[str], folder_id: str) -> None:
        if folder_id == "TRASH":
            self.trash(ids)
            return
        if folder_id in ("DRAFT", "SENT"):
            raise NotSupported(self.account_id, "move", f"Gmail does not move mail into {folder_id}")
        add = [] if folder_id == ALL_MAIL else [folder_id]
        self._modify(ids, add, [p for p in PLACEMENT if p != folder_id], "move")

    def archive(self, ids: Sequence[str]) -> None:
        self._modify(ids, [], ["INBOX"], "archive")

    def trash(self, ids: Sequence[str]) -> None:
        self._require_organize("trash")
        gmail_ids = [self.gid(i) for i in check_bulk(ids)]
        failed: dict[str, str] = {}
        done: list[str] = []
        pairs = list(zip(ids, gmail_ids))
        for index, (message_id, gmail_id) in enumerate(pairs):
            try:
                self.api.post(f"{USER}/messages/{gmail_id}/trash", None, "messages.trash")
                done.append(message_id)
            except BackendFailure as exc:  # this message (gone, refused): go on with the next
                failed[message_id] = str(exc)
            except Unavailable as exc:  # throttled past the deadline, timed out, Gmail away: stop here
                now = None if isinstance(exc, SignInNeeded) else self._labels_now([gmail_id])
                if now is not None and "TRASH" in now.get(gmail_id, set()):
                    done.append(message_id)  # it happened; only the answer was lost
                elif now is None and not isinstance(exc, SignInNeeded):
                    failed[message_id] = f"unknown whether it was trashed ({exc}); Gmail could not be read to check"
                else:
                    failed[message_id] = str(exc)
                failed.update({m: f"not attempted: Gmail stopped answering ({exc})" for m, _g in pairs[index + 1:]})
                if not done and not any(f.startswith("unknown") for f in failed.values()) and \
                        len(failed) == len(pairs):
                    raise  # nothing changed at all: the error as it is
                break
        if failed:
            raise PartialFailure(self.account_id, "trash", failed, done)

    def delete_permanently(self, ids: Sequence[str]) -> None:
        check_bulk(ids)
        raise NotSupported(self.account_id, "deletePermanently", "permanent deletion needs Google's full mail "
                                                                 "scope (https://mail.google.com/), which "
                                                                 "mailtriage does not request")

    # -- compose ------------------------------------------------------------------------
    def _outgoing(self, compose: Compose):
        source = source_raw = None
        thread_id = None
        if compose.kind != "new":
            gmail_id = self.gid(compose.source_id)
            try:
                source, source_raw = self.full(gmail_id)
            except GmailNotFound as exc:
                raise self._not_found(compose.source_id, exc) from exc
            thread_id = source.header.thread_key if compose.kind != "forward" else None
        outgoing = compose_message(self.account, compose, source, source_raw)
        if compose.bcc:
            outgoing.message["Bcc"] = ", ".join(compose.bcc)  # Gmail reads recipients from the headers
        return outgoing, thread_id

    def save_draft(self, compose: Compose) -> str:
        """Create a Gmail draft (on the source's thread for replies). Returns the draft message's ID."""
        if not self.account.can_draft:
            raise NotSupported(self.account_id, "createDraft", f"account access is {self.account.access!r}; "
                                                               "drafts need \"draft\" or \"send\"")
        outgoing, thread_id = self._outgoing(compose)
        draft = self.api.upload_message("drafts", as_bytes(outgoing.message),
                                        {"message": {"threadId": thread_id} if thread_id else {}},
                                        "drafts.create") or {}
        return self.mid(str((draft.get("message") or {}).get("id")))

    def send(self, compose: Compose, *, confirmed: bool, ledger: SendLedger | None = None) -> str:
        """Send through Gmail after Principle 10. Returns the sent message's ID.

        Raises SendNotConfirmed, SendRefused (Principle 10), NotSupported (access is not send).
        """
        if not confirmed:
            raise SendNotConfirmed(self.account_id)
        if not self.account.can_send:
            raise NotSupported(self.account_id, "send", f"account access is {self.account.access!r}; sending "
                                                        "needs access = \"send\"")
        outgoing, thread_id = self._outgoing(compose)
        ledger = ledger or SendLedger()
        original = list(outgoing.replying_to.content.headers) if outgoing.replying_to else None
        refusal = check_send(original, authserv_id=self.account.authserv_id,
                             sent_recently=ledger.count(self.account_id), send_cap=self.account.send_cap)
        if refusal is not None:
            raise SendRefused(refusal)
        sent = self.api.upload_message("messages/send", as_bytes(outgoing.message),
                                       {"threadId": thread_id} if thread_id else {}, "messages.send") or {}
        ledger.record(self.account_id)
        return self.mid(str(sent.get("id")))

    def verify(self) -> dict:
        """The connection verifier: a real profile read. Raises SignInNeeded only for auth."""
        profile = self.api.get(f"{USER}/profile", "getProfile") or {}
        return {"account": self.account_id, "email": profile.get("emailAddress"),
                "messages": profile.get("messagesTotal"), "scopes": list(self.account.scopes)}

    def abort(self, opening_only: bool = False) -> None:
        self.api.abort(opening_only)

    def close(self) -> None:
        self.api.close()


__all__ = ["GmailMailbox", "MAIL_LABEL_COLORS", "nearest_color"]
