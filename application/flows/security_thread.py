"""The one rule for outgoing mail (issue 30): does a compose answer a thread of the
project's security list?

Decided from the message answered, never from the pane, folder, account or search it was
chosen in: its recipients and list headers against every configured project address
(the security list, the resolved security CC, the fallback security address and the lists
the mail sources hold), then the thread its References / In-Reply-To / Message-ID lead to
in the project's own sources. Mail that answers such a thread leaves only as a project
draft with the security CC, or not at all (:class:`Verdict.refused` says why).
"""

from __future__ import annotations

from email.utils import getaddresses
from typing import Callable, Iterable

from mailtriage.backends.contract import Message, Thread
from mailtriage.backends.security_cc import FALLBACK_KEY, LIST_KEY, configured_address, resolve_security_cc
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.projectconfig import ConfigError
from mailtriage.application.flows.errors import ApplicationError
from mailtriage.application.flows.text import one_line
from mailtriage.backends.contract import MESSAGE_ID_KIND, Message, Thread, ThreadId
from mailtriage.backends.errors import MailError, NotSupported, ThreadNotFound
from mailtriage.application.flows.open_project import OpenProject

#: Headers that name where a copy was delivered or which list carried it.
_DELIVERY_HEADERS = ("delivered-to", "x-original-to", "list-post", "envelope-to")


class ThreadCheckFailed(ApplicationError):
    """The project's sources could not be asked whether they hold a thread (unavailable,
    connection lost): the rule cannot clear the message, so nothing is composed."""


@frozen_dataclass
class Verdict:
    """What the rule says about answering one message.

    ``security``: it answers a thread of a project's security list; ``thread`` is then the
    project's thread to draft on. ``refused``: it must not be answered now (and why),
    also when the rule could not decide. ``why``: what decided, in words."""

    security: bool
    why: str = ""
    thread: Thread | None = None
    refused: str | None = None

    @property
    def personal(self) -> bool:
        """Nothing ties the message to a security-list thread: the account's own mail."""
        return not self.security and self.refused is None


def project_addresses(config) -> frozenset[str]:
    """Every address that makes mail the project's (lower case): the security list, the
    resolved security CC, the fallback security address and each mail source's list."""
    found: list[str | None] = [configured_address(config.get(LIST_KEY)),
                               configured_address(config.get(FALLBACK_KEY))]
    try:
        found.append(resolve_security_cc(config).security_cc)
    except ConfigError:
        pass  # a broken address is reported by the reply flow itself; the others still count
    for entry in getattr(config, "mail_sources", ()):
        found.append(configured_address(config.source_settings(entry.name).get("list")))
    return frozenset(a.lower() for a in found if a)


def _list_id_address(value: str) -> str | None:
    """``List-Id: Name <security.frob.example>`` read as the list's label (``security.frob.example``)."""
    start, end = value.rfind("<"), value.rfind(">")
    label = value[start + 1:end] if 0 <= start < end else value
    label = label.strip().lower()
    return label or None


def addressed_to(message: Message, addresses: frozenset[str]) -> str | None:
    """The project address ``message`` was written to, copied to, sent from or carried by
    (To, Cc, From, Reply-To, delivery and list headers), or None."""
    if not addresses:
        return None
    seen = [a.email for a in (*message.to, *message.cc, message.sender)]
    for name in ("reply-to", *_DELIVERY_HEADERS):
        values = [v for k, v in message.headers if k.lower() == name]
        seen += [addr.removeprefix("mailto:") for _n, addr in getaddresses(values)]
    for addr in seen:
        if addr and addr.strip().lower() in addresses:
            return addr.strip().lower()
    labels = {a.replace("@", ".", 1) for a in addresses}
    for key, value in message.headers:
        if key.lower() == "list-id" and _list_id_address(value) in labels:
            return next(a for a in addresses if a.replace("@", ".", 1) == _list_id_address(value))
    return None


#: References looked up at most besides the root: the nearest ones (a hostile message may
#: carry thousands, and each is a search in the project's sources).
NEAREST_REFERENCES = 3


