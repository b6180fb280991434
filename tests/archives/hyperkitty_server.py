"""A HyperKitty (Mailman 3 archiver) REST API emulation for tests and benchmarks.

Shapes follow HyperKitty's own ``hyperkitty/api/`` serializers and views and Django
REST Framework's ``LimitOffsetPagination``:

* ``/api/list/<list>/`` -> MailingListSerializer: url, name, display_name, description,
  subject_prefix, archive_policy, created_at, threads, emails.
* ``/api/list/<list>/threads/`` -> ThreadShortSerializer rows, ordered ``-date_active``:
  url, mailinglist, thread_id, subject, date_active, starting_email, emails,
  votes_total, replies_count, next_thread, prev_thread.
* ``/api/list/<list>/thread/<id>/`` -> ThreadSerializer (adds votes, participants,
  participants_count); 404 when unknown.
* ``/api/list/<list>/thread/<id>/emails/`` -> EmailShortSerializer rows in thread order
  (url, mailinglist, message_id, message_id_hash, thread, sender{address, mailman_id,
  emails}, sender_name, subject, date, parent, children). Like the stock view, an
  unknown thread lists zero emails (no 404).
* ``/api/list/<list>/email/<hash>/`` -> EmailSerializer (adds votes, content,
  attachments[{email, counter, name, content_type, encoding, size, download}]).

Pagination: with ``limit`` the answer is ``{count, next, previous, results}``; without
it every row comes back as one bare array (a stock setup with no PAGE_SIZE). Each page is
cut from the queryset as it is *at that request* (DRF's LimitOffsetPagination slices a
fresh ``-date_active`` query), so a thread that arrives or gets a reply during a walk
shifts the pages under the client: ``on_request`` hooks let a test change the archive
between two pages, as live traffic does.

A server error answers HyperKitty's own ``hyperkitty/500.html`` page (it extends
``base.html``: a whole HTML document, a ``<style>`` block inside the body, the text
"Error 500 / Oh No! / Sorry, but the requested page is unavailable due to a server
hiccup."): :func:`server_error_page`.
Message-IDs are stored without angle brackets and addresses are obfuscated to
``x (a) y``, as HyperKitty does. A private list answers 403, a missing list 404
(``{"detail": ...}`` as DRF writes it).
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email import policy as email_policy
from email.parser import BytesParser
from email.utils import parseaddr, parsedate_to_datetime
from urllib.parse import quote, unquote, urlencode

from tests.archives.fakehttp import FakeHttpServer, Reply, Request

FORBIDDEN = {"detail": "You do not have permission to perform this action."}
NOT_FOUND = {"detail": "Not found."}


def message_id_hash(message_id: str) -> str:
    bare = message_id.strip().strip("<>")
    return base64.b32encode(hashlib.sha1(bare.encode("utf-8")).digest()).decode("ascii")


def drf_datetime(when: datetime) -> str:
    text = when.astimezone(timezone.utc).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


@dataclass
class HKEmail:
    message_id: str  # bare, as HyperKitty stores it
    sender_address: str
    sender_name: str
    subject: str
    date: datetime
    content: str = ""
    parent: str | None = None  # bare Message-ID of the parent
    attachments: list[dict] = field(default_factory=list)  # {name, content_type, size, encoding}

    @property
    def hash(self) -> str:
        return message_id_hash(self.message_id)


@dataclass
class HKThread:
    emails: list[HKEmail]

    @property
    def thread_id(self) -> str:
        return self.emails[0].hash

    @property
    def subject(self) -> str:
        return self.emails[0].subject

    @property
    def date_active(self) -> datetime:
        return max(e.date for e in self.emails)

    def in_thread_order(self) -> list[HKEmail]:
        """HyperKitty's ``thread_order``: depth first from the starting email, replies by date."""
        ids = {e.message_id for e in self.emails}
        kids: dict[str | None, list[HKEmail]] = {}
        for email in self.emails:
            parent = email.parent if email.parent in ids else None
            kids.setdefault(parent, []).append(email)
        ordered: list[HKEmail] = []

        def visit(email: HKEmail) -> None:
            ordered.append(email)
            for child in sorted(kids.get(email.message_id, []), key=lambda e: e.date):
                visit(child)

        for top in sorted(kids.get(None, []), key=lambda e: e.date):
            visit(top)
        return ordered


