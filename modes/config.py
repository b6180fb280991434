"""The modes configuration: one TOML file (``mailtriage modes serve --config FILE``).

Example (every key is described in docs/modes.md)::

    domain = "mas.example.org"       # D in TYPE=ID@D
    role = "master"                  # default role of resource types: master | slave
    database = "/var/lib/mt/modes.sqlite3"   # default: <data dir>/modes.sqlite3

    [server]
    host = "127.0.0.1"               # loopback by default
    port = 8025
    public_url = "http://127.0.0.1:8025/mas-modes"   # status_url given to modes
    token_key = "modes:endpoint"     # callers send "Authorization: Bearer <token>": keyring key
                                     # (the default; generated on first start) or token_env = "VAR"
    poll_seconds = 30                # mailbox poll interval
    tick_seconds = 5                 # deadline and outbox check interval

    [mailbox]                        # IMAP mailbox the MAS addresses deliver to
    host = "imap.example.org"
    security = "tls"                 # tls | starttls | plain (plain only to loopback)
    username = "mas"
    password_key = "modes:imap"      # keyring key (service "mailtriage"), or password_env = "VAR"
    folder = "INBOX"
    ca_file = "/etc/ssl/my-ca.pem"   # optional: extra CA to trust

    [smtp]
    host = "smtp.example.org"
    security = "starttls"
    username = "mas"
    password_key = "modes:smtp"

    [send]                           # Principle 10
    authserv_id = "mx.example.org"   # the only Authentication-Results trusted
    cap = 100                        # sends per window
    cap_window_hours = 24

    [http]
    timeout = 10                     # seconds per outbound call
    attempts = 3                     # immediate tries per message (same id)
    backoff = 0.5                    # seconds between immediate tries
    retry_after = 60                 # seconds (clock) before the outbox tries again
    max_attempts = 50                # then the message is abandoned and noted in the thread

    [master]                         # the outside master (slave role)
    url = "http://127.0.0.1:9000/mas"

    [types.ticket]
    role = "master"
    id_prefix = "gs"                 # master role: new cases are gs-1, gs-2, ...
    deadline_seconds = 3600          # master role: per-handoff deadline
    enabled_modes = ["callback"]     # the statute: modes this type may hand off to
    autonomous_send = false          # slave role: policy defaults
    transfers = "block"              # or { webhook = "http://..." }
    [types.ticket.modes.callback]
    endpoint = "http://127.0.0.1:9100/callback"
    fields = ["phone", "time"]       # details read from request mail ("phone: ...")

Secrets never go in this file: passwords come from keyring or an environment variable.
Every error names the file, the key and what would be valid.
"""

from __future__ import annotations

import os
import secrets
import tomllib
from dataclasses import field
from pathlib import Path
from typing import Any, Mapping

from mailtriage.core import private_files
from mailtriage.core.lean_dataclass import frozen_dataclass
from mailtriage.core.origins import is_loopback
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.secrets import get_secret, remember_secret, set_secret
from mailtriage.core.settings import data_dir
from mailtriage.core.tls import trusting
from mailtriage.modes.addresses import AddressError, normalize_domain, valid_token
from mailtriage.modes.protocol_messages import _transfers

ROLES = ("master", "slave")
SECURITIES = ("tls", "starttls", "plain")
_SECRET_KEYS = {"password", "token", "secret"}


@frozen_dataclass
class ModeEndpoint:
    endpoint: str | None
    fields: tuple[str, ...] = ()
    token_key: str | None = None  # keyring key of the token this mode sends us (default: mode_token_key)
    token_env: str | None = None  # or the environment variable holding it


@frozen_dataclass
class ResourceType:
    name: str
    role: str
    id_prefix: str
    deadline_seconds: float
    enabled_modes: tuple[str, ...]
    modes: dict[str, ModeEndpoint]
    autonomous_send: bool
    transfers: Any  # "block" or {"webhook": URL}


@frozen_dataclass
class MailServer:
    host: str
    port: int
    security: str
    username: str | None
    password_key: str | None
    password_env: str | None
    folder: str = "INBOX"
    timeout: float = 30.0
    ca_file: str | None = None  # extra CA to trust (self-hosted servers)

    def tls_context(self):
        return trusting(self.ca_file, use="mail", system_cas=False)  # the process's context of these CAs


