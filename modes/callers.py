"""Who may send what to the endpoint: each caller has its own token (modes/server.py), and
each token carries only its route of the contract (§5).

* the outside master (``server.token_key`` / ``token_env``) sends what goes master → email
  (``case.assign``, ``case.policy``, ``handoff.cancel``, ``mail.send``), never a mode's status;
* a mode endpoint (``types.<type>.modes.<mode>``) sends ``handoff.status``, and only for the
  handoffs of its own mode on cases of its own type.

A refusal is ``403 forbidden`` and is not remembered under the message id: the same id sent
with the right token is then processed. A repeated id gets its original answer only from a
caller that may send that message's type (a mode cannot read the master's answers by id).
"""

from __future__ import annotations


from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.modes.envelope import Envelope, ProtocolError
from mailtriage.modes.store import Store

MODE_SENDS = ("handoff.status",)


@frozen_dataclass
class Caller:
    """A mode endpoint (``resource_type``, ``mode``), or the master (both None)."""

    resource_type: str | None = None
    mode: str | None = None

    @property
    def is_master(self) -> bool:
        return self.mode is None

    def __str__(self) -> str:
        return "the master" if self.is_master else f"mode {self.resource_type}.{self.mode}"


MASTER = Caller()


def forbidden(detail: str) -> ProtocolError:
    return ProtocolError("forbidden", detail, status=403)


def may_send(caller: Caller | None, type_name: str | None) -> bool:
    """Whether ``caller`` may send a message of this type at all (None: in-process, anything)."""
    if caller is None:
        return True
    return (type_name not in MODE_SENDS) if caller.is_master else (type_name in MODE_SENDS)


def check_route(envelope: Envelope, caller: Caller | None, store: Store) -> None:
    """Raise ``forbidden`` when ``caller`` may not send ``envelope``. None: an in-process caller
    (tests, an embedding UI) that the HTTP server did not authenticate; nothing is checked."""
    if caller is None:
        return
    if caller.is_master:
        if envelope.type in MODE_SENDS:
            raise forbidden(f"{envelope.type} comes from the mode holding the handoff, with that mode's token")
        return
    if envelope.type not in MODE_SENDS:
        raise forbidden(f"{caller} may send handoff.status only; {envelope.type} needs the master's token")
    handoff = store.handoff(str(envelope.get("handoff_id")))
    case = store.case(envelope.case.key) if envelope.case is not None else None
    if handoff is None or case is None or handoff.case_key != case.key:
        return  # unknown-case / unknown-handoff, as for anyone
    if (case.resource_type, handoff.mode) != (caller.resource_type, caller.mode):
        raise forbidden(f"handoff {handoff.handoff_id} is not one of {caller}'s")
