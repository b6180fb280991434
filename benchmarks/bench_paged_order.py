"""Paged folder benchmark (issue 35, item 5), backend side only: the server reads behind
sorting a 2,000-message folder by sender and fetching its first page, on Dovecot, beside the
way before it, measured in the same run. It does not drive the app: the thread list's workers
and the paint are not in these figures (bench_habits.py times keys in the app beside aerc).

  (a) ours: the server's ``UID SORT (DISPLAYFROM)`` over the folder (IDs only), then the
      headers of the first page of 100 (``headers``), what the thread list does on ``o``;
  (b) baseline: every page of the folder listed (``list``, 100 a page) and sorted by sender
      at hand, what the list did before (issue 33's fetch-every-page sort);

and ``u`` to an unread message on the last page: (a) ``UID SEARCH UNSEEN`` + ``UID SEARCH ALL``
+ that page's headers, (b) pages walked until the unread one. Alternating, median of
``--repeat``. No timed assertion: the figures are printed side by side.

Run: .venv/bin/python benchmarks/bench_paged_order.py [--messages 2000] [--repeat 5]

Measured on the 2-core development machine (load 6.6, other helpers' tests running), 2,000
messages, median of 3, backend reads only: sort by sender and the first page 44 ms (baseline
374 ms); ``u`` to an unread message on the last page 38 ms (baseline 562 ms).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import keyring  # noqa: E402

from mailtriage.backends.imap.account import ImapAccount, password_key  # noqa: E402
from mailtriage.backends.imap.adapter import ImapMailbox  # noqa: E402
from mailtriage.backends.mailbox_contract import MailQuery  # noqa: E402
from mailtriage.core.secrets import set_secret  # noqa: E402
from tests.servers.dovecot import DovecotServer  # noqa: E402
from tests.servers.keyring_backend import MemoryKeyring  # noqa: E402

PAGE = 100


def message(n: int) -> bytes:
    return (f"From: Reporter {n * 7919 % 997} <r{n % 40}@example.net>\r\nTo: security@example.org\r\n"
            f"Subject: Report {n}\r\nDate: Thu, 01 Oct 2026 09:{n % 60:02d}:00 +0000\r\n"
            f"Message-ID: <p{n}@example.net>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\n"
            f"Details of report {n}.\r\n").encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    keyring.set_keyring(MemoryKeyring())
    server = DovecotServer().start()
    try:
        user = server.add_user("paged")
        with server.client(user) as client:
            for n in range(args.messages):
                client.append("INBOX", message(n), flags=() if n == 3 else (b"\\Seen",))
        account = ImapAccount(id="bench-paged", host="127.0.0.1", port=server.port, security="plain",
                              username=user.name, access="read", timeout=600, cache_summaries=False)
        set_secret(password_key(account.id), user.password)
        mailbox = ImapMailbox(account)
        pages = (args.messages + PAGE - 1) // PAGE

        def ours_sort() -> str:
            order = mailbox.order("INBOX", "sender")
            return mailbox.headers(order.ids[:PAGE])[0].sender.name

        def baseline_sort() -> str:
            rows = [h for p in range(pages) for h in mailbox.list(MailQuery(folder="INBOX", page=p, page_size=PAGE)).messages]
            return sorted(rows, key=lambda h: (h.sender.name or h.sender.email).casefold())[0].sender.name

        def ours_unread() -> str:
            unread = set(mailbox.unread_ids("INBOX").ids)
            ids = mailbox.order("INBOX").ids
            at = next(i for i, m in enumerate(ids) if m in unread)
            return mailbox.headers(ids[at // PAGE * PAGE:(at // PAGE + 1) * PAGE])[at % PAGE].subject

        def baseline_unread() -> str:
            for p in range(pages):
                for h in mailbox.list(MailQuery(folder="INBOX", page=p, page_size=PAGE)).messages:
                    if not h.read:
                        return h.subject
            return ""

        assert ours_sort() == baseline_sort() and ours_unread() == baseline_unread() == "Report 3"
        times: dict[str, list[float]] = {k: [] for k in ("ours_sort", "baseline_sort", "ours_unread", "baseline_unread")}
        for _ in range(args.repeat):
            for name, fn in (("ours_sort", ours_sort), ("baseline_sort", baseline_sort),
                             ("ours_unread", ours_unread), ("baseline_unread", baseline_unread)):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) * 1000 for k, v in times.items()}
        print(f"{args.messages:,} messages, median of {args.repeat}, load {os.getloadavg()[0]:.2f}")
        print(f"o (sort by sender), first page read (backend only): ours {med['ours_sort']:.0f} ms   "
              f"baseline (every page, sorted at hand) {med['baseline_sort']:.0f} ms")
        print(f"u (unread on the last page):      ours {med['ours_unread']:.0f} ms   "
              f"baseline (pages walked) {med['baseline_unread']:.0f} ms")
        mailbox.close()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
