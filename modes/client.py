"""Outbound contract messages: one POST with timeouts and retries, and the durable outbox.

HTTP goes through :class:`mailtriage.core.http.HttpClient` (httpx), the project's one
HTTP client, run in a worker thread so the server's event loop never waits: it brings
the User-Agent, timeouts and the redacted protocol trace. Its own 429/503 retry is off
(``attempts=1``) because the contract's rule is ours to keep: a 5xx or no answer is
retried *with the same id*, a few times at once and then later from the durable outbox
(driven by the injectable clock), while a 4xx is final.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any, Callable

from mailtriage.core.http import HttpClient, HttpError, RetryPolicy
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.trace import TRACE
from mailtriage.modes.clock import Clock
from mailtriage.modes.store import Store

ACCEPTED, REFUSED, RETRY = "accepted", "refused", "retry"


@frozen_dataclass
class Delivery:
    outcome: str  # accepted | refused | retry
    http_status: int | None
    body: Any
    error: str | None
    attempts: int


class ContractClient:
    """POSTs one message as JSON; retries 5xx and transport failures with the same body."""

    def __init__(self, *, timeout: float, attempts: int, backoff: float) -> None:
        self.attempts = max(1, attempts)
        self.backoff = backoff
        self._http = HttpClient("modes", timeout=timeout, retry=RetryPolicy(attempts=1),
                                headers={"Content-Type": "application/json"})

    def close(self) -> None:
        self._http.close()

    async def post(self, url: str, message: dict[str, Any]) -> Delivery:
        payload = json.dumps(message).encode("utf-8")
        last_error, status, body = None, None, None
        for attempt in range(1, self.attempts + 1):
            try:
                response = await asyncio.to_thread(self._http.post, url, content=payload)
            except HttpError as exc:
                last_error, status, body = exc.detail, None, None
            else:
                status = response.status_code
                try:
                    body = response.json()
                except ValueError:
                    body = None
                if 200 <= status < 300:
                    return Delivery(ACCEPTED, status, body, None, attempt)
                if 400 <= status < 500:
                    detail = body.get("detail") if isinstance(body, dict) else None
                    code = body.get("error") if isinstance(body, dict) else None
                    return Delivery(REFUSED, status, body, f"{status} {code or ''} {detail or ''}".strip(), attempt)
                last_error = f"HTTP {status}"
            if attempt < self.attempts:
                TRACE.log("http:modes", "!", f"{message.get('type')} {message.get('id')}: {last_error}; retrying")
                await asyncio.sleep(self.backoff * attempt)
        return Delivery(RETRY, status, body, last_error, self.attempts)


# Called inside the transaction that finishes the item: database effects only, no I/O.
ResultHandler = Callable[[dict[str, Any], Delivery], None]


class Outbox:
    """Contract messages waiting for their receiver, in the store so they survive a restart.

    Per receiver URL the order of creation is kept: when one message must wait for a
    retry, the later ones to the same URL wait with it.
    """

    def __init__(self, store: Store, client: ContractClient, clock: Clock, *, retry_after: float,
                 max_attempts: int, on_result: ResultHandler) -> None:
        self.store = store
        self.client = client
        self.clock = clock
        self.retry_after = retry_after
        self.max_attempts = max_attempts
        self.on_result = on_result
        self._lock = asyncio.Lock()

    async def deliver_due(self) -> int:
        """Try every message that is due now; returns how many reached a final state."""
        finished = 0
        async with self._lock:
            blocked: set[str] = set()
            for item in self.store.due(self.clock.now()):
                if item["url"] in blocked:
                    continue
                current = self.store.outbox_item(item["id"])
                if current is None or current["state"] != "pending":
                    continue  # withdrawn meanwhile (its handoff ended)
                message = json.loads(item["body"])
                delivery = await self.client.post(item["url"], message)
                attempts = item["attempts"] + delivery.attempts
                now = self.clock.now()
                if delivery.outcome == RETRY and attempts < self.max_attempts:
                    blocked.add(item["url"])
                    failed_passes = max(1, attempts // self.client.attempts)
                    backoff = min(self.retry_after * 2 ** min(failed_passes - 1, 10), 24 * 3600.0)
                    self.store.outbox_attempted(item["id"], attempts=attempts,
                                                next_attempt=now + timedelta(seconds=backoff),
                                                error=delivery.error or "no answer", now=now)
                    continue
                state = {ACCEPTED: "delivered", REFUSED: "rejected"}.get(delivery.outcome, "abandoned")
                with self.store.transaction():
                    self.store.outbox_finished(item["id"], state=state, attempts=attempts,
                                               http_status=delivery.http_status, response=delivery.body,
                                               error=delivery.error, now=now)
                    self.on_result(item, delivery)
                finished += 1
        return finished
