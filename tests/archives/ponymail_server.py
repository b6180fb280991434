"""An Apache Pony Mail (Foal) API emulation for tests, after /work/shared/reference/ponymail.

Endpoints ``/api/<name>.lua`` (GET, query string) and ``/api/<name>.json`` (POST, JSON
body merged over the query string): ``preferences``, ``stats``, ``thread``, ``email``,
``source``. Shapes as Foal's code writes them (see the reference README):

* preferences: ``{login:{credentials?}, versions:{foal}, lists:{domain:{list:count}}}``;
  a list holding any private document is listed only for a signed-in session.
* stats: ``list`` and ``domain`` both required (else HTTP 200 ``{}``); ``d=lte=N[dwMy]``
  or ``d=dfr=YYYY-MM-DD|dto=YYYY-MM-DD`` (``defuzzer.py``: after the first day's 00:00:00,
  before the last day's 23:59:59, UTC; default 30 days); ``quick`` (emails carry only their
  ``epoch``, no ``thread_struct``, ``participants`` ``{}``); emails are short summaries (``body`` cut to 200 characters + ``...``)
  sorted by epoch; ``thread_struct`` built like ThreadConstructor (in-reply-to, else the
  normalised subject); a private list read anonymously gives ``hits: 0``.
  The silent cap of ``server/plugins/messages.py`` ``query()``: documents are scanned
  newest first (``epoch desc``) and the loop appends before it tests ``hits > query_limit``,
  so a capped answer holds the newest ``max_hits + 1`` emails and ``hits`` is that same
  count (``stats.py`` sets ``hits: len(results)``); nothing says the oldest were dropped.
  ``active_months`` comes from ``get_activity_span`` over the same query *without* the
  date range and without the cap: ``{"YYYY-MM": n}`` of every visible email of the list.
  A reply whose root lies before the window is a root of ``thread_struct`` (the
  constructor sees only the window's emails).
* thread: ``{thread: root, emails: [root]}`` — the root carries a nested ``children``
  tree of short entries; ``find_parent`` climbs in-reply-to first; 404 ``Content not
  found``.
* email: the document without ``_`` fields; 404 ``Email not found``.
* source: ``text/plain`` raw message (an mbox ``From `` line kept); 404 ``Email not found``.

Anonymous sessions see ``from``/``to``/``cc`` rewritten to ``da...@domain`` (``from_raw``
left alone, as Foal does) and never see private documents. The ``ponymail=<uuid>``
cookie of a known session signs in.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import re
import shlex
import time
from dataclasses import dataclass, field
from email import policy as email_policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import format_datetime, parseaddr, parsedate_to_datetime
from datetime import datetime, timezone

from tests.archives.fakehttp import FakeHttpServer, Reply, Request

_MID_ALPHABET = "0123456789bcdfghjklmnopqrstvwxyz"
_RE_PREFIX = re.compile(r"^([a-zA-Z]+:\s*)+")


def make_mid(list_raw: str, message_id: str) -> str:
    """A 32-character permalink in Foal's alphabet (stable per list and message)."""
    digest = hashlib.sha256(f"{list_raw}|{message_id}".encode()).digest()
    number = int.from_bytes(digest[:20], "big")
    chars = []
    for _ in range(32):
        number, rest = divmod(number, 32)
        chars.append(_MID_ALPHABET[rest])
    return "".join(chars)


def anonymize(text: str) -> str:
    """``Name <daniel@gmail.com>`` -> ``Name <da...@gmail.com>``, as Foal does anonymously."""
    return re.sub(r"([A-Za-z0-9._%+-]{1,2})[A-Za-z0-9._%+-]*@([A-Za-z0-9.-]+)", r"\1...@\2", text)


