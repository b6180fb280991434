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

from mailtriage.core.errors import CoreError

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


class SecretMissing(CoreError):
    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"no secret stored in keyring for {key}")


class SecretUnavailable(CoreError):
    """A secret cannot be stored or read: no usable keyring service, or the user's
    ``password_command`` failed. The message says what to do and never holds the secret."""


class KeyringUnavailable(SecretUnavailable):
    """No usable system keyring (a headless machine without a Secret Service, say)."""

    def __init__(self, problem: str, account: str | None = None, *, what: str = "keep the password") -> None:
        self.problem = problem
        who = account or "<id>"
        super().__init__(
            f"no usable system keyring to {what} ({problem}). Options: "
            f"(1) read it from a password manager: password_command = \"pass show mail/{who}\" in "
            f"[accounts.{who}] of config.toml (any command that prints the password on its first line; run "
            f"without a shell, its output never logged); "
            f"(2) run a Secret Service keyring in this session (GNOME Keyring, KWallet, KeePassXC) and try again; "
            f"(3) choose another keyring backend with PYTHON_KEYRING_BACKEND (see 'python -m keyring diagnose'). "
            f"mailtriage never writes a password to its own files.")


class SecretCommandFailed(SecretUnavailable):
    """The user's ``password_command`` did not give a password (its output is never quoted)."""


#: Seconds a ``password_command`` may take (a password manager may ask for its own passphrase).
COMMAND_TIMEOUT = 60.0


def _keyring_problem(exc: BaseException) -> str | None:
    """What is wrong with the keyring when ``exc`` is keyring's own error, else None."""
    import keyring.errors  # keyring loads only once a secret is touched, as in get_secret (start-up cost)

    if isinstance(exc, keyring.errors.KeyringError):
        first = str(exc).split(". ")[0].strip()
        return type(exc).__name__ + (f": {first}" if first else "")
    return None


def lookup_secret(key: str, account: str | None = None) -> str | None:
    """:func:`get_secret`, with a keyring that cannot be used raised as :class:`KeyringUnavailable`
    (which says what the options are) instead of keyring's own error."""
    try:
        return get_secret(key)
    except Exception as exc:
        problem = _keyring_problem(exc)
        if problem is None:
            raise
        raise KeyringUnavailable(problem, account, what="read the password") from None


def store_secret(key: str, value: str, account: str | None = None) -> None:
    """:func:`set_secret`, with a keyring that cannot be used raised as :class:`KeyringUnavailable`."""
    try:
        set_secret(key, value)
    except Exception as exc:
        problem = _keyring_problem(exc)
        if problem is None:
            raise
        raise KeyringUnavailable(problem, account) from None


def command_secret(command: str, *, timeout: float = COMMAND_TIMEOUT, what: str = "password_command") -> str:
    """The first line a user's ``password_command`` prints (``pass show mail/work``).

    The command is split like a shell would (``shlex``) and run without one, stdin and stderr
    closed, in its own session, for at most ``timeout`` seconds; on timeout its whole process
    group is killed (whatever it started too). The line is remembered as a secret (so
    :func:`scrub` masks it), and neither it nor anything else the command printed appears in
    an error.

    Raises:
        SecretCommandFailed: the command cannot be read or run, fails, times out, or prints
            no line.
    """
    import shlex  # a password_command only: shlex and subprocess cost ~3 ms at import (python -X importtime)
    import subprocess  # with it: every backend imports this module through backends.errors

    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise SecretCommandFailed(f"{what} cannot be read: {exc}") from None
    if not argv:
        raise SecretCommandFailed(f"{what} is empty")
    program = argv[0]
    try:
        # its own session, so a timeout ends the whole process group: a password manager's
        # helper (or a script's background job) would otherwise outlive us
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                shell=False, start_new_session=True)
    except FileNotFoundError:
        raise SecretCommandFailed(f"{what}: no program {program!r} found") from None
    except OSError as exc:
        raise SecretCommandFailed(f"{what}: {program!r} could not run ({exc.strerror})") from None
    try:
        stdout, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _end_group(proc)
        raise SecretCommandFailed(f"{what}: {program!r} did not finish within {timeout:g} s") from None
    except BaseException:  # KeyboardInterrupt: nothing it started keeps running
        _end_group(proc)
        raise
    if proc.returncode != 0:
        raise SecretCommandFailed(f"{what}: {program!r} failed with exit status {proc.returncode} "
                                  "(its output is not shown)")
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise SecretCommandFailed(f"{what}: {program!r} printed something that is not UTF-8 text") from None
    first = text.splitlines()[0] if text.splitlines() else ""
    if not first:
        raise SecretCommandFailed(f"{what}: {program!r} printed no password on its first line")
    remember_secret(first)
    return first


