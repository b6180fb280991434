"""What the mail sources over a personal account (IMAP, Gmail, Microsoft Graph) share.

Each is configured by ``mail_sources.<name>.account``, naming an ``[accounts.<id>]``
table of the user settings. A broken or missing account makes the source unavailable
with the config error as the reason, instead of failing the whole source set.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
from datetime import datetime, timezone
from typing import Any, Callable, ClassVar, Sequence

from mailtriage.backends.contract import DraftRequest, MailSource, Op, ThreadId, ThreadSummary
from mailtriage.backends.errors import NotSupported, Unavailable
from mailtriage.core.projectconfig import ConfigError

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class AccountSource(MailSource):
    """A MailSource whose data lives in one user account (``self.account``).

    Subclasses set ``account_label`` (for messages), ``account_table_hint`` (what a valid
    ``account`` value is) and ``load_account`` (account id, user settings -> account).
    """

    account_label: ClassVar[str] = ""
    account_table_hint: ClassVar[str] = "the id of an [accounts.<id>] table"
    load_account: Callable[[str, Any], Any]  # a staticmethod in each subclass

    _mailbox: Any  # the account's mailbox adapter, made on first use by each subclass

    def abort(self, opening_only: bool = False) -> None:
        """From another thread (the app quits): end the mailbox's connections (``MailSource.abort``)."""
        mailbox = self._mailbox
        if mailbox is not None:
            mailbox.abort(opening_only)

    def _init_account(self, account: Any | None) -> None:
        # A configuration error (project.md or config.toml) is kept and raised when the
        # account is needed: it is a usage error (exit 2), never an "unavailable" backend.
        self._config_error: ConfigError | None = None
        self._account = account
        if self._account is None:
            try:
                self._account = self._account_from_settings()
            except ConfigError as exc:
                self._config_error = exc

    # -- split conversations ---------------------------------------------------------------------
    # Gmail and Exchange split one thread (one root Message-ID) into several of their own
    # threads/conversations when a reply's subject changes; each subclass keeps
    # ``self._siblings`` (root -> the provider's thread values seen holding it).
    _siblings: dict[str, set[str]]

    def _merge_rows(self, rows: Sequence[tuple[ThreadSummary, Any]]) -> list[ThreadSummary]:
        """One row per root: ``rows`` pairs each summary with when its provider thread started;
        rows of one root merge into the earliest one (counts summed, participants joined, unread
        if any is, the latest activity), and the siblings are remembered for reads."""
        groups: dict[str, list[tuple[ThreadSummary, Any]]] = {}
        for summary, first in rows:
            groups.setdefault(summary.root_message_id, []).append((summary, first))
        out = []
        for root, group in groups.items():
            group.sort(key=lambda row: row[1])
            summaries = [summary for summary, _first in group]
            if len(summaries) == 1:
                out.append(summaries[0])
                continue
            self._remember(root, [s.thread_id.value for s in summaries])
            activity = [s.last_activity for s in summaries if s.last_activity is not None]
            out.append(dataclasses.replace(
                summaries[0], message_count=sum(s.message_count for s in summaries),
                participants=tuple(dict.fromkeys(p for s in summaries for p in s.participants)),
                unread=any(s.unread for s in summaries), last_activity=max(activity) if activity else None))
        return out

    def _remember(self, root: str, values) -> None:
        self._siblings.setdefault(root, set()).update(values)

    def _declared_capabilities(self) -> frozenset[Op]:
        """All six ops, less ``create_draft`` when the account's access is ``read``."""
        caps = set(Op)
        if self._account is not None and not self._account.can_draft:
            caps.discard(Op.CREATE_DRAFT)
        return frozenset(caps)

    def attachment(self, message_ref: str, index: int) -> bytes:
        """Attachment bytes through the account's mailbox adapter: a read message's
        ``backend_ref`` is the adapter's own message ID."""
        return self.mailbox.attachment(message_ref, index)

    def raw_message(self, message_ref: str) -> bytes:
        """The raw message through the account's mailbox adapter (``backend_ref`` is its ID)."""
        return self.mailbox.raw(message_ref)

    def _project_file(self) -> str:
        return self.origin.project_file

    def _account_from_settings(self) -> Any:
        account_id = self.settings.get("account")
        if not account_id or not isinstance(account_id, str):
            raise ConfigError(self._project_file(), f"mail_sources.{self.name}.account",
                              f"missing: which {self.account_label} account holds this list", self.account_table_hint)
        return self.load_account(account_id, self.origin.user_settings)

    @property
    def account(self) -> Any:
        """The account. Raises the ConfigError that kept it from being configured."""
        if self._account is None:
            if self._config_error is not None:
                raise self._config_error
            raise Unavailable(self.name, f"no {self.account_label} account configured")
        return self._account

    def _thread_value(self, thread_id: ThreadId) -> str:
        """The provider's thread reference: the value of an ID of this backend's shape, or
        the thread its root Message-ID resolves to. Raises BackendFailure when neither."""
        return self.own_thread_id(thread_id).value

    def _read_only(self, op: Op) -> NotSupported:
        return NotSupported(self.name, op.value, f"account {self.account.id} has access = "
                                                 f"{self.account.access!r}; drafts need \"draft\" or \"send\"")

    def _draft_message_id(self, request: DraftRequest, subject: str) -> str:
        """A Message-ID derived from the request, so a retried request finds the draft it made.

        It names no tool (no ``mailtriage-`` part, and no ``X-Mailtriage-…`` header on the
        draft): our drafts are found by the Message-ID we made, in the thread."""
        digest = hashlib.sha256("\0".join([
            str(request.thread_id), ",".join(request.to), ",".join(request.cc), subject, request.body,
            "second" if request.allow_second_draft else "first",
        ]).encode("utf-8")).digest()
        token = base64.b32encode(digest[:15]).decode().lower()
        domain = self.account.from_address.rpartition("@")[2] or "mailtriage.invalid"
        return f"<{token}@{domain}>"

    def _compose_reply(self, request: DraftRequest, subject: str, message_id: str, in_reply_to: str | None,
                       references: Sequence[str]) -> bytes:
        """The reply draft as RFC 5322 bytes, From the configured name and the account's address."""
        # Composing only: the stdlib's MIME writer and policies (backends/outgoing.py) would cost
        # an account source's open about 8 ms (python -X importtime), and listing never composes.
        from mailtriage.backends.outgoing import as_bytes, build_message, sender_header

        return as_bytes(build_message(sender=sender_header(self.account.from_address, request.from_name),
                                      to=request.to, cc=request.cc, subject=subject, body=request.body,
                                      message_id=message_id, in_reply_to=in_reply_to, references=references,
                                      attachments=request.attachments))
