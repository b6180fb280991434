"""Benchmark: the row marks (filed / draft pending / replied) of one screen of rows over IMAP,
ours beside the previous way in the same run (issue 39).

    .venv/bin/python benchmarks/bench_row_marks.py [--rows 40] [--sent 2000] [--runs 5]

A real Dovecot (tests/servers) holds ``--rows`` reports in INBOX, a reply in Sent to every
third of them among ``--sent`` other sent mails, and a pending draft on every fifth. Ours:
``application.overview.thread_statuses`` for the screen at once (one SELECT and one SEARCH of Drafts
and of Sent). Previous: ``thread_status`` per row, as the overview asked before
(each row's ``list_drafts`` and ``list_sent_since`` select their folder again). Both must
give the same marks (checked). Printed: the median wall time, IMAP commands and SELECTs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

from dovecot_account import dovecot_account  # the benchmark folder is on the path (run as a script)

LIST = "security@example.org"
NOW = datetime.now(timezone.utc).replace(microsecond=0)


def mail(mid: str, subject: str, when: datetime, *, sender: str = "reporter@example.net",
         to: str = LIST, reply_to: str | None = None) -> bytes:
    head = [f"From: {sender}", f"To: {to}", f"Subject: {subject}", f"Date: {format_datetime(when)}",
            f"Message-ID: {mid}", "Content-Type: text/plain; charset=utf-8"]
    if reply_to:
        head += [f"In-Reply-To: {reply_to}", f"References: {reply_to}"]
    return ("\r\n".join(head) + "\r\n\r\nThe parser overflows.\r\n").encode()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=40)
    ap.add_argument("--sent", type=int, default=2000, help="other mails in Sent")
    ap.add_argument("--runs", type=int, default=5)
    ns = ap.parse_args()
    with dovecot_account("mt-bench-marks-") as bench:
        return run(ns, bench)


def run(ns, bench) -> int:
    from mailtriage.application.overview import thread_status, thread_statuses
    from mailtriage.application.project import Project
    from mailtriage.core.trace import TRACE

    base, server, user = bench.base, bench.server, bench.user
    project_dir = base / "project"
    project_dir.mkdir()
    (project_dir / "project.md").write_text(
        "# Bench\n\n## Mail sources\n\n| Backend | Role | Mandatory | Notes |\n|---|---|---|---|\n"
        "| `imap` | primary | yes | bench |\n\n## Configuration\n\n```yaml\n"
        f"mail_sources:\n  imap:\n    account: work\n    list: {LIST}\n```\n", encoding="utf-8")
    inbox, sent, drafts = [], [], []
    for n in range(ns.rows):
        root, when = f"<r{n}@reporter.example>", NOW - timedelta(hours=2 * n + 2)
        inbox.append(mail(root, f"Report {n}", when))
        if n % 3 == 0:
            sent.append(mail(f"<a{n}@example.org>", f"Re: Report {n}", when + timedelta(hours=1),
                             sender=LIST, to="reporter@example.net", reply_to=root))
        if n % 5 == 0:
            drafts.append(mail(f"<d{n}@example.org>", f"Re: Report {n}", when + timedelta(minutes=30),
                               sender=LIST, to="reporter@example.net", reply_to=root))
    for n in range(ns.sent):
        sent.append(mail(f"<o{n}@example.org>", f"Other {n}", NOW - timedelta(minutes=n + 1), sender=LIST,
                         to=f"someone{n}@example.net"))
    with server.client(user) as client:
        for folder, messages in (("INBOX", inbox), ("Sent", sent), ("Drafts", drafts)):
            if not client.folder_exists(folder):
                client.create_folder(folder)
            for start in range(0, len(messages), 500):
                client.multiappend(folder, messages[start:start + 500])
    since = NOW - timedelta(days=30)

    def one_run(batched: bool):
        project = Project.open(project_dir)
        try:
            source = project.sources.backends["imap"]
            ids = [row.thread_id for row in source.list_recent_threads(LIST, since)][:ns.rows]
            assert len(ids) == ns.rows, len(ids)
            selects: list[str] = []

            def seen(line) -> None:
                words = line.text.split(None, 3)
                if line.direction == ">" and len(words) > 2 and words[1].upper() in ("SELECT", "EXAMINE"):
                    selects.append(words[2])

            stop = TRACE.subscribe(seen)
            calls = source.mailbox.conn.calls
            t = time.perf_counter()
            try:
                if batched:
                    got = thread_statuses(project, ids, since)
                else:
                    got = {tid: thread_status(project, tid, since) for tid in ids}
            finally:
                took = time.perf_counter() - t
                stop()
            return took, got, source.mailbox.conn.calls - calls, len(selects)
        finally:
            project.sources.close()

    one_run(True)  # warm the server's caches for both
    ours = [one_run(True) for _ in range(ns.runs)]
    old = [one_run(False) for _ in range(ns.runs)]
    assert ours[-1][1] == old[-1][1], "ours and the previous path disagree"
    marks = ours[-1][1].values()
    assert sum(1 for s in marks if s.replied) == len(range(0, ns.rows, 3))
    assert sum(1 for s in marks if s.drafts) == len(range(0, ns.rows, 5))
    med, prev = statistics.median(r[0] for r in ours), statistics.median(r[0] for r in old)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"\n{'one screen of ' + str(ns.rows) + ' rows, ' + str(len(sent)) + ' in Sent':40} "
          f"{'ours':>9} {'previous':>9}")
    print(f"{'median wall time':40} {med * 1000:7.1f}ms {prev * 1000:7.1f}ms  ({prev / med:.1f}x)")
    print(f"{'IMAP commands':40} {ours[-1][2]:9d} {old[-1][2]:9d}")
    print(f"{'of which SELECT':40} {ours[-1][3]:9d} {old[-1][3]:9d}")
    print(f"runs: {ns.runs} each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
