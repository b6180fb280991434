"""github: a private GitHub repository's issues through the REST API (v2022-11-28).

* Token from keyring (``github:<scheme>://<host>:<port>/<owner>/<repo>`` of the API URL, core/origins.py), sent as ``Authorization: Bearer``.
* Every write first checks ``GET /repos/{o}/{r}`` → ``private: true``; otherwise it is
  refused (exit 4). The answer is kept for the life of this object.
* Listing follows the ``Link: rel="next"`` header; pull requests (``pull_request`` key) are
  not issues and are left out. ``--search`` uses ``/search/issues`` (``repo:o/r is:issue``).
* Rate limits: a 403/429 with ``x-ratelimit-remaining: 0`` waits until
  ``x-ratelimit-reset`` (or ``Retry-After``) when that is short, then retries once;
  otherwise it fails with the time to wait. 429/503 Retry-After is honoured by HttpClient.
* The status rollup is the first issue comment that carries the rollup marker.
* ``attach`` posts the file as a comment (GitHub's REST API has no issue attachments);
  binary or very large files are refused.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from typing import Any, Callable, Iterator
from urllib.parse import quote, urljoin, urlsplit

from mailtriage.core.http import HttpClient, HttpError, retry_after_seconds
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.origins import OriginRefused, origin_of, secret_key
from mailtriage.core.secrets import missing_secret_hint, origin_secret
from mailtriage.trackers import rollup as rollupmod
from mailtriage.trackers.contract import (
    BackendError,
    EditRequest,
    IssueChanges,
    ListResult,
    LostUpdate,
    NotFound,
    Policy,
    Refused,
    Tracker,
    TrackerFeatures,
    UsageError,
    ascii_digits,
    comment_json,
    cursor_fields,
    issue_json,
    order_comments,
    require_id,
    summary_json,
)
from mailtriage.trackers.values import (
    AttachResult,
    Comment,
    CommentResult,
    DoctorCheck,
    DoctorReport,
    IssueSummary,
    IssueView,
    StateResult,
    WriteResult,
)

API_VERSION = "2022-11-28"
DEFAULT_API = "https://api.github.com"
MAX_ATTACH_CHARS = 60000
_REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')
REDIRECTS = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 3


class GitHubTracker(Tracker):
    kind = "github"
    features = TrackerFeatures(changes_since=True)
    verify_rollup_writes = True  # comment edits are last-write-wins (no If-Match)

    def __init__(self, repo: str, policy: Policy | None = None, *, token: str | None, api_url: str = DEFAULT_API,
                 user: str | None = None, sleep: Callable[[float], None] | None = None,
                 max_rate_wait: float = 60.0) -> None:
        super().__init__(policy)
        if not _REPO_RE.match(repo or ""):
            raise UsageError(f"tracker.github.repo {repo!r} is not owner/name")
        self.repo = repo
        self.token = token
        self._user = user
        self.max_rate_wait = max_rate_wait
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.api_url = api_url.rstrip("/")
        try:  # the token belongs to this API origin and repository (core/origins.py)
            self.token_key = secret_key("github", self.api_url, repo)
        except OriginRefused as exc:
            raise UsageError(f"tracker.github.api_url: {exc}") from None
        self.http = HttpClient("github", self.api_url, headers=headers, sleep=sleep)  # its waits end as the app quits
        self._private: bool | None = None
        self._moved_to: str | None = None  # the repository's new full name when GitHub redirects it
        self._move_checked = False
        self._private_detail = ""

    @classmethod
    def from_config(cls, config: Any, policy: Policy) -> "GitHubTracker":
        repo = config.get("tracker.github.repo")
        if not repo or not _REPO_RE.match(str(repo)):
            raise config.refuse("tracker.github.repo", "owner/name of the private tracker, e.g. acme/security")
        api_url = str(config.get("tracker.github.api_url") or DEFAULT_API)
        token = github_token(api_url, str(repo), config.file)
        return cls(str(repo), policy, token=token, api_url=api_url, user=config.get("tracker.user"))

    def close_backend(self) -> None:
        self.http.close()

    def abort(self, opening_only: bool = False) -> None:
        super().abort(opening_only)  # a rollup write's pause ends too
        self.http.abort(opening_only)

    # ---- HTTP ------------------------------------------------------------------------
    def _send(self, method: str, path: str, **kwargs: Any):
        for attempt in range(2):
            try:
                response = self.http.request(method, path, **kwargs)
            except HttpError as exc:
                raise BackendError(f"GitHub {method} {path}: {exc.detail}") from exc
            if response.status_code in (403, 429) and self._rate_limited(response):
                wait = self._rate_wait(response)
                if attempt == 0 and wait is not None and wait <= self.max_rate_wait:
                    self.http.sleep(wait)
                    continue
                raise BackendError(f"GitHub rate limit reached; retry in {wait:.0f}s" if wait is not None
                                   else "GitHub rate limit reached")
            break
        return response

    def _request(self, method: str, path: str, *, ok: tuple[int, ...] = (200,), **kwargs: Any):
        if not self.token:
            raise BackendError(f"no GitHub token for {self.repo} at {self.api_url}: "
                               f"{missing_secret_hint('github', self.api_url, self.repo)}")
        url = path
        for _hop in range(MAX_REDIRECTS + 1):
            response = self._send(method, url, **kwargs)
            if response.status_code not in REDIRECTS:
                break
            # A renamed repository or a transferred issue answers 301 (307 for writes): repeat the
            # request at Location, on the API's own host only, so the token never goes elsewhere.
            target = self._same_host(method, path, response)
            if url == path and path.startswith(self._repo_path()):
                self._check_repo_moved(response.status_code)
            url = target
            kwargs.pop("params", None)  # Location carries the query
        else:
            raise BackendError(f"GitHub {method} {path}: more than {MAX_REDIRECTS} redirects")
        if response.status_code in ok:
            return response
        message = _message(response)
        if response.status_code == 401:
            raise BackendError(f"GitHub refused the token for {self.repo} (401 {message})")
        if response.status_code in (404, 410):
            raise NotFound(f"GitHub {method} {path}: {response.status_code} {message}")
        raise BackendError(f"GitHub {method} {path}: {response.status_code} {message}")

    def _same_host(self, method: str, path: str, response) -> str:
        location = response.headers.get("location")
        if not location:
            raise BackendError(f"GitHub {method} {path}: {response.status_code} without a Location")
        target = urljoin(str(response.request.url), location)
        base, there = urlsplit(self.api_url), urlsplit(target)
        try:
            elsewhere = origin_of(target) != origin_of(self.api_url)
        except OriginRefused:
            elsewhere = True
        if elsewhere:
            raise BackendError(f"GitHub {method} {path}: {response.status_code} redirect to another host "
                               f"({there.netloc}) not followed; the token is only sent to {base.netloc}")
        return target

    def _check_repo_moved(self, status: int) -> None:
        """After a redirect under /repos/{repo}: is it the repository that moved (renamed or
        transferred), or only one issue? Say which, once."""
        if self._move_checked:
            return
        self._move_checked = True
        probe = self._send("GET", self._repo_path())
        if probe.status_code not in REDIRECTS:
            return  # the repository answers: only an issue moved (see _issue)
        data = self._send("GET", self._same_host("GET", self._repo_path(), probe))
        if data.status_code == 200:
            self._moved_to = str(data.json().get("full_name") or "") or None
        self.notice(f"GitHub repository {self.repo} has moved to {self._moved_to or 'a new name'} (GitHub answered "
                    f"{status}); requests follow it, but set tracker.github.repo to the new name in project.md "
                    "(and store the token under the new name)")

    @staticmethod
    def _rate_limited(response) -> bool:
        return response.headers.get("x-ratelimit-remaining") == "0" or "retry-after" in response.headers

    @staticmethod
    def _rate_wait(response) -> float | None:
        wait = retry_after_seconds(response.headers.get("retry-after"))
        if wait is not None:
            return wait
        reset = response.headers.get("x-ratelimit-reset")
        if reset and reset.isdigit():
            return max(0.0, int(reset) - time.time()) + 0.5
        return None

    def _paged(self, path: str, params: dict | None = None, key: str | None = None) -> Iterator[dict]:
        url: str | None = path
        first = True
        while url:
            response = self._request("GET", url, params=params if first else None)
            first = False
            data = response.json()
            items = data.get(key, []) if key else data
            yield from items
            m = _LINK_NEXT.search(response.headers.get("link", ""))
            url = m.group(1) if m else None

    # ---- IDs and guards -------------------------------------------------------------------
    def _number(self, issue_id: str) -> int:
        raw = require_id(issue_id)
        if "/" in raw or "\\" in raw or ".." in raw:
            raise Refused(f"issue ID {issue_id!r} refused: a GitHub issue ID is a number")
        raw = raw.lstrip("#")
        if not ascii_digits(raw) or len(raw) > 12:
            raise NotFound(f"{issue_id!r} is not a GitHub issue number")
        return int(raw)

    def _repo_path(self, tail: str = "") -> str:
        return f"/repos/{self.repo}{tail}"

    def _issue(self, number: int) -> dict:
        try:
            data = self._request("GET", self._repo_path(f"/issues/{number}")).json()
        except NotFound as exc:
            raise NotFound(f"no issue #{number} in {self.repo}") from exc
        if "pull_request" in data:
            raise NotFound(f"#{number} in {self.repo} is a pull request, not an issue")
        home = _repo_of(data)
        if home and home.lower() not in (self.repo.lower(), (self._moved_to or "").lower()):
            self.notice(f"#{number} was transferred to {home}#{data.get('number')} ({data.get('html_url')}); "
                        "GitHub redirects to it")
        return data

    def require_private(self) -> None:
        """Raises Refused unless the repository is private (see :func:`repository_privacy`)."""
        if self._private is None:
            data = self._request("GET", self._repo_path()).json()
            self._private, self._private_detail = repository_privacy(data, self.repo)
        if not self._private:
            raise Refused(f"writes refused: GitHub repository {self.repo} is not private "
                          f"({self._private_detail}); embargoed issues must not be written there")

    def _writable_issue(self, issue_id: str) -> tuple[int, dict]:
        number = self._number(issue_id)
        self.require_private()
        data = self._issue(number)
        home = _repo_of(data)
        if home and home.lower() not in (self.repo.lower(), (self._moved_to or "").lower()):
            # a transferred issue: the write would land in that repository, which must be private too
            answer = self._request("GET", f"/repos/{home}").json()
            private, detail = repository_privacy(answer, home)
            if not private:
                raise Refused(f"writes refused: #{number} was transferred to {home}, which is not private "
                              f"({detail}); embargoed details must not be written there")
        return number, data

    # ---- reads ------------------------------------------------------------------------
    def _comments(self, number: int) -> list[dict]:
        return list(self._paged(self._repo_path(f"/issues/{number}/comments"), {"per_page": 100}))

    def _do_view(self, issue_id: str, comments: bool) -> IssueView:
        number = self._number(issue_id)
        data = self._issue(number)
        out_comments = None
        if comments:
            found_rollup = False
            found: list[Comment] = []
            for c in self._comments(number):
                kind = "comment"
                if not found_rollup and rollupmod.is_rollup(c.get("body")):
                    kind, found_rollup = "rollup", True
                found.append(comment_json(id=str(c["id"]), kind=kind, author=(c.get("user") or {}).get("login"),
                                                 created=c.get("created_at"), updated=c.get("updated_at"),
                                                 body=c.get("body") or "", url=c.get("html_url") or ""))
            out_comments = order_comments(found)
        return _issue_out(data, out_comments)

    def _do_list(self, state: str, labels: list[str], words: list[str], limit: int | None) -> ListResult:
        items: list[IssueSummary] = []
        if words:
            # advanced_search=true: the supported issue search; the legacy one without it is
            # deprecated (github.blog changelog 2025-03-06). Each word is quoted, so AND, OR, NOT
            # and parentheses the user typed stay words, not operators.
            q = [f"repo:{self._moved_to or self.repo}", "is:issue"] + ([f"state:{state}"] if state != "all" else [])
            q += [f'label:"{label}"' for label in labels] + [_quoted(w) for w in words]
            source = self._paged("/search/issues", {"q": " ".join(q), "per_page": 100, "sort": "updated",
                                                    "order": "desc", "advanced_search": "true"}, key="items")
        else:
            params = {"state": state, "per_page": 100, "sort": "updated", "direction": "desc"}
            if labels:
                params["labels"] = ",".join(labels)
            source = self._paged(self._repo_path("/issues"), params)
        for data in source:
            if "pull_request" in data:
                continue
            items.append(summary_json(id=str(data["number"]), title=data.get("title") or "",
                                      state=data.get("state") or "open",
                                      labels=_label_names(data), updated=data.get("updated_at"),
                                      url=data.get("html_url") or ""))
            if limit and len(items) >= limit:
                break
        return ListResult(items)

    def _do_labels(self) -> list[str]:
        return [label["name"] for label in self._paged(self._repo_path("/labels"), {"per_page": 100})]

    def changes(self, cursor: str | None) -> IssueChanges:
        """Issues updated since the cursor, from the REST list (never the search API, whose
        rate limit is 30 requests a minute and whose index lags): ``GET /repos/{o}/{r}/issues
        ?state=all&sort=updated&direction=asc&since=…`` (``since`` is inclusive), every page.
        When the newest update is the cursor's own and the answer was one page, the next call
        sends its ``ETag`` as ``If-None-Match``: GitHub answers 304 while nothing changed, and a
        304 does not count against the rate limit (docs.github.com, "Use conditional requests")."""
        scope = f"{self.api_url}/{self.repo}"
        kept = cursor_fields(cursor)
        complete = kept.get("scope") != scope
        since = None if complete else kept.get("since")
        etag = None if complete else kept.get("etag")
        params: dict[str, Any] = {"state": "all", "sort": "updated", "direction": "asc", "per_page": 100}
        if since:
            params["since"] = since
        response = self._request("GET", self._repo_path("/issues"), params=params,
                                 headers={"If-None-Match": etag} if etag else None, ok=(200, 304))
        if response.status_code == 304:
            return IssueChanges([], cursor or "", False)
        first, newest, views, pages = response, since, [], 1
        while True:
            for data in response.json():
                stamp = data.get("updated_at")
                if stamp and (newest is None or _instant(stamp) > _instant(newest)):
                    newest = stamp
                if "pull_request" not in data:
                    views.append(_issue_out(data, None))
            m = _LINK_NEXT.search(response.headers.get("link", ""))
            if not m:
                break
            response = self._request("GET", m.group(1))
            pages += 1
        # the ETag is the answer to this very URL: worth sending only while the cursor stays,
        # and only when that answer was one page (a change landing on a later page leaves the
        # first page, and its ETag, as they were: it would answer 304 for ever)
        again = first.headers.get("etag") if newest == since and pages == 1 else None
        return IssueChanges(views, json.dumps({"scope": scope, "since": newest, "etag": again}), complete)

    def _raw_body(self, issue_id: str) -> tuple[str, str]:
        number = self._number(issue_id)
        return str(number), self._issue(number).get("body") or ""

    # ---- writes -------------------------------------------------------------------------
    def _do_create(self, title: str, body: str, labels: list[str]) -> WriteResult:
        self.require_private()
        payload: dict[str, Any] = {"title": title, "body": body}
        if labels:
            payload["labels"] = labels
        data = self._request("POST", self._repo_path("/issues"), json=payload, ok=(201,)).json()
        return {"id": str(data["number"]), "url": data.get("html_url") or ""}

    def _milestone_number(self, title: str) -> int:
        for m in self._paged(self._repo_path("/milestones"), {"state": "all", "per_page": 100}):
            if m.get("title") == title:
                return int(m["number"])
        raise Refused(f"milestone {title!r} is declared in project.md but does not exist in {self.repo}; "
                      "create it on GitHub first (mailtriage never invents one)")

    def _do_edit(self, issue_id: str, change: EditRequest) -> WriteResult:
        number, data = self._writable_issue(issue_id)
        base = self._repo_path(f"/issues/{number}")
        if change.add_labels:
            self._request("POST", f"{base}/labels", json={"labels": change.add_labels})
        for label in change.remove_labels:
            try:
                self._request("DELETE", f"{base}/labels/{quote(label, safe='')}")
            except NotFound:
                pass  # not on the issue: nothing to remove
        if change.add_assignees:
            self._request("POST", f"{base}/assignees", json={"assignees": change.add_assignees}, ok=(200, 201))
        if change.remove_assignees:
            self._request("DELETE", f"{base}/assignees", json={"assignees": change.remove_assignees})
        patch: dict[str, Any] = {}
        if change.milestone is not None:
            patch["milestone"] = self._milestone_number(change.milestone)
        if change.clear_milestone:
            patch["milestone"] = None
        if change.title is not None:
            patch["title"] = change.title
        if change.body is not None:
            patch["body"] = change.body
        if patch:
            data = self._request("PATCH", base, json=patch).json()
        return {"id": str(number), "url": data.get("html_url") or ""}

    def _mutate_body(self, issue_id: str, change: Callable[[str], str]) -> str:
        number, data = self._writable_issue(issue_id)
        self._request("PATCH", self._repo_path(f"/issues/{number}"), json={"body": change(data.get("body") or "")})
        return str(number)

    def _mutate_rollup(self, issue_id: str, change: Callable[[str | None], str]) -> WriteResult:
        return self._write_rollup(issue_id, change)[0]

    def _rollup_comments(self, number: int) -> list[dict]:
        return [c for c in self._comments(number) if rollupmod.is_rollup(c.get("body"))]

    def _read_rollup(self, issue_id: str) -> str | None:
        found = self._rollup_comments(self._number(issue_id))
        return (found[0].get("body") or "") if found else None

    def _write_rollup(self, issue_id: str, change: Callable[[str | None], str]) -> tuple[WriteResult, str]:
        number, _ = self._writable_issue(issue_id)
        found = self._rollup_comments(number)
        if found:
            text = change(found[0].get("body") or "")
            data = self._request("PATCH", self._repo_path(f"/issues/comments/{found[0]['id']}"),
                                 json={"body": text}).json()
        else:
            text = change(None)
            data = self._request("POST", self._repo_path(f"/issues/{number}/comments"), json={"body": text},
                                 ok=(201,)).json()
            first = self._rollup_comments(number)
            if first and first[0]["id"] != data["id"]:
                # another writer created the rollup first: remove ours, append to theirs
                self._request("DELETE", self._repo_path(f"/issues/comments/{data['id']}"), ok=(204, 404))
                raise LostUpdate(f"#{number}: a concurrent writer created the rollup first")
        return {"id": str(number), "url": data.get("html_url") or ""}, data.get("body") or text

    def _do_comment(self, issue_id: str, body: str, author: str | None) -> CommentResult:
        number, _ = self._writable_issue(issue_id)
        data = self._request("POST", self._repo_path(f"/issues/{number}/comments"), json={"body": body},
                             ok=(201,)).json()
        return {"id": str(number), "comment_id": str(data["id"]), "url": data.get("html_url") or ""}

    def _do_close(self, issue_id: str, reason: str) -> StateResult:
        number, _ = self._writable_issue(issue_id)
        data = self._request("PATCH", self._repo_path(f"/issues/{number}"),
                             json={"state": "closed", "state_reason": reason.replace("-", "_")}).json()
        return {"id": str(number), "state": data.get("state", "closed")}

    def _do_reopen(self, issue_id: str) -> StateResult:
        number, _ = self._writable_issue(issue_id)
        data = self._request("PATCH", self._repo_path(f"/issues/{number}"),
                             json={"state": "open", "state_reason": "reopened"}).json()
        return {"id": str(number), "state": data.get("state", "open")}

    def _do_attach(self, issue_id: str, data: bytes, name: str) -> AttachResult:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Refused(f"attach {name}: GitHub issues have no attachment API and the file is not UTF-8 text; "
                          "refused rather than approximated") from exc
        if len(text) > MAX_ATTACH_CHARS or "\x00" in text:
            raise Refused(f"attach {name}: too large or binary for a comment ({len(text)} characters)")
        fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
        lang = name.rsplit(".", 1)[-1] if "." in name else ""
        body = f"**Attachment: `{name}`**\n\n{fence}{lang}\n{text}{'' if text.endswith(chr(10)) else chr(10)}{fence}\n"
        out = self._do_comment(issue_id, body, None)
        return {"id": out["id"], "name": name, "url": out["url"]}

    def default_user(self) -> str:
        if not self._user:
            self._user = self._request("GET", "/user").json().get("login") or super().default_user()
        return self._user

    def doctor(self) -> DoctorReport:
        checks: list[DoctorCheck] = []

        def check(name: str, ok: bool, detail: str) -> None:
            checks.append({"name": name, "ok": ok, "detail": detail})

        check("token", bool(self.token), f"token found in keyring as {self.token_key}" if self.token
              else f"no token for {self.repo} at {self.api_url}: {missing_secret_hint('github', self.api_url, self.repo)}")
        if self.token:
            try:
                data = self._request("GET", self._repo_path()).json()
                check("repository", True, f"{data.get('full_name', self.repo)} is reachable")
                private, detail = repository_privacy(data, self.repo)
                check("private", private, detail if private else f"{detail}: writes are refused")
            except (BackendError, NotFound) as exc:
                check("repository", False, str(exc))
        return {"backend": self.kind, "ok": all(c["ok"] for c in checks), "checks": checks}


def github_token(api_url: str, repo: str, project_file: Any = "project.md") -> str | None:
    """The token stored for ``repo`` at ``api_url``'s exact origin (never one stored for another
    API): ``github:<scheme>://<host>:<port>/<owner>/<repo>``.

    Raises:
        ConfigError: ``api_url`` may not carry a token (plain http to another host, not http(s)).
    """
    try:
        return origin_secret("github", api_url, repo)
    except OriginRefused as exc:
        raise ConfigError(project_file, "tracker.github.api_url", str(exc),
                          "https://api.github.com or a GitHub Enterprise https URL") from None


def repository_privacy(data: dict, repo: str) -> tuple[bool, str]:
    """(private?, why) from GitHub's repository object.

    ``private: true`` alone is not enough: an enterprise ``internal`` repository also answers
    ``private: true`` and every member of the enterprise can read it. So ``visibility`` must be
    ``"private"`` when the answer carries it (docs.github.com/rest/repos/repos#get-a-repository).
    """
    visibility = data.get("visibility")
    if visibility is not None and visibility != "private":
        label = "PUBLIC" if visibility == "public" else str(visibility)[:40]
        return False, f"GitHub repository {repo} has visibility {label!r}, not 'private'"
    if data.get("private") is True:
        return True, f"GitHub repository {repo} is private"
    if data.get("private") is False:
        return False, f"GitHub repository {repo} is PUBLIC"
    return False, f"GitHub's answer for {repo} says neither private nor visibility"


def _instant(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _quoted(word: str) -> str:
    return '"' + word.replace('"', "").replace("\\", "") + '"'


def _repo_of(data: dict) -> str | None:
    """owner/name from an issue's repository_url (…/repos/{owner}/{name})."""
    m = re.search(r"/repos/([^/]+/[^/]+)/?$", str(data.get("repository_url") or ""))
    return m.group(1) if m else None


def _message(response) -> str:
    try:
        return str(response.json().get("message", ""))[:200]
    except ValueError:
        return response.text[:200]


def _label_names(data: dict) -> list[str]:
    return [label["name"] if isinstance(label, dict) else str(label) for label in data.get("labels") or []]


def _issue_out(data: dict, comments: list[Comment] | None) -> IssueView:
    milestone = data.get("milestone")
    return issue_json(
        id=str(data["number"]), title=data.get("title") or "", state=data.get("state") or "open",
        labels=_label_names(data), assignees=[a["login"] for a in data.get("assignees") or []],
        milestone=milestone.get("title") if isinstance(milestone, dict) else None,
        author=(data.get("user") or {}).get("login"), created=data.get("created_at"),
        updated=data.get("updated_at"), body=data.get("body") or "", url=data.get("html_url") or "",
        comments=comments)
