"""Opening a listed thread on IMAP (issue 33): key -> messages, on a generated Dovecot folder.

Builds a ``--messages`` folder (bench_imap's generator: one message every 10 minutes,
60% replies), lists the whole 30-day window through ImapSource, then times
``read_thread`` of listed threads (median over ``--repeat`` threads of 2-8 messages):

  listed   the source that listed them opens them (the app's case)
  by ID    a fresh source opens them by ID alone, no summary cache (``mail read-thread <id>``)
  cache    the same with the summary cache a listing wrote (``mailtriage list`` before)

and counts the IMAP commands each read sends (from the trace), SEARCHes apart.

Run: .venv/bin/python benchmarks/bench_read_thread.py [--messages 20000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pwd
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_imap import LIST, write_maildir  # noqa: E402
from tests.servers.dovecot import DovecotServer  # noqa: E402
from tests.servers.keyring_backend import MemoryKeyring  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="bench-read-cache-")  # never the user's cache
    import keyring

    keyring.set_keyring(MemoryKeyring())
    from mailtriage.backends.imap.account import ImapAccount, password_key
    from mailtriage.backends.imap.source import ImapSource
    from mailtriage.core.secrets import set_secret
    from mailtriage.core.trace import TRACE

    server = DovecotServer().start()
    try:
        user = server.add_user("big")
        child = multiprocessing.get_context("fork").Process(target=write_maildir,
                                                            args=(user.home / "Maildir", args.messages))
        child.start()
        child.join()
        assert child.exitcode == 0
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            for path in (user.home, user.home / "Maildir"):
                os.chown(path, nobody.pw_uid, nobody.pw_gid)
        acct = ImapAccount(id="bench-read", host="127.0.0.1", port=server.port, security="plain",
                           username=user.name, timeout=600, cache_summaries=False)
        set_secret(password_key(acct.id), user.password)
        since = datetime.now(timezone.utc) - timedelta(days=30)

        lister = ImapSource("bench", {"list": LIST}, account=acct)
        t0 = time.perf_counter()
        rows = lister.list_recent_threads(LIST, since)
        print(f"{args.messages:,} messages; listed {len(rows):,} threads in {time.perf_counter() - t0:.2f} s")
        picked = [r for r in rows if 2 <= r.message_count <= 8][: args.repeat]
        assert picked, "no thread of 2-8 messages in the window"

        commands: Counter = Counter()

        def count(line) -> None:
            if line.direction == ">":
                words = line.text.split()
                commands[" ".join(w for w in words[1:3] if w.isalpha() or w == "UID")] += 1

        def timed(source, label: str) -> None:
            samples = []
            commands.clear()
            stop = TRACE.subscribe(count)
            try:
                for row in picked:
                    t0 = time.perf_counter()
                    thread = source.read_thread(row.thread_id)
                    samples.append(time.perf_counter() - t0)
                    assert len(thread.messages) >= row.message_count, (row, len(thread.messages))
            finally:
                stop()
            searches = sum(n for c, n in commands.items() if "SEARCH" in c or "THREAD" in c)
            print(f"{label:8s} median {statistics.median(samples) * 1000:7.1f} ms  max {max(samples) * 1000:7.1f} ms"
                  f"  ({len(picked)} threads; per read: {sum(commands.values()) / len(picked):.1f} commands,"
                  f" {searches / len(picked):.1f} SEARCH/THREAD)")

        lister.read_thread(picked[0].thread_id)  # warm the server's caches for both
        if os.environ.get("BENCH_PROFILE"):
            import cProfile
            import pstats
            with cProfile.Profile() as profile:
                for row in picked:
                    lister.read_thread(row.thread_id)
            pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
            stop = TRACE.subscribe(lambda line: print(line.direction, line.text[:150]))
            lister.read_thread(picked[1].thread_id)
            stop()
        timed(lister, "listed")
        fresh = ImapSource("bench", {"list": LIST}, account=acct)
        timed(fresh, "by ID")
        lister.close()
        fresh.close()
        cached = replace(acct, cache_summaries=True)
        writer = ImapSource("bench", {"list": LIST}, account=cached)
        writer.list_recent_threads(LIST, since)
        writer.close()  # the cache is written
        reader = ImapSource("bench", {"list": LIST}, account=cached)
        timed(reader, "cache")
        reader.close()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
