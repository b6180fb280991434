"""A loopback (HTTPS) emulator of a Microsoft identity authority and Microsoft Graph mail.

Authority, under ``/<tenant>``: the OpenID configuration document
(``/v2.0/.well-known/openid-configuration``), the device-code endpoint, the authorize
endpoint (redirects to the loopback ``redirect_uri`` with ``code`` and ``state``) and the
token endpoint (device_code with ``authorization_pending`` until the user approves,
authorization_code with PKCE and the ID token's nonce, refresh_token with
``invalid_grant`` / AADSTS700082 when revoked). Tokens come with an ID token and
``client_info`` as msal expects.

Graph, under ``/v1.0/me``: mailFolders (counts, childFolders, well-known names, create,
rename, delete), messages (``$filter``, ``$search``, ``$top``/``$skip``, ``$orderby``,
``$count``, ``$select`` — ``internetMessageHeaders`` only when selected —, get, ``$value``,
PATCH, move, DELETE, createReply/createReplyAll/createForward, send, attachments),
message delta per folder (``changeType=created``, ``$deltatoken`` in ``@odata.deltaLink``,
410 for a forgotten token), ``outlook/masterCategories`` (the ``preset0..24`` colours;
a display name cannot be changed) and ``$batch`` (20 requests, 4 MB, ``dependsOn``, 424).
The mailbox takes 4 concurrent requests (a batch's independent requests count each);
past that it answers 429 ``MailboxConcurrency``, as Outlook does. Every Graph call needs a live bearer token; the
``Prefer: IdType="ImmutableId"`` header is recorded (tests assert it was sent).
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
from datetime import datetime, timezone
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import format_datetime, getaddresses, parsedate_to_datetime
from urllib.parse import parse_qs, urlencode

from tests.archives.fakehttp import FakeHttpServer, Reply, Request

TENANT = "contoso-tenant"
#: How long a $batch waits for the overlap a test asked for (batch_overlap): never reached when the
#: client sends batches at once; a client that sends them one by one is answered after it and fails.
OVERLAP_BOUND = 30.0
WELL_KNOWN = {"inbox": "Inbox", "drafts": "Drafts", "sentitems": "Sent Items", "deleteditems": "Deleted Items",
              "junkemail": "Junk Email", "archive": "Archive"}
RESERVED = {"openid", "profile", "offline_access", "email"}
WRITE_SCOPES = {"Mail.ReadWrite"}
LARGE_ATTACHMENT = 3 * 1024 * 1024  # from here on Graph wants an upload session
BATCH_LIMIT = 20  # JSON batching: at most 20 requests a batch
MAX_REQUEST_BYTES = 4 * 1024 * 1024  # Graph refuses a request body over 4 MB


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _topic(subject: str) -> str:
    """Exchange's ConversationTopic: the subject without reply and forward prefixes."""
    return re.sub(r"^(\s*(re|fw|fwd|aw|wg|sv)\s*(\[\d+\])?\s*:\s*)+", "", subject or "", flags=re.I).strip().lower()


def _ids(value: str) -> list[str]:
    return re.findall(r"<[^<>\s]+>", value or "")


@dataclass
class GraphMessage:
    id: str
    folder: str
    conversation_id: str
    received: float
    subject: str
    sender: tuple[str, str]
    to: list[tuple[str, str]]
    cc: list[tuple[str, str]]
    message_id: str | None
    body: str
    raw: bytes | None = None  # None: rendered from the fields (drafts and sent mail)
    headers: list[tuple[str, str]] = field(default_factory=list)
    is_read: bool = False
    flag: str = "notFlagged"
    categories: list[str] = field(default_factory=list)
    is_draft: bool = False
    has_attachments: bool = False
    attachments: list[dict] = field(default_factory=list)
    sent: float | None = None
    seq: int = 0

    def header(self, name: str) -> str:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return ""


