"""Generate the bundled demo archive ``demo/security.mbox``.

The archive is the private security list of a fictional project, Apache Frobnicator
(``security@frobnicator.apache.org``), from September to November 2026: about forty
threads of vulnerability reports, the team's replies, reporters' follow-ups and the
awkward mail a real list collects (an out-of-office reply, a bounce, an HTML-only
report, spam, a hostile subject, legacy charsets, a reply without a Message-ID, replies
whose parent never reached the list). What the threads say lives in ``threads.py``;
this module writes them as mail, with the headers a list archive shows.

Everything is fixed: dates, Message-IDs, MIME boundaries, queue IDs. Running the script
twice gives identical bytes, and ``tests/demo`` checks that the committed file is what
this script writes. People and hosts are fictional and use reserved names
(example.com/.net/.org, ``.example``, ``.invalid``, TEST-NET addresses).

Usage::

    python -m mailtriage.demo.build_demo            # rewrites demo/security.mbox
    python -m mailtriage.demo.build_demo -o FILE    # writes elsewhere
"""

from __future__ import annotations

import argparse
import hashlib
import io
import re
import textwrap
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from email import policy
from email.generator import BytesGenerator
from email.header import Header
from email.message import EmailMessage, Message, MIMEPart
from email.utils import format_datetime
from pathlib import Path
from typing import Sequence

from mailtriage.demo.threads import (
    DAEMON,
    HOSTILE,
    LIST_ADDRESS,
    LIST_HOST,
    LIST_ID,
    PREVIOUS,
    SPAM_HTML,
    THREADS,
    THROWAWAY,
    B,
    Mail,
    Person,
    Thread,
)

MX = "mx.example.org"
OUTPUT = Path(__file__).with_name("security.mbox")


# -- building messages -------------------------------------------------------------


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def _local_time(person: Person, when: str) -> datetime:
    tz = timezone(timedelta(minutes=person.utc_offset))
    return datetime.strptime(when, "%Y-%m-%d %H:%M").replace(tzinfo=tz)


def _message_id(person: Person, key: str, when: datetime) -> str:
    """A Message-ID shaped like the one the author's mail client would write."""
    h = _digest("message-id", key)
    if person.client == "gmail":
        return f"<CA{h[:10].upper()}+{h[10:34]}@mail.example.com>"
    if person.client == "mutt":
        stamp = when.astimezone(timezone.utc).strftime("%Y%m%d%H%M%S")
        return f"<{stamp}.GA{int(h[:4], 16) % 9000 + 1000}@{person.domain}>"
    if person.client == "outlook":
        return f"<TY{h[:4].upper()}MB{h[4:8].upper()}{h[8:24].upper()}@TYCPR01MB{h[24:28].upper()}.example.net>"
    if person.client == "apple":
        u = h[:32].upper()
        return f"<{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:32]}@{person.domain}>"
    if person.client == "thunderbird":
        return f"<{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}@{person.domain}>"
    return f"<{h[:24]}.{int(h[24:30], 16)}@{person.domain}>"


USER_AGENTS = {
    "thunderbird": ("User-Agent", "Mozilla Thunderbird"),
    "mutt": ("User-Agent", "Mutt/2.2.12 (2023-09-09)"),
    "outlook": ("X-Mailer", "Microsoft Outlook 16.0"),
    "apple": ("X-Mailer", "Apple Mail (2.3774.300.61.1.2)"),
    "evolution": ("X-Mailer", "Evolution 3.46.4-2"),
    "mailx": ("User-Agent", "Heirloom mailx 12.5 7/5/10"),
    "webmail": ("User-Agent", "Roundcube Webmail/1.6.6"),
}


def _reply_subject(subject: str) -> str:
    stripped = re.sub(r"^\s*((re|fwd?|aw|sv)(\[\d+\])?:\s*)+", "", subject, flags=re.I)
    return "Re: " + (stripped or "(no subject)")


