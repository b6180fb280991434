"""Loopback HTTP servers that speak GitHub's and Jira's public REST shapes (tests only).

They keep issues in memory and answer with the documented paths, JSON bodies, status
codes, paging (GitHub ``Link`` headers; Jira ``startAt/total`` on v2 and
``nextPageToken/isLast`` on v3) and auth checks (a missing or wrong credential gets 401).
Shapes follow shared/reference/trackers (octokit's OpenAPI examples, Jira's v3 OpenAPI).
"""

from __future__ import annotations

import base64
import json
import re
import socket
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # headers and body go out in two writes; without NODELAY, delayed ACKs cost 40 ms a call
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        server: "_Base" = self.server.app  # type: ignore[attr-defined]
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        if server.before_handle is not None:  # tests only: hold a request back (outside the lock)
            server.before_handle(method, parts.path, raw)
        with server.lock:
            server.requests.append((method, self.path, dict(self.headers)))
            server.bodies.append((method, parts.path, raw))
            status, body, headers = server.handle(method, parts.path, query, raw, self.headers)
        data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode("utf-8"))
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json; charset=utf-8")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")


class _Base:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.requests: list[tuple[str, str, dict]] = []
        self.bodies: list[tuple[str, str, bytes]] = []  # (method, path, request body)
        #: tests only: called with (method, path, body) before a request is handled, outside the
        #: server's lock: a test holds one writer's request back to stage a race
        self.before_handle: Any = None
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.app = self  # type: ignore[attr-defined]
        # serve_forever accepts after select says a connection waits; should none be there
        # by then, a blocking accept() would stall the server (seen once under load 7):
        # with a timeout it gives up and the loop goes on. Accepted sockets still block.
        self.httpd.socket.settimeout(1.0)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "_Base":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def handle(self, method, path, query, raw, headers):  # pragma: no cover - overridden
        raise NotImplementedError


def _json(raw: bytes) -> Any:
    return json.loads(raw.decode("utf-8")) if raw else {}


# ---------------------------------------------------------------------------------------
# GitHub
# ---------------------------------------------------------------------------------------

