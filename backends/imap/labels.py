"""Labels of an IMAP account: IMAP keywords, or Gmail's folder labels (X-GM-EXT-1).

``list_labels()`` returns ``{supported, folderBacked, labels}``:

* keywords: ``supported`` is whether the server keeps new keywords (``\\*`` in the
  inbox's PERMANENTFLAGS); the labels are the keywords the inbox defines plus those
  created here (a keyword exists on the server only once a message carries it, so
  created names are remembered in the data dir, ``imap-labels.json``);
* Gmail (detected by X-GM-EXT-1, even on an app-password ``imap`` account): labels are
  Gmail's folders, ``folderBacked`` is true and label IDs are folder names.

Colours are not IMAP's: ``recolor_label`` is declined.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from mailtriage.backends.errors import NotSupported
from mailtriage.backends.imap import protocol
from mailtriage.backends.imap.headers import SYSTEM_KEYWORDS
from mailtriage.backends.imap.mutations import check_keyword
from mailtriage.backends.mailbox_contract import LabelList, MailLabel
from mailtriage.core import private_files
from mailtriage.core.errors import ConfigError
from mailtriage.core.settings import data_dir

_LOCK = threading.Lock()


def _registry_path() -> Path:
    return data_dir() / "imap-labels.json"


def _load() -> dict[str, list[str]]:
    try:
        return json.loads(private_files.read_text(_registry_path()))
    except (FileNotFoundError, ValueError, ConfigError):  # (a file another user could have planted: none)
        return {}


def _save(data: dict[str, list[str]]) -> None:
    private_files.write_atomic(_registry_path(), json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))


class Labels:
    def __init__(self, mb) -> None:
        self.mb = mb

    @property
    def folder_backed(self) -> bool:
        return self.mb.conn.has("X-GM-EXT-1")

    # -- registry of created keyword names ---------------------------------------------------
    def _known(self) -> list[str]:
        with _LOCK:
            return list(_load().get(self.mb.account_id, []))

    def remember(self, names) -> None:
        if self.folder_backed or not names:
            return
        with _LOCK:
            data = _load()
            known = data.setdefault(self.mb.account_id, [])
            for name in names:
                if name not in known:
                    known.append(name)
            _save(data)

    def _forget(self, name: str) -> None:
        with _LOCK:
            data = _load()
            if name in data.get(self.mb.account_id, []):
                data[self.mb.account_id].remove(name)
                _save(data)

    # -- operations ---------------------------------------------------------------------------
    def list(self) -> LabelList:
        if self.folder_backed:
            labels = [MailLabel(info.name, info.leaf) for info in self.mb.folders.infos()
                      if info.role is None and info.selectable]
            return LabelList(True, True, tuple(labels))
        self.mb.conn.state = None  # FLAGS may have grown since the folder was selected
        state = self.mb.conn.select(self.mb.folders.role_folder("inbox") or "INBOX")
        supported = "\\*" in state.permanent_flags
        if not supported:
            return LabelList(False, False, ())
        # The inbox's FLAGS only ever grow (Dovecot keeps deleted and renamed keywords, and
        # even one a search merely named): a keyword there is a label only while a message
        # carries it. Names created here are kept by our registry until deleted or renamed.
        known = self._known()
        names = list(known)
        esearch = self.mb.conn.has("ESEARCH")
        for flag in state.flags:
            if flag.startswith("\\") or flag.lower() in SYSTEM_KEYWORDS or flag in names:
                continue
            _uids, count = self.mb.conn.call("UID SEARCH KEYWORD", lambda c: protocol.search(
                c, [b"KEYWORD", flag.encode("utf-8", "replace")], esearch=esearch))
            if count:
                names.append(flag)
        return LabelList(True, False, tuple(MailLabel(n, n) for n in names))

    def require_keywords(self, op: str) -> None:
        self._require_keywords(op)

    def _require_keywords(self, op: str) -> None:
        if not self.list().supported:
            raise NotSupported(self.mb.account_id, op, "the server cannot keep new keywords (no \\* in PERMANENTFLAGS)")

    def create(self, name: str) -> MailLabel:
        if self.folder_backed:
            folder = self.mb.folders.create(name)
            return MailLabel(folder.id, folder.name)
        self._require_keywords("createLabel")
        self.remember([check_keyword(name)])
        return MailLabel(name, name)

    def rename(self, label_id: str, name: str) -> MailLabel:
        if self.folder_backed:
            folder = self.mb.folders.rename(label_id, name)
            return MailLabel(folder.id, folder.name)
        old, new = check_keyword(label_id), check_keyword(name)
        self._restamp(old, new)
        self._forget(old)
        self.remember([new])
        return MailLabel(new, new)

    def delete(self, label_id: str) -> None:
        if self.folder_backed:
            self.mb.folders.delete(label_id)
            return
        self._restamp(check_keyword(label_id), None)
        self._forget(label_id)

    def _restamp(self, old: str, new: str | None) -> None:
        """Replace keyword ``old`` by ``new`` (or drop it) on every message of every folder."""
        for info in self.mb.folders.infos():
            if not info.selectable:
                continue
            self.mb.conn.select(info.name)
            uids, _count = self.mb.conn.call("UID SEARCH KEYWORD", lambda c: protocol.search(
                c, [b"KEYWORD", old.encode()], esearch=self.mb.conn.has("ESEARCH")))
            for chunk in protocol.chunks(uids):
                seqset = protocol.compress(chunk)
                if new is not None:
                    self.mb.conn.call("UID STORE +label", lambda c: protocol.store(c, seqset, "+FLAGS.SILENT", [new.encode()]))
                self.mb.conn.call("UID STORE -label", lambda c: protocol.store(c, seqset, "-FLAGS.SILENT", [old.encode()]))