def _quote(parent: "Built", lines: int) -> str:
    """Quote what the parent said (not its own quote): ``lines`` lines, to the paragraph's end."""
    text = parent.own_text.splitlines()
    # Skip the greeting ("Hi José,") and blank lines: quote what was said.
    while text and (not text[0].strip() or (len(text[0]) < 40 and text[0].rstrip().endswith(","))):
        text.pop(0)
    # Clients re-flow quoted paragraphs so "> " does not push lines past 78 characters;
    # indented lines (commands, code) stay as they are.
    quoted: list[str] = []
    paragraph: list[str] = []
    cut = lines
    while cut < len(text) and text[cut].strip():  # finish the paragraph
        cut += 1
    for line in [*text[:cut], ""]:
        if line.strip() and not line.startswith(" "):
            paragraph.append(line.strip())
            continue
        quoted += ["> " + part for part in textwrap.wrap(" ".join(paragraph), width=74)]
        paragraph = []
        if line.strip():
            quoted.append("> " + line)
        else:
            quoted.append(">")
    while quoted and quoted[-1] == ">":
        quoted.pop()
    when = parent.local.strftime("%a, %d %b %Y at %H:%M")
    head = f"On {when}, {parent.author.name or parent.author.address} wrote:\n"
    return head + "".join(q + "\n" for q in quoted) + "\n"


def _encode_header(value: str, one_word: bool = False, name: str = "Subject") -> str:
    """Encode a header as RFC 2047 words, verbatim (so control characters stay inside them).

    ``one_word`` keeps a display name in a single encoded word: the stdlib's address
    parser would otherwise read the fold between two words as a space.
    """
    # header_name makes the first line leave room for "Subject: ", so the policy never refolds it.
    encoded = Header(value, "utf-8", maxlinelen=998 if one_word else 76, header_name=name).encode(linesep="\n")
    if one_word and len(re.findall(r"=\?[^?]+\?[bBqQ]\?", encoded)) != 1:
        raise ValueError(f"{value!r} does not fit in one encoded word")
    return encoded


def _fold_text(value: str) -> str:
    """Fold a long ASCII header at spaces, as mail clients do (the stdlib would fold after the colon)."""
    return "\n ".join(textwrap.wrap(value, width=68, break_long_words=False, break_on_hyphens=False))


@dataclass
class Built:
    key: str
    thread: str
    author: Person
    local: datetime
    own_text: str  # what the author wrote, without quote or signature
    body: str
    subject: str
    message_id: str | None
    references: tuple[str, ...]
    message: EmailMessage


def _received(mail_author: Person, local: datetime, key: str, auth: str) -> list[tuple[str, str]]:
    h = _digest("received", key)
    utc = local.astimezone(timezone.utc)
    arrive = utc + timedelta(seconds=3 + int(h[:2], 16) % 40)
    octet = 1 + int(h[2:4], 16) % 250
    net = ("192.0.2", "198.51.100", "203.0.113")[int(h[4], 16) % 3]
    origin = mail_author.domain if mail_author.domain.startswith("mail.") else f"mail.{mail_author.domain}"
    return [
        ("Return-Path", f"<security-return-{int(h[5:9], 16) % 9000 + 100}-"
                        f"{mail_author.address.replace('@', '=')}@{LIST_HOST}>"),
        ("Mailing-List", f"contact security-help@{LIST_HOST}; run by ezmlm"),
        ("Precedence", "bulk"),
        ("List-Help", f"<mailto:security-help@{LIST_HOST}>"),
        ("List-Unsubscribe", f"<mailto:security-unsubscribe@{LIST_HOST}>"),
        ("List-Post", f"<mailto:{LIST_ADDRESS}>"),
        ("List-Id", LIST_ID),
        ("Delivered-To", f"mailing list {LIST_ADDRESS}"),
        ("Received", f"(qmail {int(h[9:13], 16) % 90000 + 1000} invoked by uid 99); "
                     f"{format_datetime(arrive + timedelta(seconds=1))}"),
        ("Received", f"from {origin} ({origin} [{net}.{octet}])\n\tby {MX} (Postfix) with ESMTPS id "
                     f"4X{h[13:23].upper()}\n\tfor <{LIST_ADDRESS}>; {format_datetime(arrive)}"),
        ("Authentication-Results", f"{MX};\n\t{auth}"),
    ]


def _auth_results(person: Person, kind: str) -> str:
    d = person.domain
    if kind == "bounce":
        return f"dkim=none;\n\tspf=pass smtp.helo={d};\n\tdmarc=none"
    if kind == "hostile" or d.endswith(".example"):
        return f"dkim=none;\n\tspf=softfail smtp.mailfrom={d};\n\tdmarc=fail header.from={d}"
    return f"dkim=pass (2048-bit key) header.d={d};\n\tspf=pass smtp.mailfrom={d};\n\tdmarc=pass header.from={d}"


def _set_boundaries(msg: Message, key: str) -> None:
    """MIME boundaries are random by default; fix them so the output is reproducible."""
    for n, part in enumerate(msg.walk()):
        if part.get_content_maintype() == "multipart":
            part.set_boundary(f"=_frob_{_digest('boundary', key, str(n))[:24]}")


