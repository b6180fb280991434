"""Secrets live in keyring only; this module is the one place that touches it.

It is also the one place that knows every secret the session holds, so that none of
them reaches an output: every value read from or written to the keyring (and every
secret taken from an environment variable, see :func:`remember_secret`) is kept in
memory, and :func:`scrub` replaces any of them, in the forms an error message could
carry them (as is, ``repr``/JSON/backslash escaped, URL-quoted, base64), with
``[secret]``. Errors pass through it where they become reasons and messages:
``backends.errors`` (every availability reason and failure detail), the resolution's
reasons, the CLI's stderr and JSON, the TUI's error list and the protocol trace.
"""

from __future__ import annotations

import base64
import json
import threading
from typing import Any
from urllib.parse import quote, quote_plus

SERVICE = "mailtriage"
MASK = "[secret]"
# Shorter values would mask ordinary words everywhere; a password that short is no secret.
MIN_SECRET_LENGTH = 4
# JSON fields of a stored blob (Gmail token JSON, the MSAL cache) whose values are secrets.
_SECRET_FIELDS = {"secret", "access_token", "refresh_token", "id_token", "token", "client_secret", "password",
                  "session", "cookie"}

_lock = threading.Lock()
_known: set[str] = set()
_forms: list[str] = []  # every form of every secret, longest first


class SecretMissing(Exception):
    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"no secret stored in keyring for {key}")


def get_secret(key: str) -> str | None:
    # lazy: keyring probes its backends at import (about 0.4 s); only a secret lookup pays it
    import keyring

    value = keyring.get_password(SERVICE, key)
    if value is not None:
        remember_secret(value)
    return value


def require_secret(key: str) -> str:
    value = get_secret(key)
    if value is None:
        raise SecretMissing(key)
    return value


def set_secret(key: str, value: str) -> None:
    # lazy: keyring probes its backends at import (about 0.4 s); only a secret lookup pays it
    import keyring

    remember_secret(value)
    keyring.set_password(SERVICE, key, value)


def delete_secret(key: str) -> None:
    # lazy: keyring probes its backends at import (about 0.4 s); only a secret lookup pays it
    import keyring
    from keyring.errors import PasswordDeleteError

    try:
        keyring.delete_password(SERVICE, key)
    except PasswordDeleteError:
        pass


def remember_secret(value: Any) -> None:
    """Keep ``value`` (and the secret fields of a JSON blob) so :func:`scrub` masks it."""
    if not isinstance(value, str) or len(value) < MIN_SECRET_LENGTH:
        return
    values = [value]
    if value.lstrip().startswith("{"):
        try:
            values += list(_json_secrets(json.loads(value)))
        except ValueError:
            pass
    added = False
    with _lock:
        for item in values:
            if len(item) >= MIN_SECRET_LENGTH and item not in _known:
                _known.add(item)
                _forms.extend(f for f in _variants(item) if len(f) >= MIN_SECRET_LENGTH)
                added = True
        if added:
            _forms[:] = sorted(set(_forms), key=len, reverse=True)


def forget_remembered_secrets() -> None:
    """Drop every remembered value. The keyring is untouched; a process that serves several
    sessions in turn (the test suite does) calls this so one session's words are not masked in
    the next."""
    with _lock:
        _known.clear()
        _forms.clear()


def _json_secrets(data: Any):
    if isinstance(data, dict):
        for key, item in data.items():
            if isinstance(item, str) and str(key).lower() in _SECRET_FIELDS:
                yield item
            else:
                yield from _json_secrets(item)
    elif isinstance(data, list):
        for item in data:
            yield from _json_secrets(item)


def _variants(value: str) -> list[str]:
    raw = value.encode("utf-8")
    forms = [
        value,
        repr(value)[1:-1],
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        value.encode("ascii", "backslashreplace").decode("ascii"),
        str(raw)[2:-1],  # the bytes repr an exception may print (b'p\xc3\xa4ss')
        raw.decode("latin-1"),  # UTF-8 read as Latin-1
        quote(value, safe=""),
        quote_plus(value),
        base64.b64encode(raw).decode("ascii"),
        base64.b64encode(raw).decode("ascii").rstrip("="),
    ]
    return [f for f in forms if f]


def scrub(text: Any) -> str:
    """``text`` with every known secret masked. Never raises."""
    text = "" if text is None else str(text)
    with _lock:
        forms = list(_forms)
    for form in forms:
        if form in text:
            text = text.replace(form, MASK)
    return text


def scrub_json(doc: Any) -> Any:
    """A copy of a JSON-able document with every string scrubbed."""
    if isinstance(doc, str):
        return scrub(doc)
    if isinstance(doc, dict):
        return {scrub(k) if isinstance(k, str) else k: scrub_json(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [scrub_json(v) for v in doc]
    return doc