class MicrosoftEmulator:
    def __init__(self, certificate, *, client_id: str = "11111111-2222-3333-4444-555555555555",
                 address: str = "me@contoso.com") -> None:
        self.client_id = client_id
        self.address = address
        self.certificate = certificate
        self.lock = threading.RLock()
        self.searches: list[str] = []  # every $search value received, as sent
        self.server = FakeHttpServer(self.app, ssl_context=certificate.server_context())
        self.folders: dict[str, dict] = {}
        self.messages: dict[str, GraphMessage] = {}
        self.categories: dict[str, dict] = {}
        self.access_tokens: dict[str, tuple[float, frozenset[str]]] = {}
        self.refresh_tokens: dict[str, frozenset[str]] = {}
        self.device_codes: dict[str, dict] = {}
        self.codes: dict[str, dict] = {}
        self.token_calls: list[str] = []
        self.secrets_issued: list[str] = []
        self.token_lifetime = 3599
        self.token_delay = 0.0
        self.auto_approve = False  # the user approves every device code at once (CLI tests)
        # What the tenant does to a device-code sign-in once the user has signed in at the page:
        # None, "conditional_access" (a policy blocks the device-code flow, AADSTS53003) or
        # "admin_consent" (the app needs an admin's consent, AADSTS90094).
        self.device_code_refusal: str | None = None
        self.deltas: dict[str, dict] = {}
        self.seq = 0
        self.graph_requests: list[Request] = []
        self.upload_sessions: dict[str, dict] = {}
        self.concurrency_limit = 4  # Outlook: 4 concurrent requests per app and mailbox
        self.in_flight = 0
        self.max_in_flight = 0
        self.over_concurrency = 0  # requests refused for going over the limit
        self.graph_delay = 0.0  # seconds Graph spends on each request (outside the lock)
        #: A $batch is answered only once this many Graph requests came at once (in flight or refused; at most
        #: OVERLAP_BOUND s): a test of overlapping batches gets its overlap on a loaded machine too,
        #: where a fixed graph_delay let the client's threads start one after another.
        self.batch_overlap = 0
        self.overlapped = threading.Condition(self.lock)
        self.batched_requests: list[Request] = []  # the requests inside $batch calls
        self.delete_after_listing: set[str] = set()  # deleted by "another client" once a listing named them
        self.form_posts: list[dict] = []  # answers sent as form_post pages (what the browser will POST)
        root = self._folder("msgfolderroot", "Top of Information Store", None)
        for name, display in WELL_KNOWN.items():
            self.folders[self._folder(name, display, root)]["wellKnownName"] = name

    # -- ids and helpers -------------------------------------------------------------------
    def _immutable_id(self, prefix: str) -> str:
        return f"AAkAL{prefix}" + b64(secrets.token_bytes(18))

    def _folder(self, well_known: str | None, name: str, parent: str | None) -> str:
        folder_id = self._immutable_id("F")
        self.folders[folder_id] = {"id": folder_id, "displayName": name, "parentFolderId": parent,
                                   "wellKnownName": well_known}
        return folder_id

    def folder_id(self, name: str) -> str:
        if name in self.folders:
            return name
        for folder in self.folders.values():
            if folder.get("wellKnownName") == name:
                return folder["id"]
        raise KeyError(name)

    def start(self) -> "MicrosoftEmulator":
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def authority(self) -> str:
        return f"{self.base_url}/{TENANT}"

    def account_settings(self, **extra) -> dict:
        return {"kind": "microsoft", "client_id": self.client_id, "address": self.address,
                "authority": self.authority, "graph_base": self.base_url + "/v1.0",
                "ca_file": str(self.certificate.cert), "timeout": 5, **extra}

    # -- test helpers -------------------------------------------------------------------------
    def add_message(self, raw: bytes, *, folder: str = "inbox", read: bool = False, received: float | None = None,
                    categories=(), flag: str = "notFlagged") -> str:
        with self.lock:
            parsed = BytesParser(policy=policy.default).parsebytes(raw)
            headers = []
            for name, value in parsed.items():
                headers.append((name, " ".join(str(value).split())))
            if received is None:
                try:
                    received = parsedate_to_datetime(parsed["Date"]).timestamp()
                except (TypeError, ValueError):
                    received = time.time()
            senders = getaddresses([str(parsed.get("From", ""))])
            body_part = parsed.get_body(("plain", "html"))
            message = GraphMessage(
                id=self._immutable_id("M"), folder=self.folder_id(folder), conversation_id="",
                received=received, subject=str(parsed.get("Subject", "")),
                sender=senders[0] if senders else ("", ""),
                to=getaddresses([str(v) for v in parsed.get_all("To", [])]),
                cc=getaddresses([str(v) for v in parsed.get_all("Cc", [])]),
                message_id=(_ids(str(parsed.get("Message-ID", ""))) or [None])[0],
                body=body_part.get_content() if body_part is not None else "", raw=raw, headers=headers,
                is_read=read, flag=flag, categories=list(categories),
                has_attachments=any(True for _ in parsed.iter_attachments()) if parsed.is_multipart() else False)
            message.conversation_id = self._conversation_for(message) or "AAQk" + b64(secrets.token_bytes(12))
            self._store(message)
            return message.id

    def _store(self, message: GraphMessage) -> None:
        self.seq += 1
        message.seq = self.seq
        self.messages[message.id] = message

    def _conversation_for(self, new: GraphMessage) -> str | None:
        """Exchange's conversations: a message joins the conversation of a message it
        references (or that references it) only when their conversation topics (the
        subject without RE:/FW: prefixes) match; a reply retitled "(CVE-… assigned)"
        starts a conversation of its own."""
        refs = set(_ids(new.header("References")) + _ids(new.header("In-Reply-To")))
        topic = _topic(new.subject)
        for message in sorted(self.messages.values(), key=lambda m: m.received):
            linked = (message.message_id and message.message_id in refs) or \
                (new.message_id and new.message_id in _ids(message.header("References")))
            if linked and _topic(message.subject) == topic:
                return message.conversation_id
        return None

    def add_category(self, name: str, color: str = "preset0") -> str:
        with self.lock:
            category_id = secrets.token_hex(4) + "-0000-0000-0000-" + secrets.token_hex(6)
            self.categories[category_id] = {"id": category_id, "displayName": name, "color": color}
            return category_id

    def issue(self, scopes, *, expires_in: float | None = None) -> tuple[str, str]:
        with self.lock:
            # Real sizes: a Graph access token is a signed JWT of about 1.5-2.5 KB and an Entra
            # refresh token an opaque string of about 1-1.5 KB (Microsoft identity platform,
            # "Access tokens" and "Refresh tokens"), so msal's serialized cache holds 4-7 KB.
            access = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9." + secrets.token_urlsafe(1250)
            refresh = "0.AXEA" + secrets.token_urlsafe(850)
            self.secrets_issued += [access, refresh]
            self.access_tokens[access] = (time.time() + (self.token_lifetime if expires_in is None else expires_in),
                                          frozenset(scopes))
            self.refresh_tokens[refresh] = frozenset(scopes)
            return access, refresh

    def expire_access_tokens(self) -> None:
        with self.lock:
            self.access_tokens = {t: (0.0, s) for t, (_e, s) in self.access_tokens.items()}

    def revoke_refresh_tokens(self) -> None:
        with self.lock:
            self.refresh_tokens.clear()
            self.access_tokens.clear()

    def approve(self, user_code: str) -> None:
        with self.lock:
            for entry in self.device_codes.values():
                if entry["user_code"] == user_code:
                    entry["approved"] = True

    def throttle(self, times: int | None = 1, *, status: int = 429, retry_after: str | None = None,
                 match="/v1.0/me") -> None:
        """Answer the next ``times`` Graph requests (None: every one) matching ``match`` as
        Graph throttles (learn.microsoft.com/graph/throttling): 429 ``TooManyRequests``, or
        503 / 504 / 502, with a ``Retry-After`` only when given, as Graph sometimes omits it."""
        code = {429: "TooManyRequests", 503: "ServiceNotAvailable", 504: "GatewayTimeout",
                502: "BadGateway"}.get(status, "UnknownError")
        reply = _graph_error(status, code, "Application is over its MailboxConcurrency limit."
                             if status == 429 else "The service is temporarily unavailable.")
        if retry_after is not None:
            reply.headers["Retry-After"] = retry_after
        self.server.fail(match, reply, times)

    def forget_deltas(self) -> None:
        with self.lock:
            self.deltas.clear()

    def snapshot(self):
        with self.lock:
            return (sorted((m.id, m.folder, m.is_read, m.flag, tuple(m.categories), m.is_draft, m.subject, m.body)
                           for m in self.messages.values()),
                    sorted(json.dumps(f, sort_keys=True) for f in self.folders.values()),
                    sorted(json.dumps(c, sort_keys=True) for c in self.categories.values()))

    # -- dispatch -----------------------------------------------------------------------------------
    def app(self, request: Request) -> Reply:
        path = request.path
        prefix = f"/{TENANT}"
        if path == f"{prefix}/v2.0/.well-known/openid-configuration":
            return Reply.json(self._openid_configuration())
        if path == f"{prefix}/oauth2/v2.0/devicecode":
            return self._devicecode(request)
        if path == f"{prefix}/oauth2/v2.0/authorize":
            return self._authorize(request)
        if path == f"{prefix}/oauth2/v2.0/token":
            return self._token(request)
        if path.startswith("/api/v2.0/") and "/AttachmentSessions(" in path:
            with self.lock:
                return self._upload(request)
        if path.startswith("/v1.0/me") or path == "/v1.0/$batch":
            with self.lock:
                self.graph_requests.append(request)
                if self.in_flight >= self.concurrency_limit:
                    self.over_concurrency += 1
                    self.overlapped.notify_all()
                    return _concurrency_error()
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                self.overlapped.notify_all()
                if path == "/v1.0/$batch" and self.batch_overlap:  # a refused request came at once too
                    self.overlapped.wait_for(lambda: self.max_in_flight + self.over_concurrency >= self.batch_overlap,
                                             OVERLAP_BOUND)
            try:
                if self.graph_delay:
                    time.sleep(self.graph_delay)  # Graph's own time per request, outside the lock
                scopes = self._bearer(request)
                if isinstance(scopes, Reply):
                    return scopes
                with self.lock:
                    if path == "/v1.0/$batch":
                        return self._batch(request)
                    return self._graph(request, path[len("/v1.0/me"):], scopes)
            finally:
                with self.lock:
                    self.in_flight -= 1
        return Reply.json({"error": "not_found"}, 404)

    # -- JSON batching (learn.microsoft.com/graph/json-batching) --------------------------------------
    def _batch(self, request: Request) -> Reply:
        """``POST /$batch``: at most 20 requests, a body of at most 4 MB. Requests without
        ``dependsOn`` run at once on the mailbox, so each counts against the 4 concurrent
        requests a mailbox takes (the excess answers 429); a ``dependsOn`` chain runs one
        after the other, and a request whose dependency failed answers 424. Bodies of
        non-JSON answers (``$value``) come base64-encoded."""
        if len(request.body) > MAX_REQUEST_BYTES:
            return _graph_error(413, "RequestEntityTooLarge", "The request is larger than 4 MB.")
        requests = (json.loads(request.body) if request.body else {}).get("requests") or []
        if not requests or len(requests) > BATCH_LIMIT:
            return _graph_error(400, "BadRequest", f"Number of requests exceeds the limit of {BATCH_LIMIT}."
                                if requests else "The batch has no requests.")
        free = self.concurrency_limit - self.in_flight + 1  # this batch's own slot is in in_flight
        status: dict[str, int] = {}
        responses = []
        for item in requests:
            depends = item.get("dependsOn") or []
            if any(status.get(d, 424) >= 400 for d in depends):
                reply = _graph_error(424, "FailedDependency", "A dependency of this request failed.")
            elif not depends and free <= 0:
                self.over_concurrency += 1
                reply = _concurrency_error()
            else:
                if not depends:
                    free -= 1
                reply = self._inner(request, item)
            status[str(item.get("id"))] = reply.status
            content_type = reply.headers.get("Content-Type", "")
            if content_type.startswith("application/json"):
                body: object = json.loads(reply.body) if reply.body else None
            else:
                body = base64.b64encode(reply.body).decode("ascii") if reply.body else None
            responses.append({"id": item.get("id"), "status": reply.status, "headers": reply.headers,
                              **({"body": body} if body is not None else {})})
        return Reply.json({"responses": responses})

    def _inner(self, outer: Request, item: dict) -> Reply:
        url = str(item.get("url") or "")
        path, _, query = url.partition("?")
        if not path.startswith("/me"):
            return _graph_error(400, "BadRequest", f"Unsupported batch url {url!r}.")
        body = item.get("body")
        inner = Request(method=str(item.get("method") or "GET").upper(), path="/v1.0" + path,
                        query=parse_qs(query, keep_blank_values=True),
                        headers={**outer.headers, **{k.lower(): v for k, v in (item.get("headers") or {}).items()}},
                        body=json.dumps(body).encode() if body is not None else b"", host=outer.host)
        self.batched_requests.append(inner)
        scopes = self._bearer(inner)
        if isinstance(scopes, Reply):
            return scopes
        return self._graph(inner, path[len("/me"):], scopes)

    # -- authority ------------------------------------------------------------------------------------
    def _openid_configuration(self) -> dict:
        base = self.authority
        return {"issuer": f"{base}/v2.0", "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                "token_endpoint": f"{base}/oauth2/v2.0/token",
                "device_authorization_endpoint": f"{base}/oauth2/v2.0/devicecode",
                "jwks_uri": f"{base}/discovery/v2.0/keys", "response_types_supported": ["code", "id_token"],
                "scopes_supported": ["openid", "profile", "email", "offline_access"],
                "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt"],
                "subject_types_supported": ["pairwise"], "id_token_signing_alg_values_supported": ["RS256"],
                "tenant_region_scope": "EU"}

    def _form(self, request: Request) -> dict:
        return {k: v[0] for k, v in parse_qs(request.body.decode()).items()}

    def _devicecode(self, request: Request) -> Reply:
        form = self._form(request)
        if form.get("client_id") != self.client_id:
            return self._aad_error("unauthorized_client", 700016, "Application not found in the directory.")
        device_code, user_code = "DAQAB" + secrets.token_urlsafe(30), secrets.token_hex(4).upper()
        self.secrets_issued.append(device_code)
        self.device_codes[device_code] = {"user_code": user_code, "approved": self.auto_approve,
                                          "scopes": self._scopes(form.get("scope", ""))}
        verify = "https://microsoft.com/devicelogin"
        return Reply.json({"user_code": user_code, "device_code": device_code, "verification_uri": verify,
                           "expires_in": 900, "interval": 1,
                           "message": f"To sign in, use a web browser to open the page {verify} and enter the "
                                      f"code {user_code} to authenticate."})

    def _authorize(self, request: Request) -> Reply:
        q = {k: v[0] for k, v in request.query.items()}
        redirect = q.get("redirect_uri", "")
        if q.get("client_id") != self.client_id or not re.match(r"^http://localhost:\d+$", redirect):
            return Reply.text("AADSTS50011: redirect URI mismatch", 400)
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return Reply.text("AADSTS9002325: PKCE required", 400)
        code = "0.AQ" + secrets.token_urlsafe(30)
        self.secrets_issued.append(code)
        self.codes[code] = {"redirect_uri": redirect, "challenge": q["code_challenge"], "nonce": q.get("nonce"),
                            "scopes": self._scopes(q.get("scope", ""))}
        answer = {"code": code, "state": q.get("state", ""), "session_state": "x"}
        if q.get("response_mode") == "form_post":
            # The Microsoft identity platform's form_post: a page whose form the browser POSTs to
            # the redirect URI (OAuth 2.0 Form Post Response Mode), not a 302 with a query.
            self.form_posts.append(answer)
            fields = "".join(f'<input type="hidden" name="{k}" value="{v}"/>' for k, v in answer.items())
            page = (f'<html><body onload="document.forms[0].submit()"><form method="POST" name="hiddenform" '
                    f'action="{redirect}">{fields}</form></body></html>')
            return Reply.text(page, 200, "text/html; charset=utf-8")
        return Reply(302, b"", {"Location": f"{redirect}?{urlencode(answer)}"})

    def _scopes(self, text: str) -> frozenset[str]:
        return frozenset(s for s in text.split() if s not in RESERVED)

    def _aad_error(self, error: str, code: int, text: str, status: int = 400, suberror: str | None = None) -> Reply:
        return Reply.json({"error": error, "error_description": f"AADSTS{code}: {text}\r\nTrace ID: x",
                           "error_codes": [code], "timestamp": iso(time.time()), "trace_id": "t",
                           "correlation_id": "c", **({"suberror": suberror} if suberror else {})}, status)

    def _tokens(self, scopes: frozenset[str], nonce: str | None = None) -> dict:
        access, refresh = self.issue(scopes)
        now = int(time.time())
        oid, tid = "00000000-0000-0000-66f3-3332eca7ea81", "9188040d-6c67-4c5b-b112-36a304b66dad"
        claims = {"iss": f"{self.authority}/v2.0", "aud": self.client_id, "iat": now, "nbf": now, "exp": now + 3600,
                  "sub": "subject", "oid": oid, "tid": tid, "preferred_username": self.address, "name": "Me",
                  "ver": "2.0", "aio": secrets.token_urlsafe(200), "rh": "0.AXEA" + secrets.token_urlsafe(40),
                  "uti": secrets.token_urlsafe(16)}
        if nonce:
            claims["nonce"] = nonce
        id_token = ".".join([b64(json.dumps({"typ": "JWT", "alg": "RS256", "kid": "k"}).encode()),
                             b64(json.dumps(claims).encode()), b64(secrets.token_bytes(256))])  # an RS256 signature
        return {"token_type": "Bearer", "scope": " ".join(sorted(scopes)), "expires_in": self.token_lifetime,
                "ext_expires_in": self.token_lifetime, "access_token": access, "refresh_token": refresh,
                "id_token": id_token, "client_info": b64(json.dumps({"uid": oid, "utid": tid}).encode())}

    def _token(self, request: Request) -> Reply:
        form = self._form(request)
        grant = form.get("grant_type", "")
        with self.lock:
            self.token_calls.append(grant)
        if self.token_delay:
            time.sleep(self.token_delay)
        if form.get("client_id") != self.client_id:
            return self._aad_error("unauthorized_client", 700016, "Application not found in the directory.")
        with self.lock:
            if grant == "urn:ietf:params:oauth:grant-type:device_code":
                entry = self.device_codes.get(form.get("device_code", ""))
                if entry is None:
                    return self._aad_error("expired_token", 70020, "The provided value for the input parameter "
                                                                   "'device_code' is not valid.")
                if not entry["approved"]:
                    return self._aad_error("authorization_pending", 70016, "OAuth 2.0 device flow error. "
                                                                           "Authorization is pending.")
                del self.device_codes[form["device_code"]]
                if self.device_code_refusal == "conditional_access":
                    return self._aad_error("invalid_grant", 53003, "Access has been blocked by Conditional "
                                           "Access policies. The access policy does not allow token issuance.",
                                           suberror="message_only")
                if self.device_code_refusal == "admin_consent":
                    return self._aad_error("invalid_grant", 90094, "The grant requires admin permission.",
                                           suberror="consent_required")
                return Reply.json(self._tokens(entry["scopes"]))
            if grant == "authorization_code":
                entry = self.codes.pop(form.get("code", ""), None)
                if entry is None or entry["redirect_uri"] != form.get("redirect_uri"):
                    return self._aad_error("invalid_grant", 70000, "The provided authorization code is invalid.")
                if b64(hashlib.sha256(form.get("code_verifier", "").encode()).digest()) != entry["challenge"]:
                    return self._aad_error("invalid_grant", 501481, "The Code_Verifier does not match.")
                return Reply.json(self._tokens(entry["scopes"], entry["nonce"]))
            if grant == "refresh_token":
                scopes = self.refresh_tokens.pop(form.get("refresh_token", ""), None)
                if scopes is None:
                    return self._aad_error("invalid_grant", 700082, "The refresh token has expired due to "
                                                                    "inactivity.")
                return Reply.json(self._tokens(self._scopes(form.get("scope", "")) or scopes))
        return self._aad_error("unsupported_grant_type", 70003, "The app requested an unsupported grant type.")

    def _bearer(self, request: Request):
        header = request.headers.get("authorization", "")
        token = header[7:] if header.startswith("Bearer ") else ""
        with self.lock:
            entry = self.access_tokens.get(token)
        if entry is None or entry[0] < time.time():
            return Reply(401, json.dumps({"error": {"code": "InvalidAuthenticationToken",
                                                    "message": "Lifetime validation failed, the token is expired.",
                                                    "innerError": {"date": iso(time.time())}}}).encode(),
                         {"Content-Type": "application/json",
                          "WWW-Authenticate": 'Bearer realm="", error="invalid_token"'})
        return entry[1]

    # -- Graph ----------------------------------------------------------------------------------------
    def _graph(self, request: Request, path: str, scopes: frozenset[str]) -> Reply:
        method = request.method
        body = json.loads(request.body) if request.body else {}
        parts = [p for p in path.split("/") if p]
        if method != "GET" and not (scopes & WRITE_SCOPES) and parts[:1] != ["outlook"] \
                and not (parts[-1:] == ["send"] and "Mail.Send" in scopes):
            return _graph_error(403, "ErrorAccessDenied", "Access is denied. Check credentials and try again.")
        if parts[:2] == ["outlook", "masterCategories"]:
            return self._categories(method, parts[2:], body, scopes)
        if parts and parts[0] == "mailFolders":
            return self._folders(request, method, parts[1:], body)
        if parts and parts[0] == "messages":
            return self._messages(request, method, parts[1:], body)
        return _graph_error(400, "BadRequest", f"Resource not found for the segment '{parts[0] if parts else ''}'.")

    def _categories(self, method: str, parts: list[str], body: dict, scopes) -> Reply:
        if method != "GET" and "MailboxSettings.ReadWrite" not in scopes:
            return _graph_error(403, "ErrorAccessDenied", "Access is denied. Check credentials and try again.")
        if not parts and method == "GET":
            return Reply.json({"@odata.context": "...", "value": list(self.categories.values())})
        if not parts and method == "POST":
            if any(c["displayName"].lower() == str(body.get("displayName", "")).lower()
                   for c in self.categories.values()):
                return _graph_error(409, "ErrorItemConflict", "The category already exists.")
            category_id = self.add_category(str(body["displayName"]), str(body.get("color", "none")))
            return Reply.json(self.categories[category_id], 201)
        category = self.categories.get(parts[0]) if parts else None
        if category is None:
            return _graph_error(404, "ErrorItemNotFound", "The specified object was not found in the store.")
        if method == "PATCH":
            if "displayName" in body:
                return _graph_error(400, "ErrorInvalidRequest", "The displayName of a category cannot be changed.")
            category.update({k: v for k, v in body.items() if k == "color"})
            return Reply.json(category)
        if method == "DELETE":
            del self.categories[parts[0]]
            return Reply(204)
        return Reply.json(category)

    def _folder_json(self, folder: dict) -> dict:
        members = [m for m in self.messages.values() if m.folder == folder["id"]]
        return {"id": folder["id"], "displayName": folder["displayName"], "parentFolderId": folder["parentFolderId"],
                "childFolderCount": sum(f["parentFolderId"] == folder["id"] for f in self.folders.values()),
                "unreadItemCount": sum(not m.is_read for m in members), "totalItemCount": len(members),
                "sizeInBytes": 0, "isHidden": False}

    def _folders(self, request: Request, method: str, parts: list[str], body: dict) -> Reply:
        root = self.folder_id("msgfolderroot")
        if not parts:
            if method == "POST":
                return self._create_folder(root, body)
            return self._paged(request, [self._folder_json(f) for f in self.folders.values()
                                         if f["parentFolderId"] == root])
        try:
            folder = self.folders[self.folder_id(parts[0])]
        except KeyError:
            if not parts[0].startswith("AAkAL"):  # neither a well-known name nor an ID: a display name
                return _graph_error(400, "ErrorInvalidIdMalformed", "Id is malformed.")
            return _graph_error(404, "ErrorItemNotFound", "The specified object was not found in the store.")
        rest = parts[1:]
        if not rest:
            if method == "PATCH":
                if folder.get("wellKnownName"):
                    return _graph_error(403, "ErrorAccessDenied", "A distinguished folder cannot be renamed.")
                folder["displayName"] = str(body.get("displayName") or folder["displayName"])
            elif method == "DELETE":
                if folder.get("wellKnownName"):
                    return _graph_error(403, "ErrorDeleteDistinguishedFolder", "Distinguished folders cannot be "
                                                                               "deleted.")
                del self.folders[folder["id"]]
                return Reply(204)
            return Reply.json(self._folder_json(folder))
        if rest == ["childFolders"]:
            if method == "POST":
                return self._create_folder(folder["id"], body)
            return self._paged(request, [self._folder_json(f) for f in self.folders.values()
                                         if f["parentFolderId"] == folder["id"]])
        if rest == ["messages"]:
            return self._list(request, [m for m in self.messages.values() if m.folder == folder["id"]])
        if rest == ["messages", "delta"]:
            return self._delta(request, folder["id"])
        return _graph_error(400, "BadRequest", "Unsupported segment.")

    def _create_folder(self, parent: str, body: dict) -> Reply:
        name = str(body.get("displayName") or "")
        if any(f["parentFolderId"] == parent and f["displayName"].lower() == name.lower()
               for f in self.folders.values()):
            return _graph_error(409, "ErrorFolderExists", "A folder with the specified name already exists.")
        folder_id = self._folder(None, name, parent)
        return Reply.json(self._folder_json(self.folders[folder_id]), 201)

    def _paged(self, request: Request, items: list, *, count: bool = False, limit: int | None = None,
               render=None) -> Reply:
        top = int(request.param("$top", "10"))
        skip = int(request.param("$skip", "0"))
        page = items[skip:skip + top]
        if render is not None:  # only the page is rendered, as a server would
            page = [render(item) for item in page]
        out: dict = {"value": page}
        if count:
            out["@odata.count"] = len(items)
        if skip + top < len(items) and (limit is None or skip + top < limit):
            query = {k: v[0] for k, v in request.query.items()}
            query["$skip"] = str(skip + top)
            out["@odata.nextLink"] = f"{self.base_url}{request.path}?{urlencode(query)}"
        return Reply.json(out)

    def _list(self, request: Request, messages: list[GraphMessage]) -> Reply:
        filt, search = request.param("$filter"), request.param("$search")
        if search:
            self.searches.append(search)
        if search and (filt or request.param("$orderby") or request.param("$skip")):
            return _graph_error(400, "ErrorInvalidUrlQuery", "The query parameter '$search' cannot be combined "
                                                            "with '$filter', '$orderby' or '$skip'.")
        orderby = request.param("$orderby")
        if filt and orderby and not _orderby_leads(filt, orderby):
            # Graph's documented quirk: with both, each $orderby property must also appear in
            # $filter, first and in the same order, or the whole request is refused.
            return _graph_error(400, "InefficientFilter", "The restriction or sort order is too complex "
                                                          "for this operation.")
        found = [m for m in messages if (not filt or _filter(m, filt)) and (not search or _search(m, search))]
        found.sort(key=lambda m: m.received, reverse=request.param("$orderby", "receivedDateTime desc")
                   .endswith("desc"))
        select = set((request.param("$select") or "").split(","))
        if not search:
            top, skip = int(request.param("$top", "10")), int(request.param("$skip", "0"))
            self._deleted_after_listing(found[skip:skip + top])
            return self._paged(request, found, count=request.param("$count") == "true",
                               render=lambda m: self._message_json(m, "internetMessageHeaders" in select))
        # $search pages through @odata.nextLink only, up to 1000 results, no count
        top = int(request.param("$top", "10"))
        offset = int(request.param("$skiptoken", "0"))
        listed = found[offset:offset + top]
        out: dict = {"value": [self._message_json(m, "internetMessageHeaders" in select) for m in listed]}
        self._deleted_after_listing(listed)
        if offset + top < min(len(found), 1000):
            query = {k: v[0] for k, v in request.query.items()}
            query["$skiptoken"] = str(offset + top)
            out["@odata.nextLink"] = f"{self.base_url}{request.path}?{urlencode(query)}"
        return Reply.json(out)

    def _deleted_after_listing(self, listed: list[GraphMessage]) -> None:
        for m in listed:  # another client deletes it between this list and the next get
            if m.id in self.delete_after_listing:
                self.delete_after_listing.discard(m.id)
                del self.messages[m.id]

    def _message_json(self, m: GraphMessage, headers: bool = False) -> dict:
        def recipient(pair):
            return {"emailAddress": {"name": pair[0], "address": pair[1]}}

        out = {"id": m.id, "createdDateTime": iso(m.received), "lastModifiedDateTime": iso(m.received),
               "receivedDateTime": iso(m.received), "sentDateTime": iso(m.sent or m.received),
               "hasAttachments": m.has_attachments, "internetMessageId": m.message_id, "subject": m.subject,
               "bodyPreview": m.body[:255], "importance": "normal", "parentFolderId": m.folder,
               "conversationId": m.conversation_id, "isRead": m.is_read, "isDraft": m.is_draft,
               "webLink": f"https://outlook.office365.com/owa/?ItemID={m.id}&exvsurl=1&viewmodel=ReadMessageItem",
               "body": {"contentType": "text", "content": m.body}, "from": recipient(m.sender),
               "sender": recipient(m.sender), "toRecipients": [recipient(p) for p in m.to],
               "ccRecipients": [recipient(p) for p in m.cc], "replyTo": [], "flag": {"flagStatus": m.flag},
               "categories": list(m.categories)}
        if headers and m.raw is not None:
            out["internetMessageHeaders"] = [{"name": k, "value": v} for k, v in m.headers]
        return out

    def _render(self, m: GraphMessage) -> bytes:
        if m.raw is not None:
            return m.raw
        msg = EmailMessage()
        msg["From"] = f"{m.sender[0]} <{m.sender[1]}>" if m.sender[0] else m.sender[1]
        if m.to:
            msg["To"] = ", ".join(a for _n, a in m.to)
        if m.cc:
            msg["Cc"] = ", ".join(a for _n, a in m.cc)
        msg["Subject"] = m.subject
        msg["Date"] = format_datetime(datetime.fromtimestamp(m.sent or m.received, tz=timezone.utc))
        msg["Message-ID"] = m.message_id
        for name, value in m.headers:
            if name in ("In-Reply-To", "References"):
                msg[name] = value
        msg.set_content(m.body)
        for attachment in m.attachments:
            maintype, _, subtype = attachment["contentType"].partition("/")
            msg.add_attachment(base64.b64decode(attachment["contentBytes"]), maintype=maintype, subtype=subtype,
                               filename=attachment["name"])
        return msg.as_bytes()

    def _messages(self, request: Request, method: str, parts: list[str], body: dict) -> Reply:
        if not parts:
            if method == "POST":  # a new draft
                return Reply.json(self._message_json(self._draft(None, "new", body)), 201)
            return self._list(request, list(self.messages.values()))
        message = self.messages.get(parts[0])
        if message is None:
            return _graph_error(404, "ErrorItemNotFound", "The specified object was not found in the store.")
        action = parts[1] if len(parts) > 1 else None
        if action is None and method == "GET":
            return Reply.json(self._message_json(message, "internetMessageHeaders" in
                                                 (request.param("$select") or "")))
        if action == "$value":
            return Reply(200, self._render(message), {"Content-Type": "text/plain"})
        if action is None and method == "PATCH":
            if "isRead" in body:
                message.is_read = bool(body["isRead"])
            if "flag" in body:
                message.flag = str(body["flag"].get("flagStatus", "notFlagged"))
            if "categories" in body:
                message.categories = list(body["categories"])
            if message.is_draft:
                if "body" in body:
                    message.body = str(body["body"].get("content", ""))
                if "subject" in body:
                    message.subject = str(body["subject"])
                for key, attr in (("toRecipients", "to"), ("ccRecipients", "cc")):
                    if key in body:
                        setattr(message, attr, [(r["emailAddress"].get("name", ""), r["emailAddress"]["address"])
                                                for r in body[key]])
            return Reply.json(self._message_json(message))
        if action is None and method == "DELETE":
            del self.messages[message.id]
            return Reply(204)
        if action == "move" and method == "POST":
            try:
                message.folder = self.folder_id(str(body.get("destinationId")))
            except KeyError:
                return _graph_error(404, "ErrorItemNotFound", "The destination folder was not found.")
            self.seq += 1
            message.seq = self.seq  # a delta of the destination folder reports it
            return Reply.json(self._message_json(message), 201)
        if action in ("createReply", "createReplyAll", "createForward") and method == "POST":
            return Reply.json(self._message_json(self._draft(message, action, body)), 201)
        if action == "attachments" and method == "POST" and parts[2:] == ["createUploadSession"]:
            return self._create_upload_session(message, body)
        if action == "attachments" and method == "POST":
            # "If the file size is under 3 MB, do a single POST on the attachments navigation
            # property" (Graph, "Attach large files to Outlook messages"): from 3 MB on, the
            # request is refused and an upload session is the way.
            if len(base64.b64decode(body.get("contentBytes") or "")) >= LARGE_ATTACHMENT:
                return _graph_error(413, "ErrorRequestEntityTooLarge", "The request is larger than the size "
                                    "allowed for a file attachment; use an upload session.")
            message.attachments.append({"name": body["name"], "contentType": body.get("contentType",
                                                                                       "application/octet-stream"),
                                        "contentBytes": body["contentBytes"]})
            message.has_attachments = True
            return Reply.json({"id": secrets.token_hex(8), **body}, 201)
        if action == "send" and method == "POST":
            if not message.is_draft:
                return _graph_error(400, "ErrorInvalidOperation", "Only drafts can be sent.")
            message.is_draft = False
            message.folder = self.folder_id("sentitems")
            message.sent = time.time()
            message.is_read = True
            return Reply(202)
        return _graph_error(400, "BadRequest", f"Unsupported {method} {'/'.join(parts)}")

    # -- upload sessions (Graph: attachment-createuploadsession, outlook-large-attachments) -----------
    def _create_upload_session(self, message: GraphMessage, body: dict) -> Reply:
        item = body.get("AttachmentItem") or {}
        if item.get("attachmentType") != "file" or not item.get("name") or not isinstance(item.get("size"), int):
            return _graph_error(400, "ErrorInvalidRequest", "AttachmentItem needs attachmentType, name and size.")
        if item["size"] > 150 * 1024 * 1024:
            return _graph_error(400, "ErrorAttachmentSizeLimitExceeded", "The attachment is over 150 MB.")
        session, token = secrets.token_urlsafe(12), secrets.token_urlsafe(48)
        self.secrets_issued.append(token)
        self.upload_sessions[session] = {"message": message.id, "item": item, "data": bytearray(), "token": token}
        # The real uploadUrl is on outlook.office.com, outside graph_base, and carries its own
        # authtoken: the PUTs go without the Authorization header.
        url = (f"{self.base_url}/api/v2.0/Users('{TENANT}')/Messages('{message.id}')/AttachmentSessions('{session}')"
               f"?authtoken={token}")
        return Reply.json({"@odata.context": "...#microsoft.graph.uploadSession", "uploadUrl": url,
                           "expirationDateTime": iso(time.time() + 900), "nextExpectedRanges": ["0-"]}, 201)

    def _upload(self, request: Request) -> Reply:
        match = re.search(r"AttachmentSessions\('([^']+)'\)$", request.path)
        session = self.upload_sessions.get(match.group(1)) if match else None
        if session is None or request.param("authtoken") != session["token"]:
            return _graph_error(404, "ErrorItemNotFound", "The upload session was not found.")
        if "authorization" in request.headers:  # the docs: do not send an Authorization header with these PUTs
            return _graph_error(401, "InvalidAuthenticationToken", "Authorization header not expected.")
        found = re.match(r"bytes (\d+)-(\d+)/(\d+)$", request.headers.get("content-range", ""))
        if request.method != "PUT" or not found:
            return _graph_error(400, "ErrorInvalidRequest", "A PUT with Content-Range is expected.")
        start, end, total = (int(g) for g in found.groups())
        chunk = request.body
        if start != len(session["data"]) or end - start + 1 != len(chunk) or total != session["item"]["size"]:
            return _graph_error(416, "ErrorInvalidRange", f"Expected the range {len(session['data'])}-.")
        if len(chunk) > 4 * 1024 * 1024:
            return _graph_error(413, "ErrorRequestEntityTooLarge", "A range is 4 MB at most.")
        session["data"] += chunk
        if len(session["data"]) < total:
            return Reply.json({"expirationDateTime": iso(time.time() + 900),
                               "nextExpectedRanges": [f"{len(session['data'])}-"]})
        message = self.messages.get(session["message"])
        del self.upload_sessions[match.group(1)]
        if message is None:
            return _graph_error(404, "ErrorItemNotFound", "The message was not found.")
        item = session["item"]
        message.attachments.append({"name": item["name"], "contentType": item.get("contentType",
                                                                                   "application/octet-stream"),
                                    "contentBytes": base64.b64encode(bytes(session["data"])).decode()})
        message.has_attachments = True
        attachment_id = "AAMkA" + secrets.token_hex(8)
        return Reply(201, b"", {"Location": f"{self.base_url}/api/v2.0/Users('{TENANT}')/Messages('{message.id}')"
                                            f"/Attachments('{attachment_id}')"})

    def _draft(self, source: GraphMessage | None, kind: str, body: dict) -> GraphMessage:
        def pairs(items):
            return [(r["emailAddress"].get("name", ""), r["emailAddress"]["address"]) for r in items or ()]

        me = ("Me", self.address)
        headers: list[tuple[str, str]] = []
        if source is None:
            to, cc, subject = pairs(body.get("toRecipients")), pairs(body.get("ccRecipients")), body.get("subject", "")
            conversation = "AAQk" + b64(secrets.token_bytes(12))
        else:
            subject = ("FW: " if kind == "createForward" else "RE: ") + source.subject
            conversation = source.conversation_id
            if kind == "createForward":
                to, cc = pairs((body.get("toRecipients") or [])), []
            else:
                to = [source.sender]
                cc = ([p for p in source.to + source.cc if p[1].lower() != self.address]
                      if kind == "createReplyAll" else [])
                if source.message_id:
                    refs = _ids(source.header("References")) + [source.message_id]
                    headers = [("In-Reply-To", source.message_id), ("References", " ".join(refs))]
        draft = GraphMessage(id=self._immutable_id("M"), folder=self.folder_id("drafts"),
                             conversation_id=conversation, received=time.time(), subject=subject, sender=me, to=to,
                             cc=cc, message_id=f"<{secrets.token_hex(12)}@contoso.prod.outlook.com>",
                             body=str((body.get("body") or {}).get("content") or body.get("comment") or ""),
                             headers=headers, is_read=True, is_draft=True)
        self._store(draft)
        return draft

    def _delta(self, request: Request, folder_id: str) -> Reply:
        """Messages created in (or moved into) the folder since the token; the first round
        returns what matches now (with ``$filter=receivedDateTime ge …``, usually nothing)."""
        token = request.param("$deltatoken")
        if token is not None:
            state = self.deltas.get(token)
            if state is None:
                return _graph_error(410, "SyncStateNotFound", "The sync state generation is out of date.")
        else:
            match = re.match(r"receivedDateTime (ge|gt) (\S+)$", request.param("$filter") or "")
            state = {"folder": folder_id, "seq": 0, "since": parse_iso(match.group(2)) if match else None}
        changed = sorted((m for m in self.messages.values() if m.folder == state["folder"] and m.seq > state["seq"]
                          and (state["since"] is None or m.received >= state["since"])), key=lambda m: m.seq)
        new_token = secrets.token_urlsafe(16)
        self.deltas[new_token] = {**state, "seq": self.seq}
        link = f"{self.base_url}/v1.0/me/mailFolders/{folder_id}/messages/delta?$deltatoken={new_token}"
        return Reply.json({"value": [self._message_json(m) for m in changed], "@odata.deltaLink": link})


