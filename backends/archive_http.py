"""What the read-only list-archive backends (HyperKitty, PonyMail) share.

Both speak JSON over HTTP through :class:`mailtriage.core.http.HttpClient` (timeouts,
User-Agent, Retry-After on 429/503, redacted trace). This module translates what a
server answers into our errors at one boundary, most specific first:

* a transport failure (connection refused, timeout) -> :class:`Unavailable`;
* 401/403 -> :class:`Unavailable` with the backend's own reason (a private archive is
  unavailable, never an empty result);
* 404 -> :class:`ArchiveNotFound`; 5xx (and 429 once retries are spent) ->
  :class:`ArchiveServerError`; a body that is not the JSON we expect ->
  :class:`ArchiveBadResponse`. All three are :class:`BackendFailure`: that one call
  failed, the backend may still serve others.
"""

from __future__ import annotations

import html
import json
import re
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Mapping
from urllib.parse import urlsplit

from mailtriage.backends.contract import TextPart
from mailtriage.backends.errors import BackendFailure, ThreadNotFound, Unavailable
from mailtriage.core.http import DEFAULT_TIMEOUT, HttpClient, HttpEnded, HttpError
from mailtriage.core.projectconfig import PROJECT_FILE, ConfigError

# How long a check_available() answer is reused: the resolution rule asks before
# every dispatch, and one cheap request per minute is plenty for a list archive.
AVAILABILITY_TTL = 60.0


class ArchiveNotFound(BackendFailure):
    """The archive answered 404: the list, thread or message does not exist there."""

    status = 404


class ArchiveThreadNotFound(ArchiveNotFound, ThreadNotFound):
    """The archive answered that it holds no such thread (404, or a thread of no emails):
    a definite "not here", where a 5xx or a bad answer is a lookup that failed."""


class ArchiveServerError(BackendFailure):
    """The archive answered 5xx (or kept answering 429): a server-side failure."""

    def __init__(self, backend: str, detail: str, status: int | None = None) -> None:
        super().__init__(backend, detail)
        self.status = status


class ArchiveBadResponse(BackendFailure):
    """The archive answered, but not with the JSON shape its API defines."""


class ThreadListing(list):
    """The result of ``list_recent_threads``: the summaries, plus what went wrong.

    A list, so every caller can treat it as ``Sequence[ThreadSummary]``. ``notes``
    names each page or row that could not be read (the rest is still listed);
    ``complete`` is false when a page failed and older threads may be missing;
    ``requests`` counts the HTTP requests the listing took.
    """

    def __init__(self, items: Iterable[Any] = (), *, notes: Iterable[str] = (), complete: bool = True,
                 requests: int = 0) -> None:
        super().__init__(items)
        self.notes: list[str] = list(notes)
        self.complete = complete
        self.requests = requests


# -- configuration ------------------------------------------------------------


class SourceSettings:
    """Reads ``mail_sources.<name>.<key>`` values; every error names file and key."""

    def __init__(self, name: str, settings: Mapping[str, Any], project_file: str = PROJECT_FILE) -> None:
        self.name = name
        self.settings = settings
        self.file = project_file

    def key(self, key: str) -> str:
        return f"mail_sources.{self.name}.{key}"

    def error(self, key: str, problem: str, valid: str | None = None) -> ConfigError:
        return ConfigError(self.file, self.key(key), problem, valid)

    def text(self, key: str, *, required: bool, valid: str) -> str | None:
        value = self.settings.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                raise self.error(key, "is missing", valid)
            return None
        if not isinstance(value, str):
            raise self.error(key, f"must be text, not {type(value).__name__} {value!r}", valid)
        return value.strip()

    def base_url(self, key: str = "base_url") -> str:
        valid = "an http(s) URL such as https://lists.example.org"
        url = self.text(key, required=True, valid=valid) or ""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise self.error(key, f"{url!r} is not an http(s) URL", valid)
        if parts.query or parts.fragment:
            raise self.error(key, f"{url!r} carries a query or fragment", valid)
        return url.rstrip("/")

    def number(self, key: str, default: float, *, low: float, high: float, integer: bool = False) -> float:
        value = self.settings.get(key, default)
        kind = "a whole number" if integer else "a number"
        valid = f"{kind} from {low:g} to {high:g}"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
            raise self.error(key, f"{value!r} is not {kind}", valid)
        if not low <= value <= high:
            raise self.error(key, f"{value!r} is out of range", valid)
        return value

    def timeout(self) -> float:
        return float(self.number("timeout", DEFAULT_TIMEOUT, low=1, high=600))