def _address_list(items: tuple[Person | str, ...]) -> str:
    return ", ".join(p if isinstance(p, str) else p.header() for p in items)


def _fill_bounce(msg: EmailMessage, built: dict[str, Built]) -> None:
    """A Postfix-style DSN for the team's reply in 'bounced-reply'."""
    original = built["bounced-reply/1"]
    rcpt = THROWAWAY.address
    msg.set_content(B(f'''
        This is the mail system at host mail.example.net.

        I'm sorry to have to inform you that your message could not
        be delivered to one or more recipients. It's attached below.

        For further assistance, please send mail to postmaster.

                           The mail system

        <{rcpt}>: host mx.example.net[198.51.100.25]
            said: 550 5.1.1 <{rcpt}>: Recipient address
            rejected: User unknown in virtual mailbox table (in reply to
            RCPT TO command)
    '''), charset="us-ascii", cte="7bit")
    msg.make_mixed()
    msg.set_type("multipart/report")
    msg.set_param("report-type", "delivery-status")
    msg.preamble = None

    status = Message(policy=policy.default)
    status["Content-Description"] = "Delivery report"
    status["Content-Type"] = "message/delivery-status"
    per_message = Message(policy=policy.default)
    per_message["Reporting-MTA"] = "dns; mail.example.net"
    per_message["X-Postfix-Queue-ID"] = "4XK7Q21zVbz9v"
    per_message["Arrival-Date"] = format_datetime(original.local)
    per_recipient = Message(policy=policy.default)
    per_recipient["Final-Recipient"] = f"rfc822; {rcpt}"
    per_recipient["Original-Recipient"] = f"rfc822;{rcpt}"
    per_recipient["Action"] = "failed"
    per_recipient["Status"] = "5.1.1"
    per_recipient["Remote-MTA"] = "dns; mx.example.net"
    per_recipient["Diagnostic-Code"] = "smtp; 550 5.1.1 <" + rcpt + ">: Recipient address rejected: User unknown"
    status.set_payload([per_message, per_recipient])
    msg.attach(status)

    headers = MIMEPart(policy=policy.default)
    head_text = "".join(
        f"{name}: {original.message[name]}\n"
        for name in ("From", "To", "Cc", "Subject", "Date", "Message-ID", "In-Reply-To")
        if original.message[name] is not None
    )
    headers.set_content(head_text, subtype="rfc822-headers", charset="us-ascii", cte="7bit")
    headers["Content-Description"] = "Undelivered Message Headers"
    msg.attach(headers)


def _fill_body(msg: EmailMessage, mail: Mail, body: str, built: dict[str, Built]) -> None:
    """Give ``msg`` its content; set_content/make_mixed keep the headers already set."""
    if mail.kind == "bounce":
        _fill_bounce(msg, built)
    elif mail.kind == "html":
        msg.set_content(body, subtype="html")
    elif mail.kind == "latin1":
        msg.set_content(body, charset="iso-8859-1", cte="quoted-printable")
    elif mail.kind == "base64":
        msg.set_content(body, cte="base64")
    elif mail.kind == "alternative":
        msg.set_content(body)
        msg.add_alternative(SPAM_HTML, subtype="html")
    else:
        msg.set_content(body)
    if mail.attachment:
        filename, subtype, text = mail.attachment
        msg.add_attachment(text, subtype=subtype, filename=filename)