def _concurrency_error() -> Reply:
    # Outlook's answer past 4 concurrent requests on a mailbox ("MailboxConcurrency").
    return _graph_error(429, "ApplicationThrottled", "Application is over its MailboxConcurrency limit.")


def _graph_error(status: int, code: str, message: str) -> Reply:
    return Reply.json({"error": {"code": code, "message": message,
                                 "innerError": {"date": iso(time.time()), "request-id": "r"}}}, status)


def _orderby_leads(expression: str, orderby: str) -> bool:
    """Whether the ``$orderby`` properties lead the ``$filter`` in the same order (Graph's rule
    for combining the two on messages; otherwise it answers ``InefficientFilter``)."""
    wanted = [part.split()[0] for part in orderby.split(",") if part.strip()]
    clauses = [clause.strip().split()[0] for clause in expression.split(" and ") if clause.strip()]
    return clauses[:len(wanted)] == wanted


def _filter(m: GraphMessage, expression: str) -> bool:
    for clause in re.split(r"\s+and\s+", expression.strip()):
        clause = clause.strip().strip("()")
        match = re.match(r"categories/any\(\w+:\w+ eq '(.*)'$", clause)
        if match:
            if match.group(1).replace("''", "'") not in m.categories:
                return False
            continue
        match = re.match(r"(\S+) (eq|ne|ge|gt|le|lt) (.+)$", clause)
        if not match:
            raise ValueError(f"unsupported $filter clause {clause!r}")
        prop, op, literal = match.groups()
        value: object
        if literal.startswith("'"):
            value = literal[1:-1].replace("''", "'")
        elif literal in ("true", "false"):
            value = literal == "true"
        else:
            value = parse_iso(literal)
        actual = {"receivedDateTime": m.received, "sentDateTime": m.sent or m.received, "isRead": m.is_read,
                  "isDraft": m.is_draft, "hasAttachments": m.has_attachments, "flag/flagStatus": m.flag,
                  "from/emailAddress/address": m.sender[1].lower(), "conversationId": m.conversation_id,
                  "parentFolderId": m.folder, "internetMessageId": m.message_id or ""}[prop]
        if isinstance(value, str) and prop == "from/emailAddress/address":
            value = value.lower()
        ok = {"eq": actual == value, "ne": actual != value, "ge": actual >= value, "gt": actual > value,
              "le": actual <= value, "lt": actual < value}[op]
        if not ok:
            return False
    return True


