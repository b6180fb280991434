"""Generate realistic mbox archives: threads with replies, mixed sizes, awkward headers.

Used by ``benchmarks/bench_mbox.py`` (100,000 messages, ~450 MB) and by the tests
that check the fast listing path against the full parse (a few hundred messages).
Deterministic for a given seed.

The mix, per message: 2-5 Received lines, a folded DKIM-Signature on half of them,
list headers, a body of 0.2-8 KB (replies quote their parent), a 10-70 KB base64
attachment on ~1.5% and a 1-3 MB one on ~0.03%; ~35% of messages start a thread,
the rest reply (References with the whole chain, sometimes truncated, sometimes
In-Reply-To only); dates spread over two years, appended chronologically, with a
few senders whose clock is days off, a few unparseable dates, ~0.1% without a
Message-ID, a few re-delivered duplicates, RFC 2047 subjects and header names in
odd case.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path

WORDS = (
    "the parser buffer overflow when handling crafted input allows remote attacker to execute "
    "arbitrary code via a long header field we have reproduced it on version please find attached "
    "proof of concept and a suggested patch thanks for the report our team will look into this "
    "issue and get back to you within a few days the fix is in review CVE assigned embargo until "
    "release date security advisory draft credit reporter affected versions mitigation upgrade "
    "denial of service null pointer dereference use after free integer overflow path traversal "
    "cross site scripting authentication bypass information disclosure timing side channel"
).split()

NAMES = ["Alice Example", "Bob Builder", "Carol Danvers", "Dave Null", "Eve Hacker", "Frank Ocean",
         "Grace Hopper", "Heidi Klum", "Ivan Petrov", "Judy Moss", "Mallory Knox", "Niaj Brown",
         "Olivia Stone", "Peggy Carter", "Rupert Giles", "Sybil Trelawney", "Trent Reznor",
         "Victor Vega", "Walter White", "Jörg Müller", "François Pérez", "山田太郎"]

TOPICS = ["Buffer overflow in {c}", "XSS in {c} admin console", "Path traversal in {c} upload",
          "Auth bypass via {c} token reuse", "DoS in {c} with crafted request", "[SECURITY] {c} release",
          "Question about {c} CVE", "Use-after-free in {c} decoder", "Timing leak in {c} login",
          "Heap corruption in {c} parser", "Deserialization RCE in {c}", "SSRF in {c} webhook"]

COMPONENTS = ["httpd", "tomcat", "kafka", "struts", "commons-text", "log4j", "airflow", "superset",
              "zookeeper", "solr", "cassandra", "activemq", "camel", "nifi", "spark"]


def _encoded(text: str) -> str:
    return "=?utf-8?b?" + base64.b64encode(text.encode()).decode() + "?="


@dataclass
class _Thread:
    root: str
    subject: str
    ids: list[str] = field(default_factory=list)


@dataclass
class GeneratedArchive:
    path: Path
    messages: int
    bytes: int
    first_date: datetime
    last_date: datetime


def generate(path: Path, messages: int, *, seed: int = 1, span_days: int = 730,
             end: datetime = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc),
             attachment_rate: float = 0.015, large_attachment_rate: float = 0.0003,
             awkward: bool = True) -> GeneratedArchive:
    """Write an mbox of ``messages`` messages to ``path``; return what was written."""
    rng = random.Random(seed)
    blob = base64.encodebytes(rng.randbytes(3 * 1024 * 1024)).decode()  # 76-char lines
    start = end - timedelta(days=span_days)
    step = span_days * 86400 / max(messages, 1)
    threads: list[_Thread] = []
    moment = start
    first_date = last_date = None
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    previous_raw: str | None = None
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        for n in range(messages):
            moment += timedelta(seconds=rng.expovariate(1 / step))
            if moment > end:
                moment = end
            name = rng.choice(NAMES)
            login = name.split()[0].lower().encode("ascii", "ignore").decode() or "user"
            sender = f"{login}{rng.randrange(50)}@{rng.choice(['example.org', 'example.net', 'mail.example.com'])}"
            mid = f"<{n}.{rng.getrandbits(40):x}@{rng.choice(['mx1.example.org', 'mail.example.net'])}>"

            reply_to: _Thread | None = None
            if threads and rng.random() > 0.35:
                # Recent threads get most replies; a few revive old ones.
                window = threads[-400:] if rng.random() < 0.97 else threads
                reply_to = rng.choice(window)
            if reply_to is None:
                subject = rng.choice(TOPICS).format(c=rng.choice(COMPONENTS))
                thread = _Thread(mid, subject)
                threads.append(thread)
                refs: list[str] = []
                irt = None
            else:
                thread = reply_to
                subject = "Re: " + thread.subject
                parent = rng.choice(thread.ids[-3:]) if thread.ids else thread.root
                chain = thread.ids[: thread.ids.index(parent) + 1] if parent in thread.ids else [thread.root]
                if chain[0] != thread.root:
                    chain.insert(0, thread.root)
                roll = rng.random()
                if roll < 0.80:
                    refs = chain[-20:] if len(chain) <= 20 else [chain[0]] + chain[-19:]
                elif roll < 0.95:
                    refs = []  # In-Reply-To only (old clients)
                else:
                    refs = [chain[0]] + chain[-1:] if len(chain) > 1 else chain  # trimmed
                irt = parent
            thread.ids.append(mid)

            date = moment - timedelta(seconds=rng.randrange(1, 600))
            zone = timezone(timedelta(minutes=rng.choice([-480, -300, 0, 0, 60, 120, 330, 540])))
            date_text = format_datetime(date.astimezone(zone))
            if awkward and rng.random() < 0.005:
                date_text = format_datetime((date + timedelta(days=rng.choice([-40, -3, 2, 30]))).astimezone(zone))
            if awkward and rng.random() < 0.0005:
                date_text = "sometime last week"
            first_date = first_date or moment
            last_date = moment

            headers = [f"Return-Path: <{sender}>"]
            for hop in range(rng.randrange(2, 6)):
                headers.append(
                    f"Received: from mx{hop}.example.net (mx{hop}.example.net [192.0.2.{rng.randrange(1, 254)}])\n"
                    f"\tby mail.example.org (Postfix) with ESMTPS id {rng.getrandbits(48):X}\n"
                    f"\tfor <security@example.org>; {format_datetime(moment)}")
            if rng.random() < 0.5:
                sig = base64.b64encode(rng.randbytes(180)).decode()
                headers.append("DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=example.net; s=sel;\n"
                               "\th=from:to:subject:date:message-id;\n"
                               f"\tbh={sig[:44]};\n\tb={sig[44:120]}\n\t {sig[120:]}")
            display = _encoded(name) if not name.isascii() else name
            headers.append(f"From: {display} <{sender}>")
            headers.append("To: security@example.org")
            if rng.random() < 0.3:
                headers.append(f"Cc: {rng.choice(NAMES).split()[0].lower()}@example.org")
            subject_text = _encoded(subject + " — ünïcödé") if awkward and rng.random() < 0.1 else subject
            headers.append(f"Subject: {subject_text}")
            headers.append(f"Date: {date_text}")
            if not (awkward and rng.random() < 0.001):
                id_name = "Message-ID"
                if awkward:
                    id_name = rng.choices(["Message-ID", "Message-Id", "message-id"], [0.96, 0.03, 0.01])[0]
                headers.append(f"{id_name}: {mid}")
            if irt:
                headers.append(f"In-Reply-To: {irt}")
            if refs:
                headers.append("References: " + "\n ".join(refs))
            headers.append("MIME-Version: 1.0")
            headers.append("List-Id: <security.example.org>")
            headers.append("List-Unsubscribe: <mailto:security-unsubscribe@example.org>")
            headers.append(f"X-Mailer: {rng.choice(['Mutt/2.2', 'Thunderbird 115', 'Gmail', 'Outlook 16.0'])}")

            body_words = [rng.choice(WORDS) for _ in range(int(rng.lognormvariate(5.0, 0.8)))]
            lines, line = [], []
            for word in body_words:
                line.append(word)
                if len(line) > 11:
                    lines.append(" ".join(line))
                    line = []
            lines.append(" ".join(line))
            if reply_to is not None:
                lines = [f"On {date_text}, someone wrote:"] + ["> " + ln for ln in lines[: len(lines) // 2]] + lines
            if awkward and rng.random() < 0.01:
                lines.append(">From the logs, the crash happens at startup.")  # mboxrd-escaped From
            body = "\n".join(lines) + "\n"

            roll = rng.random()
            if roll < attachment_rate + large_attachment_rate:
                size = rng.randrange(1_000_000, 3_000_000) if roll < large_attachment_rate else rng.randrange(10_000, 70_000)
                offset = rng.randrange(0, max(1, len(blob) - size))
                cut = blob[offset: offset + size]
                cut = cut[cut.find("\n") + 1: cut.rfind("\n") + 1]
                headers.append('Content-Type: multipart/mixed; boundary="==b=="')
                body = ("--==b==\nContent-Type: text/plain; charset=utf-8\n\n" + body +
                        "--==b==\nContent-Type: application/octet-stream\n"
                        f'Content-Disposition: attachment; filename="poc-{n}.bin"\n'
                        "Content-Transfer-Encoding: base64\n\n" + cut + "--==b==--\n")
            else:
                headers.append("Content-Type: text/plain; charset=utf-8")
                headers.append("Content-Transfer-Encoding: 8bit")

            from_line = f"From {sender} {moment.strftime('%a %b %d %H:%M:%S %Y')}\n"
            raw = "\n".join(headers) + "\n\n" + body
            if awkward and previous_raw is not None and rng.random() < 0.0005:
                raw = previous_raw  # a re-delivered duplicate: same Message-ID twice
            previous_raw = raw
            chunk = from_line + raw + "\n"
            out.write(chunk)
            written += len(chunk.encode("utf-8")) if not chunk.isascii() else len(chunk)
    return GeneratedArchive(path, messages, written, first_date or start, last_date or start)
