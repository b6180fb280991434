"""Server search: one typed request for every backend, and the page of results it answers.

A backend that can search declares it (``SourceFeatures.server_search`` on a mail source,
``MailboxAdapter.server_search`` on a personal mailbox) and implements ``search``; the
front ends branch on that declaration, never on a backend's kind. Each backend runs the
search where the mail is (IMAP ``SEARCH``/``SORT``, Gmail ``q``, Graph ``$search``, the
archives' own search, a scan of the mbox index) and answers one :class:`SearchPage`:
newest first, zero-based pages, each result a message mapped to the thread that holds it.

The query text is the user's and is untrusted: it travels as one argument of the
backend's protocol (an IMAP quoted string or literal, a URL-encoded parameter), never
spliced into a command. A NUL cannot be carried by IMAP or a URL and is refused here.

This module imports nothing from Textual or the front ends.
"""

from __future__ import annotations

import enum
from datetime import datetime, timezone
from typing import Any

from mailtriage.backends.mailbox_contract import InvalidQuery
from mailtriage.core.lean_dataclass import frozen_dataclass

#: Results per page unless the request says otherwise (the thread list pages by this).
SEARCH_PAGE = 50
MAX_SEARCH_PAGE = 200
MAX_QUERY_CHARS = 1000


class SearchField(str, enum.Enum):
    """Where the query text is looked for (IMAP's TEXT, BODY, FROM, SUBJECT keys)."""

    TEXT = "text"  # headers and body
    BODY = "body"
    FROM = "from"
    SUBJECT = "subject"

    @classmethod
    def parse(cls, text: str) -> "SearchField":
        wanted = (text or "").strip().lower()
        for item in cls:
            if item.value == wanted:
                return item
        raise InvalidQuery(f"search field must be one of {', '.join(f.value for f in cls)}, not {text!r}")


@frozen_dataclass
class SearchRequest:
    """One search: the text, the field, where (a list, a folder, or every folder of the
    account), since when, and which page (zero-based, newest first).

    Raises InvalidQuery (a ValueError) for an empty query, a NUL, a query over
    :data:`MAX_QUERY_CHARS`, a negative page or a page size outside 1..MAX_SEARCH_PAGE.
    """

    query: str
    field: SearchField = SearchField.TEXT
    list_name: str | None = None
    folder: str | None = None  # None: the source's list folder, or the account's INBOX
    all_folders: bool = False
    since: datetime | None = None
    page: int = 0
    page_size: int = SEARCH_PAGE

    def __post_init__(self) -> None:
        if not isinstance(self.field, SearchField):
            object.__setattr__(self, "field", SearchField.parse(str(self.field)))
        if not isinstance(self.query, str) or not self.query.strip():
            raise InvalidQuery("a search needs some text to look for")
        if "\x00" in self.query:
            raise InvalidQuery("the search text holds a NUL character, which no mail server can search for")
        if len(self.query) > MAX_QUERY_CHARS:
            raise InvalidQuery(f"the search text is {len(self.query)} characters long; at most {MAX_QUERY_CHARS}")
        if isinstance(self.page, bool) or not isinstance(self.page, int) or self.page < 0:
            raise InvalidQuery(f"page must be an integer >= 0, not {self.page!r}")
        if (isinstance(self.page_size, bool) or not isinstance(self.page_size, int)
                or not 1 <= self.page_size <= MAX_SEARCH_PAGE):
            raise InvalidQuery(f"page size must be an integer from 1 to {MAX_SEARCH_PAGE}, not {self.page_size!r}")
        if self.since is not None and self.since.tzinfo is None:
            object.__setattr__(self, "since", self.since.replace(tzinfo=timezone.utc))

    @property
    def offset(self) -> int:
        return self.page * self.page_size

    @property
    def words(self) -> list[str]:
        """The query's words, case-folded (for backends that match locally)."""
        return [w for w in self.query.casefold().split() if w]

    def to_json(self) -> dict:
        return {"query": self.query, "field": self.field.value, "list": self.list_name, "folder": self.folder,
                "allFolders": self.all_folders, "since": self.since.isoformat() if self.since else None,
                "page": self.page, "pageSize": self.page_size}


@frozen_dataclass
class SearchPage:
    """One page of results, newest first.

    ``items`` are ``ThreadSummary`` rows (a mail source: each names the thread holding a
    matching message) or ``MailHeader`` rows (a personal mailbox). ``total`` is the number
    of matches when the backend says (None when it does not; ``more`` then tells whether
    another page exists). ``failed`` names each folder that could not be searched and why;
    ``method`` says what the server was asked (shown in the status line and the JSON).
    """

    backend: str
    request: SearchRequest
    items: tuple[Any, ...]
    total: int | None
    more: bool
    method: str = ""
    searched: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    #: The total is the provider's estimate (Gmail's resultSizeEstimate), not a count.
    estimate: bool = False

    @property
    def page(self) -> int:
        return self.request.page

    @property
    def page_size(self) -> int:
        return self.request.page_size

    def to_json(self) -> dict:
        return {
            "backend": self.backend,
            "request": self.request.to_json(),
            "method": self.method,
            "items": [item.to_json() for item in self.items],
            "total": self.total,
            "totalIsEstimate": self.estimate,
            "more": self.more,
            "page": self.page,
            "pageSize": self.page_size,
            "searched": list(self.searched),
            "failed": [{"folder": folder, "why": why} for folder, why in self.failed],
            "notes": list(self.notes),
        }


def page_of(backend: str, request: SearchRequest, matches: list, *, method: str, **extra: Any) -> SearchPage:
    """The request's page of ``matches`` (every match at hand, newest first)."""
    start = request.offset
    window = tuple(matches[start:start + request.page_size])
    return SearchPage(backend, request, window, len(matches), start + request.page_size < len(matches),
                      method=method, **extra)


def matches_words(haystack: str, words: list[str]) -> bool:
    """Every word of the query occurs in ``haystack`` (case-folded), as IMAP servers match."""
    folded = haystack.casefold()
    return all(word in folded for word in words)