@frozen_dataclass
class ModesConfig:
    file: Path | None
    domain: str
    role: str
    database: Path
    host: str = "127.0.0.1"
    port: int = 8025
    public_url: str | None = None
    token_key: str | None = None  # keyring key of the bearer token callers must present
    token_env: str | None = None  # or the environment variable holding it
    poll_seconds: float | None = 30.0
    tick_seconds: float | None = 5.0
    mailbox: MailServer | None = None
    smtp: MailServer | None = None
    authserv_id: str | None = None
    send_cap: int = 100
    cap_window_hours: float = 24.0
    http_timeout: float = 10.0
    http_attempts: int = 3
    http_backoff: float = 0.5
    retry_after: float = 60.0
    max_attempts: int = 50
    master_url: str | None = None
    types: dict[str, ResourceType] = field(default_factory=dict)

    def status_url(self, port: int | None = None) -> str:
        if self.public_url:
            return self.public_url
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{port or self.port}/mas-modes"

    def resource_type(self, name: str) -> ResourceType | None:
        return self.types.get(name.lower())


def _where(file: Path | None) -> Path:
    return file or Path("(modes configuration)")


def load_config(path: Path | None, *, overrides: Mapping[str, Any] | None = None) -> ModesConfig:
    """Read the TOML file (or only ``overrides`` when ``path`` is None). Raises ConfigError."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            # it names a CA file, password variables and the record's path: the one file rule
            data = tomllib.loads(private_files.read_text(path))
        except FileNotFoundError as exc:
            raise ConfigError(path, "(file)", "does not exist", "a TOML file (see docs/modes.md)") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(path, "(file)", f"not valid TOML: {exc}", "TOML key = value lines") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(path, "(file)", f"not UTF-8 ({exc.reason})", "UTF-8 text") from exc
    for key, value in (overrides or {}).items():
        _set_dotted(data, key, value)
    return parse_config(data, path)


def _set_dotted(data: dict, key: str, value: Any) -> None:
    parts = key.split(".")
    for part in parts[:-1]:
        data = data.setdefault(part, {})
    data[parts[-1]] = value


def parse_config(data: Mapping[str, Any], file: Path | None = None) -> ModesConfig:
    """Build a ModesConfig from a decoded mapping. Raises ConfigError naming file and key."""
    where = _where(file)
    reader = _Reader(where)
    _refuse_secrets(data, where)
    domain = reader.string(data, "domain", required=True)
    try:
        normalize_domain(domain)
    except AddressError as exc:
        raise ConfigError(where, "domain", str(exc), "a domain name like mas.example.org") from exc
    role = reader.choice(data, "role", ROLES, default="master")
    database = data.get("database")
    if database is None:
        database_path = data_dir() / "modes.sqlite3"
    else:
        database_path = Path(reader.string(data, "database"))
    server = reader.table(data, "server")
    send = reader.table(data, "send")
    http = reader.table(data, "http")
    master = reader.table(data, "master")
    types = {}
    for name, body in reader.table(data, "types").items():
        if not valid_token(name):
            raise ConfigError(where, f"types.{name}", "is not a MAS resource type", "letters, digits and '-'")
        if not isinstance(body, dict):
            raise ConfigError(where, f"types.{name}", "must be a table", "[types.<name>] with keys")
        types[name.lower()] = _resource_type(reader, name.lower(), body, role)
    host = reader.string(server, "host", default="127.0.0.1", key="server.host")
    return ModesConfig(
        file=file,
        domain=domain,
        role=role,
        database=database_path,
        host=host,
        port=reader.integer(server, "port", default=8025, key="server.port", low=0, high=65535),
        public_url=reader.url(server, "public_url", key="server.public_url"),
        token_key=reader.string(server, "token_key", key="server.token_key"),
        token_env=reader.string(server, "token_env", key="server.token_env"),
        poll_seconds=reader.number(server, "poll_seconds", default=30.0, key="server.poll_seconds", allow_none=True),
        tick_seconds=reader.number(server, "tick_seconds", default=5.0, key="server.tick_seconds", allow_none=True),
        mailbox=_mail_server(reader, data, "mailbox", 993),
        smtp=_mail_server(reader, data, "smtp", 587),
        authserv_id=reader.string(send, "authserv_id", key="send.authserv_id"),
        send_cap=reader.integer(send, "cap", default=100, key="send.cap", low=0),
        cap_window_hours=reader.number(send, "cap_window_hours", default=24.0, key="send.cap_window_hours"),
        http_timeout=reader.number(http, "timeout", default=10.0, key="http.timeout"),
        http_attempts=reader.integer(http, "attempts", default=3, key="http.attempts", low=1),
        http_backoff=reader.number(http, "backoff", default=0.5, key="http.backoff"),
        retry_after=reader.number(http, "retry_after", default=60.0, key="http.retry_after"),
        max_attempts=reader.integer(http, "max_attempts", default=50, key="http.max_attempts", low=1),
        master_url=reader.url(master, "url", key="master.url"),
        types=types,
    )


def _resource_type(reader: "_Reader", name: str, body: dict, default_role: str) -> ResourceType:
    prefix = f"types.{name}"
    modes: dict[str, ModeEndpoint] = {}
    for mode, spec in reader.table(body, "modes", key=f"{prefix}.modes").items():
        if not valid_token(mode):
            raise ConfigError(reader.file, f"{prefix}.modes.{mode}", "is not a MAS mode name", "letters, digits and '-'")
        if not isinstance(spec, dict):
            raise ConfigError(reader.file, f"{prefix}.modes.{mode}", "must be a table", "endpoint = URL, fields = [...]")
        fields = spec.get("fields", [])
        if not isinstance(fields, list) or not all(isinstance(f, str) and valid_token(f) for f in fields):
            raise ConfigError(reader.file, f"{prefix}.modes.{mode}.fields", "must be a list of field names",
                              '["phone", "time"]')
        modes[mode.lower()] = ModeEndpoint(reader.url(spec, "endpoint", key=f"{prefix}.modes.{mode}.endpoint"),
                                           tuple(f.lower() for f in fields),
                                           reader.string(spec, "token_key", key=f"{prefix}.modes.{mode}.token_key"),
                                           reader.string(spec, "token_env", key=f"{prefix}.modes.{mode}.token_env"))
    enabled = body.get("enabled_modes", sorted(modes))
    if not isinstance(enabled, list) or not all(isinstance(m, str) and valid_token(m) for m in enabled):
        raise ConfigError(reader.file, f"{prefix}.enabled_modes", "must be a list of mode names", '["callback"]')
    transfers = body.get("transfers", "block")
    if _transfers(transfers):
        raise ConfigError(reader.file, f"{prefix}.transfers", "is neither \"block\" nor a webhook",
                          '"block" or { webhook = "http://..." }')
    id_prefix = reader.string(body, "id_prefix", default=name, key=f"{prefix}.id_prefix")
    if not valid_token(id_prefix):
        raise ConfigError(reader.file, f"{prefix}.id_prefix", "is not usable in a case id", "letters, digits and '-'")
    return ResourceType(
        name=name,
        role=reader.choice(body, "role", ROLES, default=default_role, key=f"{prefix}.role"),
        id_prefix=id_prefix,
        deadline_seconds=reader.number(body, "deadline_seconds", default=3600.0, key=f"{prefix}.deadline_seconds"),
        enabled_modes=tuple(m.lower() for m in enabled),
        modes=modes,
        autonomous_send=reader.boolean(body, "autonomous_send", default=False, key=f"{prefix}.autonomous_send"),
        transfers=transfers,
    )


def _mail_server(reader: "_Reader", data: Mapping, name: str, default_port: int) -> MailServer | None:
    if name not in data:
        return None
    table = reader.table(data, name)
    host = reader.string(table, "host", required=True, key=f"{name}.host")
    security = reader.choice(table, "security", SECURITIES, default="tls", key=f"{name}.security")
    if security == "plain" and not is_loopback(host):
        raise ConfigError(reader.file, f"{name}.security", f"plain (unencrypted) is allowed only to loopback, not {host}",
                          "tls or starttls")
    port_default = default_port if security == "tls" else (143 if name == "mailbox" else 25)
    if name == "smtp" and security == "tls":
        port_default = 465
    return MailServer(
        host=host,
        port=reader.integer(table, "port", default=port_default, key=f"{name}.port", low=1, high=65535),
        security=security,
        username=reader.string(table, "username", key=f"{name}.username"),
        password_key=reader.string(table, "password_key", key=f"{name}.password_key"),
        password_env=reader.string(table, "password_env", key=f"{name}.password_env"),
        folder=reader.string(table, "folder", default="INBOX", key=f"{name}.folder"),
        timeout=reader.number(table, "timeout", default=30.0, key=f"{name}.timeout"),
        ca_file=_existing_file(reader, table, "ca_file", f"{name}.ca_file"),
    )


def _existing_file(reader: "_Reader", table: Mapping, name: str, key: str) -> str | None:
    value = reader.string(table, name, key=key)
    if value is not None and not Path(value).is_file():
        raise ConfigError(reader.file, key, f"{value!r} is not a readable file", "a PEM file of CA certificates")
    return value


def _refuse_secrets(data: Any, where: Path, prefix: str = "") -> None:
    if isinstance(data, dict):
        for key, value in data.items():
            dotted = f"{prefix}{key}"
            if str(key).lower() in _SECRET_KEYS:
                raise ConfigError(where, dotted, "secrets never go in the config file",
                                  "password_key (keyring) or password_env (environment variable)")
            _refuse_secrets(value, where, dotted + ".")


DEFAULT_TOKEN_KEY = "modes:endpoint"
#: Shorter tokens are refused: a guessable token would hand the endpoint (mail.send included) to
#: any local process. 32 characters of token_urlsafe carry 192 bits.
MIN_TOKEN_LENGTH = 32


def mode_token_key(resource_type: str, mode: str) -> str:
    """The default keyring key of the token one mode endpoint sends us."""
    return f"modes:mode:{resource_type}.{mode}"


def endpoint_token(config: ModesConfig, *, create: bool = True) -> tuple[str, bool]:
    """The outside master's bearer token, and whether it was generated just now. There is
    always one: ``server.token_env`` when set (the variable must hold it), else the keyring
    entry ``server.token_key`` (default ``modes:endpoint``), generated and stored there on
    first start. Modes have their own (:func:`mode_tokens`).

    Raises ConfigError when the variable is unset, the token is shorter than
    :data:`MIN_TOKEN_LENGTH`, or no keyring can keep the token.
    """
    return _token(config, "server", config.token_key or DEFAULT_TOKEN_KEY, config.token_env, create=create)


def mode_tokens(config: ModesConfig, master: str, *, create: bool = True) -> dict[tuple[str, str], str]:
    """The token of every mode endpoint of every type, ``(type, mode) -> token``: the mode's
    ``token_env``, else its ``token_key`` (default :func:`mode_token_key`), generated on first
    start. Each differs from the master's and from every other mode's.

    Raises ConfigError as :func:`endpoint_token`, or when two callers share a token.
    """
    tokens: dict[tuple[str, str], str] = {}
    seen = {master: "server"}
    for type_name, rtype in sorted(config.types.items()):
        for mode, spec in sorted(rtype.modes.items()):
            prefix = f"types.{type_name}.modes.{mode}"
            value, _ = _token(config, prefix, spec.token_key or mode_token_key(type_name, mode), spec.token_env,
                              create=create)
            if value in seen:
                setting = "token_env" if spec.token_env else "token_key"
                raise ConfigError(_where(config.file), f"{prefix}.{setting}",
                                  f"gives the same token as {seen[value]}: each caller needs its own",
                                  "a separate variable or keyring entry for each mode and for the master")
            seen[value] = prefix
            tokens[(type_name, mode)] = value
    return tokens


def _token(config: ModesConfig, prefix: str, key: str, env: str | None, *, create: bool) -> tuple[str, bool]:
    where = _where(config.file)
    if env:
        value = os.environ.get(env, "").strip()
        if not value:
            raise ConfigError(where, f"{prefix}.token_env", f"the environment variable {env} is not set",
                              f"a variable holding the token, or {prefix}.token_key (keyring)")
        remember_secret(value)
        _check_length(where, f"{prefix}.token_env", value, f"the token in {env}")
        return value, False
    # keyring loads its backends on import (about 0.1 s); like core.secrets, only a
    # command that needs a secret pays for it.
    import keyring.errors

    unusable = ConfigError(where, f"{prefix}.token_key", f"no keyring can keep the token ({key})",
                           f'a working system keyring, or {prefix}.token_env = "VAR" holding the token')
    try:
        value = get_secret(key)
        if value:
            _check_length(where, f"{prefix}.token_key", value, f"the token stored under {key}")
            return value, False
        if not create:
            raise ConfigError(where, f"{prefix}.token_key", f"no token stored under {key} yet",
                              f"start `mailtriage modes serve` once, or set {prefix}.token_env")
        value = secrets.token_urlsafe(32)
        set_secret(key, value)
    except keyring.errors.KeyringError:
        raise unusable from None
    if get_secret(key) != value:  # a keyring that silently drops what it is given
        raise unusable
    return value, True


def _check_length(where: Path, key: str, value: str, what: str) -> None:
    if len(value) < MIN_TOKEN_LENGTH:
        raise ConfigError(where, key, f"{what} has {len(value)} characters, too short to keep others out",
                          f"a random token of at least {MIN_TOKEN_LENGTH} characters "
                          "(python -c 'import secrets; print(secrets.token_urlsafe(32))')")


def token_hint(config: ModesConfig) -> str:
    """How to give the tokens to the master and the modes (never a token itself)."""
    if config.token_env:
        where = f"the environment variable {config.token_env}"
    else:
        where = f"the keyring (service \"mailtriage\", key \"{config.token_key or DEFAULT_TOKEN_KEY}\")"
    modes = [f"{t}.{m}" for t, rtype in sorted(config.types.items()) for m in sorted(rtype.modes)]
    each = (f"; each mode has its own ({', '.join(modes)}): `mailtriage modes token --mode TYPE.MODE`"
            if modes else "")
    return (f"the master and each mode send \"Authorization: Bearer <token>\"; the master's token is in {where}; "
            f"print it with `mailtriage modes token`{each}")


def mail_password(server: MailServer) -> str | None:
    """The password of a mailbox/SMTP server: environment variable or keyring. None when unset."""
    if server.password_env:
        value = os.environ.get(server.password_env)
        remember_secret(value)  # so that no error or log line can carry it
        return value
    if server.password_key:
        return get_secret(server.password_key)
    return None


class _Reader:
    """Typed reads with errors that name the file and the key."""

    def __init__(self, file: Path) -> None:
        self.file = file

    def _fail(self, key: str, problem: str, valid: str) -> ConfigError:
        return ConfigError(self.file, key, problem, valid)

    def table(self, data: Mapping, name: str, key: str | None = None) -> dict:
        value = data.get(name, {})
        if not isinstance(value, dict):
            raise self._fail(key or name, "must be a table", f"[{key or name}]")
        return value

    def string(self, data: Mapping, name: str, *, required: bool = False, default: str | None = None,
               key: str | None = None) -> Any:
        value = data.get(name, default)
        if value is None:
            if required:
                raise self._fail(key or name, "is missing", "a string")
            return None
        if not isinstance(value, str) or not value.strip():
            raise self._fail(key or name, f"must be a non-empty string, got {value!r}", "a string")
        return value.strip()

    def url(self, data: Mapping, name: str, *, key: str) -> str | None:
        value = self.string(data, name, key=key)
        if value is not None and not value.startswith(("http://", "https://")):
            raise self._fail(key, f"{value!r} is not an http(s) URL", "http://host:port/path")
        return value

    def choice(self, data: Mapping, name: str, choices: tuple[str, ...], *, default: str, key: str | None = None) -> str:
        value = data.get(name, default)
        if value not in choices:
            raise self._fail(key or name, f"{value!r} is not allowed", " | ".join(choices))
        return value

    def integer(self, data: Mapping, name: str, *, default: int, key: str, low: int | None = None,
                high: int | None = None) -> int:
        value = data.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int) or (low is not None and value < low) or \
                (high is not None and value > high):
            bounds = f"an integer{'' if low is None else f' >= {low}'}{'' if high is None else f' <= {high}'}"
            raise self._fail(key, f"{value!r} is not allowed", bounds)
        return value

    def number(self, data: Mapping, name: str, *, default: float | None, key: str, allow_none: bool = False) -> Any:
        value = data.get(name, default)
        if value is None and allow_none:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise self._fail(key, f"{value!r} is not allowed", "a non-negative number")
        return float(value)

    def boolean(self, data: Mapping, name: str, *, default: bool, key: str) -> bool:
        value = data.get(name, default)
        if not isinstance(value, bool):
            raise self._fail(key, f"{value!r} is not allowed", "true or false")
        return value
