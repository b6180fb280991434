"""Search: one typed request (:class:`SearchRequest`) run where the mail is.

Two places to search, one request type:

* the project's mail sources: the backend that lists the threads (the resolution rule's
  choice for ``list_recent_threads``, or the one named) searches, when it declares
  ``features.server_search``; each result is the row of the thread holding a match;
* a personal account (``--account``): its mailbox adapter searches a folder or every
  folder, when it declares ``server_search``; each result is a message header.

A backend that declares no search is declined with ``NotSupported`` naming it and why;
nothing is probed. Every search is recorded in the operation log as ``search``.
"""

from __future__ import annotations

from datetime import datetime

from mailtriage.application.accounts import Mailboxes
from mailtriage.application.errors import UsageError
from mailtriage.backends.contract import Op
from mailtriage.backends.errors import NotSupported, Unavailable
from mailtriage.backends.mailbox_contract import InvalidQuery
from mailtriage.backends.resolution import Resolution
from mailtriage.backends.search import SEARCH_PAGE, SearchField, SearchPage, SearchRequest
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.settings import load_settings
from mailtriage.core.trace import OPLOG

__all__ = ["SearchField", "SearchPage", "SearchRequest", "SearchResult", "search_request", "search_project",
           "search_mailbox", "search_account", "source_can_search"]


@frozen_dataclass
class SearchResult:
    """A page of results and the resolution that picked the backend (None for an account)."""

    page: SearchPage
    resolution: Resolution | None = None

    @property
    def backend(self) -> str:
        return self.page.backend


def search_request(query: str, *, field: str | SearchField = SearchField.TEXT, list_name: str | None = None,
                   folder: str | None = None, all_folders: bool = False, since: datetime | None = None,
                   page: int = 0, page_size: int = SEARCH_PAGE) -> SearchRequest:
    """A checked request. Raises UsageError for what the user typed wrong (names the problem)."""
    try:
        return SearchRequest(query=query, field=field if isinstance(field, SearchField) else SearchField.parse(field),
                             list_name=list_name, folder=folder, all_folders=all_folders, since=since, page=page,
                             page_size=page_size)
    except InvalidQuery as exc:
        raise UsageError(str(exc)) from exc


def _check(name: str, features, request: SearchRequest) -> None:
    if not features.server_search:
        raise NotSupported(name, "search", "this backend declares no server search")
    if request.field.value not in features.server_search_fields:
        raise NotSupported(name, "search", f"it cannot search the {request.field.value} field "
                                           f"(it searches {', '.join(features.server_search_fields)})")
    if request.all_folders and not features.search_all_folders:
        raise NotSupported(name, "search", "it has no folders to search across")


def source_can_search(project, backend: str | None = None) -> bool:
    """Whether the backend that lists threads (or the one named) declares a server search."""
    name = backend or project.sources.resolve(Op.LIST_RECENT_THREADS).chosen
    return bool(name) and project.sources.backends[name].features.server_search


def search_project(project, request: SearchRequest, *, backend: str | None = None) -> SearchResult:
    """Run ``request`` on the backend that lists the threads (or ``backend``).

    Raises:
        MandatoryBackendUnavailable, NoBackendAvailable: as for every op (the mandatory rule).
        NotSupported: the backend declares no search, or not of this field / across folders.
        and the backend's own errors (Unavailable, BackendFailure) naming it.
    """
    sources = project.sources
    sources.preflight()
    if backend is not None:
        resolution = sources.named(Op.LIST_RECENT_THREADS, backend)
    else:
        resolution = sources.resolve(Op.LIST_RECENT_THREADS)
        resolution.raise_if_unresolved()
    chosen = sources.backends[resolution.chosen]
    _check(chosen.name, chosen.features, request)
    with OPLOG.record(chosen.name, "search") as rec:
        try:
            page = chosen.search(request)
        except InvalidQuery as exc:
            raise UsageError(f"{chosen.name}: {exc}") from exc
        except Unavailable:
            sources.availability.forget(chosen.name)  # as every dispatched op: checked again next time
            raise
        rec.size = len(page.items)
    return SearchResult(page, resolution)


def search_mailbox(mailbox, request: SearchRequest) -> SearchResult:
    """Run ``request`` on a personal account's mailbox adapter (MailHeader items).

    Raises:
        NotSupported: the adapter declares no server search.
        and the adapter's own errors (SignInNeeded, Unavailable, BackendFailure).
    """
    name = mailbox.account_id
    if not mailbox.server_search:
        raise NotSupported(name, "search", "this account's mailbox declares no server search")
    with OPLOG.record(name, "search") as rec:
        page = mailbox.search(request)
        rec.size = len(page.items)
    return SearchResult(page)


def search_account(account_id: str, request: SearchRequest, settings=None) -> SearchResult:
    """Open the ``[accounts.<account_id>]`` mailbox (the user settings), search it, close it.

    Raises:
        ConfigError: the account is unknown or its settings are invalid.
        NotSupported, and the adapter's errors, as :func:`search_mailbox`.
    """
    boxes = Mailboxes(settings if settings is not None else load_settings())
    try:
        return search_mailbox(boxes.get(account_id), request)
    finally:
        boxes.close()