@dataclass
class PMEmail:
    list_raw: str  # "<security.example.org>"
    message_id: str  # with brackets
    sender: str  # "Name <addr>"
    subject: str
    epoch: int
    body: str = ""
    to: str = ""
    cc: str = ""
    in_reply_to: str = ""
    references: str = ""
    private: bool = False
    attachments: list[dict] = field(default_factory=list)
    raw: bytes | None = None  # the stored source; built from the fields when None

    @property
    def mid(self) -> str:
        return make_mid(self.list_raw, self.message_id)

    def source(self) -> bytes:
        if self.raw is not None:
            return self.raw
        msg = EmailMessage()
        msg["From"] = self.sender
        msg["To"] = self.to or self.list_raw.strip("<>").replace(".", "@", 1)
        if self.cc:
            msg["Cc"] = self.cc
        msg["Subject"] = self.subject
        msg["Date"] = format_datetime(datetime.fromtimestamp(self.epoch, timezone.utc))
        msg["Message-ID"] = self.message_id
        if self.in_reply_to:
            msg["In-Reply-To"] = self.in_reply_to
        if self.references:
            msg["References"] = self.references
        msg["List-Id"] = self.list_raw
        msg.set_content(self.body)
        for item in self.attachments:
            maintype, _, subtype = item["content_type"].partition("/")
            msg.add_attachment(item.get("data", b"x" * item["size"]), maintype=maintype, subtype=subtype,
                               filename=item["filename"])
        sender_addr = parseaddr(self.sender)[1] or "unknown"
        stamp = time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime(self.epoch))
        return f"From {sender_addr}  {stamp}\n".encode() + msg.as_bytes()