# -- HTTP ---------------------------------------------------------------------


class ArchiveHttp:
    """One backend's HTTP session with the status mapping of this module."""

    def __init__(self, backend: str, base_url: str, *, timeout: float, cookies: dict[str, str] | None = None,
                 forbidden: Callable[[str], str] | None = None) -> None:
        self.backend = backend
        self.base_url = base_url
        self.client = HttpClient(backend, timeout=timeout, cookies=cookies)
        # What a 401/403 means for this archive, given what was asked.
        self._forbidden = forbidden or (lambda what: f"the archive refused access to {what}")

    @property
    def requests_sent(self) -> int:
        return self.client.requests_sent

    def get(self, url: str, params: Mapping[str, Any] | None, *, what: str,
            forbidden: Callable[[str], str] | None = None):
        """GET ``url``; returns the 2xx response. ``forbidden`` words a 401/403 for this
        call (a list other than the configured one), else the session's default does.

        Raises:
            Unavailable: the server cannot be reached, or it refused access (401/403).
            ArchiveNotFound: 404.
            ArchiveServerError: 5xx, or 429 after the retries Retry-After allowed.
            ArchiveBadResponse: any other unexpected status.
        """
        try:
            response = self.client.get(url, params=dict(params) if params else None)
        except HttpError as exc:
            if exc.status in (429, 503):
                raise ArchiveServerError(self.backend, f"{what}: {exc.detail}", exc.status) from exc
            if _cut_off(exc):
                raise ArchiveBadResponse(self.backend, f"{what}: the answer was cut off ({exc.detail})") from exc
            raise Unavailable(self.backend, f"cannot reach {self.base_url}: {exc.detail}") from exc
        status = response.status_code
        if 200 <= status < 300:
            return response
        snippet = _snippet(response)
        if status in (401, 403):
            raise Unavailable(self.backend, (forbidden or self._forbidden)(what) + f" (HTTP {status})")
        if status == 404:
            raise ArchiveNotFound(self.backend, f"{what}: not found (HTTP 404{snippet})")
        if status == 429 or status >= 500:
            raise ArchiveServerError(self.backend, f"{what}: server error (HTTP {status}{snippet})", status)
        raise ArchiveBadResponse(self.backend, f"{what}: unexpected HTTP {status}{snippet}")

    def get_json(self, url: str, params: Mapping[str, Any] | None, *, what: str,
                 forbidden: Callable[[str], str] | None = None) -> Any:
        """GET and decode JSON. Raises as :meth:`get`, plus ArchiveBadResponse for bad JSON."""
        response = self.get(url, params, what=what, forbidden=forbidden)
        return self.decode(response, what=what)

    def decode(self, response, *, what: str) -> Any:
        try:
            return json.loads(response.content)
        except (ValueError, UnicodeDecodeError) as exc:
            size = len(response.content)
            raise ArchiveBadResponse(
                self.backend, f"{what}: the archive's answer is not valid JSON ({exc}; {size} bytes)"
            ) from exc

    def abort(self, opening_only: bool = False) -> None:
        self.client.abort(opening_only)

    def close(self) -> None:
        self.client.close()


def _cut_off(exc: HttpError) -> bool:
    """The server answered but closed the connection before the whole body arrived."""
    # httpx is loaded by now (a request failed); importing it here keeps this module cheap to import
    import httpx

    cause = exc.__cause__
    return (isinstance(cause, (httpx.RemoteProtocolError, httpx.ReadError)) and not isinstance(exc, HttpEnded)
            and "without sending a response" not in str(cause))


def _snippet(response) -> str:
    """A short, single-line excerpt of an error body (Foal and DRF put the reason there).

    An HTML error page (HyperKitty's 500.html, a proxy's 502 page, Django's
    ``<h1>Server Error (500)</h1>``) is summarised as its visible text, never shown as
    markup. The excerpt is archive data: control and bidi characters are dropped."""
    content = response.content
    if _is_html(response):
        text = html_summary(content)
        return f': an HTML error page: "{text}"' if text else ": an HTML error page"
    try:
        text = content[:200].decode("utf-8", "replace")
    except Exception:  # pragma: no cover - content is always bytes
        return ""
    text = _printable(" ".join(text.split()))
    if not text:
        return ""
    try:  # DRF answers {"detail": "..."}
        detail = json.loads(response.content).get("detail")
        if isinstance(detail, str):
            text = _printable(detail)
    except (ValueError, AttributeError, UnicodeDecodeError):
        pass
    return f": {text[:120]}"


