"""A loopback emulator of Google's OAuth endpoints and the Gmail REST API (v1).

It speaks the documented shapes: the authorization endpoint (redirects to the loopback
``redirect_uri`` with ``code`` and ``state``, PKCE S256 checked at the exchange), the
token endpoint (``authorization_code`` and ``refresh_token`` grants, ``invalid_grant``
for a revoked or unknown refresh token), and under ``/gmail/v1/users/me``: profile,
messages (list with ``q``/``labelIds``/paging, get in minimal/metadata/raw formats,
batchModify, trash, send), threads (list, get), drafts (list, get, create), labels
(list, get with counts, create, patch, delete), the media upload of drafts.create and
messages.send (``/upload/...``, multipart or resumable, 35 MB at most; the plain endpoint
refuses a JSON body over its small limit) and history (``messageAdded`` records;
404 for a start ID older than the kept history). Every Gmail call needs a live bearer
token (401 with Google's error body otherwise) with a scope that allows it (403
``insufficientPermissions``).

Threading follows Gmail's rule: a message joins the thread of a message it references
(In-Reply-To / References) when the subjects match and that thread holds fewer than 100
messages, else it starts a new thread (a reply retitled "(CVE-… assigned)"); a draft or
send naming ``threadId`` joins it only when its References/In-Reply-To name a message of
that thread and the subjects match.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from email import policy
from email.parser import BytesHeaderParser, BytesParser
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.archives.fakehttp import FakeHttpServer, Reply, Request

GMAIL = "https://www.googleapis.com/auth/gmail."
READ_SCOPES = {GMAIL + "readonly", GMAIL + "modify", "https://mail.google.com/"}
DRAFT_SCOPES = {GMAIL + "compose", GMAIL + "modify", "https://mail.google.com/"}
SEND_SCOPES = {GMAIL + "send", GMAIL + "compose", GMAIL + "modify", "https://mail.google.com/"}
MODIFY_SCOPES = {GMAIL + "modify", "https://mail.google.com/"}
LABEL_SCOPES = {GMAIL + "labels", GMAIL + "modify", "https://mail.google.com/"}
# Gmail's request limits. The plain endpoints take JSON with the message as base64url
# ``raw``; over a small body they answer 400 badRequest "Request payload size exceeds the
# limit: 1048576 bytes." (the error Google's client libraries report for messages.send).
# The media-upload endpoints (``/upload/gmail/v1/...``, uploadType=multipart|resumable)
# take the raw RFC 822 message up to 35 MB (the reference's "Maximum file size: 35MB").
PLAIN_REQUEST_LIMIT = 1_048_576
UPLOAD_LIMIT = 35 * 1024 * 1024
THREAD_LIMIT = 100  # Gmail starts a new thread once one holds 100 messages
SYSTEM_LABELS = ("INBOX", "SENT", "DRAFT", "SPAM", "TRASH", "UNREAD", "STARRED", "IMPORTANT")
PREFIX = "/gmail/v1/users/me"
UPLOAD_PREFIX = "/upload" + PREFIX
UPLOADABLE = (["drafts"], ["messages", "send"])  # the upload routes emulated (POST)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _ids(value: str | None) -> list[str]:
    return re.findall(r"<[^<>\s]+>", value or "")


def _norm_subject(subject: str) -> str:
    return re.sub(r"^(\s*(re|fwd?|aw|sv)\s*(\[\d+\])?\s*:\s*)+", "", subject or "", flags=re.I).strip().lower()


@dataclass
class StoredMessage:
    id: str
    thread_id: str
    raw: bytes
    labels: list[str]
    internal_date: int  # ms
    history_id: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    mime_type: str = "text/plain"
    text: str = ""

    def header(self, name: str) -> str:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return ""


class GoogleEmulator:
    def __init__(self, *, client_id: str = "mailtriage-test.apps.googleusercontent.com",
                 client_secret: str = "test-client-secret", address: str = "me@example.org",
                 ssl_context=None) -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.address = address
        self.lock = threading.RLock()
        self.messages: dict[str, StoredMessage] = {}
        self.drafts: dict[str, str] = {}  # draft id -> message id
        self.labels: dict[str, dict] = {name: {"id": name, "name": name, "type": "system",
                                               "messageListVisibility": "hide", "labelListVisibility": "labelShow"}
                                        for name in SYSTEM_LABELS}
        self.history: list[dict] = []
        self.history_id = 5000
        self.history_floor = 0  # history before this ID is forgotten (404)
        self.access_tokens: dict[str, tuple[float, frozenset[str]]] = {}
        self.refresh_tokens: dict[str, frozenset[str]] = {}
        self.codes: dict[str, dict] = {}
        self.secrets_issued: list[str] = []  # every token and code handed out (the trace must hold none)
        self.token_calls: list[dict] = []  # grant_type of every token request
        self.token_delay = 0.0  # seconds the token endpoint takes (to widen races)
        self.rotate_refresh_tokens = False
        self.token_lifetime = 3599
        # An OAuth app in "Testing" publishing status (Google Cloud console, "OAuth consent
        # screen"): refresh tokens expire 7 days after they were issued, and only the listed
        # test users may sign in (others get access_denied). None: a published app.
        self.test_users: set[str] | None = None
        self.clock_offset = 0.0  # seconds added to the emulator's clock (to live through a week)
        self.refresh_issued: dict[str, float] = {}
        # Gmail's usage limits ("Usage limits" and "Resolve errors" of the Gmail API guide):
        # each method costs quota units; over the per-user rate Gmail answers 429 (or 403
        # userRateLimitExceeded), too many requests at once 429 "Too many concurrent requests
        # for user", neither with a Retry-After. None: no limit.
        self.quota: tuple[int, float] | None = None  # (units, per seconds)
        self.max_concurrent: int | None = None
        self.latency = 0.0  # seconds each Gmail call takes (so that overlap can be seen)
        self.queries: list[str] = []  # every q of messages.list / threads.list, as received
        self.in_flight = 0
        self.max_in_flight = 0
        self.refused = 0  # calls answered with a rate-limit error
        self._spent: list[tuple[float, int]] = []
        self._flight_lock = threading.Lock()
        self.plain_request_limit = PLAIN_REQUEST_LIMIT
        self.upload_limit = UPLOAD_LIMIT
        self.upload_sessions: dict[str, dict] = {}  # resumable upload id -> route, metadata, length
        # Messages another client deletes right after a listing (messages.list, threads.list,
        # threads.get) named them: the next messages.get of one is Gmail's 404.
        self.vanishing: set[str] = set()
        # route suffix -> seconds the answer waits *after* the call took effect (a write that
        # happened, whose answer the client gives up on: a timeout)
        self.stall_after: dict[str, float] = {}
        self._next = 0x18e0_0000_0000_0000
        self._label_n = 1
        self.server = FakeHttpServer(self.app, ssl_context=ssl_context)

    # -- lifecycle and test helpers --------------------------------------------------------
    def start(self) -> "GoogleEmulator":
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def account_settings(self, **extra) -> dict:
        """The [accounts.<id>] table pointing every endpoint at this emulator."""
        return {"kind": "gmail", "client_id": self.client_id, "address": self.address,
                "auth_uri": self.base_url + "/o/oauth2/v2/auth", "token_uri": self.base_url + "/token",
                "api_base": self.base_url, "web_url": self.base_url + "/mail/", "timeout": 5, **extra}

    def issue(self, scopes, *, expires_in: float | None = None) -> tuple[str, str]:
        """Tokens as a completed sign-in would have them: (access token, refresh token)."""
        with self.lock:
            access, refresh = "ya29." + secrets.token_urlsafe(24), "1//" + secrets.token_urlsafe(32)
            scopes = frozenset(scopes)
            self.secrets_issued += [access, refresh]
            self.access_tokens[access] = (time.time() + (self.token_lifetime if expires_in is None else expires_in),
                                          scopes)
            self.refresh_tokens[refresh] = scopes
            self.refresh_issued[refresh] = self.now()
            return access, refresh

    def now(self) -> float:
        return time.time() + self.clock_offset

    def expire_access_tokens(self) -> None:
        with self.lock:
            self.access_tokens = {t: (0.0, s) for t, (_e, s) in self.access_tokens.items()}

    def revoke_refresh_tokens(self) -> None:
        with self.lock:
            self.refresh_tokens.clear()
            self.access_tokens.clear()

    def _new_id(self) -> str:
        self._next += 0x1_0000 + secrets.randbelow(0xFFF)
        return f"{self._next:x}"

    def _bump(self) -> int:
        self.history_id += 1 + secrets.randbelow(3)
        return self.history_id

    def add_message(self, raw: bytes, *, labels=("INBOX", "UNREAD"), date: float | None = None,
                    thread_id: str | None = None) -> str:
        """Store a message as Gmail does on delivery/import; returns its id."""
        with self.lock:
            parsed = BytesParser(policy=policy.default).parsebytes(raw)
            headers = []
            for name, value in parsed.items():
                try:
                    headers.append((name, " ".join(str(value).split())))
                except Exception:  # noqa: BLE001 - a header the stdlib cannot decode stays raw
                    headers.append((name, str(parsed.get(name, ""))))
            if date is None:
                from email.utils import parsedate_to_datetime

                try:
                    date = parsedate_to_datetime(parsed["Date"]).timestamp()
                except (TypeError, ValueError):
                    date = time.time()
            message_id = self._new_id()
            stored = StoredMessage(message_id, "", raw, list(labels), int(date * 1000), self._bump(), headers,
                                   parsed.get_content_type(), _plain_text(parsed))
            stored.thread_id = thread_id or self._thread_for(stored) or message_id
            self.messages[message_id] = stored
            self.history.append({"id": stored.history_id, "added": message_id})
            return message_id

    def _thread_for(self, new: StoredMessage) -> str | None:
        """Gmail's threading: a message joins the thread of a message it references (or that
        references it) only when the subjects match (ignoring Re:/Fwd:) and that thread holds
        fewer than THREAD_LIMIT messages; otherwise it starts a thread of its own."""
        refs = set(_ids(new.header("References")) + _ids(new.header("In-Reply-To")))
        own = _ids(new.header("Message-ID"))
        subject = _norm_subject(new.header("Subject"))
        for message in sorted(self.messages.values(), key=lambda m: m.internal_date):
            their = _ids(message.header("Message-ID"))
            if not ((their and their[0] in refs) or (own and own[0] in _ids(message.header("References")))):
                continue
            if _norm_subject(message.header("Subject")) == subject and self._room_in(message.thread_id):
                return message.thread_id
        return None

    def _room_in(self, thread_id: str) -> bool:
        return sum(m.thread_id == thread_id for m in self.messages.values()) < THREAD_LIMIT

    def add_draft(self, raw: bytes, thread_id: str | None = None) -> str:
        """A draft made elsewhere (Gmail's web UI); returns the draft id."""
        with self.lock:
            message = self._insert(raw, ["DRAFT"], thread_id)
            draft_id = "r" + str(secrets.randbelow(10**18))
            self.drafts[draft_id] = message.id
            return draft_id

    def add_label(self, name: str, *, color: str | None = None) -> str:
        with self.lock:
            label_id = f"Label_{self._label_n}"
            self._label_n += 1
            self.labels[label_id] = {"id": label_id, "name": name, "type": "user",
                                     "messageListVisibility": "show", "labelListVisibility": "labelShow"}
            if color:
                self.labels[label_id]["color"] = {"backgroundColor": color, "textColor": "#ffffff"}
            return label_id

    def snapshot(self):
        """Everything a write would change (for the contract suite's read-only check)."""
        with self.lock:
            return (sorted((m.id, m.thread_id, tuple(sorted(m.labels)), m.raw) for m in self.messages.values()),
                    sorted(self.drafts.items()), sorted((k, json.dumps(v, sort_keys=True))
                                                        for k, v in self.labels.items()))

    # -- dispatch ----------------------------------------------------------------------------
    def app(self, request: Request) -> Reply:
        path = request.path
        if path == "/o/oauth2/v2/auth":
            return self._authorize(request)
        if path == "/token":
            return self._token(request)
        upload = path.startswith(UPLOAD_PREFIX)
        if path.startswith(PREFIX) or upload:
            scopes = self._bearer(request)
            if isinstance(scopes, Reply):
                return scopes
            route = path[len(UPLOAD_PREFIX if upload else PREFIX):]
            if not upload and len(request.body) > self.plain_request_limit:
                return _error(400, f"Request payload size exceeds the limit: {self.plain_request_limit} bytes.",
                              "badRequest", "INVALID_ARGUMENT")
            limited = self._admit(request, route)
            if limited is not None:
                return limited
            try:
                if self.latency:
                    time.sleep(self.latency)
                if upload:
                    return self._upload(request, route, scopes)
                with self.lock:
                    reply = self._gmail(request, route, scopes)
                    self._vanish(request, route, reply)
                stall = next((t for suffix, t in self.stall_after.items() if route.endswith(suffix)), 0.0)
                if stall:
                    time.sleep(stall)
                return reply
            finally:
                with self._flight_lock:
                    self.in_flight -= 1
        return _error(404, "Not Found", "notFound")

    def delete_after_listing(self, *message_ids: str) -> None:
        """Have these messages deleted (elsewhere) just after the next listing that names them."""
        with self.lock:
            self.vanishing.update(message_ids)

    def _vanish(self, request: Request, route: str, reply: Reply) -> None:
        parts = [p for p in route.split("/") if p]
        if request.method != "GET" or not (parts in (["messages"], ["threads"]) or parts[:1] == ["threads"]):
            return
        for message_id in [m for m in self.vanishing if f'"{m}"'.encode() in reply.body]:
            self.vanishing.discard(message_id)
            self.messages.pop(message_id, None)
            self.drafts = {d: m for d, m in self.drafts.items() if m != message_id}

    # -- media upload ("Uploading attachments" of the Gmail API guide) ---------------------------
    def _upload(self, request: Request, route: str, scopes: frozenset[str]) -> Reply:
        """``/upload/...``: the raw message as multipart/related (JSON metadata, then the
        message/rfc822 bytes) in one POST, or a resumable session: a POST with the metadata
        and X-Upload-Content-Length answers a session URI (Location), a PUT there the bytes."""
        kind = request.param("uploadType")
        parts = [p for p in route.split("/") if p]
        if parts not in UPLOADABLE:
            return _error(404, f"no emulated upload route {request.method} {route}", "notFound", "NOT_FOUND")
        if kind == "multipart" and request.method == "POST":
            split = _multipart_related(request)
            if split is None:
                return _error(400, "Invalid multipart request: metadata and media parts expected", "badRequest",
                              "INVALID_ARGUMENT")
            metadata, raw = split
        elif kind == "resumable" and request.method == "POST":
            declared = int(request.headers.get("x-upload-content-length") or 0)
            if declared > self.upload_limit:
                return _too_large(self.upload_limit)
            session = secrets.token_urlsafe(16)
            with self.lock:
                self.upload_sessions[session] = {"route": route, "metadata": json.loads(request.body or b"{}"),
                                                 "length": declared}
            query = urlencode({"uploadType": "resumable", "upload_id": session})
            location = f"{self.base_url}{UPLOAD_PREFIX}{route}?{query}"
            return Reply(200, b"", {"Location": location, "X-GUploader-UploadID": session})
        elif kind == "resumable" and request.method == "PUT":
            with self.lock:
                session = self.upload_sessions.pop(request.param("upload_id") or "", None)
            if session is None or session["route"] != route:
                return _error(404, "No such upload session.", "notFound", "NOT_FOUND")
            metadata, raw = session["metadata"], request.body
            if session["length"] and len(raw) != session["length"]:
                return _error(400, "The uploaded length differs from X-Upload-Content-Length.", "badRequest",
                              "INVALID_ARGUMENT")
        else:
            return _error(400, f"Invalid uploadType {kind!r}", "badRequest", "INVALID_ARGUMENT")
        if len(raw) > self.upload_limit:
            return _too_large(self.upload_limit)
        if parts == ["drafts"]:
            body = {"message": {**(metadata.get("message") or {}), "raw": b64(raw)}}
        else:
            body = {**metadata, "raw": b64(raw)}
        with self.lock:
            return self._gmail(request, route, scopes, body=body, method="POST")

    def _admit(self, request: Request, path: str) -> Reply | None:
        """Count the call against the per-user limits; a 429 when over (and not admitted)."""
        cost = _quota_cost(request.method, path)
        with self._flight_lock:
            now = time.monotonic()
            if self.max_concurrent is not None and self.in_flight >= self.max_concurrent:
                self.refused += 1
                return _error(429, "Too many concurrent requests for user", "rateLimitExceeded", "RESOURCE_EXHAUSTED")
            if self.quota is not None:
                units, window = self.quota
                self._spent = [(t, c) for t, c in self._spent if now - t < window]
                if sum(c for _t, c in self._spent) + cost > units:
                    self.refused += 1
                    return _error(429, "User-rate limit exceeded.", "rateLimitExceeded", "RESOURCE_EXHAUSTED")
                self._spent.append((now, cost))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        return None

    # -- OAuth --------------------------------------------------------------------------------
    def _authorize(self, request: Request) -> Reply:
        q = {k: v[0] for k, v in request.query.items()}
        if q.get("client_id") != self.client_id:
            return Reply.text("Error 401: invalid_client", 401)
        redirect = q.get("redirect_uri", "")
        if not re.match(r"^http://127\.0\.0\.1:\d+/$", redirect):
            return Reply.text("Error 400: redirect_uri_mismatch", 400)
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return Reply.text("Error 400: invalid_request (PKCE S256 required)", 400)
        if q.get("deny") or (self.test_users is not None and q.get("login_hint") not in self.test_users):
            return Reply(302, b"", {"Location": f"{redirect}?{urlencode({'error': 'access_denied', 'state': q.get('state', '')})}"})
        code = "4/" + secrets.token_urlsafe(24)
        self.secrets_issued.append(code)
        self.codes[code] = {"redirect_uri": redirect, "challenge": q["code_challenge"],
                            "scopes": frozenset(q.get("scope", "").split())}
        return Reply(302, b"", {"Location": f"{redirect}?{urlencode({'code': code, 'state': q.get('state', ''), 'scope': q.get('scope', '')})}"})

    def _token(self, request: Request) -> Reply:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        with self.lock:
            self.token_calls.append({"grant_type": form.get("grant_type")})
        if self.token_delay:
            time.sleep(self.token_delay)
        if form.get("client_id") == self.client_id and not form.get("client_secret"):
            # A Desktop-app client must send its secret; Google's answer names the request, not the client.
            return Reply.json({"error": "invalid_request", "error_description": "client_secret is missing."}, 400)
        if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
            return Reply.json({"error": "invalid_client", "error_description": "The OAuth client was not found."}, 401)
        with self.lock:
            if form.get("grant_type") == "authorization_code":
                grant = self.codes.pop(form.get("code", ""), None)
                if grant is None or grant["redirect_uri"] != form.get("redirect_uri"):
                    return Reply.json({"error": "invalid_grant", "error_description": "Bad Request"}, 400)
                digest = b64(hashlib.sha256(form.get("code_verifier", "").encode()).digest())
                if digest != grant["challenge"]:
                    return Reply.json({"error": "invalid_grant", "error_description": "Invalid code verifier."}, 400)
                access, refresh = self.issue(grant["scopes"])
                return Reply.json({"access_token": access, "expires_in": self.token_lifetime, "refresh_token": refresh,
                                   "scope": " ".join(sorted(grant["scopes"])), "token_type": "Bearer"})
            if form.get("grant_type") == "refresh_token":
                scopes = self.refresh_tokens.get(form.get("refresh_token", ""))
                issued = self.refresh_issued.get(form.get("refresh_token", ""), self.now())
                if scopes is not None and self.test_users is not None and self.now() - issued > 7 * 86400:
                    scopes = None  # Testing status: the refresh token lived its 7 days
                if scopes is None:
                    return Reply.json({"error": "invalid_grant",
                                       "error_description": "Token has been expired or revoked."}, 400)
                access = "ya29." + secrets.token_urlsafe(24)
                self.secrets_issued.append(access)
                self.access_tokens[access] = (time.time() + self.token_lifetime, scopes)
                body = {"access_token": access, "expires_in": self.token_lifetime, "scope": " ".join(sorted(scopes)),
                        "token_type": "Bearer"}
                if self.rotate_refresh_tokens:
                    self.refresh_tokens.pop(form["refresh_token"])
                    new = "1//" + secrets.token_urlsafe(32)
                    self.secrets_issued.append(new)
                    self.refresh_tokens[new] = scopes
                    self.refresh_issued[new] = issued  # a rotated token keeps the grant's age
                    body["refresh_token"] = new
                return Reply.json(body)
        return Reply.json({"error": "unsupported_grant_type"}, 400)

    def _bearer(self, request: Request):
        header = request.headers.get("authorization", "")
        token = header[7:] if header.startswith("Bearer ") else ""
        with self.lock:
            entry = self.access_tokens.get(token)
        if entry is None or entry[0] < time.time():
            return Reply(401, json.dumps({"error": {
                "code": 401, "message": "Request had invalid authentication credentials. Expected OAuth 2 access "
                                        "token, login cookie or other valid authentication credential.",
                "errors": [{"message": "Invalid Credentials", "domain": "global", "reason": "authError",
                            "location": "Authorization", "locationType": "header"}],
                "status": "UNAUTHENTICATED"}}).encode(),
                {"Content-Type": "application/json",
                 "WWW-Authenticate": 'Bearer realm="https://accounts.google.com/", error="invalid_token"'})
        return entry[1]

    # -- Gmail ----------------------------------------------------------------------------------
    def _gmail(self, request: Request, path: str, scopes: frozenset[str], *, body: dict | None = None,
               method: str | None = None) -> Reply:
        method = method or request.method
        if body is None:
            body = json.loads(request.body or b"{}") if request.body else {}
        parts = [p for p in path.split("/") if p]

        def need(allowed: set[str]) -> Reply | None:
            if scopes & allowed:
                return None
            return _error(403, "Request had insufficient authentication scopes.", "insufficientPermissions",
                          "PERMISSION_DENIED")

        if method == "GET" and (denied := need(READ_SCOPES | DRAFT_SCOPES)):
            return denied
        if parts == ["profile"]:
            return Reply.json({"emailAddress": self.address, "messagesTotal": len(self._visible()),
                               "threadsTotal": len({m.thread_id for m in self._visible()}),
                               "historyId": str(self.history_id)})
        if parts == ["messages"] and method == "GET":
            found = self._search(request)
            return self._page(request, [{"id": m.id, "threadId": m.thread_id} for m in found], "messages")
        if parts == ["messages", "batchModify"] and method == "POST":
            if denied := need(MODIFY_SCOPES):
                return denied
            for message_id in body.get("ids") or ():
                if message_id in self.messages:
                    self._relabel(self.messages[message_id], body.get("addLabelIds") or (),
                                  body.get("removeLabelIds") or ())
            return Reply(204)
        if parts == ["messages", "send"] and method == "POST":
            if denied := need(SEND_SCOPES):
                return denied
            message = self._insert(unb64(body["raw"]), ["SENT"], body.get("threadId"))
            return Reply.json(self._minimal(message))
        if len(parts) == 2 and parts[0] == "messages" and method == "GET":
            message = self.messages.get(parts[1])
            if message is None:
                return _error(404, "Requested entity was not found.", "notFound", "NOT_FOUND")
            return Reply.json(self._format(message, request))
        if len(parts) == 3 and parts[0] == "messages" and parts[2] == "trash" and method == "POST":
            if denied := need(MODIFY_SCOPES):
                return denied
            message = self.messages.get(parts[1])
            if message is None:
                return _error(404, "Requested entity was not found.", "notFound", "NOT_FOUND")
            self._relabel(message, ["TRASH"], ["INBOX", "SPAM"])
            return Reply.json(self._minimal(message))
        if parts == ["threads"] and method == "GET":
            found = self._search(request)
            threads: dict[str, StoredMessage] = {}
            for message in found:  # newest first: the first seen is the thread's latest match
                threads.setdefault(message.thread_id, message)
            return self._page(request, [{"id": t, "snippet": m.text[:100], "historyId": str(m.history_id)}
                                        for t, m in threads.items()], "threads")
        if len(parts) == 2 and parts[0] == "threads" and method == "GET":
            members = sorted((m for m in self.messages.values() if m.thread_id == parts[1]),
                             key=lambda m: m.internal_date)
            if not members:
                return _error(404, "Requested entity was not found.", "notFound", "NOT_FOUND")
            return Reply.json({"id": parts[1], "historyId": str(max(m.history_id for m in members)),
                               "messages": [self._format(m, request) for m in members]})
        if parts == ["drafts"] and method == "GET":
            # drafts.list: ids only, 100 a page by default (500 at most), and ``q`` takes
            # the search box's syntax (rfc822msgid:, OR, braces) over the drafts.
            q = request.param("q", "") or ""
            drafts = [{"id": d, "message": {"id": m, "threadId": self.messages[m].thread_id}}
                      for d, m in sorted(self.drafts.items())
                      if m in self.messages and (not q or _matches(self.messages[m], q))]
            return self._page(request, drafts, "drafts")
        if parts == ["drafts"] and method == "POST":
            if denied := need(DRAFT_SCOPES):
                return denied
            message_body = body.get("message") or {}
            message = self._insert(unb64(message_body.get("raw", "")), ["DRAFT"], message_body.get("threadId"))
            draft_id = "r" + str(secrets.randbelow(10**18))
            self.drafts[draft_id] = message.id
            return Reply.json({"id": draft_id, "message": {"id": message.id, "threadId": message.thread_id,
                                                           "labelIds": message.labels}})
        if len(parts) == 2 and parts[0] == "drafts" and method == "GET":
            message_id = self.drafts.get(parts[1])
            if message_id is None or message_id not in self.messages:
                return _error(404, "Requested entity was not found.", "notFound", "NOT_FOUND")
            return Reply.json({"id": parts[1], "message": self._format(self.messages[message_id], request)})
        if parts == ["labels"] and method == "GET":
            return Reply.json({"labels": list(self.labels.values())})
        if parts == ["labels"] and method == "POST":
            if denied := need(LABEL_SCOPES):
                return denied
            if any(label["name"].lower() == str(body.get("name", "")).lower() for label in self.labels.values()):
                return _error(409, "Label name exists or conflicts", "duplicate", "ALREADY_EXISTS")
            label_id = self.add_label(str(body["name"]))
            return Reply.json(self.labels[label_id])
        if len(parts) == 2 and parts[0] == "labels":
            label = self.labels.get(parts[1])
            if label is None:
                return _error(404, "Requested entity was not found.", "notFound", "NOT_FOUND")
            if method == "GET":
                members = [m for m in self.messages.values() if label["id"] in m.labels]
                return Reply.json({**label, "messagesTotal": len(members),
                                   "messagesUnread": sum("UNREAD" in m.labels for m in members),
                                   "threadsTotal": len({m.thread_id for m in members}),
                                   "threadsUnread": len({m.thread_id for m in members if "UNREAD" in m.labels})})
            if denied := need(LABEL_SCOPES):
                return denied
            if label["type"] == "system":
                return _error(400, "Invalid label: system labels cannot be changed", "invalidArgument",
                              "INVALID_ARGUMENT")
            if method == "PATCH":
                label.update({k: v for k, v in body.items() if k in ("name", "color", "labelListVisibility",
                                                                      "messageListVisibility")})
                return Reply.json(label)
            if method == "DELETE":
                del self.labels[parts[1]]
                for message in self.messages.values():
                    if parts[1] in message.labels:
                        message.labels.remove(parts[1])
                return Reply(204)
        if parts == ["history"] and method == "GET":
            return self._history(request)
        return _error(404, f"no emulated route {method} {path}", "notFound", "NOT_FOUND")

    # -- Gmail helpers --------------------------------------------------------------------------
    def _visible(self) -> list[StoredMessage]:
        return [m for m in self.messages.values() if not {"SPAM", "TRASH"} & set(m.labels)]

    def _insert(self, raw: bytes, labels: list[str], thread_id: str | None) -> StoredMessage:
        # The header block only (the threading reads three headers): a full parse of a 34 MB upload
        # here came before add_message's own (issue 36 §7).
        parsed = BytesHeaderParser(policy=policy.default).parsebytes(raw)
        joined = None
        if thread_id:
            refs = set(_ids(str(parsed.get("References", ""))) + _ids(str(parsed.get("In-Reply-To", ""))))
            members = [m for m in self.messages.values() if m.thread_id == thread_id]
            if any(_ids(m.header("Message-ID"))[:1] and _ids(m.header("Message-ID"))[0] in refs for m in members) \
                    and any(_norm_subject(m.header("Subject")) == _norm_subject(str(parsed.get("Subject", "")))
                            for m in members) and self._room_in(thread_id):
                joined = thread_id
        message_id = self.add_message(raw, labels=labels, date=time.time(), thread_id=joined)
        if joined is None:
            self.messages[message_id].thread_id = message_id  # Gmail starts a new thread
        return self.messages[message_id]

    def _relabel(self, message: StoredMessage, add, remove) -> None:
        for label in add:
            if label not in message.labels:
                message.labels.append(label)
        message.labels = [label for label in message.labels if label not in set(remove)]
        message.history_id = self._bump()
        self.history.append({"id": message.history_id, "labels": message.id})

    def _minimal(self, message: StoredMessage) -> dict:
        return {"id": message.id, "threadId": message.thread_id, "labelIds": list(message.labels),
                "historyId": str(message.history_id), "internalDate": str(message.internal_date),
                "sizeEstimate": len(message.raw), "snippet": message.text[:100]}

    def _format(self, message: StoredMessage, request: Request) -> dict:
        fmt = request.param("format", "full")
        out = self._minimal(message)
        if fmt == "raw":
            out["raw"] = b64(message.raw)
        elif fmt in ("metadata", "full"):
            wanted = {h.lower() for h in request.query.get("metadataHeaders", [])}
            headers = [{"name": k, "value": v} for k, v in message.headers if not wanted or k.lower() in wanted]
            out["payload"] = {"partId": "", "mimeType": message.mime_type, "filename": "", "headers": headers,
                              "body": {"size": len(message.raw)}}
        return out

    def _page(self, request: Request, items: list[dict], key: str) -> Reply:
        size = min(int(request.param("maxResults", "100")), 500)
        start = int(request.param("pageToken", "0") or 0)
        page = items[start:start + size]
        body: dict = {key: page, "resultSizeEstimate": len(items)}
        if start + size < len(items):
            body["nextPageToken"] = str(start + size)
        if not page:
            body.pop(key)
        return Reply.json(body)

    def _search(self, request: Request) -> list[StoredMessage]:
        label_ids = request.query.get("labelIds", [])
        spam_trash = request.param("includeSpamTrash") == "true" or bool({"SPAM", "TRASH"} & set(label_ids))
        found = []
        for message in self.messages.values():
            if label_ids and not set(label_ids) <= set(message.labels):
                continue
            if not spam_trash and {"SPAM", "TRASH"} & set(message.labels):
                continue
            if _matches(message, request.param("q", "") or ""):
                found.append(message)
        self.queries.append(request.param("q", "") or "")
        found.sort(key=lambda m: m.internal_date, reverse=True)
        return found

    def _history(self, request: Request) -> Reply:
        start = int(request.param("startHistoryId", "0"))
        if start < self.history_floor:
            return _error(404, "Requested entity was not found.", "notFound", "NOT_FOUND")
        label = request.param("labelId")
        records = []
        for entry in self.history:
            if entry["id"] <= start or "added" not in entry:
                continue
            message = self.messages.get(entry["added"])
            if message is None or (label and label not in message.labels):
                continue
            ref = {"id": message.id, "threadId": message.thread_id, "labelIds": list(message.labels)}
            records.append({"id": str(entry["id"]), "messages": [{"id": message.id, "threadId": message.thread_id}],
                            "messagesAdded": [{"message": ref}]})
        size = min(int(request.param("maxResults", "100")), 500)
        offset = int(request.param("pageToken", "0") or 0)
        body: dict = {"historyId": str(self.history_id)}
        if records[offset:offset + size]:
            body["history"] = records[offset:offset + size]
        if offset + size < len(records):
            body["nextPageToken"] = str(offset + size)
        return Reply.json(body)


def _quota_cost(method: str, path: str) -> int:
    """Quota units of a Gmail method (the Gmail API's "Usage limits" table)."""
    parts = [p for p in path.split("/") if p]
    kind = parts[0] if parts else ""
    if kind == "profile":
        return 1
    if kind == "history":
        return 2
    if kind == "labels":
        return 1 if method == "GET" else 5
    if kind == "threads":
        return 10
    if kind == "drafts":
        return 5 if method == "GET" else 10
    if kind == "messages":
        if parts[-1:] == ["send"]:
            return 100
        if parts[-1:] == ["batchModify"]:
            return 50
        return 5
    return 5


def _plain_text(parsed) -> str:
    try:
        part = parsed.get_body(("plain", "html"))
        return part.get_content() if part is not None else ""
    except Exception:  # noqa: BLE001
        return ""


_TERM = re.compile(r'(-?)(?:(\w+):)?("[^"]*"|\([^)]*\)|\S+)')
# Gmail's search box (support.google.com/mail/answer/7190): terms are ANDed; "OR" between
# two terms, or braces around several, match any of them.
_TOKEN = re.compile(r'\{[^}]*\}|-?(?:\w+:)?(?:"[^"]*"|\([^)]*\)|[^\s{}]+)')


def _matches(message: StoredMessage, q: str) -> bool:
    groups: list[list[str]] = []  # ANDed groups of ORed terms
    join = False
    for token in _TOKEN.findall(q):
        if token == "OR":
            join = True
            continue
        terms = _split_braces(token) if token.startswith("{") else [token]
        if join and groups:
            groups[-1].extend(terms)
        else:
            groups.append(terms)
        join = False
    return all(any(_hit(message, term) for term in group) for group in groups)


def _split_braces(token: str) -> list[str]:
    return [m.group(0) for m in re.finditer(r'-?(?:\w+:)?(?:"[^"]*"|\([^)]*\)|\S+)', token[1:-1])]


def _hit(message: StoredMessage, term: str) -> bool:
    for negate, operator, value in _TERM.findall(term):
        value = value.strip('"()').strip('"').lower()
        if _term(message, (operator or "").lower(), value) == bool(negate):
            return False
    return True


def _term(message: StoredMessage, operator: str, value: str) -> bool:
    if operator == "list":
        # Gmail's list: matches the List-Id header only (list:info@example.com finds mail
        # whose List-Id is <info.example.com>), never To or Cc.
        dotted = value.replace("@", ".")
        return dotted in message.header("List-Id").lower()
    if operator in ("to", "cc"):
        return value in message.header(operator).lower()
    if operator == "deliveredto":
        return any(value in v.lower() for k, v in message.headers if k.lower() == "delivered-to")
    if operator in ("after", "before"):
        if value.isdigit():
            stamp = int(value) * 1000
        else:
            from datetime import datetime, timezone

            stamp = int(datetime.strptime(value, "%Y/%m/%d").replace(tzinfo=timezone.utc).timestamp() * 1000)
        return message.internal_date >= stamp if operator == "after" else message.internal_date < stamp
    if operator == "from":
        return value in message.header("From").lower()
    if operator == "subject":
        # subject: matches the Subject header only (support.google.com/mail/answer/7190).
        return value in message.header("Subject").lower()
    if operator == "is":
        return {"unread": "UNREAD", "starred": "STARRED"}.get(value, value.upper()) in message.labels
    if operator == "has":
        return value == "attachment" and message.mime_type == "multipart/mixed"
    if operator == "rfc822msgid":
        return value.strip("<>") in message.header("Message-ID").lower()
    if operator in ("in", "label"):
        value = {"drafts": "draft", "chats": "chat"}.get(value, value)  # in:drafts is the DRAFT label
        return value == "anywhere" or value.upper() in message.labels
    # A bare term matches the sender and recipients too, not only subject and body (a search
    # for a reporter's name finds their mail; support.google.com/mail/answer/7190).
    text = "\n".join([message.header("From"), message.header("To"), message.header("Cc"),
                      message.header("Subject"), message.text]).lower()
    return value in text


def _multipart_related(request: Request) -> tuple[dict, bytes] | None:
    """(JSON metadata, message bytes) of a multipart/related upload body, or None."""
    match = re.search(r'boundary="?([^";]+)"?', request.headers.get("content-type", ""))
    if not request.headers.get("content-type", "").startswith("multipart/related") or match is None:
        return None
    delimiter = b"--" + match.group(1).encode()
    pieces = request.body.split(delimiter)
    parts = []
    for piece in pieces[1:]:
        if piece.startswith(b"--"):
            break
        head, _sep, content = piece.partition(b"\r\n\r\n")
        parts.append((head.lower(), content[:-2] if content.endswith(b"\r\n") else content))
    if len(parts) != 2 or b"application/json" not in parts[0][0] or b"message/rfc822" not in parts[1][0]:
        return None
    return json.loads(parts[0][1] or b"{}"), parts[1][1]


def _too_large(limit: int) -> Reply:
    return _error(413, f"Media larger than the limit of {limit} bytes (35 MB).", "uploadTooLarge",
                  "FAILED_PRECONDITION")


def _error(status: int, message: str, reason: str, state: str | None = None) -> Reply:
    return Reply.json({"error": {"code": status, "message": message,
                                 "errors": [{"message": message, "domain": "global", "reason": reason}],
                                 "status": state or "FAILED_PRECONDITION"}}, status)
