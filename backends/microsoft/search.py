"""Server search over Microsoft Graph: ``$search`` on a mail folder's messages (or all mail).

Graph's documented behaviour (learn.microsoft.com/graph/search-query-parameter, "Using
$search on message collections"): a bare value searches the default properties from,
subject and body; ``from:``, ``subject:`` and ``body:`` restrict it to one property; at most
1,000 results, sorted by the date sent; ``$search`` does not combine with ``$filter``,
``$orderby`` or ``$skip``, and pages only through ``@odata.nextLink`` with no count. (The
``ConsistencyLevel: eventual`` header belongs to the advanced queries on directory objects,
not to messages, and is not sent.)

So the list scope, the window (``since``) and drafts are applied to the results here, the
page is cut from the walk (stopping one past it to know whether more exist), and the total
is given only when the walk reached the end.

The ``$search`` value is KQL: ``"from:Alice Smith"`` would mean from:Alice AND "Smith"
anywhere. So the text is sent as one KQL phrase in escaped quotes (OData's ``\"`` inside
the ``$search`` string): ``"from:\"Alice Smith\""``. Its own double quotes and backslashes
are removed first, so it cannot close the phrase or add a property restriction or an OR.
"""

from __future__ import annotations

from mailtriage.backends.search import SearchField, SearchRequest

SEARCH_CAP = 1000  # Graph's $search returns at most this many messages
_PROPERTY = {SearchField.FROM: "from", SearchField.SUBJECT: "subject", SearchField.BODY: "body"}


def kql_phrase(text: str, prop: str | None = None) -> str:
    """``[prop:]\"text\"``: ``text`` as one KQL phrase (quotes and backslashes dropped)."""
    text = " ".join(text.replace('"', " ").replace("\\", " ").split())
    return f'{prop + ":" if prop else ""}\\"{text}\\"'


def search_term(request: SearchRequest) -> str:
    """The ``$search`` value: ``"<property>:\"<text>\""`` or ``"\"<text>\""``."""
    return f'"{kql_phrase(request.query, _PROPERTY.get(request.field))}"'


def walk(api, path: str, request: SearchRequest, keep, select: str) -> tuple[list[dict], bool]:
    """The messages of ``path`` matching ``request`` that ``keep`` accepts, up to one past the
    request's page; and whether the walk ended (every match seen)."""
    wanted = request.offset + request.page_size
    found: list[dict] = []
    pages = api.pages(path, "messages.search", limit=SEARCH_CAP, **{
        "$search": search_term(request), "$top": min(max(request.page_size, 25), 250), "$select": select})
    for message in pages:
        if keep(message):
            found.append(message)
            if len(found) > wanted:
                return found, False
    return found, True