def thread_ids(message: Message) -> list[str]:
    """The Message-IDs that lead to ``message``'s thread, root first: the first reference,
    the In-Reply-To, the nearest references, then its own ID (a synthetic ID leads nowhere)."""
    refs = list(message.references)
    ids = [*refs[:1], message.in_reply_to, *reversed(refs[1:][-NEAREST_REFERENCES:])]
    if not message.synthetic_id:
        ids.append(message.message_id)
    return [i for i in dict.fromkeys(ids) if i]


def judge(message: Message, addresses: frozenset[str],
          thread_holding: Callable[[str], Thread | None],
          from_list_archive: Callable[[Thread], bool] = lambda _thread: False) -> Verdict:
    """The rule for answering ``message`` (of any account, folder or search).

    ``thread_holding(message_id)`` returns the project's thread that holds that message, or
    None; it raises :class:`ThreadCheckFailed` when the sources cannot be asked.
    ``from_list_archive(thread)``: that thread came from the list's own archive (all its mail
    is the list's, though archives keep no To or Cc)."""
    direct = addressed_to(message, addresses)
    ids = thread_ids(message)
    # A message without References / In-Reply-To that was not sent to a project address
    # starts its own thread: the account's own mail, nothing to look up.
    if direct is None and not (message.references or message.in_reply_to):
        return Verdict(False, "not sent to a project list and it answers no earlier message")
    try:
        thread = _project_thread(ids, addresses, thread_holding, from_list_archive, need_list=direct is None)
    except ThreadCheckFailed as exc:
        return Verdict(False, refused=(
            f"could not check whether this message answers a thread of the security list, so it is not "
            f"answered from here: {one_line(str(exc), 300)}"))
    if direct is not None:
        why = f"it was sent to the project's list {direct}"
        if thread is None:
            return Verdict(True, why, refused=(
                f"{why}, so it is answered only as a project draft with the security CC; the project's mail "
                f"sources hold no thread of {_shown(ids)}: answer it from the security list instead"))
        return Verdict(True, why, thread)
    if thread is None:
        return Verdict(False, "not sent to a project list and the project's sources hold none of its thread")
    return Verdict(True, f"it answers the thread {thread.thread_id.root or thread.thread_id} of the security list",
                   thread)


def _project_thread(ids: list[str], addresses: frozenset[str], thread_holding: Callable[[str], Thread | None],
                    from_list_archive: Callable[[Thread], bool], *, need_list: bool) -> Thread | None:
    """The first project thread one of ``ids`` leads to; with ``need_list``, only one that
    holds a message written to a project address (a source folder may hold other mail) or
    that the list's own archive holds."""
    for mid in ids:
        thread = thread_holding(mid)
        if thread is None:
            continue
        if not need_list or from_list_archive(thread) or any(addressed_to(m, addresses) for m in thread.messages):
            return thread
    return None


def _shown(ids: Iterable[str]) -> str:
    ids = list(ids)
    return one_line(ids[0], 200) if ids else "(no Message-ID)"


class OutgoingRule:
    """The one rule for outgoing mail over an open project (issue 30): whether answering a
    message means answering a thread of the security list, decided from the message and
    the project's sources (``application/flows/security_thread.py``), whichever account, folder or
    search the message was found in."""

    def __init__(self, project: OpenProject) -> None:
        self.project = project
        self.addresses = project_addresses(project.config)

    def judge(self, message: Message) -> Verdict:
        archived: list[Thread] = []  # the threads the list's own archive served
        return judge(message, self.addresses, lambda mid: self._thread_holding(mid, archived),
                     lambda thread: any(thread is t for t in archived))

    def _thread_holding(self, message_id: str, archived: list[Thread]) -> Thread | None:
        """Fails closed: only a definite "no such thread" (or a backend that cannot resolve
        a Message-ID) clears the message; a lookup that failed (a server's NO/BAD, an
        archive's 500, a dropped connection, no backend) cannot, so it refuses."""
        try:
            dispatch = self.project.read_thread(ThreadId(MESSAGE_ID_KIND, message_id))
            backend = self.project.sources.backends.get(dispatch.resolution.chosen or "")
            if dispatch.value is not None and backend is not None and backend.features.list_archive:
                archived.append(dispatch.value)
            return dispatch.value
        except (ThreadNotFound, NotSupported):
            return None
        except MailError as exc:  # ConnectionLost, any other BackendFailure, unavailable, no backend
            raise ThreadCheckFailed(str(exc)) from exc