class GitHubServer(_Base):
    """``/repos/{owner}/{repo}/…``, ``/search/issues`` and ``/user`` for one repository."""

    def __init__(self, repo: str = "acme/security", token: str = "ghp-test-token", private: bool = True,
                 page_size_cap: int = 2, visibility: str | None = None) -> None:
        super().__init__()
        self.repo = repo
        self.token = token
        # GitHub's repository object has both: an enterprise "internal" repository answers
        # private: true with visibility: "internal" (docs.github.com/rest/repos/repos#get-a-repository)
        self.visibility = visibility or ("private" if private else "public")
        self.private = private if visibility is None else visibility != "public"
        self.login = "tester"
        # GitHub caps per_page at 100; a small cap here makes every test cross pages
        self.page_size_cap = page_size_cap
        self.issues: dict[int, dict] = {}
        self.comments: dict[int, list[dict]] = {}
        self.repo_labels = ["needs-triage", "bug", "cve-allocated", "wontfix"]
        self.milestones = [{"number": 1, "title": "1.0"}, {"number": 2, "title": "2.0"}]
        self.next_number = 1
        self.next_comment = 1000
        self.rate_limit_next = 0
        self.repo_id = 1296269
        # A renamed repository keeps answering under its old name with a redirect to
        # /repositories/{id}/…: 301 for GET, 307 for the other methods (GitHub REST "Follow
        # redirects"; github.blog 2015-05-26 "Repository redirects are here").
        self.renamed_from: str | None = None
        # Issues transferred away: number -> the other repository and the issue's new number there
        self.transfers: dict[int, dict] = {}
        self.others: dict[int, dict] = {}  # repository id -> {"full_name", "visibility", "issues", "comments"}
        self.legacy_search_calls = 0
        self.redirect_base: str | None = None  # tests only: send Location to another host
        # GitHub's search index lags behind writes ("may take a while", up to about a minute):
        # an issue created less than search_lag seconds ago is not in /search/issues yet.
        # The REST list and GET of one issue are current.
        self.search_lag = 0.0
        self.created_at: dict[int, float] = {}
        # GitHub's rate limits: every answer counts against the core limit except a 304 to a
        # conditional request (If-None-Match matching the ETag: docs.github.com "Use conditional
        # requests"); /search/* has its own limit of 30 a minute (counted apart)
        self.rate_used = 0
        self.search_calls = 0

    def transfer(self, number: int, full_name: str, visibility: str = "private") -> int:
        """Move issue ``number`` to another repository (its new number there is returned)."""
        repo_id = self.repo_id + 1 + len(self.others)
        issue = dict(self.issues.pop(number))
        issue["number"] = new = 1
        issue["url"] = f"https://api.github.com/repos/{full_name}/issues/{new}"
        issue["repository_url"] = f"https://api.github.com/repos/{full_name}"
        issue["html_url"] = f"https://github.com/{full_name}/issues/{new}"
        self.others[repo_id] = {"full_name": full_name, "visibility": visibility, "issues": {new: issue},
                                "comments": {new: self.comments.pop(number)}}
        self.transfers[number] = {"repo_id": repo_id, "number": new}
        return new

    def _redirect(self, method: str, target: str, query: dict):
        from urllib.parse import urlencode

        location = f"{self.redirect_base or self.url}{target}" + (f"?{urlencode(query)}" if query else "")
        status = 301 if method == "GET" else 307
        return status, {"message": "Moved Permanently", "url": location,
                        "documentation_url": "https://docs.github.com/v3/#http-redirects"}, {"Location": location}

    def _other(self, method, repo_id: int, tail: str, raw):
        other = self.others[repo_id]
        if tail == "" and method == "GET":
            owner, name = other["full_name"].split("/")
            return 200, {"id": repo_id, "name": name, "full_name": other["full_name"],
                         "private": other["visibility"] != "public", "visibility": other["visibility"],
                         "owner": self._user(owner), "html_url": f"https://github.com/{other['full_name']}"}, {}
        m = re.fullmatch(r"/issues/(\d+)(/comments)?", tail)
        if not m or int(m.group(1)) not in other["issues"]:
            return 404, {"message": "Not Found"}, {}
        n = int(m.group(1))
        issue = other["issues"][n]
        if not m.group(2) and method == "GET":
            return 200, issue, {}
        if m.group(2) and method == "GET":
            return 200, other["comments"][n], {}
        if m.group(2) and method == "POST":
            self.next_comment += 1
            comment = {"id": self.next_comment, "body": _json(raw)["body"], "user": self._user(self.login),
                       "created_at": now_iso(), "updated_at": now_iso(),
                       "html_url": f"{issue['html_url']}#issuecomment-{self.next_comment}"}
            other["comments"][n].append(comment)
            return 201, comment, {}
        return 404, {"message": "Not Found"}, {}

    # -- shapes -----------------------------------------------------------------
    def _user(self, login: str) -> dict:
        return {"login": login, "id": abs(hash(login)) % 100000, "node_id": "MDQ6VXNlcjE=",
                "url": f"https://api.github.com/users/{login}", "html_url": f"https://github.com/{login}",
                "type": "User", "site_admin": False}

    def _label(self, name: str) -> dict:
        return {"id": abs(hash(name)) % 10**9, "node_id": "MDU6TGFiZWwyMDgwNDU5NDY=",
                "url": f"https://api.github.com/repos/{self.repo}/labels/{name}", "name": name,
                "description": "", "color": "f29513", "default": False}

    def _milestone(self, number: int) -> dict:
        m = next(m for m in self.milestones if m["number"] == number)
        return {"url": f"https://api.github.com/repos/{self.repo}/milestones/{number}",
                "html_url": f"https://github.com/{self.repo}/milestones/{m['title']}", "id": 1002604 + number,
                "number": number, "state": "open", "title": m["title"], "description": "",
                "open_issues": 0, "closed_issues": 0}

    def add_issue(self, title: str, body: str = "", labels: list[str] | None = None, pull_request: bool = False,
                  state: str = "open") -> dict:
        n = self.next_number
        self.next_number += 1
        api = f"https://api.github.com/repos/{self.repo}/issues/{n}"
        issue = {
            "id": 10**6 + n, "node_id": "MDU6SXNzdWUx", "url": api,
            "repository_url": f"https://api.github.com/repos/{self.repo}",
            "labels_url": api + "/labels{/name}", "comments_url": api + "/comments", "events_url": api + "/events",
            "html_url": f"https://github.com/{self.repo}/{'pull' if pull_request else 'issues'}/{n}",
            "number": n, "state": state, "title": title, "body": body, "user": self._user(self.login),
            "labels": [self._label(x) for x in labels or []], "assignee": None, "assignees": [],
            "milestone": None, "locked": False, "active_lock_reason": None, "comments": 0,
            "closed_at": None, "created_at": now_iso(), "updated_at": now_iso(), "closed_by": None,
            "author_association": "COLLABORATOR", "state_reason": None,
        }
        if pull_request:
            issue["pull_request"] = {"url": f"https://api.github.com/repos/{self.repo}/pulls/{n}",
                                     "html_url": f"https://github.com/{self.repo}/pull/{n}"}
        self.issues[n] = issue
        self.comments[n] = []
        self.created_at[n] = time.monotonic()
        return issue

    def _touch(self, issue: dict) -> None:
        # updated_at must order issues even within one second
        time.sleep(0.001)
        issue["updated_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def _page(self, items: list, query: dict, path: str) -> tuple[list, dict]:
        per_page = min(int(query.get("per_page", 30)), 100, self.page_size_cap)
        page = int(query.get("page", 1))
        chunk = items[(page - 1) * per_page: page * per_page]
        headers = {}
        if page * per_page < len(items):
            q = dict(query, page=str(page + 1))
            from urllib.parse import urlencode

            headers["Link"] = (f'<{self.url}{path}?{urlencode(q)}>; rel="next", '
                               f'<{self.url}{path}?{urlencode(dict(query, page="1"))}>; rel="first"')
        return chunk, headers

    # -- routing ---------------------------------------------------------------------
    def handle(self, method, path, query, raw, headers):
        status, body, out = self._route(method, path, query, raw, headers)
        if path.startswith("/search/"):
            self.search_calls += 1
        elif status != 304:
            self.rate_used += 1
        return status, body, out

    def _route(self, method, path, query, raw, headers):
        if headers.get("Authorization") != f"Bearer {self.token}":
            return 401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}, {}
        if headers.get("X-GitHub-Api-Version") != "2022-11-28" or "application/vnd.github+json" not in \
                headers.get("Accept", ""):
            return 400, {"message": "missing API version or media type"}, {}
        if self.rate_limit_next > 0:
            self.rate_limit_next -= 1
            return 403, {"message": "API rate limit exceeded"}, {
                "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0",
                "x-ratelimit-reset": str(int(time.time()) + 1)}
        if path == "/user":
            return 200, self._user(self.login), {}
        if path == "/search/issues":
            return self._search(query, path)
        if self.renamed_from and (path == f"/repos/{self.renamed_from}" or
                                  path.startswith(f"/repos/{self.renamed_from}/")):
            return self._redirect(method, f"/repositories/{self.repo_id}" + path[len(f"/repos/{self.renamed_from}"):],
                                  query)
        for rid, other in self.others.items():
            if path == f"/repos/{other['full_name']}" or path.startswith(f"/repos/{other['full_name']}/"):
                return self._other(method, rid, path[len(f"/repos/{other['full_name']}"):], raw)
        m = re.fullmatch(r"/repositories/(\d+)(/.*)?", path)
        if m and int(m.group(1)) in self.others:
            return self._other(method, int(m.group(1)), m.group(2) or "", raw)
        if m and int(m.group(1)) == self.repo_id:
            path = f"/repos/{self.repo}" + (m.group(2) or "")
        m = re.fullmatch(rf"/repos/{re.escape(self.repo)}/issues/(\d+)(/.*)?", path)
        if m and int(m.group(1)) in self.transfers:
            moved = self.transfers[int(m.group(1))]
            return self._redirect(method, f"/repositories/{moved['repo_id']}/issues/{moved['number']}"
                                  + (m.group(2) or ""), query)
        prefix = f"/repos/{self.repo}"
        if not path.startswith(prefix):
            return 404, {"message": "Not Found"}, {}
        tail = path[len(prefix):]
        if tail == "":
            owner, name = self.repo.split("/")
            return 200, {"id": 1296269, "name": name, "full_name": self.repo, "private": self.private,
                         "visibility": self.visibility,
                         "owner": self._user(owner), "html_url": f"https://github.com/{self.repo}",
                         "permissions": {"admin": False, "push": True, "pull": True}}, {}
        if tail == "/labels":
            chunk, h = self._page([self._label(x) for x in self.repo_labels], query, path)
            return 200, chunk, h
        if tail == "/milestones":
            chunk, h = self._page([self._milestone(m["number"]) for m in self.milestones], query, path)
            return 200, chunk, h
        if tail == "/issues" and method == "GET":
            return self._conditional(headers, *self._list(query, path))
        if tail == "/issues" and method == "POST":
            body = _json(raw)
            unknown = [x for x in body.get("labels", []) if x not in self.repo_labels]
            self.repo_labels += unknown  # GitHub creates missing labels on the fly
            issue = self.add_issue(body["title"], body.get("body") or "", body.get("labels"))
            return 201, issue, {}
        m = re.fullmatch(r"/issues/comments/(\d+)", tail)
        if m and method in ("GET", "PATCH", "DELETE"):
            # PATCH replaces the whole body: GitHub has no compare-and-swap on comment edits
            # (no If-Match), so of two concurrent edits the last one wins and the other is lost
            for number, comments in self.comments.items():
                for c in comments:
                    if c["id"] == int(m.group(1)):
                        if method == "DELETE":  # docs.github.com/rest/issues/comments#delete-an-issue-comment
                            comments.remove(c)
                            self.issues[number]["comments"] -= 1
                            return 204, None, {}
                        if method == "PATCH":
                            c["body"] = _json(raw)["body"]
                            c["updated_at"] = now_iso()
                        return 200, c, {}
            return 404, {"message": "Not Found"}, {}
        m = re.fullmatch(r"/issues/(\d+)(/.*)?", tail)
        if not m:
            return 404, {"message": "Not Found"}, {}
        issue = self.issues.get(int(m.group(1)))
        if issue is None:
            return 404, {"message": "Not Found"}, {}
        return self._issue_route(method, issue, m.group(2) or "", query, raw, path)

    @staticmethod
    def _conditional(headers, status, body, out):
        """A GET answered with a (weak) ETag of its body; If-None-Match naming it gets 304 and
        no body (docs.github.com "Use conditional requests")."""
        if status != 200:
            return status, body, out
        import hashlib

        tag = 'W/"' + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32] + '"'
        if headers.get("If-None-Match") == tag:
            return 304, None, {"ETag": tag}
        return status, body, dict(out, ETag=tag)

    def _list(self, query, path):
        state = query.get("state", "open")
        items = [i for i in self.issues.values() if state == "all" or i["state"] == state]
        if query.get("since"):  # "only issues updated at or after this time" (ISO 8601)
            since = _instant(query["since"])
            items = [i for i in items if _instant(i["updated_at"]) >= since]
        if query.get("labels"):
            wanted = query["labels"].split(",")
            items = [i for i in items if all(w in [x["name"] for x in i["labels"]] for w in wanted)]
        items.sort(key=lambda i: i["updated_at"], reverse=query.get("direction", "desc") == "desc")
        chunk, h = self._page(items, query, path)
        return 200, chunk, h

    def _search(self, query, path):
        # Without advanced_search=true this is the legacy issue search GitHub deprecated
        # (github.blog changelog 2025-03-06; removal announced for 2025-09-04): answer it, but
        # with the Deprecation and Sunset headers the real one sends, and count the call.
        legacy = query.get("advanced_search") != "true"
        if legacy:
            self.legacy_search_calls += 1
        status, body, headers = self._search_items(query, path)
        if legacy:
            headers = dict(headers, Deprecation="true", Sunset="Thu, 04 Sep 2025 00:00:00 GMT")
        return status, body, headers

    def _search_items(self, query, path):
        q = query.get("q", "")
        bare = re.sub(r'"[^"]*"', "", q)  # inside quotes a parenthesis is text
        if query.get("advanced_search") == "true" and bare.count("(") != bare.count(")"):
            return 422, {"message": "Validation Failed", "errors": [{"message": "unbalanced parentheses"}]}, {}
        terms = re.findall(r'(\w+:"[^"]*"|"[^"]*"|\S+)', q)
        indexed = time.monotonic() - self.search_lag
        items = [i for n, i in self.issues.items() if self.created_at.get(n, 0.0) <= indexed]
        words = []
        for term in terms:
            key, _, value = term.partition(":")
            value = value.strip('"')
            if key == "repo" and value:
                if value != self.repo:
                    items = []
            elif key == "is" and value == "issue":
                items = [i for i in items if "pull_request" not in i]
            elif key == "state" and value:
                items = [i for i in items if i["state"] == value]
            elif key == "label" and value:
                items = [i for i in items if value in [x["name"] for x in i["labels"]]]
            else:
                words.append(term.strip('"').lower())  # a quoted term is one exact word or phrase
        items = [i for i in items if all(w in (i["title"] + " " + (i["body"] or "")).lower() for w in words)]
        items.sort(key=lambda i: i["updated_at"], reverse=True)
        chunk, h = self._page(items, query, path)
        return 200, {"total_count": len(items), "incomplete_results": False, "items": chunk}, h

    def _issue_route(self, method, issue, sub, query, raw, path):
        n = issue["number"]
        if sub == "" and method == "GET":
            return 200, issue, {}
        if sub == "" and method == "PATCH":
            body = _json(raw)
            for key in ("title", "body", "state", "state_reason"):
                if key in body:
                    issue[key] = body[key]
            if "milestone" in body:
                issue["milestone"] = None if body["milestone"] is None else self._milestone(int(body["milestone"]))
            if body.get("state") == "closed":
                issue["closed_at"] = now_iso()
            self._touch(issue)
            return 200, issue, {}
        if sub == "/comments" and method == "GET":
            chunk, h = self._page(self.comments[n], query, path)
            return 200, chunk, h
        if sub == "/comments" and method == "POST":
            self.next_comment += 1
            cid = self.next_comment
            comment = {"id": cid, "node_id": "MDEyOklzc3VlQ29tbWVudDE=",
                       "url": f"https://api.github.com/repos/{self.repo}/issues/comments/{cid}",
                       "html_url": f"https://github.com/{self.repo}/issues/{n}#issuecomment-{cid}",
                       "body": _json(raw)["body"], "user": self._user(self.login), "created_at": now_iso(),
                       "updated_at": now_iso(), "issue_url": issue["url"], "author_association": "COLLABORATOR"}
            self.comments[n].append(comment)
            issue["comments"] += 1
            self._touch(issue)
            return 201, comment, {}
        if sub == "/labels" and method == "POST":
            for name in _json(raw)["labels"]:
                if name not in [x["name"] for x in issue["labels"]]:
                    issue["labels"].append(self._label(name))
            self._touch(issue)
            return 200, issue["labels"], {}
        m = re.fullmatch(r"/labels/(.+)", sub)
        if m and method == "DELETE":
            name = unquote(m.group(1))
            if name not in [x["name"] for x in issue["labels"]]:
                return 404, {"message": "Label does not exist"}, {}
            issue["labels"] = [x for x in issue["labels"] if x["name"] != name]
            self._touch(issue)
            return 200, issue["labels"], {}
        if sub == "/assignees" and method in ("POST", "DELETE"):
            logins = _json(raw)["assignees"]
            current = [a["login"] for a in issue["assignees"]]
            current = current + [x for x in logins if x not in current] if method == "POST" else \
                [x for x in current if x not in logins]
            issue["assignees"] = [self._user(x) for x in current]
            issue["assignee"] = issue["assignees"][0] if issue["assignees"] else None
            self._touch(issue)
            return (201 if method == "POST" else 200), issue, {}
        return 404, {"message": "Not Found"}, {}