@dataclass
class HKList:
    address: str
    archive_policy: str = "public"  # public | private | never
    threads: list[HKThread] = field(default_factory=list)
    _sorted: list[HKThread] | None = None
    _by_id: dict[str, HKThread] = field(default_factory=dict)
    _by_hash: dict[str, tuple[HKThread, HKEmail]] = field(default_factory=dict)

    def add(self, thread: HKThread) -> None:
        self.threads.append(thread)
        self._sorted = None
        self._by_id[thread.thread_id] = thread
        for email in thread.emails:
            self._by_hash[email.hash] = (thread, email)

    def sorted_threads(self) -> list[HKThread]:
        if self._sorted is None:
            self._sorted = sorted(self.threads, key=lambda t: t.date_active, reverse=True)
        return self._sorted

    def add_email(self, thread: HKThread, email: HKEmail) -> None:
        thread.emails.append(email)
        self._sorted = None
        self._by_hash[email.hash] = (thread, email)

    def by_message_id(self, message_id: str) -> tuple[HKThread, HKEmail] | None:
        return self._by_hash.get(message_id_hash(message_id))

    def thread(self, thread_id: str) -> HKThread | None:
        return self._by_id.get(thread_id)

    def email(self, digest: str) -> tuple[HKThread, HKEmail] | None:
        return self._by_hash.get(digest)


