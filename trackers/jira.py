"""jira: a Jira project whose issues carry an issue-security level.

REST v2 (Data Center: wiki-markup strings, ``POST /rest/api/2/search`` with
``startAt``/``total``) or v3 (Cloud: ADF bodies, ``POST /rest/api/3/search/jql`` with
``nextPageToken``/``isLast``), chosen by ``tracker.jira.api_version``.

Guards:

* every write first reads the issue and checks it carries *exactly* the configured
  ``tracker.jira.security_level`` (a scheme may define levels open to every logged-in user,
  so "any level" is not enough); an issue without it is refused (exit 4), never "fixed";
* ``create`` always sets that level;
* an issue the caller cannot see answers 404, which is "not found" (exit 3).

``### Field`` sections are ``h3.`` headings in wiki markup and level-3 heading nodes in ADF.
Jira issues have one assignee, so adding a second one is refused. The milestone is the
issue's fix version. Credentials: keyring ``jira:<scheme>://<host>:<port>`` of the URL (core/origins.py); ``tracker.jira.auth`` is
``bearer`` (a Data Center personal access token) or ``basic`` (``tracker.jira.email`` and a
Cloud API token). Retry-After on 429/503 is honoured by HttpClient.
"""

from __future__ import annotations

import base64
import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterator, Sequence

from mailtriage.core.http import HttpClient, HttpError
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.origins import OriginRefused, secret_origin
from mailtriage.core.secrets import missing_secret_hint, origin_secret
from mailtriage.trackers import fields as fieldsmod
from mailtriage.trackers import jiramarkup as markup
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
    _validate_heading,
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
    FieldSetResult,
    FieldValue,
    IssueSummary,
    IssueView,
    StateResult,
    WriteResult,
)

VIEW_FIELDS = ["summary", "status", "labels", "assignee", "fixVersions", "reporter", "created", "updated",
               "description", "security"]
LIST_FIELDS = ["summary", "status", "labels", "updated"]
#: How far before the newest update seen ``changes`` searches again: JQL dates are read in the
#: account's time zone (UTC-12 to UTC+14), to the minute.
CHANGES_MARGIN = timedelta(hours=26)
DEFAULT_RESOLUTIONS = {"completed": "Done", "not-planned": "Won't Do"}
_KEY_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)-([0-9]{1,12})$", re.ASCII)


