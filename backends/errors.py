"""Errors of the mail backends: one root, :class:`MailError`, for everything below it.

``NotSupported`` (the backend declines an op) and ``Unavailable`` (the backend cannot
serve now, with a reason) drive the resolution rule; ``BackendFailure`` is one call
that failed. ``SignInNeeded`` is the only error that means "authenticate again":
outages and timeouts are ``Unavailable`` or ``BackendFailure``, never sign-in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mailtriage.core.secrets import scrub

if TYPE_CHECKING:  # the refusal's dataclass lives with the send policy that decides it
    from mailtriage.backends.send_policy import SendRefusal

# Every reason and detail passes through core.secrets.scrub: an exception text from a
# library (an encode error quoting the LOGIN line, a URL with a token) never carries a
# secret of the session into a reason, a JSON document or the screen.


class MailError(Exception):
    """Root of every mail-backend error."""


class NotSupported(MailError):
    def __init__(self, backend: str, op: str, detail: str | None = None) -> None:
        self.backend = backend
        self.op = op
        self.detail = scrub(detail) if detail is not None else None
        detail = self.detail
        text = f"backend {backend} does not support {op}"
        super().__init__(f"{text}: {detail}" if detail else text)


class Unavailable(MailError):
    def __init__(self, backend: str, reason: str) -> None:
        self.backend = backend
        self.reason = scrub(reason)
        super().__init__(f"backend {backend} unavailable: {self.reason}")


class SignInNeeded(Unavailable):
    """Authentication failed or credentials are missing/revoked for an account.

    A credentials problem, said as such: never "unavailable" (the server is fine; the
    password or token is not)."""

    def __init__(self, backend: str, reason: str) -> None:
        super().__init__(backend, f"sign-in needed: {reason}")
        self.args = (f"backend {backend}: {self.reason}",)


class BackendFailure(MailError):
    """One operation failed; the backend may still serve others."""

    def __init__(self, backend: str, detail: str) -> None:
        self.backend = backend
        self.detail = scrub(detail)
        super().__init__(f"{backend}: {self.detail}")


class ThreadNotFound(BackendFailure):
    """The backend answered that it holds no such thread (or no message of it): a definite
    "not here", unlike a lookup that failed, which stays a plain :class:`BackendFailure`."""


class ConnectionLost(BackendFailure):
    """The connection dropped during a call; the next call reconnects, so retrying may help.

    A backend's own "connection lost" error derives from this class, so a front end tells a
    dropped connection by its type.
    """


class MandatoryBackendUnavailable(MailError):
    """A mandatory backend is unavailable: the run aborts without proposing anything."""

    def __init__(self, backend: str, reason: str) -> None:
        self.backend = backend
        self.reason = scrub(reason)
        super().__init__(f"mandatory backend {backend} unavailable: {self.reason}; run aborted")


class NoBackendAvailable(MailError):
    """No backend can serve the op; the caller skips that op's proposal."""

    def __init__(self, op: str, some_unavailable: bool = False) -> None:
        self.op = op
        # True when a backend offering the op exists but is unavailable (a failure, not a decline).
        self.some_unavailable = some_unavailable
        super().__init__(f"no backend available for {op}")


class NoBackendReachable(NoBackendAvailable):
    """No backend can serve the op *because* one that offers it is unavailable: a failure,
    where a plain :class:`NoBackendAvailable` (nobody offers the op) is a decline."""

    def __init__(self, op: str) -> None:
        super().__init__(op, some_unavailable=True)


class DraftAlreadyPending(MailError):
    """``create_draft`` refused: a draft for this thread is already pending.

    A second draft needs a proposal that says so and a user who confirmed it
    (``DraftRequest.allow_second_draft``). ``drafts`` names the pending drafts.
    """

    def __init__(self, backend: str, thread: str, drafts: list[str]) -> None:
        self.backend = backend
        self.thread = thread
        self.drafts = list(drafts)
        super().__init__(f"{backend}: a draft for thread {thread} is already pending ({', '.join(drafts)}); "
                         "not creating a second one unless the proposal allows it and it is confirmed")


class SendRefused(MailError):
    """A send the send policy refused (nothing was sent); ``refusal`` says which rule refused."""

    def __init__(self, refusal: "SendRefusal") -> None:
        self.refusal = refusal
        super().__init__(f"send refused ({refusal.reason}): {refusal.detail}")