# A KQL term inside $search="…": an optional property, then a phrase in escaped quotes
# (\"two words\") or one word. Words are separate terms: from:Alice Smith is from:Alice
# AND Smith anywhere; OR between terms makes alternatives.
_KQL_TERM = re.compile(r'(?:(\w+):)?(?:\\"((?:[^"\\]|\\[\\"])*)\\"|(\S+))')


def _search(m: GraphMessage, expression: str) -> bool:
    # "Using $search on message collections": a bare value searches from, subject and body;
    # from:, subject: and body: restrict it to that property. The value is KQL.
    text = expression.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    fields = {"from": m.sender[1] + " " + m.sender[0], "subject": m.subject, "body": m.body}
    anywhere = "\n".join((m.subject, m.body, m.sender[1], m.sender[0]))
    alternatives: list[list[tuple[str, str]]] = [[]]
    for match in _KQL_TERM.finditer(text):
        prop, phrase, word = match.groups()
        if prop is None and phrase is None and word in ("AND", "OR"):
            if word == "OR":
                alternatives.append([])
            continue
        value = (phrase if phrase is not None else word).replace('\\"', '"').replace("\\\\", "\\")
        prop = (prop or "").lower()
        if prop and prop not in fields:
            value, prop = f"{prop}:{value}", ""
        alternatives[-1].append((prop, value))

    def holds(prop: str, value: str) -> bool:
        return value.lower() in (fields[prop] if prop else anywhere).lower()

    return any(group and all(holds(p, v) for p, v in group) for group in alternatives)
