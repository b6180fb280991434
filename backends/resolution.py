"""The resolution rule: which configured backend runs an operation.

Exactly the contract's four steps:

1. a backend ``preferred for <op>`` that supports the op and is available;
2. else the ``primary`` if it supports the op and is available;
3. else the ``fallback`` backends in declared order, first that supports and is available;
4. else abort when any mandatory backend was unavailable, or skip the op with
   ``no backend available for <op>``.

``optional`` backends are never in the chain. The result is a value that the CLI
prints and the TUI shows: the chosen backend, the chain tried, and why each other
backend was skipped.
"""

from __future__ import annotations

import time
from dataclasses import field
from typing import Callable, Sequence

from mailtriage.backends.contract import MailSource, Op
from mailtriage.backends.errors import (
    MandatoryBackendUnavailable,
    NoBackendAvailable,
    NoBackendReachable,
    SignInNeeded,
    Unavailable,
)
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.secrets import scrub
from mailtriage.core.projectconfig import MailSourceEntry


@frozen_dataclass
class Step:
    """One backend considered while resolving an op, and what happened to it."""

    backend: str
    role: str
    outcome: str  # "chosen", "declines <op>", "unavailable: <reason>", "not tried: …", "optional: …"

    def to_json(self) -> dict:
        return {"backend": self.backend, "role": self.role, "outcome": self.outcome}


@frozen_dataclass
class Resolution:
    op: Op
    chosen: str | None
    rule_step: int | None  # 1..3 when chosen, 4 when not
    steps: tuple[Step, ...]
    aborted: str | None = None  # the mandatory-abort text
    note: str | None = None  # the skip note
    aborted_backend: str | None = None
    aborted_reason: str | None = None
    # The configuration error (exit 2) or sign-in problem behind a mandatory abort, or
    # behind every unavailable backend when none was chosen: raised as is.
    cause: Exception | None = field(default=None, compare=False, repr=False)
    named: bool = False  # chosen by name (``--backend``), not by the rule


    @property
    def ok(self) -> bool:
        return self.chosen is not None

    def summary(self) -> str:
        if self.chosen and self.named:
            return f"{self.op.value} → {self.chosen} (named with --backend)"
        if self.chosen:
            why = {1: "preferred", 2: "primary", 3: "first available fallback"}[self.rule_step or 3]
            skipped = [f"{s.backend} ({s.outcome})" for s in self.steps if s.outcome != "chosen"]
            text = f"{self.op.value} → {self.chosen} ({why})"
            return text + (f"; skipped {', '.join(skipped)}" if skipped else "")
        if self.aborted:
            return f"{self.op.value}: {self.aborted}"
        return self.note or f"no backend available for {self.op.value}"

    def to_json(self) -> dict:
        return {
            "op": self.op.value,
            "chosen": self.chosen,
            "rule_step": self.rule_step,
            "chain": [s.to_json() for s in self.steps],
            "aborted": self.aborted,
            "note": self.note,
            "named": self.named,
            "summary": self.summary(),
        }

    def raise_if_unresolved(self) -> None:
        if not self.chosen and self.cause is not None:
            raise self.cause
        if self.aborted:
            raise MandatoryBackendUnavailable(self.aborted_backend or "?", self.aborted_reason or "?")
        if not self.chosen:
            unavailable = any(s.outcome.startswith("unavailable") for s in self.steps)
            error = NoBackendReachable(self.op.value) if unavailable else NoBackendAvailable(self.op.value)
            if self.note and self.note != str(error):
                error.args = (self.note,)  # the note names what else was wrong (an optional backend's reason)
            raise error


#: The first wait before an outage's answer is checked again (with :meth:`AvailabilityCache.retry_outages`).
RETRY_FIRST_SECONDS = 2.0
#: The longest such wait, whatever the caller's cap.
RETRY_MAX_SECONDS = 60.0


def retry_delay(failures: int, cap: float) -> float:
    """The wait before trying again after ``failures`` failures in a row: 2, 4, 8 … seconds,
    at most ``cap`` and :data:`RETRY_MAX_SECONDS`."""
    return max(0.0, min(RETRY_FIRST_SECONDS * 2 ** min(max(failures, 1) - 1, 16), cap, RETRY_MAX_SECONDS))


