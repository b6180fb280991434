"""A generated mail source for the TUI benchmark: N threads, no I/O.

Not a test double and not shipped: the benchmark registers it under the kind
``synthetic`` in its own child process, so the key-press latency of a 100,000-row
thread list is measured without the cost of parsing a 100,000-message archive first
(that cost belongs to the backend benchmarks).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from mailtriage.backends.contract import Address, MailSource, Message, Op, TextPart, Thread, ThreadId, ThreadSummary

BASE = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)
WORDS = ("overflow", "injection", "traversal", "bypass", "disclosure", "deserialization", "race", "redirect")


def summary(i: int) -> ThreadSummary:
    return ThreadSummary(
        ThreadId("synthetic", f"<t{i}@bench.invalid>"),
        f"Report {i}: {WORDS[i % len(WORDS)]} in component {i % 97}",
        f"<t{i}@bench.invalid>",
        Address(f"Reporter {i % 1000}", f"reporter{i % 1000}@example.org"),
        BASE - timedelta(minutes=i),
        1 + i % 5,
        unread=i % 7 == 0,
    )


class PagedListing:
    """A lazy listing: length known, rows fetched a page at a time."""

    def __init__(self, total: int) -> None:
        self.total = total

    def __len__(self) -> int:
        return self.total

    def fetch_page(self, offset: int, limit: int) -> list[ThreadSummary]:
        return [summary(i) for i in range(offset, min(offset + limit, self.total))]


class SyntheticSource(MailSource):
    kind = "synthetic"
    thread_id_kind = "synthetic"
    capabilities = frozenset({Op.LIST_RECENT_THREADS, Op.READ_THREAD})

    def list_recent_threads(self, list_name, since):
        total = int(self.settings.get("threads", 100_000))
        if self.settings.get("paged"):
            return PagedListing(total)
        return [summary(i) for i in range(total)]

    def read_thread(self, thread_id: ThreadId) -> Thread:
        i = int(thread_id.value[2:].partition("@")[0])
        s = summary(i)
        message = Message(s.root_message_id, s.subject, s.sender, date=s.last_activity,
                          text_parts=(TextPart("text/plain", f"Synthetic report {i}.\n"),))
        return Thread(thread_id, s.subject, (message,))
