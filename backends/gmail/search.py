"""Server search over the Gmail API: ``messages.list`` with ``q`` (Gmail's search box syntax).

The field becomes Gmail's operator — a bare phrase for TEXT (Gmail searches headers and
body), ``from:(…)``, ``subject:(…)`` — and the text is one quoted phrase with its double
quotes removed (:func:`~mailtriage.backends.gmail.adapter.quote_term`), so nothing the user
typed can become an operator (``from:``, ``OR``, braces, ``-``). Gmail has no body-only
operator, so BODY is not declared. The source keeps its list scope (``list:``/``to:``/
``cc:``/``deliveredto:`` of the listing) and ``since`` is ``after:<epoch seconds>``.

Pages follow ``nextPageToken`` (Gmail has no offset), whose tokens are kept so that the
next page is one call; the total is Gmail's
``resultSizeEstimate``, said to be an estimate.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from mailtriage.backends.gmail.adapter import quote_term
from mailtriage.backends.gmail.api import USER, PageTokens
from mailtriage.backends.search import SearchField, SearchPage, SearchRequest

FIELDS = ("text", "from", "subject")


def field_terms(request: SearchRequest) -> str:
    """The Gmail terms of the request's text and field (the text quoted, never an operator)."""
    phrase = quote_term(request.query)
    if not phrase:
        return ""
    if request.field is SearchField.FROM:
        return f"from:({phrase})"
    if request.field is SearchField.SUBJECT:
        return f"subject:({phrase})"
    return phrase


def message_page(api, request: SearchRequest, scope: str, tokens=None) -> tuple[list[dict], int, bool, str]:
    """(message refs of the request's page, Gmail's estimate, more pages, the q sent).
    ``tokens`` (a :class:`~mailtriage.backends.gmail.api.PageTokens`) keeps the pages' tokens."""
    terms = [scope, field_terms(request)]
    if request.since is not None:
        since = request.since if request.since.tzinfo else request.since.replace(tzinfo=timezone.utc)
        terms.append(f"after:{max(0, int(since.timestamp()))}")
    q = " ".join(t for t in terms if t)
    params: dict[str, Any] = {"q": q, "maxResults": request.page_size}
    page, more, estimate = (tokens or PageTokens()).page(api, f"{USER}/messages", "messages.list", params,
                                                         request.page)
    return list(page.get("messages") or ()), estimate, more, q


def search_page(name: str, request: SearchRequest, items: list, estimate: int, more: bool,
                notes: tuple[str, ...] = ()) -> SearchPage:
    items.sort(key=lambda s: s.last_activity or datetime.min.replace(tzinfo=timezone.utc), reverse=True)
    total = max(estimate, request.offset + len(items))
    return SearchPage(name, request, tuple(items), total, more, method="Gmail messages.list q",
                      notes=("the total is Gmail's estimate (resultSizeEstimate)", *notes), estimate=True)
