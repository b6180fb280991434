"""Rows of a personal account's folder, for the virtualized thread list.

A folder is listed through the adapter's ``list(MailQuery)`` page by page, newest
first: :class:`FolderRows` is a :class:`~mailtriage.tui.rows.PagedRows` whose loader
asks for one ``MailQuery`` page, so only the pages the list paints are fetched.
Each row is a :class:`MailboxRow` — a ``ThreadSummary`` (what the list paints) that
keeps the adapter's ``MailHeader`` (what reading, flagging and moving need).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from mailtriage.application import ThreadId, ThreadSummary
from mailtriage.tui.rows import PagedRows

if TYPE_CHECKING:
    from mailtriage.application import MailHeader, MailPage

#: ThreadId kind of a personal account's message (the value is the adapter's message ID).
MAILBOX_KIND = "mailbox"
FOLDER_PAGE = 100


@dataclass(frozen=True)
class MailboxRow(ThreadSummary):
    header: MailHeader | None = None
    account_id: str = ""


def row_for(header: MailHeader, account_id: str) -> MailboxRow:
    subject = header.subject or "(no subject)"
    if header.flagged:
        subject = "⚑ " + subject
    return MailboxRow(thread_id=ThreadId(MAILBOX_KIND, header.id), subject=subject, root_message_id=header.message_id,
                      sender=header.sender, last_activity=header.date, sent=header.sent_date, message_count=header.thread_count or 1,
                      unread=not header.read, header=header, account_id=account_id)


class FolderRows(PagedRows):
    """One folder of one account; ``first`` is its page 0 (fetched to learn the total)."""

    unit = "message"  # a row is one message: the status line counts messages

    def __init__(self, account_id: str, folder_id: str, first: MailPage, load_page: Callable[[int, int], MailPage],
                 page_size: int = FOLDER_PAGE) -> None:
        self.account_id = account_id
        self.folder_id = folder_id

        def loader(offset: int, limit: int):
            page = load_page(offset // page_size, page_size)
            return [row_for(h, account_id) for h in page.messages]

        super().__init__(first.total, loader, page_size=page_size)
        if first.total:
            self._pages[0] = [row_for(h, account_id) for h in first.messages]
