"""Benchmark: list archives cost what is shown, not the archive.

Runs the HyperKitty and Pony Mail backends against the loopback emulations of the
test suite, on generated lists, and prints our figures beside a naive baseline
measured in the same run:

* HyperKitty: ``list_recent_threads`` follows thread pages newest first and stops at
  ``since``. The baseline pages through the whole archive (same page size, same HTTP
  client), then keeps the threads of the window. Both then fetch one starting email
  per thread shown, so the difference is the since-stop alone.
* Pony Mail: one ``stats`` request for the window (``d=lte=30d``) beside the same
  request for the whole archive.

Run from the repository root:  .venv/bin/python benchmarks/bench_archives.py
"""

from __future__ import annotations

import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mailtriage.backends.archive_http import ArchiveHttp, parse_datetime  # noqa: E402
from mailtriage.backends.hyperkitty import HyperKittySource  # noqa: E402
from mailtriage.backends.ponymail import PonyMailSource  # noqa: E402
from tests.archives.fakehttp import FakeHttpServer  # noqa: E402
from tests.archives.hyperkitty_server import HKEmail, HyperKittyArchive  # noqa: E402
from tests.archives.ponymail_server import PMEmail, PonyMailArchive  # noqa: E402

LIST = "security@example.org"
PAGE_SIZE = 25
SPAN_DAYS = 3650  # the generated archive covers ten years


def hyperkitty_archive(threads: int, now: datetime) -> HyperKittyArchive:
    archive = HyperKittyArchive()
    archive.add_list(LIST)
    step = SPAN_DAYS / threads
    for i in range(threads):
        when = now - timedelta(days=i * step + 0.01)
        root = HKEmail(f"t{i}@example.org", f"user{i % 97}@example.org", f"User {i % 97}", f"Report {i}", when,
                       f"body {i}\n")
        archive.add_thread(LIST, [root])
    return archive


def naive_listing(base_url: str, since: datetime) -> tuple[int, int]:
    """Every page of the archive, then the window's rows, then their starting emails."""
    http = ArchiveHttp("naive", base_url, timeout=30)
    api = f"{base_url}/api/list/{LIST}/"
    rows, offset, pages = [], 0, 0
    while True:
        page = http.get_json(api + "threads/", {"limit": PAGE_SIZE, "offset": offset}, what="page")
        pages += 1
        rows += [r for r in page["results"] if parse_datetime(r["date_active"]) >= since]
        if not page["next"]:
            break
        offset += PAGE_SIZE
    for row in rows:
        http.get_json(api + f"thread/{row['thread_id']}/emails/", {"limit": 1, "offset": 0}, what="first")
    requests = http.requests_sent
    http.close()
    return pages, requests


def measure(call) -> tuple[object, float]:
    t0 = time.perf_counter()
    value = call()
    return value, (time.perf_counter() - t0) * 1000


def bench_hyperkitty() -> None:
    now = datetime.now(timezone.utc)
    print(f"HyperKitty: list_recent_threads, page size {PAGE_SIZE}, archive spread over {SPAN_DAYS} days")
    print("(one 'page shown' = one page of threads with the starting email of each; sequential requests)")
    header = (f"{'threads':>8} {'window':>7} {'shown':>6} {'pages':>5} | {'requests':>8} {'per page':>8} "
              f"{'ms':>7} {'ms/page':>8} | {'naive req':>9} {'per page':>8} {'ms':>7} {'ms/page':>8}")
    print(header)
    print("-" * len(header))
    for threads in (1_000, 10_000):
        archive = hyperkitty_archive(threads, now)
        with FakeHttpServer(archive) as server:
            for days in (7, 30, 90):
                since = now - timedelta(days=days)
                source = HyperKittySource("bench", {"base_url": server.base_url, "list": LIST,
                                                    "page_size": PAGE_SIZE, "parallel_requests": 1})
                server.clear()
                listing, ours_ms = measure(lambda: source.list_recent_threads(None, since))
                pages = sum(1 for r in server.requests if r.path.endswith("/threads/"))
                source.close()
                (_naive_pages, naive_requests), naive_ms = measure(lambda: naive_listing(server.base_url, since))
                print(f"{threads:>8,} {days:>5} d {len(listing):>6} {pages:>5} | {listing.requests:>8} "
                      f"{listing.requests / pages:>8.1f} {ours_ms:>7.0f} {ours_ms / pages:>8.1f} | "
                      f"{naive_requests:>9} {naive_requests / pages:>8.1f} {naive_ms:>7.0f} "
                      f"{naive_ms / pages:>8.1f}")
    print("ours: thread pages up to `since` + one starting email per thread shown.")
    print("naive: every thread page of the archive, then the same starting emails.\n")


def bench_ponymail() -> None:
    now = datetime.now(timezone.utc)
    archive = PonyMailArchive()
    count = 10_000
    step = SPAN_DAYS / count
    for i in range(count):
        epoch = int((now - timedelta(days=i * step + 0.01)).timestamp())
        archive.add(PMEmail("<security.example.org>", f"<m{i}@example.org>", f"User {i % 97} <u{i % 97}@x.org>",
                            f"Report {i}", epoch, f"body {i}\n" * 5))
    print(f"Pony Mail: list_recent_threads over {count:,} messages spread over {SPAN_DAYS} days")
    header = f"{'window':>8} {'threads':>8} {'requests':>8} {'bytes':>10} {'ms':>8}"
    print(header)
    print("-" * len(header))
    with FakeHttpServer(archive) as server:
        for label, days in (("30 d", 30), ("naive", SPAN_DAYS)):
            source = PonyMailSource("bench", {"base_url": server.base_url, "list": "security",
                                              "domain": "example.org"})
            server.clear()
            listing, ms = measure(lambda: source.list_recent_threads(None, now - timedelta(days=days)))
            source.close()
            size = _answer_bytes(server)
            print(f"{label:>8} {len(listing):>8,} {listing.requests:>8} {size:>10,} {ms:>8.0f}")
    print("naive = the same stats request for the whole archive.")


def _answer_bytes(server: FakeHttpServer) -> int:
    """Bytes the stats answer carried (re-rendered; the server does not keep bodies)."""
    stats = [r for r in server.requests if r.path.endswith("/stats.lua")]
    reply = server.app(stats[-1])
    return len(reply.body)


if __name__ == "__main__":
    bench_hyperkitty()
    bench_ponymail()