class HyperKittyArchive:
    """The data behind the emulated API plus its request handler."""

    def __init__(self) -> None:
        self.lists: dict[str, HKList] = {}
        self.page_size_without_limit: int | None = None  # None: bare array, like a stock setup
        self.ignore_limit = False  # answer as if no limit had been sent
        # Behind a reverse proxy DRF builds absolute URLs from what the proxy forwards,
        # which may not be the address the client used.
        self.public_root: str | None = None
        # Called with each request before it is answered: live traffic between two pages.
        self.on_request: list = []
        # Fault switch: a request whose path contains one of these answers the 500 page
        # (an archive whose database is down for that view), as any handler that raises.
        self.server_error_paths: list[str] = []

    def add_list(self, address: str, archive_policy: str = "public") -> HKList:
        self.lists[address] = HKList(address, archive_policy)
        return self.lists[address]

    def add_thread(self, address: str, emails: list[HKEmail]) -> HKThread:
        thread = HKThread(emails)
        self.lists[address].add(thread)
        return thread

    # -- serializers -------------------------------------------------------------
    def _root(self, req: Request) -> str:
        return self.public_root or f"http://{req.host}"

    def _list_url(self, req: Request, mlist: HKList) -> str:
        return f"{self._root(req)}/api/list/{quote(mlist.address, safe='@')}/"

    def _email_url(self, req: Request, mlist: HKList, email: HKEmail) -> str:
        return f"{self._list_url(req, mlist)}email/{email.hash}/"

    def _thread_url(self, req: Request, mlist: HKList, thread: HKThread) -> str:
        return f"{self._list_url(req, mlist)}thread/{thread.thread_id}/"

    def list_json(self, req: Request, mlist: HKList) -> dict:
        url = self._list_url(req, mlist)
        return {"url": url, "name": mlist.address, "display_name": mlist.address.split("@")[0].title(),
                "description": "", "subject_prefix": f"[{mlist.address.split('@')[0]}] ",
                "archive_policy": mlist.archive_policy, "created_at": "2015-01-01T00:00:00Z",
                "threads": url + "threads/", "emails": url + "emails/"}

    def thread_json(self, req: Request, mlist: HKList, thread: HKThread, index: int | None = None) -> dict:
        ordered = mlist.sorted_threads()
        if index is None:
            index = next(i for i, t in enumerate(ordered) if t is thread)
        newer = ordered[index - 1] if index > 0 else None
        older = ordered[index + 1] if index + 1 < len(ordered) else None
        url = self._thread_url(req, mlist, thread)
        return {"url": url, "mailinglist": self._list_url(req, mlist), "thread_id": thread.thread_id,
                "subject": thread.subject, "date_active": drf_datetime(thread.date_active),
                "starting_email": self._email_url(req, mlist, thread.emails[0]), "emails": url + "emails/",
                "votes_total": 0, "replies_count": len(thread.emails) - 1,
                "next_thread": self._thread_url(req, mlist, older) if older else None,
                "prev_thread": self._thread_url(req, mlist, newer) if newer else None}

    def email_short_json(self, req: Request, mlist: HKList, thread: HKThread, email: HKEmail) -> dict:
        parent = next((e for e in thread.emails if email.parent and e.message_id == email.parent), None)
        children = [e for e in thread.emails if e.parent == email.message_id]
        mailman_id = hashlib.md5(email.sender_address.encode()).hexdigest()
        return {"url": self._email_url(req, mlist, email), "mailinglist": self._list_url(req, mlist),
                "message_id": email.message_id, "message_id_hash": email.hash,
                "thread": self._thread_url(req, mlist, thread),
                "sender": {"address": email.sender_address.replace("@", " (a) "), "mailman_id": mailman_id,
                           "emails": f"{self._root(req)}/api/sender/{mailman_id}/emails/"},
                "sender_name": email.sender_name, "subject": email.subject, "date": drf_datetime(email.date),
                "parent": self._email_url(req, mlist, parent) if parent else None,
                "children": [self._email_url(req, mlist, c) for c in children]}

    def email_json(self, req: Request, mlist: HKList, thread: HKThread, email: HKEmail) -> dict:
        data = self.email_short_json(req, mlist, thread, email)
        url = data["url"]
        data["votes"] = {"likes": 0, "dislikes": 0, "status": {"like": "neutral", "dislike": "neutral"}}
        data["content"] = email.content
        data["attachments"] = [
            {"email": url, "counter": i + 2, "name": a["name"], "content_type": a["content_type"],
             "encoding": a.get("encoding"), "size": a["size"],
             "download": f"{self._root(req)}/list/{mlist.address}/message/{email.hash}/attachment/{i + 2}/"
                         f"{quote(a['name'])}"}
            for i, a in enumerate(email.attachments)
        ]
        return data

    # -- pagination (DRF LimitOffsetPagination) -----------------------------------
    def paginate(self, req: Request, rows: list, render) -> Reply:
        limit_text = req.param("limit")
        limit = int(limit_text) if limit_text and limit_text.isdigit() and int(limit_text) > 0 else None
        if self.ignore_limit:
            limit = None
        if limit is None:
            limit = self.page_size_without_limit
        if limit is None:
            return Reply.json([render(row, i) for i, row in enumerate(rows)])
        offset_text = req.param("offset") or "0"
        offset = int(offset_text) if offset_text.isdigit() else 0
        count = len(rows)
        page = rows[offset:offset + limit]
        url = f"{self._root(req)}{req.path}"
        nxt = f"{url}?{urlencode({'limit': limit, 'offset': offset + limit})}" if offset + limit < count else None
        if offset <= 0:
            prev = None
        elif offset - limit <= 0:
            prev = f"{url}?{urlencode({'limit': limit})}"
        else:
            prev = f"{url}?{urlencode({'limit': limit, 'offset': offset - limit})}"
        return Reply.json({"count": count, "next": nxt, "previous": prev,
                           "results": [render(row, offset + i) for i, row in enumerate(page)]})

    # -- routing ----------------------------------------------------------------------
    def __call__(self, req: Request) -> Reply:
        try:
            for hook in list(self.on_request):
                hook(req)
            if any(part in req.path for part in self.server_error_paths):
                raise RuntimeError(f"emulated server error on {req.path}")
            return self._route(req)
        except Exception:  # Django with DEBUG off: the site's 500 page, whatever went wrong
            return Reply.text(server_error_page(), 500, "text/html; charset=utf-8")

    def _route(self, req: Request) -> Reply:
        if req.method != "GET":
            return Reply.json({"detail": f'Method "{req.method}" not allowed.'}, 405)
        parts = [unquote(p) for p in req.path.split("/") if p]
        if parts == ["search"]:
            return self.search(req)
        if len(parts) == 7 and parts[0] == "list" and parts[2] == "message" and parts[4] == "attachment":
            return self.attachment(parts[1], parts[3], parts[5])
        if len(parts) < 3 or parts[:2] != ["api", "list"]:
            return Reply.text("<h1>Not Found</h1>", 404, "text/html")
        mlist = self.lists.get(parts[2])
        if mlist is None:
            return Reply.json(NOT_FOUND, 404)
        if mlist.archive_policy == "private":
            return Reply.json(FORBIDDEN, 403)
        rest = parts[3:]
        if not rest:
            return Reply.json(self.list_json(req, mlist))
        if rest == ["threads"]:
            ordered = mlist.sorted_threads()
            return self.paginate(req, ordered, lambda t, i: self.thread_json(req, mlist, t, i))
        if len(rest) == 2 and rest[0] == "thread":
            thread = mlist.thread(rest[1])
            if thread is None:
                return Reply.json(NOT_FOUND, 404)
            data = self.thread_json(req, mlist, thread)
            data.update({"votes": {"likes": 0, "dislikes": 0}, "participants_count": len(
                {e.sender_address for e in thread.emails})})
            return Reply.json(data)
        if len(rest) == 3 and rest[0] == "thread" and rest[2] == "emails":
            thread = mlist.thread(rest[1])
            emails = thread.in_thread_order() if thread else []
            return self.paginate(req, emails, lambda e, i: self.email_short_json(req, mlist, thread, e))
        if len(rest) == 2 and rest[0] == "email":
            found = mlist.email(rest[1])
            if found is None:
                return Reply.json(NOT_FOUND, 404)
            return Reply.json(self.email_json(req, mlist, *found))
        return Reply.text("<h1>Not Found</h1>", 404, "text/html")


    def search(self, req: Request) -> Reply:
        """The web search ``/search?q=&mlist=&page=&count=&sort=`` (views/search.py with the
        search_results.html and messages/summary_message.html templates): HTML only, there is
        no search in the REST API. Each result links ``/list/<list>/message/<hash>/``; the
        header says ``<n> messages``; ``page`` past the end is the last page (Django's
        paginator as HyperKitty uses it). A quoted query is a phrase; ``-word`` excludes
        (haystack's auto_query); here a substring of subject, content and sender name."""
        mlist = self.lists.get(req.param("mlist") or "")
        if mlist is None:
            return Reply.text("<h1>Not Found</h1>", 404, "text/html")
        if mlist.archive_policy == "private":
            return Reply.text("<h1>Private archive</h1>", 403, "text/html")
        query = req.param("q") or ""
        phrases = [m.group(1) or m.group(2) for m in re.finditer(r'"([^"]*)"|(\S+)', query)]
        must = [p.lower() for p in phrases if p and not p.startswith("-")]
        must_not = [p[1:].lower() for p in phrases if p.startswith("-") and len(p) > 1]
        found = []
        for thread in mlist.threads:
            for email in thread.emails:
                text = "\n".join((email.subject, email.content, email.sender_name)).lower()
                if all(w in text for w in must) and not any(w in text for w in must_not):
                    found.append(email)
        found.sort(key=lambda e: e.date, reverse=req.param("sort") != "date-asc")
        count = max(1, min(int(req.param("count") or 10), 50))
        pages = max(1, -(-len(found) // count))
        page = min(max(1, int(req.param("page") or 1)), pages)
        items = "".join(
            f'<div class="thread"><div><span class="thread-title"><a name="{e.hash}" '
            f'href="/list/{mlist.address}/message/{e.hash}/">{html.escape(e.subject)}</a></span>'
            f'<span class="thread-date">2 days, 3 hours</span></div></div>\n'
            for e in found[(page - 1) * count:page * count]) or "<p>Sorry no email could be found for this query.</p>"
        body = (f'<html><body><div id="thread-list" class="search-results col-sm-10">'
                f'<ul class="list-unstyled list-stats"><li><span class="icomoon discussion"></span>\n'
                f'{len(found)} messages\n</li></ul>{items}'
                f'<ul class="pagination"><li class="active"><a href="#">{page}</a></li></ul></div></body></html>')
        return Reply.text(body, 200, "text/html; charset=utf-8")

    def attachment(self, address: str, digest: str, counter: str) -> Reply:
        """The web route ``/list/<list>/message/<hash>/attachment/<counter>/<name>``."""
        mlist = self.lists.get(address)
        if mlist is None:
            return Reply.text("<h1>Not Found</h1>", 404, "text/html")
        if mlist.archive_policy == "private":
            return Reply.text("<h1>Forbidden</h1>", 403, "text/html")
        found = mlist.email(digest)
        index = int(counter) - 2 if counter.isdigit() else -1
        if found is None or not 0 <= index < len(found[1].attachments):
            return Reply.text("<h1>Not Found</h1>", 404, "text/html")
        item = found[1].attachments[index]
        data = item.get("data", b"x" * item["size"])
        charset = f"; charset={item['encoding']}" if item.get("encoding") else ""
        return Reply.text(data, 200, item["content_type"] + charset)

    def import_message(self, address: str, raw: bytes) -> HKEmail | None:
        """Archive one raw message the way HyperKitty's ``add_to_list`` does.

        No Message-ID: refused (None). The parent is the In-Reply-To message (else the last
        References entry) when it is already archived; otherwise the message starts a new
        thread (HyperKitty: "the parent may not be archived, create a new thread for now").
        Content: the text/plain parts; text/html and other parts become attachments, as
        django-mailman3's Scrubber does, so an HTML-only message has empty content.
        """
        msg = BytesParser(policy=email_policy.default).parsebytes(raw)
        if msg.get("Message-Id") is None:
            return None
        message_id = "".join(str(msg["Message-Id"]).split()).strip("<>")
        ref = None
        irt = msg.get("In-Reply-To")
        if irt and str(irt).strip():
            ref = str(irt)
        elif msg.get("References") and str(msg["References"]).strip():
            ref = str(msg["References"]).split()[-1]
        ref = ref.strip().strip("<>") if ref else None
        name, addr = parseaddr(str(msg.get("From", "")))
        when = parsedate_to_datetime(str(msg["Date"])) if msg.get("Date") else datetime.now(timezone.utc)
        texts: list[str] = []
        attachments: list[dict] = []
        for part in msg.walk():
            if part.is_multipart():
                continue
            ctype = part.get_content_type()
            payload = part.get_payload(decode=True) or b""
            if ctype == "text/plain" and not part.is_attachment():
                texts.append(payload.decode(part.get_content_charset() or "utf-8", "replace"))
            else:
                ext = ".html" if ctype == "text/html" else ".bin"
                attachments.append({"name": part.get_filename() or f"attachment{ext}", "content_type": ctype,
                                    "encoding": part.get_content_charset(), "size": len(payload),
                                    "data": payload})
        mlist = self.lists[address]
        parent = mlist.by_message_id(ref) if ref else None
        email = HKEmail(message_id, addr or "unknown@example.com", str(name), str(msg.get("Subject", "")),
                        when, "\n".join(texts), parent=parent[1].message_id if parent else None,
                        attachments=attachments)
        if parent is not None:
            mlist.add_email(parent[0], email)
        else:
            mlist.add(HKThread([email]))
        return email


def server_error_page(site_name: str = "Mailing lists") -> bytes:
    """What a HyperKitty site answers on an unhandled error: ``hyperkitty/500.html``
    rendered inside ``hyperkitty/base.html`` (head, navigation bar, then the content block
    with its inline style), served as text/html with status 500."""
    return f"""<!DOCTYPE HTML>
<html>
    <head>
        <meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1.0" />
        <title>{site_name}</title>
        <link rel="shortcut icon" href="/static/hyperkitty/img/favicon.ico" />
        <link rel="stylesheet" href="/static/CACHE/css/output.6b0c2f7e1a2c.css" type="text/css" media="all" />
        <script src="/static/CACHE/js/output.1e8a0b3c4d5e.js"></script>
    </head>
    <body>
    <nav class="navbar sticky-top navbar-light bg-light navbar-expand-md">
        <div class="container">
            <a class="navbar-brand" href="/archives/">{site_name}</a>
            <form name="search" method="get" action="/archives/search"><input name="q" type="text"
                placeholder="Search all lists" /></form>
        </div>
    </nav>
    <div class="modal fade" tabindex="-1" role="dialog" id="keyboard-shortcuts"></div>
    <div class="container">
        <style>
            #contentBox
            {{
                padding:10px;
                font-family: 'Times New Roman';
                font-size:20px;
            }}
            .hello {{ font-size:100px; color:#444; }}
        </style>
        <div style="margin: 60px 40px 0 40px;">
            <div id="contentBox" style="width:50%; ">
                <span class="hello"> Error 500 </span>
                <br/><br/>
                <span style="font-size:60px; color:#444;font-family: 'Times New Roman';"> Oh No! </span>
                <br/><br/>
                <p>Sorry, but the requested page is unavailable due to a server hiccup.</p>
                <a href ="/archives/">Go back home</a>
            </div>
        </div>
    </div>
    <script>$(function() {{ setup_thread_list(); }});</script>
    </body>
</html>
""".encode("utf-8")


def serve(archive: HyperKittyArchive) -> FakeHttpServer:
    return FakeHttpServer(archive).start()
