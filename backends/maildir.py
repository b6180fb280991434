"""A writable local Maildir for reply drafts (``kind: maildir``).

For people who keep their mail in a local Maildir that a sync tool (mbsync/isync,
offlineimap) mirrors with the server: a reply draft written to the local Drafts folder
goes up to the server with their next sync, and the draft shows in every mail client.
The demo project uses it so a reply can really be written (``docs/demo.md``).

Configured like any mail source (``mail_sources.<name>`` in project.md)::

    mail_sources:
      drafts:
        kind: maildir
        path: ~/Mail/work        # the account's Maildir root (relative to project.md's folder)
        drafts: Drafts           # the drafts folder: <path>/Drafts, or Maildir++ <path>/.Drafts
        address: me@example.org  # From: of the drafts

Operations: ``create_draft`` and ``list_drafts`` only (reading the list stays with the
project's other sources). Thread references are root Message-IDs (``msgid``), so a
thread read from any backend that knows its root is drafted here. A draft is one file
in the folder's ``cur/`` with the Maildir ``D`` (draft) and ``S`` (seen) flags, written
atomically through ``tmp/`` as a new file of mode 0600 (:func:`add_draft`, which the
Maildir account's drafts use too); nothing is ever written without a confirmed proposal, and the drafts carry no
header naming this tool: our own drafts are found by the Message-ID we made, which is
derived from the request (a retried request finds the draft it already wrote).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from mailtriage.backends import mime, mime_header_text, mime_headers, mime_ids
from mailtriage.backends.contract import (MESSAGE_ID_KIND, SourceOrigin, Draft, DraftRequest, MailSource, Op, SourceFeatures,
                                          ThreadId, reply_subject)
from mailtriage.backends.errors import BackendFailure, DraftAlreadyPending, Unavailable

if TYPE_CHECKING:
    import mailbox

# The stdlib's mailbox (with email.message, email.generator, socket) and backends.outgoing
# (email.policy, email.utils) load when a draft is listed or written, not with the backend:
# a project that lists its mail through another backend builds this one at every start,
# and those imports cost ~20 ms there (python -X importtime).

DEFAULT_DRAFTS = "Drafts"
#: Bigger files in the Drafts folder are not read when looking for a thread's drafts.
MAX_DRAFT_BYTES = 25 * 1024 * 1024


class MaildirDraftsSource(MailSource):
    """Reply drafts written to a local Maildir folder (see the module docstring)."""

    signs_in_without_tokens = True  # a local folder: no sign-in

    kind = "maildir"
    thread_id_kind = MESSAGE_ID_KIND
    capabilities = frozenset({Op.LIST_DRAFTS, Op.CREATE_DRAFT})
    features = SourceFeatures(local_drafts=True, draft_attachments=True)

    def __init__(self, name: str, settings: Mapping[str, object] | None = None, *,
                 origin: SourceOrigin | None = None) -> None:
        super().__init__(name, settings, origin=origin)
        raw = self.settings.get("path")
        self.root: Path | None = self.origin.resolve(Path(str(raw)).expanduser()) if raw else None
        self.drafts_name = str(self.settings.get("drafts") or DEFAULT_DRAFTS)
        address = self.settings.get("address")
        self.address = str(address).strip() if isinstance(address, str) else ""
        # Per draft file: (size, mtime, inode) when its headers were read, and the thread
        # roots they name (see _drafts_of).
        self._heads: dict[Path, tuple[tuple[int, int, int], frozenset[str]]] = {}

    # -- where ------------------------------------------------------------------------------
    def check_available(self) -> None:
        if self.root is None:
            raise Unavailable(self.name, f"mail_sources.{self.name}.path is not set (the Maildir root)")
        if not self.root.is_dir():
            raise Unavailable(self.name, f"the Maildir {self.root} does not exist")
        if not self.address or not mime_header_text.is_plain_address(self.address):
            raise Unavailable(self.name, f"mail_sources.{self.name}.address is not one address "
                                         "(the From: of the drafts)")
        if "/" in self.drafts_name or self.drafts_name in ("", ".", ".."):
            raise Unavailable(self.name, f"mail_sources.{self.name}.drafts must be a folder name, "
                                         f"not {self.drafts_name!r}")

    @property
    def drafts_folder(self) -> Path:
        """``<root>/<drafts>`` (mbsync's verbatim layout), or ``<root>/.<drafts>`` (Maildir++)
        when only that one exists; the first is made on the first draft."""
        assert self.root is not None
        verbatim, plusplus = self.root / self.drafts_name, self.root / f".{self.drafts_name}"
        if not _is_maildir(verbatim) and _is_maildir(plusplus):
            return plusplus
        return verbatim

    def _folder(self, create: bool) -> mailbox.Maildir | None:
        import mailbox  # drafts only (see the top)

        self.check_available()
        path = self.drafts_folder
        if not create and not _is_maildir(path):
            return None
        try:
            box = mailbox.Maildir(str(path), factory=None, create=create)
            if create:
                for sub in ("", "cur", "new", "tmp"):
                    os.chmod(path / sub, 0o700)
            return box
        except OSError as exc:
            raise BackendFailure(self.name, f"the drafts folder {path} cannot be opened: "
                                            f"{exc.strerror or exc}") from exc

    # -- drafts -----------------------------------------------------------------------------
    def _thread_drafts(self, root: str) -> list[tuple[Path, Draft]]:
        return self._drafts_of([root])[root]

    def _drafts_of(self, roots: Sequence[str]) -> dict[str, list[tuple[Path, Draft]]]:
        """The drafts of each thread root. Which file belongs to which thread is told by its
        header block (Message-ID, In-Reply-To, References), kept per file while its name,
        size and mtime stay the same: a listing lists the folder and reads the headers of new
        files only; a draft is read whole only when it is one of ``roots``."""
        out: dict[str, list[tuple[Path, Draft]]] = {root: [] for root in roots}
        box = self._folder(create=False)
        if box is None:
            return out
        folder = self.drafts_folder
        files = sorted(p for sub in ("cur", "new") for p in (folder / sub).iterdir()
                       if not p.name.startswith("."))
        seen: dict[Path, tuple[tuple[int, int, int], frozenset[str]]] = {}
        for path in files:
            try:
                info = path.stat()
                if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_DRAFT_BYTES:
                    continue
                key = (info.st_size, info.st_mtime_ns, info.st_ino)
                known = self._heads.get(path)
                seen[path] = known if known and known[0] == key else (key, _thread_keys(path))
            except OSError:
                continue  # a sync tool moved it meanwhile
            wanted = [root for root in roots if root in seen[path][1]]
            if not wanted:
                continue
            try:
                raw = path.read_bytes()
            except OSError:
                continue
            parsed = mime.parse_message(raw, backend_ref=str(path))
            for root in wanted:
                if root != parsed.message_id and root not in parsed.references and parsed.in_reply_to != root:
                    continue  # changed since its headers were read
                out[root].append((path, Draft(ThreadId(MESSAGE_ID_KIND, root), str(path), parsed.subject,
                                              tuple(str(a) for a in parsed.to), tuple(str(a) for a in parsed.cc),
                                              parsed.in_reply_to, parsed.body_text, parsed.date)))
        self._heads = seen  # files gone from the folder are forgotten
        return out

    def list_drafts(self, thread_id: ThreadId) -> Sequence[Draft]:
        root = self.own_thread_id(thread_id).value
        return [draft for _path, draft in self._thread_drafts(root)]

    def list_drafts_of(self, thread_ids: Sequence[ThreadId]) -> dict[ThreadId, Sequence[Draft]]:
        """:meth:`list_drafts` of many threads with one look at the folder (the row marks of a
        screen); a thread whose reference does not resolve here is left out."""
        roots: dict[ThreadId, str] = {}
        for thread_id in dict.fromkeys(thread_ids):
            try:
                roots[thread_id] = self.own_thread_id(thread_id).value
            except BackendFailure:
                continue
        found = self._drafts_of(list(dict.fromkeys(roots.values())))
        return {thread_id: [draft for _path, draft in found[root]] for thread_id, root in roots.items()}

    def create_draft(self, request: DraftRequest) -> Draft:
        """Write the reply draft into the Drafts folder (never sends).

        Idempotent: a retried request finds the draft it wrote (same Message-ID). Raises
        DraftAlreadyPending when another draft of the thread is there and the request does
        not allow a second one; BackendFailure without a recipient or when writing fails.
        """
        from mailtriage.backends.outgoing import as_bytes, build_message, sender_header  # why: drafts only (see the top)

        root = self.own_thread_id(request.thread_id).value
        if not request.to:
            raise BackendFailure(self.name, "a draft needs at least one recipient")
        subject = request.subject or reply_subject(None)
        message_id = self._message_id(request, subject)
        pending = self._thread_drafts(root)
        pending_ids = {p: _message_id_of(p) for p, _d in pending}
        for path, draft in pending:
            if pending_ids[path] == message_id:
                return draft  # a retry: the draft is already there
        if pending and not request.allow_second_draft:
            raise DraftAlreadyPending(self.name, str(request.thread_id), [str(p) for p, _d in pending])
        references = [r for r in dict.fromkeys([root, *request.references]) if not r.endswith("@mailtriage.invalid>")]
        in_reply_to = request.in_reply_to if request.in_reply_to and not request.in_reply_to.endswith(
            "@mailtriage.invalid>") else root
        message = build_message(sender=sender_header(self.address, request.from_name), to=request.to, cc=request.cc,
                                subject=subject, body=request.body, message_id=message_id, in_reply_to=in_reply_to,
                                references=references, attachments=request.attachments)
        box = self._folder(create=True)
        assert box is not None
        try:
            path = add_draft(self.drafts_folder, as_bytes(message))
        except OSError as exc:
            raise BackendFailure(self.name, f"writing the draft to {self.drafts_folder} failed: "
                                            f"{exc.strerror or exc}") from exc
        for found, draft in self._thread_drafts(root):
            if found == path:
                return draft
        raise BackendFailure(self.name, f"the draft {path} is not in its thread")

    def _message_id(self, request: DraftRequest, subject: str) -> str:
        """A Message-ID derived from the request, so a retried request finds its draft; it
        names no tool."""
        digest = hashlib.sha256("\0".join([
            str(request.thread_id), ",".join(request.to), ",".join(request.cc), subject, request.body,
            ",".join(a.filename for a in request.attachments),
            "second" if request.allow_second_draft else "first",
        ]).encode("utf-8")).digest()
        token = base64.b32encode(digest[:15]).decode().lower()
        return f"<{token}@{self.address.rpartition('@')[2] or 'localhost'}>"


def add_draft(folder: Path, data: bytes) -> Path:
    """Deliver ``data`` into the existing Maildir ``folder`` as a draft: a new file in
    ``tmp/`` (``O_EXCL``, mode 0600 from its creation, so no one else can open it meanwhile;
    fsynced), renamed into ``cur/`` with the flags ``DS``. The one way a draft file is made
    (this source and the Maildir account, backends/maildir_account.py); the standard
    library's ``Maildir.add`` creates the file with the umask's mode and would need a chmod
    after the text is in it.

    Raises OSError when the folder cannot be written."""
    key = _new_key()
    temporary = folder / "tmp" / key
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        path = folder / "cur" / f"{key}:2,DS"
        os.rename(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise
    return path


_COUNTER = itertools.count(1)


def _new_key() -> str:
    """A unique Maildir name (the Maildir convention, as the standard library makes it):
    time, microseconds, a per-process counter, the process and the host."""
    host = os.uname().nodename.replace("/", "\\057").replace(":", "\\072") or "localhost"
    now = time.time()
    return f"{int(now)}.M{int(now % 1 * 1e6)}Q{next(_COUNTER)}P{os.getpid()}.{host}"


def _is_maildir(path: Path) -> bool:
    return all((path / sub).is_dir() for sub in ("cur", "new", "tmp"))


def _thread_keys(path: Path) -> frozenset[str]:
    """The Message-IDs a draft file's header block places it under: its own (or the synthetic
    one a full parse gives it), its In-Reply-To and its References. Reads the header block
    only. Raises OSError."""
    from mailtriage.backends.mbox_files import _read_header  # why: drafts only (see the top)

    head = mime.parse_message_headers(_read_header(path), backend_ref=str(path))
    return frozenset(filter(None, (head.message_id, head.in_reply_to, *head.references)))


def _message_id_of(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(64 * 1024)
    except OSError:
        return None
    block, _end = mime_headers.split_header_block(head)
    return mime_ids.extract_msgid(mime_headers.header_fields(block, {b"message-id"}).get(b"message-id"))