class AvailabilityCache:
    """Checks each backend's availability at most once per run, unless outages are retried.

    A long-running caller (the new-report watch) calls :meth:`retry_outages`: then an
    outage's answer (the server down, refused, timed out) expires after a backoff that
    doubles with each failed check (2, 4, 8 … s, at most the cap) and a successful check
    ends it. Credential and configuration problems stay for the run: retrying them would
    only repeat a rejected login.
    """

    def __init__(self, backends: dict[str, MailSource], *, clock: Callable[[], float] = time.monotonic) -> None:
        self._backends = backends
        self._reasons: dict[str, str | None] = {}
        self._causes: dict[str, Exception] = {}
        self._clock = clock
        self._retry_cap: float | None = None  # None: an outage's answer stands for the run
        self._failures: dict[str, int] = {}  # consecutive failed checks of a backend that is down
        self._expires: dict[str, float] = {}  # when an outage's answer is checked again (clock time)
        # forget() of every answer only moves this on; the next read clears the answers
        # (_catch_up). So forgetting never needs the lock that the readers hold: the UI
        # thread calls it while a worker may be checking a backend (issue 36 review).
        self._forgotten = 0
        self._caught_up = 0

    def retry_outages(self, cap: float) -> None:
        """Let an outage's answer expire after a growing backoff of at most ``cap`` seconds
        (and :data:`RETRY_MAX_SECONDS`)."""
        self._retry_cap = max(0.0, min(float(cap), RETRY_MAX_SECONDS))

    def retry_in(self, name: str) -> float | None:
        """Seconds until an outage of ``name`` is checked again (None: not retried, or available)."""
        self._catch_up()
        expires = self._expires.get(name)
        return None if expires is None else max(0.0, expires - self._clock())

    def _outage(self, name: str, reason: str) -> None:
        self._reasons[name] = reason
        if self._retry_cap is None:
            return
        failures = self._failures.get(name, 0) + 1
        self._failures[name] = failures
        self._expires[name] = self._clock() + retry_delay(failures, self._retry_cap)

    def cause(self, name: str) -> Exception | None:
        """The ConfigError or SignInNeeded that makes ``name`` unusable, if that is why."""
        self.reason(name)
        return self._causes.get(name)

    def config_error(self, name: str) -> ConfigError | None:
        """The configuration error that makes ``name`` unusable, if that is why."""
        cause = self.cause(name)
        return cause if isinstance(cause, ConfigError) else None

    def problem(self, name: str) -> str | None:
        """What kind of problem keeps ``name`` from serving: configuration, credentials, unavailable."""
        if self.reason(name) is None:
            return None
        cause = self._causes.get(name)
        return "configuration" if isinstance(cause, ConfigError) else "credentials" if cause else "unavailable"

    def reason(self, name: str) -> str | None:
        """None when available, else the reason it is not."""
        self._catch_up()
        expires = self._expires.get(name)
        if expires is not None and self._clock() >= expires:
            del self._expires[name]  # the outage's answer expired: checked again now
            self._reasons.pop(name, None)
        if name not in self._reasons:
            try:
                self._backends[name].check_available()
                self._reasons[name] = None
                self._failures.pop(name, None)  # the outage ended: the next one starts its backoff afresh
            except SignInNeeded as exc:
                # Credentials, not an outage: when the backend is needed the run stops
                # with this error (a sign-in problem), not "mandatory backend unavailable".
                self._causes[name] = exc
                self._reasons[name] = exc.reason
            except Unavailable as exc:
                self._outage(name, exc.reason)
            except ConfigError as exc:
                # Kept apart: when this backend is needed, the run stops with the
                # configuration error itself (exit 2), not as an unavailable backend.
                self._causes[name] = exc
                self._reasons[name] = scrub(f"configuration error: {exc}")
            except Exception as exc:  # a broken check is an unavailability, with the error named
                self._outage(name, scrub(f"{type(exc).__name__}: {exc}"))
        return self._reasons[name]

    def forget(self, name: str | None = None) -> None:
        """Check again on next use (the count of failed checks stays: the backoff keeps growing).

        Forgetting every answer (``name`` None) is lock-free and safe from any thread while
        another one reads: it only moves a counter on, which the next read sees."""
        if name is None:
            self._forgotten += 1
        else:
            self._catch_up()
            self._reasons.pop(name, None)
            self._causes.pop(name, None)
            self._expires.pop(name, None)


    def _catch_up(self) -> None:
        """Clear the answers when :meth:`forget` was called for all since the last read."""
        forgotten = self._forgotten
        if forgotten != self._caught_up:
            self._caught_up = forgotten
            self._reasons.clear()
            self._causes.clear()
            self._expires.clear()


def _role_label(entry: MailSourceEntry) -> str:
    return entry.role_text + (", mandatory" if entry.mandatory else "")


def resolution_order(op: Op, entries: Sequence[MailSourceEntry]) -> list[tuple[int, MailSourceEntry]]:
    """The entries the rule tries for ``op``, in order, each with its rule step: preferred
    for ``op`` (1), primary (2), fallback (3)."""
    ordered = [(1, e) for e in entries if e.role == "preferred" and op.value in e.preferred_ops]
    ordered += [(2, e) for e in entries if e.role == "primary"]
    ordered += [(3, e) for e in entries if e.role == "fallback"]
    return ordered