class PonyMailArchive:
    """The documents behind the emulated API, plus its request handler."""

    def __init__(self) -> None:
        self.emails: list[PMEmail] = []
        self.sessions: dict[str, dict] = {}  # cookie -> credentials
        self.now = time.time
        self.max_hits = 15000  # database.max_hits of ponymail.yaml.example

    def add(self, email: PMEmail) -> PMEmail:
        self.emails.append(email)
        return email

    def sign_in(self, cookie: str, uid: str = "janedoe") -> None:
        self.sessions[cookie] = {"uid": uid, "email": f"{uid}@example.org", "fullname": uid.title()}

    # -- helpers -----------------------------------------------------------------------
    def _credentials(self, req: Request) -> dict | None:
        return self.sessions.get(req.cookies.get("ponymail", ""))

    def _visible(self, req: Request, email: PMEmail) -> bool:
        return not email.private or self._credentials(req) is not None

    def _find(self, req: Request, data: dict) -> PMEmail | None:
        ident = str(data.get("id") or "")
        listid = str(data.get("listid") or "")
        for email in self.emails:
            if listid:
                hit = email.message_id == ident and email.list_raw == listid
            else:
                hit = email.mid == ident
            if hit and self._visible(req, email):
                return email
        return None

    def _shown(self, req: Request, text: str) -> str:
        return text if self._credentials(req) else anonymize(text)

    def summary(self, req: Request, email: PMEmail) -> dict:
        body = email.body if len(email.body) <= 200 else email.body[:200] + "..."
        return {"from": self._shown(req, email.sender),
                "gravatar": hashlib.md5(parseaddr(email.sender)[1].encode()).hexdigest(),
                "subject": email.subject, "message-id": email.message_id, "mid": email.mid, "epoch": email.epoch,
                "list": email.list_raw, "list_raw": email.list_raw, "private": email.private,
                "in-reply-to": email.in_reply_to,
                "attachments": [{k: a[k] for k in ("content_type", "size", "filename", "hash")}
                                for a in email.attachments],
                "id": email.mid, "body": self._shown(req, body)}

    def full(self, req: Request, email: PMEmail) -> dict:
        data = self.summary(req, email)
        data.update({"from_raw": email.sender, "to": self._shown(req, email.to), "cc": self._shown(req, email.cc),
                     "permalinks": [email.mid], "dbid": hashlib.sha3_256(email.source()).hexdigest(),
                     "date": time.strftime("%Y/%m/%d %H:%M:%S", time.gmtime(email.epoch)),
                     "references": email.references, "body": self._shown(req, email.body),
                     "body_short": email.body[:200], "html_source_only": False,
                     "forum": email.list_raw.strip("<>").replace(".", "@", 1), "size": len(email.source())})
        return data

    def _children(self, req: Request, parent: PMEmail, seen: set[str] | None = None, depth: int = 0) -> list[dict]:
        """Foal's fetch_children: every message naming the parent in In-Reply-To or References
        is its child, first come first served (a message already placed is skipped)."""
        seen = set() if seen is None else seen
        if depth > 250 or not parent.message_id:
            return []
        found = [e for e in self.emails
                 if self._visible(req, e) and e is not parent
                 and (parent.message_id == e.in_reply_to or parent.message_id in e.references.split())]
        kids = []
        for e in sorted(found, key=lambda e: e.epoch):
            if e.mid in seen:
                continue
            grandkids = self._children(req, e, seen, depth + 1)
            kids.append({"tid": e.mid, "mid": e.mid, "message-id": e.message_id, "subject": e.subject,
                         "from": self._shown(req, e.sender), "id": e.mid, "epoch": e.epoch,
                         "children": grandkids, "irt": e.in_reply_to, "list_raw": e.list_raw})
            seen.add(e.mid)
        return kids

    def thread_struct(self, emails: list[PMEmail]) -> list[dict]:
        """ThreadConstructor: join the thread whose message is named in in-reply-to, or whose
        normalised subject is shared; otherwise start a new thread.

        As in Foal's ``find_root_subject``, the in-reply-to match also requires the parent
        node's subject to equal the *normalised* ``"<subject>_<list_raw>"`` string, which a
        raw subject never does: in practice replies join by subject alone, and a reply that
        changed its subject starts a thread of its own."""
        roots: list[dict] = []
        by_msgid: dict[str, dict] = {}
        by_topic: dict[str, dict] = {}
        for email in sorted(emails, key=lambda e: e.epoch):
            topic = _RE_PREFIX.sub("", email.subject) + "_" + email.list_raw
            node = {"children": [], "tid": email.mid, "subject": email.subject, "tsubject": topic,
                    "epoch": email.epoch, "nest": 1}
            named = by_msgid.get(email.in_reply_to) if email.in_reply_to else None
            if named is not None and named["subject"] != topic:
                named = None  # Foal compares the raw subject with the normalised one
            parent = named or by_topic.get(topic)
            if parent is not None:
                node["nest"] = parent["nest"] + 1
                parent["children"].append(node)
            else:
                roots.append(node)
                by_topic.setdefault(topic, node)
            if email.message_id:
                by_msgid[email.message_id] = node
        return roots

    # -- endpoints ------------------------------------------------------------------------
    def preferences(self, req: Request, data: dict) -> Reply:
        lists: dict[str, dict[str, int]] = {}
        private_lists = {e.list_raw for e in self.emails if e.private}
        signed_in = self._credentials(req) is not None
        for email in self.emails:
            if email.list_raw in private_lists and not signed_in:
                continue
            lname, _, domain = email.list_raw.strip("<>").partition(".")
            lists.setdefault(domain, {}).setdefault(lname, 0)
            if email.epoch >= self.now() - 90 * 86400:
                lists[domain][lname] += 1
        login = {"credentials": self._credentials(req)} if signed_in else {}
        return Reply.json({"login": login, "versions": {"foal": "0.1.0~emulated"}, "lists": lists}, indent=2)

    def stats(self, req: Request, data: dict) -> Reply:
        lname, domain = data.get("list"), data.get("domain")
        if not lname or not domain:
            return Reply.json({})
        seconds = 30 * 86400
        until = self.now() + 86400  # defuzzer's default range: gt now-30d, lt now+1d
        d = str(data.get("d") or "")
        match = re.fullmatch(r"lte=(\d+)([dwMy])", d)
        days = re.fullmatch(r"dfr=(\d{4})-(\d+)-(\d+)\|dto=(\d{4})-(\d+)-(\d+)", d)
        if match:  # defuzzer.py: gt now-N, no upper bound
            seconds = int(match.group(1)) * {"d": 86400, "w": 7 * 86400, "M": 30 * 86400, "y": 365 * 86400}[
                match.group(2)]
            until = float("inf")
        elif days:  # defuzzer.py: gt "dfr 00:00:00", lt "dto 23:59:59" (UTC)
            y1, m1, d1, y2, m2, d2 = map(int, days.groups())
            start = calendar.timegm((y1, m1, d1, 0, 0, 0))
            seconds, until = self.now() - start - 1, calendar.timegm((y2, m2, d2, 23, 59, 59))
        elif d:
            return Reply.text("unsupported d= in this emulation", 400)
        list_raw = f"<{lname}.{domain}>"
        since = self.now() - seconds
        visible = [e for e in self.emails if e.list_raw == list_raw and self._visible(req, e)]
        try:
            wanted = _text_query(data)
        except ValueError:  # shlex on an unbalanced quote: Foal's handler raises, main.py answers 500
            return Reply.text(f"API error occurred. Error ID: {hashlib.sha1(req.path.encode()).hexdigest()[:8]}", 500)
        hits = sorted((e for e in visible if since <= e.epoch < until and wanted(e)), key=lambda e: e.epoch,
                      reverse=True)
        hits = hits[:self.max_hits + 1]  # messages.query(): append, then test hits > query_limit
        hits.sort(key=lambda e: e.epoch)
        active_months: dict[str, int] = {}
        for e in visible:  # get_activity_span: no date range, no cap
            month = time.strftime("%Y-%m", time.gmtime(e.epoch))
            active_months[month] = active_months.get(month, 0) + 1
        authors: dict[str, int] = {}
        for e in hits:
            authors[e.sender] = authors.get(e.sender, 0) + 1
        participants = [{"email": self._shown(req, parseaddr(a)[1]), "name": parseaddr(a)[0], "count": n,
                         "gravatar": hashlib.md5(parseaddr(a)[1].encode()).hexdigest()}
                        for a, n in sorted(authors.items(), key=lambda kv: kv[1], reverse=True)[:10]]
        if "quick" in data:  # stats.py: the emails carry only their epoch; no thread_struct, cloud or participants
            return Reply.json({"firstYear": 2022, "lastYear": 2026, "firstMonth": 1, "lastMonth": 12,
                               "active_months": dict(sorted(active_months.items())), "hits": len(hits),
                               "numparts": 0, "no_threads": 0, "emails": [{"epoch": e.epoch} for e in hits],
                               "participants": {}, "searchlist": list_raw, "domain": domain, "name": lname,
                               "list": f"{lname}@{domain}", "searchParams": data, "unixtime": int(self.now())},
                              indent=2)
        tstruct = self.thread_struct(hits)
        if "emailsOnly" in data:  # no thread_struct or cloud, participants {}
            return Reply.json({"firstYear": 2022, "lastYear": 2026, "active_months": dict(sorted(active_months.items())),
                               "hits": len(hits), "numparts": len(authors),
                               "emails": [self.summary(req, e) for e in hits], "participants": {},
                               "searchlist": list_raw, "domain": domain, "name": lname, "list": f"{lname}@{domain}",
                               "searchParams": data, "unixtime": int(self.now())}, indent=2)
        return Reply.json({"firstYear": 2022, "lastYear": 2026, "firstMonth": 1, "lastMonth": 12,
                           "active_months": dict(sorted(active_months.items())), "hits": len(hits), "numparts": len(authors),
                           "no_threads": len(tstruct), "emails": [self.summary(req, e) for e in hits],
                           "participants": participants, "searchlist": list_raw, "domain": domain, "name": lname,
                           "list": f"{lname}@{domain}", "searchParams": data, "unixtime": int(self.now()),
                           "thread_struct": tstruct, "cloud": {}}, indent=2)

    def thread(self, req: Request, data: dict) -> Reply:
        email = self._find(req, data)
        if email is None:
            return Reply.text("Content not found", 404)
        if data.get("find_parent"):
            seen = set()
            while email.in_reply_to and email.message_id not in seen:
                seen.add(email.message_id)
                parent = self._find(req, {"id": email.in_reply_to, "listid": email.list_raw})
                if parent is None:
                    break
                email = parent
        root = self.summary(req, email)
        root["body"] = self._shown(req, email.body)
        root["children"] = self._children(req, email)
        return Reply.json({"thread": root, "emails": [root]}, indent=2)

    def email(self, req: Request, data: dict) -> Reply:
        email = self._find(req, data)
        if email is None:
            return Reply.text("Email not found", 404)
        return Reply.json(self.full(req, email), indent=2)

    def source(self, req: Request, data: dict) -> Reply:
        email = self._find(req, data)
        if email is None:
            return Reply.text("Email not found", 404)
        return Reply.text(email.source())

    def __call__(self, req: Request) -> Reply:
        handler = req.path.rsplit("/", 1)[-1]
        data = {k: v[0] for k, v in req.query.items()}
        if handler.endswith(".json"):
            handler = handler[:-5]
            if req.body:
                try:
                    data.update(json.loads(req.body))
                except ValueError as exc:
                    return Reply.text(str(exc), 400)
        elif handler.endswith(".lua"):
            handler = handler[:-4]
        endpoint = {"preferences": self.preferences, "stats": self.stats, "thread": self.thread,
                    "email": self.email, "source": self.source}.get(handler)
        if endpoint is None or not req.path.startswith("/api/"):
            return Reply.text("API Endpoint not found!", 404)
        try:
            return endpoint(req, data)
        except Exception:  # server/main.py with tracebacks off: only an error id
            return Reply.text(f"API error occurred. Error ID: {hashlib.sha1(req.path.encode()).hexdigest()[:8]}", 500)


