"""IMAP benchmark: our list paths against a naive "fetch every envelope" baseline, one run.

Builds a 100,000-message and a 1,000-message folder by writing Maildir files directly
(into /dev/shm when it exists), starts a real Dovecot on loopback (the test fixture's),
warms it once, then measures on an open connection:

  (a) first page of 50 newest threads through ImapSource.list_recent_threads
  (b) first page (50) of ImapMailbox.list({folder})
  (c) the same two at 1,000 messages
  (d) the naive baseline: fetch every envelope of the 100k folder (imapclient, chunked)

plus, for scale, a server-side SORT REVERSE DATE + FETCH ENVELOPE of 50. It prints every
figure and its ratio to (d), the 1k -> 100k growth of (a) and (b), and the client's peak
memory. Goal: (a) and (b) <= 0.15 s and flat from 1k to 100k (within 1.5x).

Run: .venv/bin/python benchmarks/bench_imap.py [--messages 100000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pwd
import random
import resource
import statistics
import sys
import time
import tracemalloc
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.servers.dovecot import DovecotServer  # noqa: E402
from tests.servers.keyring_backend import MemoryKeyring  # noqa: E402

LIST = "security@example.org"


def write_maildir(maildir: Path, count: int, *, seed: int = 1) -> None:
    """``count`` messages, one every 10 minutes up to now; 60% replies to recent threads,
    90% to the security list."""
    cur = maildir / "cur"
    for sub in ("cur", "new", "tmp"):
        (maildir / sub).mkdir(parents=True, exist_ok=True)
    rnd = random.Random(seed)
    now = time.time()
    start = now - count * 600
    open_threads: list[list[str]] = []  # [root, subject, last id]
    uid_owner = pwd.getpwnam("nobody") if os.geteuid() == 0 else None
    for i in range(count):
        ts = start + i * 600
        mid = f"<m{i}.{seed}@reporter.example.net>"
        if open_threads and rnd.random() < 0.6:
            thread = open_threads[-1 - rnd.randrange(min(50, len(open_threads)))]
            refs = f"References: {thread[0]} {thread[2]}\nIn-Reply-To: {thread[2]}\n"
            subject = "Re: " + thread[1]
            thread[2] = mid
        else:
            subject = f"Report {i}: overflow in component {i % 97}"
            open_threads.append([mid, subject, mid])
            if len(open_threads) > 200:
                del open_threads[:100]
            refs = ""
        to = LIST if rnd.random() < 0.9 else "someone@example.org"
        date = time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime(ts))
        data = (f"From: User {i % 300} <user{i % 300}@reporter.example.net>\nTo: {to}\nSubject: {subject}\n"
                f"Date: {date}\nMessage-ID: {mid}\n{refs}List-Id: <security.example.org>\nMIME-Version: 1.0\n"
                f"Content-Type: text/plain; charset=utf-8\n\nDetails of report {i}.\n" + "x" * 300 + "\n").encode()
        path = cur / f"{int(ts)}.M{i}P{os.getpid()}.bench,S={len(data)}:2,S"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
            if uid_owner:
                os.fchown(fd, uid_owner.pw_uid, uid_owner.pw_gid)
        finally:
            os.close(fd)
        os.utime(path, (ts, ts))
    if uid_owner:
        for dirpath in [maildir, *(maildir / s for s in ("cur", "new", "tmp"))]:
            os.chown(dirpath, uid_owner.pw_uid, uid_owner.pw_gid)


def timed(fn, repeat: int) -> tuple[float, object]:
    """Median wall time of ``repeat`` calls (after one untimed call), and the last result."""
    import gc

    result = fn()
    times = []
    gc.collect()
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    import keyring

    keyring.set_keyring(MemoryKeyring())
    from mailtriage.backends.imap.account import ImapAccount, password_key
    from mailtriage.backends.imap.adapter import ImapMailbox
    from mailtriage.backends.imap.source import ImapSource
    from mailtriage.backends.mailbox_contract import MailQuery
    from mailtriage.core.secrets import set_secret

    server = DovecotServer().start()
    try:
        big, small = server.add_user("big"), server.add_user("small")
        t0 = time.perf_counter()
        for user, count in ((big, args.messages), (small, args.small)):
            server.mail_root.mkdir(exist_ok=True)
            # In a child process, so the peak RSS printed below is the client's, not the generator's.
            child = multiprocessing.get_context("fork").Process(target=write_maildir, args=(user.home / "Maildir", count))
            child.start()
            child.join()
            assert child.exitcode == 0, f"generating the {count}-message folder failed"
            if os.geteuid() == 0:
                nobody = pwd.getpwnam("nobody")
                for path in (user.home, user.home / "Maildir"):
                    os.chown(path, nobody.pw_uid, nobody.pw_gid)
        print(f"wrote {args.messages:,} + {args.small:,} Maildir files in {time.perf_counter() - t0:.1f} s "
              f"under {server.root}")

        def source_for(user):
            acct = ImapAccount(id=f"bench-{user.name}", host="127.0.0.1", port=server.port, security="plain",
                               username=user.name, timeout=600)
            set_secret(password_key(acct.id), user.password)
            return ImapSource("bench", {"list": LIST}, account=acct)

        since = datetime.now(timezone.utc) - timedelta(days=30)
        sources = {"100k": source_for(big), "1k": source_for(small)}
        for label, source in sources.items():
            t0 = time.perf_counter()
            source.mailbox.list(MailQuery(folder="INBOX"))  # warm: index build, header cache
            source.list_recent_threads(LIST, since, limit=50)
            print(f"warm-up {label}: {time.perf_counter() - t0:.2f} s")

        def recent(label):
            threads = sources[label].list_recent_threads(LIST, since, limit=50)
            assert len(threads) == 50
            return threads

        def first_page(label):
            page = sources[label].mailbox.list(MailQuery(folder="INBOX", page_size=50))
            assert len(page.messages) == 50
            return page

        # 100k and 1k alternate call by call, so machine noise hits both alike.
        results: dict[str, float] = {}
        for key, fn in (("a", recent), ("b", first_page)):
            samples = {"100k": [], "1k": []}
            for label in samples:
                fn(label)
            for _ in range(args.repeat):
                for label in samples:
                    t0 = time.perf_counter()
                    fn(label)
                    samples[label].append(time.perf_counter() - t0)
            for label, values in samples.items():
                results[f"{key}_{label}"] = statistics.median(values)
        assert first_page("100k").total == args.messages
        rss_ours = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before anything that is not ours

        client = sources["100k"].mailbox.conn.client

        def sort_and_fetch():
            uids = client.sort(["REVERSE DATE"])[:50]
            return client.fetch(uids, ["ENVELOPE"])

        results["sort_100k"], _ = timed(sort_and_fetch, args.repeat)
        # Memory of our calls, measured apart: tracemalloc slows Python down too much to time with it.
        tracemalloc.start()
        recent("100k")
        first_page("100k")
        _current, ours_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        for source in sources.values():
            source.close()

        # (d) the naive baseline: every envelope of the 100k folder, in chunks (fetch("1:*") breaks imapclient).
        from imapclient import IMAPClient

        naive = IMAPClient("127.0.0.1", server.port, ssl=False, timeout=600)
        naive.login(big.name, big.password)
        naive.select_folder("INBOX", readonly=True)
        t0 = time.perf_counter()
        uids = naive.search(["ALL"])
        envelopes = 0
        for i in range(0, len(uids), 1000):
            envelopes += len(naive.fetch(uids[i:i + 1000], ["ENVELOPE"]))
        results["d_100k"] = time.perf_counter() - t0
        naive.logout()
        assert envelopes == args.messages
        rss_all = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    finally:
        server.stop()

    d = results["d_100k"]
    print()
    print(f"{'measure':58} {'seconds':>9} {'vs (d)':>9}")
    rows = [
        ("(a) list_recent_threads, 50 newest threads, 100k", "a_100k"),
        ("(b) list({folder}) first page of 50, 100k", "b_100k"),
        ("(c) list_recent_threads, 50 newest threads, 1k", "a_1k"),
        ("(c) list({folder}) first page of 50, 1k", "b_1k"),
        ("for scale: SORT REVERSE DATE + FETCH ENVELOPE 50, 100k", "sort_100k"),
        ("(d) naive: fetch every envelope, 100k", "d_100k"),
    ]
    for text, key in rows:
        print(f"{text:58} {results[key]:9.4f} {d / results[key]:8.0f}x")
    print()
    for name, key in (("(a) list_recent_threads", "a"), ("(b) list", "b")):
        growth = results[f"{key}_100k"] / results[f"{key}_1k"]
        verdict = "flat" if growth <= 1.5 else "NOT flat"
        print(f"{name}: 1k -> 100k grows {growth:.2f}x ({verdict}; goal <= 1.5x); "
              f"{'meets' if results[f'{key}_100k'] <= 0.15 else 'misses'} the 0.15 s goal")
    print(f"client peak memory: {ours_peak / 2**20:.1f} MB allocated by (a)+(b) at 100k; process max RSS "
          f"{rss_ours:.0f} MB after (a)-(c), {rss_all:.0f} MB after the SORT and (d) (goal < 150 MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