def resolve(
    op: Op,
    entries: Sequence[MailSourceEntry],
    backends: dict[str, MailSource],
    availability: AvailabilityCache | Callable[[str], str | None],
) -> Resolution:
    reason_of = availability.reason if isinstance(availability, AvailabilityCache) else availability
    cause_of = availability.cause if isinstance(availability, AvailabilityCache) else (lambda _: None)
    steps: list[Step] = []
    considered: set[str] = set()

    def consider(entry: MailSourceEntry) -> bool:
        considered.add(entry.name)
        backend = backends[entry.name]
        if not backend.supports(op):
            steps.append(Step(entry.name, _role_label(entry), f"declines {op.value}"))
            return False
        why = reason_of(entry.name)
        if why is not None:
            steps.append(Step(entry.name, _role_label(entry), f"unavailable: {why}"))
            return False
        steps.append(Step(entry.name, _role_label(entry), "chosen"))
        return True

    ordered = resolution_order(op, entries)
    for rule_step, entry in ordered:
        if consider(entry):
            chosen = entry.name
            for _, rest in ordered:
                if rest.name not in considered:
                    considered.add(rest.name)
                    steps.append(Step(rest.name, _role_label(rest), "not tried: an earlier backend was chosen"))
            _add_unconsidered(entries, considered, steps, op)
            return Resolution(op, chosen, rule_step, tuple(steps))

    _add_unconsidered(entries, considered, steps, op)
    # Step 4: any mandatory backend unavailable aborts the run.
    for entry in entries:
        if entry.mandatory:
            why = reason_of(entry.name)
            if why is not None:
                # The chain stays as walked (a backend that declined stays "declines");
                # the abort text names the mandatory backend and why.
                text = f"mandatory backend {entry.name} unavailable: {why}; run aborted"
                return Resolution(op, None, 4, tuple(steps), aborted=text,
                                  aborted_backend=entry.name, aborted_reason=why,
                                  cause=cause_of(entry.name))
    note = f"no backend available for {op.value}"
    # Why each backend in the chain that offers the op could not serve it: the useful part
    # of the message (with one backend, the only reason there is). Optional backends are
    # never chosen; when one that offers the op is also down, its own reason counts too.
    down = [f"{s.backend} ({s.role}) is {s.outcome}" for s in steps if s.outcome.startswith("unavailable: ")]
    down += [f"{e.name} (optional, never chosen by the rule) is unavailable: {why}" for e in entries
             if e.role == "optional" and backends[e.name].supports(op) and (why := reason_of(e.name)) is not None]
    if down:
        note += "; " + "; ".join(down)
    unavailable = [s.backend for s in steps if s.outcome.startswith("unavailable")]
    causes = [cause_of(name) for name in unavailable]
    return Resolution(op, None, 4, tuple(steps), note=note,
                      cause=causes[0] if causes and all(causes) else None)


def _add_unconsidered(entries, considered, steps, op) -> None:
    for entry in entries:
        if entry.name in considered:
            continue
        if entry.role == "optional":
            steps.append(Step(entry.name, _role_label(entry), "optional: never in the resolution chain"))
        elif entry.role == "preferred":
            steps.append(Step(entry.name, _role_label(entry), f"preferred only for {', '.join(entry.preferred_ops)}"))


def preflight_resolution(
    op: Op, entries: Sequence[MailSourceEntry], availability: AvailabilityCache | Callable[[str], str | None]
) -> Resolution | None:
    """The recap of a run refused at its start: every mandatory backend checked, in
    declared order, with its outcome. None when every mandatory backend is available."""
    reason_of = availability.reason if isinstance(availability, AvailabilityCache) else availability
    steps: list[Step] = []
    first: tuple[str, str] | None = None
    for entry in entries:
        if not entry.mandatory:
            continue
        why = reason_of(entry.name)
        steps.append(Step(entry.name, _role_label(entry),
                          "mandatory check: available" if why is None else f"mandatory check: unavailable: {why}"))
        if why is not None and first is None:
            first = (entry.name, why)
    if first is None:
        return None
    text = f"mandatory backend {first[0]} unavailable: {first[1]}; run aborted"
    return Resolution(op, None, None, tuple(steps), aborted=text, aborted_backend=first[0], aborted_reason=first[1])


def mandatory_preflight(
    entries: Sequence[MailSourceEntry], availability: AvailabilityCache | Callable[[str], str | None]
) -> None:
    """The mandatory rule at run start: refuse to run when a mandatory backend is unavailable."""
    reason_of = availability.reason if isinstance(availability, AvailabilityCache) else availability
    for entry in entries:
        if entry.mandatory:
            why = reason_of(entry.name)
            if why is not None:
                if isinstance(availability, AvailabilityCache) and availability.cause(entry.name):
                    raise availability.cause(entry.name)
                raise MandatoryBackendUnavailable(entry.name, why)