def _end_group(proc) -> None:
    """Kill the command's process group (its session) and reap the command."""
    # with subprocess above: loaded only when a password_command timed out
    import os
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.stdout.close()  # a grandchild that escaped the group keeps the pipe: never wait on it
    proc.wait()


def get_secret(key: str) -> str | None:
    # lazy: keyring probes its backends at import (about 0.4 s); only a secret lookup pays it
    import keyring

    value = keyring.get_password(SERVICE, key)
    if value is not None:
        remember_secret(value)
    return value


def origin_secret(purpose: str, url: str, name: str | None = None) -> str | None:
    """The secret stored for ``purpose`` at the exact origin of ``url`` (see
    :mod:`mailtriage.core.origins`), or None. Never reads another entry.

    Raises:
        OriginRefused: ``url`` may not carry a secret (plain http to another host, not http(s)).
    """
    # lazy: origins loads ipaddress; only a secret looked up by origin pays for it (start-up cost)
    from mailtriage.core.origins import secret_key

    return get_secret(secret_key(purpose, url, name))


def missing_secret_hint(purpose: str, url: str, name: str | None = None) -> str:
    """What to do when no secret is stored for the origin: the key, and the command that
    stores it, or moves an entry kept under the old origin-less key (it is read here only to
    say so; it is never sent)."""
    # lazy: origins loads ipaddress; only a secret looked up by origin pays for it (start-up cost)
    from mailtriage.core.origins import PURPOSES, legacy_key, secret_key, store_command

    key = secret_key(purpose, url, name)
    old = legacy_key(purpose, url, name)
    try:
        has_old = old != key and get_secret(old) is not None
    except Exception:  # no usable keyring: the plain hint still holds
        has_old = False
    if has_old:
        return (f"the {PURPOSES[purpose]} is stored under the old key {old}, which does not name its origin; "
                f"bind it to {url} with: {store_command(purpose, url, name, migrate=True)} (key {key})")
    return f"store the {PURPOSES[purpose]} in keyring as {key}: {store_command(purpose, url, name)}"


def store_for_origin(purpose: str, url: str, value: str | None, name: str | None = None, *,
                     from_old_key: bool = False) -> dict:
    """Store ``purpose``'s secret under the key of ``url``'s origin (the user's own command,
    ``mailtriage account store-secret``). With ``from_old_key``, the entry kept under the old
    origin-less key moves there instead (and the old entry goes): the user, not a project
    file, says which origin it belongs to.

    Raises:
        OriginRefused: ``url`` may not carry a secret.
        ValueError: an empty value, GitHub without ``name``, or no old entry to move.
        KeyringUnavailable: no usable keyring.
    """
    # lazy: origins loads ipaddress; only a secret looked up by origin pays for it (start-up cost)
    from mailtriage.core.origins import legacy_key, secret_key, secret_origin

    if purpose == "github" and not name:
        raise ValueError("a GitHub token belongs to one repository: give --repo OWNER/NAME")
    key = secret_key(purpose, url, name)
    result = {"stored": key, "origin": str(secret_origin(url))}
    if from_old_key:
        old = legacy_key(purpose, url, name)
        value = lookup_secret(old)
        if value is None:
            raise ValueError(f"no entry stored under the old key {old}")
        result["moved_from"] = old
    if not value:
        raise ValueError("the secret is empty")
    store_secret(key, value)
    if from_old_key:
        delete_secret(result["moved_from"])
    return result


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
    """A JSON-able document with every string scrubbed: ``doc`` itself when no secret occurs
    in it, else a copy.

    Whether one occurs is asked of the document's JSON text first (one C-encoded string and
    a substring check per form): a string holding a secret holds it in that text in its JSON
    form, which :func:`_variants` lists, since JSON escapes character by character. Only then
    is the document walked string by string (``queue --json`` over 10,000 reports: some
    235,000 strings, 0.4 s, for nothing when no secret is in them). Each form is looked for
    as JSON writes it (``_json_form``), not as it is."""
    with _lock:
        forms = list(_forms)
    if not forms:
        return doc
    try:
        text = json.dumps(doc, ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # keys JSON cannot write, a cycle: walked
        text = None
    # A string holding a form holds, in the JSON text, that form as JSON escapes it (character
    # by character): a form with a backslash, a quote or a control character (the repr, the
    # bytes repr, the ASCII JSON form) is written there with more of them.
    if text is not None and not any(_json_form(form) in text for form in forms):
        return doc
    return _scrub_walk(doc)


def _json_form(form: str) -> str:
    return json.dumps(form, ensure_ascii=False)[1:-1]


def _scrub_walk(doc: Any) -> Any:
    if isinstance(doc, str):
        return scrub(doc)
    if isinstance(doc, dict):
        return {scrub(k) if isinstance(k, str) else k: _scrub_walk(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [_scrub_walk(v) for v in doc]
    return doc