# ---------------------------------------------------------------------------------------
# Jira
# ---------------------------------------------------------------------------------------

class JiraServer(_Base):
    """Jira Cloud (v3, ADF) or Data Center (v2, wiki strings) for one project."""

    def __init__(self, api_version: int = 3, project: str = "FOOSEC", token: str = "jira-pat",
                 email: str = "tester@example.org", page_size_cap: int = 2) -> None:
        super().__init__()
        self.v = api_version
        self.project = project
        self.token = token
        self.email = email
        self.page_size_cap = page_size_cap
        self.levels = [{"id": "10001", "name": "Embargoed", "description": "Security team only"},
                       {"id": "10002", "name": "Staff Only", "description": "Every logged-in staff member"}]
        self.issues: dict[str, dict] = {}
        self.comments: dict[str, list[dict]] = {}
        self.attachments: dict[str, list[dict]] = {}
        self.next_id = 10000
        self.next_comment = 20000
        self.retry_after_next = 0
        self.hidden: set[str] = set()  # keys the caller may not see (answer 404)
        self.account = {"accountId": "5b10a2844c20165700ede21g", "name": "tester", "displayName": "Tess Tester"}
        # "company": a company-managed workflow whose Done screen asks for the Resolution;
        # "team": a team-managed one, any status to any other, no transition screens (a
        # resolution sent there is a 400)
        self.workflow = "company"
        self.omit_is_last = False  # Jira Cloud may leave isLast out of a page that has nextPageToken
        # JQL search reads an index that lags behind writes; GET of one issue is current
        self.search_lag = 0.0
        self.created_at: dict[str, float] = {}
        # each issue's change history, oldest first, as Jira keeps it and answers it under
        # ``expand=changelog`` (``changelog.histories[].items[]``: field, from, fromString, to, toString)
        self.histories: dict[str, list[dict]] = {}
        self.next_history = 40000
        # Data Center (v2): a user made since Jira 8 has a user key (JIRAUSER10000) apart from
        # its user name; the change history names users by key, the user object holds both
        self.user_keys: dict[str, str] = {}

    STATUSES = {"Open": ("1", "new", "To Do"), "In Progress": ("3", "indeterminate", "In Progress"),
                "Done": ("10001", "done", "Done"), "Won't Do": ("10002", "done", "Done")}
    RESOLUTIONS = ["Done", "Won't Do", "Duplicate", "Cannot Reproduce"]

    def _status(self, name: str) -> dict:
        sid, key, cat = self.STATUSES[name]
        return {"name": name, "id": sid, "statusCategory": {"key": key, "name": cat}}

    def _transitions(self, issue: dict) -> list[dict]:
        """The transitions available from the issue's current status, shaped as Jira's
        ``GET /issue/{key}/transitions?expand=transitions.fields`` answers them."""
        current = issue["fields"]["status"]["name"]
        resolution = {"required": True, "schema": {"type": "resolution", "system": "resolution"},
                      "name": "Resolution", "key": "resolution", "hasDefaultValue": False, "operations": ["set"],
                      "allowedValues": [{"self": f"{self.url}{self.api}/resolution/{10000 + i}", "id": str(10000 + i),
                                         "name": n} for i, n in enumerate(self.RESOLUTIONS)]}
        if self.workflow == "team":
            plan = [("11", "To Do", "Open", {}), ("21", "In Progress", "In Progress", {}), ("31", "Done", "Done", {}),
                    ("41", "Won't Do", "Won't Do", {})]
            plan = [p for p in plan if p[2] != current]
        elif current in ("Done", "Won't Do"):
            plan = [("11", "Reopen", "Open", {})]
        elif current == "In Progress":
            plan = [("301", "Stop Progress", "Open", {}), ("31", "Done", "Done", {"resolution": resolution})]
        else:
            plan = [("21", "Start Progress", "In Progress", {}), ("31", "Done", "Done", {"resolution": resolution})]
        return [{"id": tid, "name": name, "to": self._status(to), "hasScreen": bool(fields), "isGlobal": False,
                 "isInitial": False, "isAvailable": True, "isConditional": False, "fields": fields}
                for tid, name, to, fields in plan]

    @property
    def api(self) -> str:
        return f"/rest/api/{self.v}"

    def _auth_ok(self, headers) -> bool:
        value = headers.get("Authorization") or ""
        if value == f"Bearer {self.token}":
            return True
        if value.startswith("Basic "):
            try:
                user, _, secret = base64.b64decode(value[6:]).decode().partition(":")
            except Exception:
                return False
            return user == self.email and secret == self.token
        return False

    def _level(self, level_id: str | None) -> dict | None:
        lv = next((x for x in self.levels if x["id"] == str(level_id)), None)
        if lv is None:
            return None
        return dict(lv, self=f"{self.url}{self.api}/securitylevel/{lv['id']}")

    def add_issue(self, summary: str, description: Any = None, labels: list[str] | None = None,
                  security: str | None = "10001") -> dict:
        self.next_id += 1
        number = len(self.issues) + 1
        key = f"{self.project}-{number}"
        issue = {
            "id": str(self.next_id), "key": key, "self": f"{self.url}{self.api}/issue/{self.next_id}",
            "fields": {
                "summary": summary, "description": description, "labels": list(labels or []),
                "status": {"name": "Open", "id": "1", "statusCategory": {"key": "new", "name": "To Do"}},
                "resolution": None, "assignee": None, "reporter": dict(self.account), "fixVersions": [],
                "created": "2025-07-30T13:03:26.000+0000", "updated": self._stamp(),
                "project": {"key": self.project, "id": "10000"},
                "security": self._level(security) if security else None,
            },
        }
        self.issues[key] = issue
        self.comments[key] = []
        self.attachments[key] = []
        self.histories[key] = []
        self.created_at[key] = time.monotonic()
        return issue

    def _stamp(self) -> str:
        time.sleep(0.002)
        now = datetime.now(timezone.utc)
        return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}+0000"

    def dc_user(self, name: str) -> dict:
        """A Data Center user object: its key (JIRAUSER1xxxx, as Jira 8+ makes them) is not its name."""
        user_key = self.user_keys.setdefault(name, f"JIRAUSER{10000 + len(self.user_keys)}")
        return {"self": f"{self.url}{self.api}/user?username={name}", "key": user_key, "name": name,
                "displayName": f"{name.title()} Example", "active": True}

    def _history(self, key: str, field: str, before: dict | None, after: dict | None) -> None:
        """One change history entry, as Jira records an edit that changed ``field`` (a user
        field: ``from``/``to`` are the account ID on Cloud, the user KEY on Data Center;
        ``fromString``/``toString`` the display names)."""
        ident = "accountId" if self.v == 3 else "key"
        old, new = (before or {}).get(ident), (after or {}).get(ident)
        if old == new:
            return
        self.next_history += 1
        self.histories[key].append({
            "id": str(self.next_history), "author": dict(self.account), "created": self._stamp(),
            "items": [{"field": field, "fieldtype": "jira", "from": old,
                       "fromString": (before or {}).get("displayName"),
                       "to": new, "toString": (after or {}).get("displayName")}]})

    def _error(self, status: int, *messages: str, **errors: str):
        return status, {"errorMessages": list(messages), "errors": errors}, {}

    def handle(self, method, path, query, raw, headers):
        if not self._auth_ok(headers):
            return 401, {"errorMessages": ["You are not authenticated."], "errors": {}}, {}
        if self.retry_after_next > 0:
            self.retry_after_next -= 1
            return 429, {"errorMessages": ["Rate limit exceeded."], "errors": {}}, {"Retry-After": "1"}
        if not path.startswith(self.api + "/"):
            return self._error(404, "No such API version")
        tail = path[len(self.api):]
        if tail == "/myself":
            return 200, dict(self.account, self=f"{self.url}{self.api}/user?accountId=x"), {}
        if self.v == 2 and tail == "/user" and method == "GET":
            known = {u["key"]: u for u in map(self.dc_user, list(self.user_keys))}
            if query.get("key") in known:
                return 200, known[query["key"]], {}
            if query.get("username") in self.user_keys:
                return 200, self.dc_user(query["username"]), {}
            return self._error(404, "The user named does not exist")
        if tail == f"/project/{self.project}/securitylevel":
            return 200, {"levels": [self._level(x["id"]) for x in self.levels]}, {}
        if tail == "/issue" and method == "POST":
            return self._create(_json(raw))
        if self.v == 3 and tail == "/search/jql" and method == "POST":
            return self._search(_json(raw), token_paging=True)
        if self.v == 2 and tail == "/search" and method == "POST":
            return self._search(_json(raw), token_paging=False)
        m = re.fullmatch(r"/issue/([A-Z][A-Z0-9_]*-\d+)(/.*)?", tail)
        if not m:
            return self._error(404, "Not found")
        key = m.group(1)
        issue = self.issues.get(key)
        if issue is None or key in self.hidden:
            return self._error(404, "Issue does not exist or you do not have permission to see it.")
        return self._issue_route(method, issue, m.group(2) or "", query, raw, headers)

    def _text_ok(self, value: Any) -> bool:
        if value is None:
            return True
        if self.v == 2:
            return isinstance(value, str)
        return isinstance(value, dict) and value.get("type") == "doc" and value.get("version") == 1

    def _create(self, body: dict):
        fields = body.get("fields", {})
        if fields.get("project", {}).get("key") != self.project:
            return self._error(400, errors_project="project is required")
        if not fields.get("summary"):
            return self._error(400, summary="You must specify a summary of the issue.")
        if not self._text_ok(fields.get("description")):
            return self._error(400, description="Operation value must be a " +
                               ("string" if self.v == 2 else "Atlassian Document"))
        sec = fields.get("security")
        if sec is not None and self._level(sec.get("id")) is None:
            return self._error(400, security="Security level is not valid.")
        issue = self.add_issue(fields["summary"], fields.get("description"), fields.get("labels"),
                               security=sec.get("id") if sec else None)
        return 201, {"id": issue["id"], "key": issue["key"], "self": issue["self"]}, {}

    def _search(self, body: dict, token_paging: bool):
        jql = body.get("jql", "")
        if f'project = "{self.project}"' not in jql:
            return self._error(400, "Unbounded JQL queries are not allowed here.")
        indexed = time.monotonic() - self.search_lag
        items = [i for k, i in self.issues.items() if k not in self.hidden and self.created_at.get(k, 0.0) <= indexed]
        if "statusCategory != Done" in jql:
            items = [i for i in items if i["fields"]["status"]["statusCategory"]["key"] != "done"]
        if "statusCategory = Done" in jql:
            items = [i for i in items if i["fields"]["status"]["statusCategory"]["key"] == "done"]
        for label in re.findall(r'labels = "([^"]*)"', jql):
            items = [i for i in items if label in i["fields"]["labels"]]
        for stamp in re.findall(r'updated >= "(\d{4}/\d\d/\d\d \d\d:\d\d)"', jql):
            # JQL reads the date in the account's time zone (this emulator's accounts are in UTC)
            since = datetime.strptime(stamp, "%Y/%m/%d %H:%M").replace(tzinfo=timezone.utc)
            items = [i for i in items if _instant(i["fields"]["updated"]) >= since]
        for word in re.findall(r'text ~ "([^"]*)"', jql):
            items = [i for i in items if word.lower() in (i["fields"]["summary"] + " " +
                                                          _flatten(i["fields"]["description"])).lower()]
        items.sort(key=lambda i: i["fields"]["updated"], reverse="ORDER BY updated ASC" not in jql)
        size = min(int(body.get("maxResults", 50)), self.page_size_cap)
        wanted = body.get("fields") or []
        if token_paging:
            start = int(body.get("nextPageToken") or 0)
        else:
            start = int(body.get("startAt", 0))
        chunk = items[start:start + size]
        shaped = [{"expand": "", "id": i["id"], "key": i["key"], "self": i["self"],
                   "fields": {k: v for k, v in i["fields"].items() if not wanted or k in wanted}} for i in chunk]
        if token_paging:
            more = start + size < len(items)
            out = {"issues": shaped, "isLast": not more}
            if more:
                out["nextPageToken"] = str(start + size)
                if self.omit_is_last:
                    del out["isLast"]  # isLast is optional in the v3 spec; nextPageToken is what says "more"
            return 200, out, {}
        return 200, {"expand": "names,schema", "startAt": start, "maxResults": size, "total": len(items),
                     "issues": shaped}, {}

    def _issue_route(self, method, issue, sub, query, raw, headers):
        key = issue["key"]
        f = issue["fields"]
        if sub == "" and method == "GET":
            wanted = [x for x in (query.get("fields") or "").split(",") if x]
            fields = {k: v for k, v in f.items() if not wanted or k in wanted}
            out = {"expand": "", "id": issue["id"], "key": key, "self": issue["self"], "fields": fields}
            if "changelog" in (query.get("expand") or ""):
                histories = self.histories[key]
                out["changelog"] = {"startAt": 0, "maxResults": len(histories), "total": len(histories),
                                    "histories": histories}
            return 200, out, {}
        if sub == "" and method == "PUT":
            body = _json(raw)
            fields = body.get("fields", {})
            update = body.get("update", {})
            if set(fields) & set(update):
                return self._error(400, "A field may not appear in both 'fields' and 'update'.")
            for name, value in fields.items():
                if name == "description" and not self._text_ok(value):
                    return self._error(400, description="Operation value must be a " +
                                       ("string" if self.v == 2 else "Atlassian Document"))
                if name == "security":
                    f["security"] = None if value is None else self._level(value.get("id"))
                elif name == "assignee":
                    before = f["assignee"]
                    if value is None:
                        f["assignee"] = None
                    elif self.v == 2:
                        f["assignee"] = self.dc_user(value.get("name") or value.get("key"))
                    else:
                        f["assignee"] = dict(self.account, **value)
                    self._history(key, "assignee", before, f["assignee"])
                elif name == "fixVersions":
                    f["fixVersions"] = [{"name": v["name"], "id": "1"} for v in value]
                else:
                    f[name] = value
            for name, ops in update.items():
                for op in ops:
                    if name == "labels" and "add" in op and op["add"] not in f["labels"]:
                        f["labels"].append(op["add"])
                    elif name == "labels" and "remove" in op:
                        f["labels"] = [x for x in f["labels"] if x != op["remove"]]
                    elif "set" in op:
                        f[name] = op["set"]
            f["updated"] = self._stamp()
            return 204, None, {}
        if sub == "/comment" and method == "GET":
            start = int(query.get("startAt", 0))
            size = min(int(query.get("maxResults", 100)), self.page_size_cap)
            allc = self.comments[key]
            return 200, {"startAt": start, "maxResults": size, "total": len(allc),
                         "comments": allc[start:start + size]}, {}
        if sub == "/comment" and method == "POST":
            body = _json(raw).get("body")
            if not self._text_ok(body) or body is None:
                return self._error(400, comment="Comment body must be a " +
                                   ("string" if self.v == 2 else "Atlassian Document"))
            self.next_comment += 1
            comment = {"id": str(self.next_comment),
                       "self": f"{self.url}{self.api}/issue/{issue['id']}/comment/{self.next_comment}",
                       "author": dict(self.account), "updateAuthor": dict(self.account), "body": body,
                       "created": self._stamp(), "updated": self._stamp()}
            self.comments[key].append(comment)
            f["updated"] = self._stamp()
            return 201, comment, {}
        m = re.fullmatch(r"/comment/(\d+)", sub)
        if m and method == "DELETE":  # DELETE /rest/api/{2,3}/issue/{key}/comment/{id} -> 204
            for c in self.comments[key]:
                if c["id"] == m.group(1):
                    self.comments[key].remove(c)
                    return 204, None, {}
            return self._error(404, "Comment not found")
        if m and method == "PUT":
            # PUT replaces the body; Jira has no version check on comments, so of two
            # concurrent edits the last one wins
            for c in self.comments[key]:
                if c["id"] == m.group(1):
                    body = _json(raw).get("body")
                    if not self._text_ok(body):
                        return self._error(400, comment="bad body")
                    c["body"] = body
                    c["updated"] = self._stamp()
                    return 200, c, {}
            return self._error(404, "Comment not found")
        if sub == "/transitions" and method == "GET":
            # fields appear only with expand=transitions.fields (Jira REST "Get transitions")
            expand = "transitions.fields" in (query.get("expand") or "")
            out = []
            for t in self._transitions(issue):
                t = dict(t)
                if not expand:
                    t.pop("fields")
                out.append(t)
            return 200, {"expand": "transitions", "transitions": out}, {}
        if sub == "/transitions" and method == "POST":
            body = _json(raw)
            tid = str(body.get("transition", {}).get("id"))
            match = next((t for t in self._transitions(issue) if t["id"] == tid), None)
            if match is None:
                return self._error(400, f"Transition id '{tid}' is not valid for this issue.")
            sent = dict(body.get("fields") or {}, **(body.get("update") or {}))
            # a field the transition's screen does not have (or no screen at all) is a 400
            off_screen = {name: f"Field '{name}' cannot be set. It is not on the appropriate screen, or unknown."
                          for name in sent if name not in match["fields"]}
            if off_screen:
                return self._error(400, **off_screen)
            missing = {name: f"{meta['name']} is required." for name, meta in match["fields"].items()
                       if meta.get("required") and name not in sent}
            if missing:
                return self._error(400, **missing)
            to = match["to"]
            f["status"] = {"name": to["name"], "id": to["id"], "statusCategory": dict(to["statusCategory"])}
            if to["statusCategory"]["key"] != "done":
                f["resolution"] = None
            elif "resolution" in sent:
                f["resolution"] = {"name": sent["resolution"].get("name")}
            else:  # team-managed: the status itself sets the resolution
                f["resolution"] = {"name": to["name"]}
            f["updated"] = self._stamp()
            return 204, None, {}
        if sub == "/attachments" and method == "POST":
            if headers.get("X-Atlassian-Token") != "no-check":
                return 403, {"errorMessages": ["XSRF check failed"], "errors": {}}, {}
            m = re.search(rb'filename="([^"]+)"', raw)
            name = m.group(1).decode() if m else "file"
            att = {"id": str(30000 + len(self.attachments[key])), "filename": name,
                   "self": f"{self.url}{self.api}/attachment/{30000 + len(self.attachments[key])}",
                   "content": f"{self.url}/secure/attachment/{name}", "size": len(raw)}
            self.attachments[key].append(att)
            return 200, [att], {}
        return self._error(404, "Not found")


def _instant(stamp: str) -> datetime:
    return datetime.fromisoformat(re.sub(r"([+-]\d\d)(\d\d)$", r"\1:\2", stamp.replace("Z", "+00:00")))


def _flatten(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return value.get("text", "") + " ".join(_flatten(c) for c in value.get("content", []))
    if isinstance(value, list):
        return " ".join(_flatten(c) for c in value)
    return ""