class JiraTracker(Tracker):
    kind = "jira"
    features = TrackerFeatures(changes_since=True, assignee_history=True)
    verify_rollup_writes = True  # comment edits are last-write-wins (no version check)

    def __init__(self, url: str, project: str, policy: Policy | None = None, *, api_version: int = 3,
                 security_level: str | None, token: str | None, auth: str = "bearer", email: str | None = None,
                 issue_type: str = "Bug", resolutions: dict | None = None, accounts: dict | None = None,
                 user: str | None = None, sleep: Callable[[float], None] | None = None) -> None:
        super().__init__(policy)
        if api_version not in (2, 3):
            raise UsageError(f"tracker.jira.api_version {api_version!r}: valid versions are 2 and 3")
        self.base = url.rstrip("/")
        try:
            secret_origin(self.base)  # a token never travels in clear, whoever built this tracker
        except OriginRefused as exc:
            raise UsageError(f"tracker.jira.url: {exc}") from None
        self.project = project.upper()
        self.v = api_version
        self.security_level = str(security_level) if security_level not in (None, "") else None
        self.token = token
        self.issue_type = issue_type
        self.resolutions = dict(DEFAULT_RESOLUTIONS, **(resolutions or {}))
        self.accounts = dict(accounts or {})
        self._names_by_key: dict[str, str] = {}  # Data Center: user key (JIRAUSER10000) → user name
        self._user = user
        headers = {"Accept": "application/json"}
        if token:
            if auth == "basic":
                if not email:
                    raise UsageError("tracker.jira.auth is basic but tracker.jira.email is not set")
                pair = base64.b64encode(f"{email}:{token}".encode()).decode()
                headers["Authorization"] = f"Basic {pair}"
            else:
                headers["Authorization"] = f"Bearer {token}"
        self.http = HttpClient("jira", self.base, headers=headers, sleep=sleep)
        self.field_syntax = fieldsmod.JIRA_WIKI if self.v == 2 else fieldsmod.MARKDOWN
        self._level_id: str | None = None

    @classmethod
    def from_config(cls, config: Any, policy: Policy) -> "JiraTracker":
        url = config.get("tracker.jira.url")
        project = config.get("tracker.jira.project")
        if not url or not str(url).startswith(("https://", "http://")):
            raise config.refuse("tracker.jira.url", "the Jira base URL, https://…")
        try:  # the token goes to this origin only, and never in clear (core/origins.py)
            token = origin_secret("jira", str(url))
        except OriginRefused as exc:
            raise ConfigError(config.file, "tracker.jira.url", str(exc), "the Jira base URL, https://…") from None
        if not project or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", str(project)):
            raise config.refuse("tracker.jira.project", "a project key, e.g. FOOSEC")
        version = config.get("tracker.jira.api_version", 3)
        try:
            version = int(version)
        except (TypeError, ValueError):
            version = -1
        if version not in (2, 3):
            raise ConfigError(config.file, "tracker.jira.api_version", f"is {version!r}", "2 (Data Center) or 3 (Cloud)")
        email = config.get("tracker.jira.email")
        auth = str(config.get("tracker.jira.auth") or ("basic" if email else "bearer"))
        if auth not in ("basic", "bearer"):
            raise ConfigError(config.file, "tracker.jira.auth", f"is {auth!r}", "basic, bearer")
        return cls(str(url), str(project), policy, api_version=version,
                   security_level=config.get("tracker.jira.security_level"), token=token,
                   auth=auth, email=email, issue_type=str(config.get("tracker.jira.issue_type") or "Bug"),
                   resolutions=config.get("tracker.jira.resolutions"), accounts=config.get("tracker.jira.accounts"),
                   user=config.get("tracker.user"))

    def close_backend(self) -> None:
        self.http.close()

    def abort(self, opening_only: bool = False) -> None:
        super().abort(opening_only)  # a rollup write's pause ends too
        self.http.abort(opening_only)

    # ---- HTTP --------------------------------------------------------------------------
    @property
    def api(self) -> str:
        return f"/rest/api/{self.v}"

    def _request(self, method: str, path: str, *, ok: tuple[int, ...] = (200,), **kwargs: Any):
        if not self.token:
            raise BackendError(f"no Jira token for {self.base}: {missing_secret_hint('jira', self.base)}")
        try:
            response = self.http.request(method, self.api + path, **kwargs)
        except HttpError as exc:
            raise BackendError(f"Jira {method} {path}: {exc.detail}") from exc
        if response.status_code in ok:
            return response
        message = _errors(response)
        if response.status_code == 401:
            raise BackendError(f"Jira refused the credentials (401 {message})")
        if response.status_code == 404:
            raise NotFound(f"Jira {path}: not found or not visible to this account ({message})")
        raise BackendError(f"Jira {method} {path}: {response.status_code} {message}")

    # ---- text in and out -------------------------------------------------------------
    def _to_jira(self, markdown: str) -> Any:
        if self.v == 2:
            return markup.md_to_wiki(markdown)
        doc = markup.md_to_adf(markdown)
        if not doc.get("content") and markdown.strip(" \t\r\n"):
            # the converter reads a line of only U+00A0 (or another Unicode space) as blank; such a
            # body is still a body, so keep it as one paragraph rather than send an empty document
            doc["content"] = [{"type": "paragraph", "content": [{"type": "text", "text": markdown.strip("\r\n")}]}]
        return doc

    def _from_jira(self, value: Any) -> str:
        if value is None:
            return ""
        if self.v == 2 or isinstance(value, str):
            return markup.wiki_to_md(str(value))
        return markup.adf_to_md(value)

    # ---- IDs and guards -------------------------------------------------------------------
    def _key(self, issue_id: str) -> str:
        raw = require_id(issue_id)
        if "/" in raw or "\\" in raw or ".." in raw or "?" in raw or "#" in raw:
            raise Refused(f"issue ID {issue_id!r} refused: a Jira issue ID is a key like {self.project}-12 or a number")
        if ascii_digits(raw) and len(raw) <= 12:
            return f"{self.project}-{int(raw)}"
        m = _KEY_RE.match(raw)
        if not m:
            raise NotFound(f"{issue_id!r} is not a Jira issue key")
        if m.group(1).upper() != self.project:
            raise NotFound(f"{raw} is not in the tracker's project {self.project}")
        return f"{self.project}-{int(m.group(2))}"

    def _url(self, key: str) -> str:
        return f"{self.base}/browse/{key}"

    def _get(self, key: str, fields: list[str]) -> dict:
        try:
            return self._request("GET", f"/issue/{key}", params={"fields": ",".join(fields)}).json()
        except NotFound as exc:
            raise NotFound(f"no issue {key} (or this account may not see it)") from exc

    def _configured_level(self) -> str:
        if not self.security_level:
            raise Refused("writes refused: tracker.jira.security_level is not set in project.md")
        return self.security_level

    def _check_security(self, key: str, data: dict) -> None:
        want = self._configured_level()
        level = (data.get("fields") or {}).get("security")
        if not level:
            raise Refused(f"{key} carries no issue-security level; refused (mailtriage never sets one on an "
                          f"existing issue). Set {want!r} in Jira if this issue belongs in the tracker")
        if want not in (str(level.get("id")), level.get("name")):
            raise Refused(f"{key} carries the security level {level.get('name')!r}, not the configured {want!r}; "
                          "refused")

    def _writable(self, issue_id: str, fields: Sequence[str] = ()) -> tuple[str, dict]:
        key = self._key(issue_id)
        data = self._get(key, ["security", *fields])
        self._check_security(key, data)
        return key, data

    def _level_id_for_create(self) -> str:
        if self._level_id is None:
            want = self._configured_level()
            levels = self._request("GET", f"/project/{self.project}/securitylevel").json().get("levels") or []
            match = next((lv for lv in levels if want in (str(lv.get("id")), lv.get("name"))), None)
            if match is None:
                names = ", ".join(f"{lv.get('name')} ({lv.get('id')})" for lv in levels) or "none"
                raise Refused(f"create refused: the security level {want!r} is not one this account may set in "
                              f"{self.project} (offered: {names})")
            self._level_id = str(match["id"])
        return self._level_id

    # ---- reads ----------------------------------------------------------------------------
    def _comments(self, key: str) -> list[dict]:
        out: list[dict] = []
        start = 0
        while True:
            page = self._request("GET", f"/issue/{key}/comment", params={"startAt": start, "maxResults": 100}).json()
            chunk = page.get("comments") or []
            out += chunk
            start += len(chunk)
            if not chunk or start >= int(page.get("total", 0)):
                return out

    def _person(self, person: dict | None) -> str | None:
        if not person:
            return None
        if self.v == 3:
            account = person.get("accountId")
            for name, acc in self.accounts.items():
                if acc == account:
                    return name
            return account or person.get("displayName")
        return person.get("name") or person.get("key") or person.get("displayName")

    def _do_view(self, issue_id: str, comments: bool) -> IssueView:
        key = self._key(issue_id)
        return self._view_of(key, self._get(key, VIEW_FIELDS), comments)

    def assignee_changes(self, issue_id: str) -> list[tuple[str | None, str | None]]:
        """From the issue's change history (``GET /issue/{key}?expand=changelog``: the
        histories in the order Jira applied the edits, each item's ``from``/``to`` the account
        ID on Cloud, the user KEY on Data Center: JIRAUSER10000 for users made since Jira 8, not
        their name), the assignee items, oldest first, each user named as :meth:`_person` names it."""
        key = self._key(issue_id)
        try:
            data = self._request("GET", f"/issue/{key}", params={"fields": "assignee", "expand": "changelog"}).json()
        except NotFound as exc:
            raise NotFound(f"no issue {key} (or this account may not see it)") from exc
        holder = (data.get("fields") or {}).get("assignee") or {}
        if self.v == 2 and holder.get("key") and holder.get("name"):
            self._names_by_key[holder["key"]] = holder["name"]  # the user object holds both
        histories = sorted((data.get("changelog") or {}).get("histories") or [],
                           key=lambda h: (int(h["id"]) if str(h.get("id", "")).isdigit() else 0))
        out: list[tuple[str | None, str | None]] = []
        for history in histories:
            for item in history.get("items") or []:
                if item.get("field") == "assignee":
                    out.append((self._user_of(item.get("from")), self._user_of(item.get("to"))))
        return out

    def _user_of(self, ident: str | None) -> str | None:
        """A history item's user (account ID on Cloud, user key on Data Center) as
        :meth:`_person` names it. A Data Center key is looked up once (``GET /user?key=``) and
        kept; a key Jira no longer knows (a deleted user) stays the key, naming nobody on the roster."""
        if not ident:
            return None
        if self.v == 3:
            return next((name for name, acc in self.accounts.items() if acc == ident), ident)
        if ident not in self._names_by_key:
            try:
                user = self._request("GET", "/user", params={"key": ident}).json()
            except NotFound:
                user = {}
            self._names_by_key[ident] = user.get("name") or ident
        return self._names_by_key[ident]

    def _view_of(self, key: str, data: dict, comments: bool) -> IssueView:
        f = data.get("fields") or {}
        out_comments = None
        if comments:
            found: list[Comment] = []
            seen_rollup = False
            for c in self._comments(key):
                text = self._from_jira(c.get("body"))
                kind = "comment"
                if not seen_rollup and rollupmod.is_rollup(text):
                    kind, seen_rollup = "rollup", True
                found.append(comment_json(id=str(c.get("id")), kind=kind, author=self._person(c.get("author")),
                                                 created=c.get("created"), updated=c.get("updated"), body=text,
                                                 url=f"{self._url(key)}?focusedCommentId={c.get('id')}"))
            out_comments = order_comments(found)
        versions = f.get("fixVersions") or []
        assignee = self._person(f.get("assignee"))
        return issue_json(id=data.get("key", key), title=f.get("summary") or "", state=_state(f),
                          labels=f.get("labels") or [], assignees=[assignee] if assignee else [],
                          milestone=versions[0].get("name") if versions else None,
                          author=self._person(f.get("reporter")), created=f.get("created"),
                          updated=f.get("updated"), body=self._from_jira(f.get("description")),
                          url=self._url(data.get("key", key)), comments=out_comments)

    def _search(self, jql: str, fields: list[str]) -> Iterator[dict]:
        if self.v == 2:
            start = 0
            while True:
                page = self._request("POST", "/search", json={"jql": jql, "startAt": start, "maxResults": 100,
                                                               "fields": fields}).json()
                issues = page.get("issues") or []
                yield from issues
                start += len(issues)
                if not issues or start >= int(page.get("total", 0)):
                    return
        else:
            token = None
            while True:
                body: dict[str, Any] = {"jql": jql, "fields": fields, "maxResults": 100}
                if token:
                    body["nextPageToken"] = token
                page = self._request("POST", "/search/jql", json=body).json()
                yield from page.get("issues") or []
                token = page.get("nextPageToken")
                # isLast is optional; a nextPageToken alone means there is another page
                if page.get("isLast") is True or not token:
                    return

    def changes(self, cursor: str | None) -> IssueChanges:
        """Issues updated since the cursor: one JQL search ``project = P AND updated >= "…"
        ORDER BY updated ASC`` with the fields a view has (no comments). JQL reads a date to the
        minute and in the account's own time zone, which the API does not say: the search
        starts :data:`CHANGES_MARGIN` before the newest update seen (more than any zone's
        offset), so an update is never missed and a few recent issues come again. Jira's
        search has no conditional request; a quiet project costs one request."""
        scope = f"{self.base}/{self.project}/v{self.v}"
        kept = cursor_fields(cursor)
        complete = kept.get("scope") != scope
        since = None if complete else kept.get("since")
        clauses = [f"project = {_jql_str(self.project)}"]
        if since:
            start = (_instant(since) - CHANGES_MARGIN).astimezone(timezone.utc)
            clauses.append(f'updated >= "{start:%Y/%m/%d %H:%M}"')
        views: list[IssueView] = []
        newest = since
        for data in self._search(" AND ".join(clauses) + " ORDER BY updated ASC", VIEW_FIELDS):
            stamp = (data.get("fields") or {}).get("updated")
            if stamp and (newest is None or _instant(stamp) > _instant(newest)):
                newest = stamp
            views.append(self._view_of(data["key"], data, False))
        return IssueChanges(views, json.dumps({"scope": scope, "since": newest}), complete)

    def _do_list(self, state: str, labels: list[str], words: list[str], limit: int | None) -> ListResult:
        clauses = [f"project = {_jql_str(self.project)}"]
        if state == "open":
            clauses.append("statusCategory != Done")
        elif state == "closed":
            clauses.append("statusCategory = Done")
        clauses += [f"labels = {_jql_str(label)}" for label in labels]
        clauses += [f"text ~ {_jql_str(word)}" for word in words]
        jql = " AND ".join(clauses) + " ORDER BY updated DESC"
        items: list[IssueSummary] = []
        for data in self._search(jql, LIST_FIELDS):
            f = data.get("fields") or {}
            items.append(summary_json(id=data["key"], title=f.get("summary") or "", state=_state(f),
                                      labels=f.get("labels") or [], updated=f.get("updated"),
                                      url=self._url(data["key"])))
            if limit and len(items) >= limit:
                break
        return ListResult(items)

    def _do_labels(self) -> list[str]:
        jql = f"project = {_jql_str(self.project)} ORDER BY updated DESC"
        return [label for data in self._search(jql, ["labels"]) for label in (data.get("fields") or {}).get("labels") or []]

    def _raw_body(self, issue_id: str) -> tuple[str, str]:
        key = self._key(issue_id)
        description = (self._get(key, ["description"]).get("fields") or {}).get("description")
        if self.v == 2:
            return key, description or ""
        return key, markup.adf_to_md(description)

    def _do_body(self, issue_id: str) -> str:
        key = self._key(issue_id)
        return self._from_jira((self._get(key, ["description"]).get("fields") or {}).get("description"))

    def field_get(self, issue_id: str, heading: str) -> FieldValue:
        if self.v == 2:
            return super().field_get(issue_id, heading)
        heading = _validate_heading(heading)
        key = self._key(issue_id)
        description = (self._get(key, ["description"]).get("fields") or {}).get("description")
        return {"id": key, "heading": heading, "value": markup.adf_get_field(description, heading)}

    def field_set(self, issue_id: str, heading: str, value: str) -> FieldSetResult:
        if self.v == 2:
            return super().field_set(issue_id, heading, value)
        heading = _validate_heading(heading)
        self._check_body(value)
        key, data = self._writable(issue_id, ["description"])
        doc, created = markup.adf_set_field((data.get("fields") or {}).get("description"), heading, value)
        self._request("PUT", f"/issue/{key}", json={"fields": {"description": doc}}, ok=(204, 200))
        return {"id": key, "heading": heading, "created": created}

    # ---- writes -----------------------------------------------------------------------------
    def _do_create(self, title: str, body: str, labels: list[str]) -> WriteResult:
        level = self._level_id_for_create()
        fields: dict[str, Any] = {"project": {"key": self.project}, "issuetype": {"name": self.issue_type},
                                  "summary": title, "description": self._to_jira(body), "security": {"id": level}}
        if labels:
            fields["labels"] = labels
        data = self._request("POST", "/issue", json={"fields": fields}, ok=(201,)).json()
        return {"id": data["key"], "url": self._url(data["key"])}

    def _assignee_value(self, user: str | None) -> dict | None:
        if user is None:
            return None
        if self.v == 3:
            return {"accountId": self.accounts.get(user, user)}
        return {"name": user}

    def _do_edit(self, issue_id: str, change: EditRequest) -> WriteResult:
        key, data = self._writable(issue_id, ["assignee"])
        fields: dict[str, Any] = {}
        update: dict[str, list] = {}
        current = self._person((data.get("fields") or {}).get("assignee"))
        if len(change.add_assignees) > 1:
            raise Refused("Jira issues have one assignee; add one at a time")
        if change.add_assignees:
            wanted = change.add_assignees[0]
            if current and current != wanted and current not in change.remove_assignees:
                raise Refused(f"{key} is assigned to {current}; Jira issues have one assignee "
                              f"(remove {current} first)")
            fields["assignee"] = self._assignee_value(wanted)
        elif current and current in change.remove_assignees:
            fields["assignee"] = None
        if change.milestone is not None:
            fields["fixVersions"] = [{"name": change.milestone}]
        if change.clear_milestone:
            fields["fixVersions"] = []
        if change.title is not None:
            fields["summary"] = change.title
        if change.body is not None:
            fields["description"] = self._to_jira(change.body)
        ops = [{"add": x} for x in change.add_labels] + [{"remove": x} for x in change.remove_labels]
        if ops:
            update["labels"] = ops
        payload: dict[str, Any] = {}
        if fields:
            payload["fields"] = fields
        if update:
            payload["update"] = update
        if payload:
            self._request("PUT", f"/issue/{key}", json=payload, ok=(204, 200))
        return {"id": key, "url": self._url(key)}

    def _mutate_body(self, issue_id: str, change: Callable[[str], str]) -> str:
        key, data = self._writable(issue_id, ["description"])
        description = (data.get("fields") or {}).get("description")
        if self.v == 2:
            new: Any = change(description or "")
        else:
            new = markup.md_to_adf(change(markup.adf_to_md(description)))
        self._request("PUT", f"/issue/{key}", json={"fields": {"description": new}}, ok=(204, 200))
        return key

    def _mutate_rollup(self, issue_id: str, change: Callable[[str | None], str]) -> WriteResult:
        return self._write_rollup(issue_id, change)[0]

    def _rollup_comments(self, key: str) -> list[dict]:
        return [c for c in self._comments(key) if rollupmod.is_rollup(self._from_jira(c.get("body")))]

    def _read_rollup(self, issue_id: str) -> str | None:
        found = self._rollup_comments(self._key(issue_id))
        return self._from_jira(found[0].get("body")) if found else None

    def _write_rollup(self, issue_id: str, change: Callable[[str | None], str]) -> tuple[WriteResult, str]:
        key, _ = self._writable(issue_id)
        found = self._rollup_comments(key)
        if found:
            text = change(self._from_jira(found[0].get("body")))
            data = self._request("PUT", f"/issue/{key}/comment/{found[0]['id']}",
                                 json={"body": self._to_jira(text)}).json()
        else:
            text = change(None)
            data = self._request("POST", f"/issue/{key}/comment", json={"body": self._to_jira(text)},
                                 ok=(201,)).json()
            first = self._rollup_comments(key)
            if first and str(first[0]["id"]) != str(data["id"]):
                # another writer created the rollup first: remove ours, append to theirs
                self._request("DELETE", f"/issue/{key}/comment/{data['id']}", ok=(204, 404))
                raise LostUpdate(f"{key}: a concurrent writer created the rollup first")
        written = self._from_jira(data["body"]) if data.get("body") is not None else text
        return {"id": key, "url": f"{self._url(key)}?focusedCommentId={data['id']}"}, written

    def _do_comment(self, issue_id: str, body: str, author: str | None) -> CommentResult:
        key, _ = self._writable(issue_id)
        data = self._request("POST", f"/issue/{key}/comment", json={"body": self._to_jira(body)}, ok=(201,)).json()
        return {"id": key, "comment_id": str(data["id"]), "url": f"{self._url(key)}?focusedCommentId={data['id']}"}

    def _transitions(self, key: str) -> list[dict]:
        # with their screens' fields, so a transition gets only the fields its screen has
        # (Jira REST "Get transitions", expand=transitions.fields)
        return self._request("GET", f"/issue/{key}/transitions",
                             params={"expand": "transitions.fields"}).json().get("transitions") or []

    def _post_transition(self, key: str, transition: dict, fields: dict | None = None) -> None:
        payload: dict[str, Any] = {"transition": {"id": str(transition["id"])}}
        if fields:
            payload["fields"] = fields
        self._request("POST", f"/issue/{key}/transitions", json=payload, ok=(204, 200))

    def _do_close(self, issue_id: str, reason: str) -> StateResult:
        key, _ = self._writable(issue_id)
        want = self.resolutions[reason]
        transitions = self._transitions(key)
        done = [t for t in transitions if _category(t.get("to")) == "done"]
        if not done:
            raise BackendError(f"{key}: no workflow transition to a done status is available to this account")

        def screen_resolution(t: dict) -> dict | None:
            return (t.get("fields") or {}).get("resolution")

        def offers(t: dict) -> bool:
            field = screen_resolution(t)
            if field is None:
                return False
            allowed = field.get("allowedValues")
            return allowed is None or any(_same(v.get("name"), want) for v in allowed)

        # The transition that fits the reason: one named like the resolution or leading to a status
        # named so (team-managed "Won't Do"), else one whose screen lets us set that resolution.
        named = [t for t in done if _same(t.get("name"), want) or _same((t.get("to") or {}).get("name"), want)]
        choice = next(iter(named), None) or next((t for t in done if offers(t)), None)
        if choice is None and reason == "completed":
            choice = done[0]  # a plain done status is what "completed" means
        if choice is None:
            names = ", ".join(f"{t.get('name')} -> {(t.get('to') or {}).get('name')}" for t in done)
            raise Refused(f"{key}: no transition fits the reason {reason!r}: none is named {want!r} and none "
                          f"lets this account set the resolution {want!r} (done transitions: {names}). Set "
                          f"tracker.jira.resolutions.{reason} to the name your workflow uses")
        fields: dict[str, Any] = {}
        field = screen_resolution(choice)
        # only what the screen has: no screen, or no Resolution on it, means no resolution sent
        if field is not None and (offers(choice) or field.get("required")):
            fields["resolution"] = {"name": want}
        self._post_transition(key, choice, fields)
        return {"id": key, "state": "closed"}

    def _do_reopen(self, issue_id: str) -> StateResult:
        key, data = self._writable(issue_id, ["status"])
        status = (data.get("fields") or {}).get("status") or {}
        if _category(status) != "done":
            # the first transition out of an open status would be e.g. "Start Progress": never take it
            return {"id": key, "state": "open", "changed": False,
                    "note": f"{key} is already open (status {status.get('name')!r}); nothing changed"}
        back = [t for t in self._transitions(key) if _category(t.get("to")) != "done"]
        # prefer a To Do status (category "new") over an in-progress one
        back.sort(key=lambda t: _category(t.get("to")) != "new")
        if not back:
            raise BackendError(f"{key}: no workflow transition out of done is available to this account")
        self._post_transition(key, back[0])
        return {"id": key, "state": "open"}

    def _do_attach(self, issue_id: str, data: bytes, name: str) -> AttachResult:
        key, _ = self._writable(issue_id)
        response = self._request("POST", f"/issue/{key}/attachments", files={"file": (name, data)},
                                 headers={"X-Atlassian-Token": "no-check"})
        items = response.json()
        url = items[0].get("content") if items else self._url(key)
        return {"id": key, "name": name, "url": url or self._url(key)}

    def default_user(self) -> str:
        if not self._user:
            me = self._request("GET", "/myself").json()
            self._user = me.get("name") or me.get("accountId") or super().default_user()
        return self._user

    def doctor(self) -> DoctorReport:
        checks: list[DoctorCheck] = []

        def check(name: str, ok: bool, detail: str) -> None:
            checks.append({"name": name, "ok": ok, "detail": detail})

        check("token", bool(self.token), "credential found in keyring" if self.token
              else f"no credential for {self.base}: {missing_secret_hint('jira', self.base)}")
        check("security_level", bool(self.security_level), f"configured: {self.security_level}"
              if self.security_level else "tracker.jira.security_level is not set; writes are refused")
        if self.token:
            try:
                me = self._request("GET", "/myself").json()
                check("account", True, f"signed in as {me.get('displayName') or me.get('name')}")
                if self.security_level:
                    self._level_id = None
                    self._level_id_for_create()
                    check("security_level_settable", True, f"{self.security_level} can be set in {self.project}")
            except (BackendError, NotFound, Refused) as exc:
                check("account" if not checks[-1]["name"] == "account" else "security_level_settable", False, str(exc))
        return {"backend": self.kind, "ok": all(c["ok"] for c in checks), "checks": checks}


def _instant(stamp: str) -> datetime:
    """Jira's ``2025-07-30T13:03:26.000+0000`` as an aware instant."""
    when = datetime.fromisoformat(re.sub(r"([+-]\d\d)(\d\d)$", r"\1:\2", stamp.replace("Z", "+00:00")))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _category(status: dict | None) -> str | None:
    return ((status or {}).get("statusCategory") or {}).get("key")


def _same(a: Any, b: Any) -> bool:
    return isinstance(a, str) and isinstance(b, str) and a.strip().casefold() == b.strip().casefold()


def _state(fields: dict) -> str:
    category = ((fields.get("status") or {}).get("statusCategory") or {}).get("key")
    return "closed" if category == "done" else "open"


def _jql_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _errors(response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200]
    if not isinstance(data, dict):
        return str(data)[:200]
    parts = list(data.get("errorMessages") or []) + [f"{k}: {v}" for k, v in (data.get("errors") or {}).items()]
    return "; ".join(parts)[:300] or str(data)[:200]