def _is_html(response) -> bool:
    ctype = str(response.headers.get("content-type", "")).lower()
    if "html" in ctype:
        return True
    head = response.content[:100].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html", b"<h1", b"<head", b"<body"))


_HIDDEN_BLOCKS = re.compile(rb"<(script|style|head|nav|noscript|form|template)\b.*?</\1\s*>", re.I | re.S)
_TAG = re.compile(rb"<[^>]*>")


def html_summary(content: bytes, limit: int = 160) -> str:
    """The visible text of an HTML error page, one line, at most ``limit`` characters."""
    body = _HIDDEN_BLOCKS.sub(b" ", content[:200_000])
    body = re.sub(rb"<!--.*?-->", b" ", body, flags=re.S)
    text = html.unescape(_TAG.sub(b" ", body).decode("utf-8", "replace"))
    text = _printable(" ".join(text.split()))
    if not text:  # nothing visible: the <title> at least
        match = re.search(rb"<title[^>]*>(.*?)</title", content[:200_000], re.I | re.S)
        text = _printable(" ".join(html.unescape(match.group(1).decode("utf-8", "replace")).split())) if match else ""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _printable(text: str) -> str:
    """Drop control, bidi and zero-width characters from server-supplied text."""
    return "".join(ch for ch in text if ch.isprintable() and not 0x200B <= ord(ch) <= 0x200F
                   and not 0x202A <= ord(ch) <= 0x202E and not 0x2066 <= ord(ch) <= 0x2069 and ch != "\ufeff")


class AvailabilityMemo:
    """Remembers the last check_available() outcome for a short while (thread-safe)."""

    def __init__(self, ttl: float = AVAILABILITY_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._at: float | None = None
        self._error: Unavailable | None = None

    def check(self, probe: Callable[[], None]) -> None:
        """Run ``probe`` unless a fresh answer is remembered; re-raise a remembered Unavailable."""
        with self._lock:
            fresh = self._at is not None and self._clock() - self._at < self.ttl
            if fresh:
                if self._error is not None:
                    raise self._error
                return
        try:
            probe()
        except Unavailable as exc:
            self._remember(exc)
            raise
        self._remember(None)

    def _remember(self, error: Unavailable | None) -> None:
        with self._lock:
            self._at = self._clock()
            self._error = error

    def forget(self) -> None:
        with self._lock:
            self._at = None
            self._error = None


# -- data helpers -------------------------------------------------------------


def parse_datetime(value: Any) -> datetime | None:
    """An ISO 8601 timestamp (DRF writes ``...Z``) as an aware datetime; None if unreadable."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def from_epoch(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return datetime.fromtimestamp(value, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def aware(when: datetime) -> datetime:
    """``since`` given without a zone is read as UTC."""
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def with_brackets(message_id: str) -> str:
    """An RFC 5322 Message-ID with its angle brackets (archives often store it bare)."""
    text = "".join(message_id.split())
    if not text:
        return ""
    if not text.startswith("<"):
        text = "<" + text
    if not text.endswith(">"):
        text = text + ">"
    return text


def html_text_part(html: bytes | str, charset: str | None = None) -> TextPart:
    """An archived HTML body as readable text, decoded exactly as the MIME parser does
    for HTML mail (html2text; nothing remote is fetched)."""
    # lazy: the MIME parser and html2text (about 0.3 s) load only when an archive serves HTML
    from mailtriage.backends.mime import parse_message

    data = html.encode("utf-8") if isinstance(html, str) else bytes(html)
    label = (charset or ("utf-8" if isinstance(html, str) else "")).strip()
    content_type = f"Content-Type: text/html; charset={label}" if label else "Content-Type: text/html"
    parsed = parse_message(content_type.encode("ascii", "replace") + b"\n\n" + data)
    if parsed.text_parts:
        return parsed.text_parts[0]
    return TextPart("text/html", "", note="the archived HTML part is empty", from_html=True)