def _text_query(data: dict):
    """plugins/defuzzer.py's text filters: ``q`` split shell-style (``-word`` excludes, quotes keep a
    phrase, ``:`` removed), each word a phrase match over from, body and subject; ``header_from``,
    ``header_subject``, ``header_body`` match one field. (A substring match stands in for
    Elasticsearch's analysed phrase match.)"""
    must: list[str] = []
    must_not: list[str] = []
    q = str(data.get("q") or "").replace(":", "")
    for word in shlex.split(q):
        (must_not if word.startswith("-") else must).append(word.lstrip("-").lower())
    fields = {name: str(data[f"header_{name}"]).lower() for name in ("from", "subject", "body")
              if data.get(f"header_{name}")}

    def wanted(email: PMEmail) -> bool:
        text = "\n".join((email.sender, email.body, email.subject)).lower()
        if any(w not in text for w in must) or any(w in text for w in must_not):
            return False
        own = {"from": email.sender, "subject": email.subject, "body": email.body}
        return all(v in own[name].lower() for name, v in fields.items())

    return wanted


def import_message(archive: PonyMailArchive, list_raw: str, raw: bytes, *, private: bool = False) -> PMEmail:
    """Archive one raw message roughly as Foal's archiver does: decoded From and Subject, the
    text body (an HTML-only message keeps its HTML source), Message-ID "" when absent."""
    msg = BytesParser(policy=email_policy.default).parsebytes(raw)
    body_part = msg.get_body(preferencelist=("plain", "html"))
    body = body_part.get_content() if body_part is not None else ""
    name, addr = parseaddr(str(msg.get("From", "")))
    sender = f"{name} <{addr}>" if name else addr
    when = parsedate_to_datetime(str(msg["Date"])) if msg.get("Date") else datetime.now(timezone.utc)
    refs = " ".join(str(msg.get("References", "")).split())
    return archive.add(PMEmail(list_raw, "".join(str(msg.get("Message-ID", "")).split()), sender,
                               str(msg.get("Subject", "")), int(when.timestamp()), body,
                               to=str(msg.get("To", "")), cc=str(msg.get("Cc", "")),
                               in_reply_to="".join(str(msg.get("In-Reply-To", "")).split()), references=refs,
                               private=private, raw=raw))


def serve(archive: PonyMailArchive) -> FakeHttpServer:
    return FakeHttpServer(archive).start()