def build_messages(threads: Sequence[Thread] = THREADS) -> list[Built]:
    """Every message of ``threads``, in thread order (not yet sorted by date).

    Raises:
        ValueError: a reply is dated before its parent (a mistake in the data).
    """
    built: dict[str, Built] = {}
    out: list[Built] = []
    for thread in threads:
        members: list[Built] = []
        for index, mail in enumerate(thread.mails):
            key = f"{thread.slug}/{index}"
            author = mail.author
            local = _local_time(author, mail.when)
            parent: Built | None = None
            if index > 0 and mail.parent is not None:
                parent = members[index - 1 if mail.parent == PREVIOUS else mail.parent]
                if local.astimezone(timezone.utc) <= parent.local.astimezone(timezone.utc):
                    raise ValueError(f"{key}: written before its parent {parent.key}")
            # Recipients.
            if mail.to is not None:
                to = mail.to or (LIST_ADDRESS,)
            elif parent is None or parent.author == author:
                to = (LIST_ADDRESS,)
            else:
                to = (parent.author,)
            if mail.cc is not None:
                cc = mail.cc
            else:
                cc = () if LIST_ADDRESS in to else (LIST_ADDRESS,)
            # Subject and threading headers.
            if mail.subject is not None:
                subject = mail.subject
            elif index == 0:
                subject = thread.subject
            else:
                subject = _reply_subject(thread.subject)
            references: tuple[str, ...] = ()
            in_reply_to = None
            if parent is not None:
                references = tuple(r for r in (*parent.references, parent.message_id) if r)
                in_reply_to = parent.message_id
            if mail.missing_parent:
                references = (*references, mail.missing_parent)
                in_reply_to = mail.missing_parent
            body = mail.body
            if parent is not None and mail.quote:
                body = _quote(parent, mail.quote) + body
            automatic = "Auto-Submitted" in mail.extra
            if author.signature and mail.kind not in ("html", "bounce") and not automatic:
                body += "\n-- \n" + author.signature + "\n"

            # Headers in the order a list archive shows them: the list server's on top,
            # then the author's, then MIME-Version and the body's Content-* headers.
            msg = EmailMessage()
            for name, value in _received(author, local, key, _auth_results(author, mail.kind)):
                if "\n" in value:
                    msg.set_raw(name, value)  # folded by hand like an MTA does
                else:
                    msg[name] = value
            for name, value in mail.extra.items():
                msg[name] = value
            if mail.kind == "bounce":
                msg["Auto-Submitted"] = "auto-replied"
            msg["Date"] = format_datetime(local)
            if author.raw_name:
                msg.set_raw("From", f"{author.raw_name} <{author.address}>")
            elif author is HOSTILE:
                # Encoded words keep the brackets of the markup from breaking the address.
                msg.set_raw("From", f"{_encode_header(author.name, one_word=True)}\n <{author.address}>")
            else:
                msg["From"] = author.header()
            msg["To"] = _address_list(to)
            if cc:
                msg["Cc"] = _address_list(cc)
            if any(ord(c) < 32 for c in subject):
                # Control characters only survive a round trip inside encoded words.
                msg.set_raw("Subject", _encode_header(subject))
            elif subject.isascii():
                msg.set_raw("Subject", _fold_text(subject))
            else:
                msg["Subject"] = subject
            if mail.kind == "bounce":
                message_id: str | None = "<20261119080109.4XK7Q21zVbz9v@mail.example.net>"
            elif mail.has_message_id:
                message_id = _message_id(author, key, local)
            else:
                message_id = None
            if message_id:
                msg["Message-ID"] = message_id
            if in_reply_to:
                msg["In-Reply-To"] = in_reply_to
                msg["References"] = " ".join(references)
            if author.client in USER_AGENTS and mail.kind != "bounce":
                msg[USER_AGENTS[author.client][0]] = USER_AGENTS[author.client][1]
            msg["MIME-Version"] = "1.0"
            _fill_body(msg, mail, body, built)
            _set_boundaries(msg, key)
            b = Built(key, thread.slug, author, local, mail.body, body, subject, message_id, references, msg)
            built[key] = b
            members.append(b)
            out.append(b)
    return out


def render_mbox() -> bytes:
    """The whole archive as mbox (mboxo: body lines starting with "From " become ">From ")."""
    messages = build_messages()
    ordered = sorted(messages, key=lambda b: (b.local.astimezone(timezone.utc), b.key))
    out = io.BytesIO()
    for b in ordered:
        utc = b.local.astimezone(timezone.utc)
        envelope = "MAILER-DAEMON" if b.author is DAEMON else b.author.address
        out.write(f"From {envelope} {time.asctime(utc.timetuple())}\n".encode("ascii"))
        buf = io.BytesIO()
        BytesGenerator(buf, mangle_from_=True, policy=policy.default.clone(linesep="\n")).flatten(b.message)
        data = buf.getvalue()
        if not data.endswith(b"\n"):
            data += b"\n"
        out.write(data)
        out.write(b"\n")
    return out.getvalue()


def write_mbox(path: Path | str = OUTPUT) -> Path:
    path = Path(path)
    path.write_bytes(render_mbox())
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the bundled demo security-list archive.")
    parser.add_argument("-o", "--output", type=Path, default=OUTPUT, help=f"where to write (default {OUTPUT})")
    args = parser.parse_args(argv)
    path = write_mbox(args.output)
    print(f"wrote {path} ({path.stat().st_size} bytes, {len(build_messages())} messages)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
