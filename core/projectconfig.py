"""Project configuration: ``<project-config>/project.md``.

project.md is Markdown a human edits. mailtriage reads two things from it:

* the ``## Mail sources`` table, exactly as the mail-source contract prints it
  (``| Backend | Role | Mandatory | Notes |``);
* one fenced ``yaml`` block under a ``## Configuration`` heading holding the keys
  the specs name (``security_list``, ``security_inbox.foundation_security_address``,
  ``tracker.platform``, ``tracker.labels`` …) as nested mappings.

YAML is used because the CC resolution rule distinguishes an *absent* key from one
explicitly set to null or blank, which TOML cannot express.

Values are layered project → organization (``organization: asf`` selects a profile
shipped in ``core/orgs/``) → framework default. For each key the first layer that
*declares* it wins, even when it declares null or blank.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from mailtriage.core import config_cache
from mailtriage.core.errors import ConfigError, ProjectFileError  # noqa: F401  (importable from here too)
from mailtriage.core.lean_dataclass import frozen_dataclass

PROJECT_FILE = "project.md"
ORG_DIR = Path(__file__).with_name("orgs")

ROLES_HELP = "primary, fallback, optional, or 'preferred for <op>[, <op>…]'"
KNOWN_OPS = (
    "list_recent_threads",
    "read_thread",
    "list_drafts",
    "list_sent_since",
    "create_draft",
    "thread_url",
)

# Framework defaults: the last layer. Keys absent everywhere read as Absent.
FRAMEWORK_DEFAULTS: dict[str, Any] = {
    "tracker": {"platform": "github"},
    "import": {"since_days": 30},
    "alerts": {"poll_seconds": 120},
}


class _Absent:
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()


@frozen_dataclass
class Declared:
    """A value together with the layer that declared it (``project``, ``organization:asf``, ``default``)."""

    value: Any
    layer: str
    file: str


@frozen_dataclass
class MailSourceEntry:
    """One row of the ``## Mail sources`` table."""

    name: str
    role: str  # primary | preferred | fallback | optional
    preferred_ops: tuple[str, ...]
    mandatory: bool
    notes: str
    line: int

    @property
    def role_text(self) -> str:
        if self.role == "preferred":
            return "preferred for " + ", ".join(self.preferred_ops)
        return self.role


@dataclass
class Layer:
    name: str
    file: str
    data: dict[str, Any]


@dataclass
class ProjectConfig:
    directory: Path
    file: Path
    mail_sources: list[MailSourceEntry]
    layers: list[Layer] = field(default_factory=list)
    title: str = ""

    # -- layered lookup ------------------------------------------------
    def lookup(self, key: str) -> Declared | None:
        """Return the value from the first layer that declares ``key`` (dotted), or None."""
        for layer in self.layers:
            value = _dig(layer.data, key)
            if value is not ABSENT:
                return Declared(value, layer.name, layer.file)
            if _null_parent(layer.data, key):
                # A null parent (``security_inbox: null``) declares its whole subtree null.
                return Declared(None, layer.name, layer.file)
        return None

    def get(self, key: str, default: Any = None) -> Any:
        found = self.lookup(key)
        return default if found is None else found.value

    def refuse(self, key: str, valid: str, value: Any = ABSENT) -> ConfigError:
        """The error for ``key`` (dotted) whose value cannot be used, in words: a key no layer
        sets says it is not set and where it goes ("is not set: project.md's Configuration
        block needs a repo: line under tracker: github:"), an empty one that it is empty and
        where, any other value is quoted. ``value`` defaults to the key's value here."""
        declared = self.lookup(key)
        if value is ABSENT:
            value = None if declared is None else declared.value
        if value is None or (isinstance(value, str) and not value.strip()):
            if declared is None:
                problem = f"is not set: {self.file.name}'s Configuration block needs a {key.rpartition('.')[2]}: line{_under(key)}"
            else:
                problem = _empty(key, "the Configuration block" if declared.layer == "project" else declared.file)
            return ConfigError(self.file, key, problem, valid)
        return ConfigError(self.file, key, f"is {value!r}", valid)

    def source_settings(self, name: str) -> dict[str, Any]:
        """Settings of one mail source: ``mail_sources.<name>`` in the configuration block."""
        value = self.get(f"mail_sources.{name}", None)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ConfigError(self.file, f"mail_sources.{name}", "must be a mapping of settings", "key: value lines")
        return dict(value)

    def source_kind(self, entry: MailSourceEntry) -> str:
        kind = self.source_settings(entry.name).get("kind", entry.name)
        return str(kind)

    def resolve_path(self, value: str) -> Path:
        path = Path(str(value)).expanduser()
        return path if path.is_absolute() else (self.directory / path)


def _under(key: str) -> str:
    """Where a dotted key's line is written, in words: `` under tracker: github:`` (top level: "")."""
    parents = key.rpartition(".")[0]
    return f" under {' '.join(p + ':' for p in parents.split('.'))}" if parents else ""


def _empty(key: str, where: str) -> str:
    return f"is empty: {key.rpartition('.')[2]}:{_under(key)} in {where} has no value"


def _null_parent(data: Any, key: str) -> bool:
    node = data
    for part in key.split(".")[:-1]:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
        if node is None:
            return True
    return False


def _dig(data: Any, key: str) -> Any:
    node = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return ABSENT
        node = node[part]
    return node


# -- parsing -------------------------------------------------------------

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w-]*)\s*$")


def _sections(lines: list[str]) -> Iterator[tuple[str, int, int, int]]:
    """Yield (heading text lower-cased, level, first body line, end line) for each heading."""
    heads: list[tuple[int, int, str]] = []
    in_fence = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        m = _HEADING.match(line)
        if m:
            heads.append((i, len(m.group(1)), m.group(2).strip().lower()))
    for idx, (i, level, text) in enumerate(heads):
        end = len(lines)
        for j, lvl, _ in heads[idx + 1 :]:
            if lvl <= level:
                end = j
                break
        yield text, level, i + 1, end


def _cells(line: str) -> list[str]:
    row = line.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|"):
        row = row[:-1]
    return [c.strip() for c in row.split("|")]


def _unquote(cell: str) -> str:
    return cell.strip().strip("`").strip()


def parse_role(text: str, file: Path, key: str) -> tuple[str, tuple[str, ...]]:
    raw = _unquote(text).lower()
    if raw in ("primary", "fallback", "optional"):
        return raw, ()
    m = re.match(r"^preferred\s+for\s+(.+)$", raw)
    if m:
        ops = tuple(o.strip().strip("`") for o in re.split(r"[,\s]+(?:and\s+)?", m.group(1)) if o.strip())
        bad = [o for o in ops if o not in KNOWN_OPS]
        if bad or not ops:
            raise ConfigError(file, key, f"unknown operation(s) {', '.join(bad) or '(none)'} in role {text!r}",
                              ", ".join(KNOWN_OPS))
        return "preferred", ops
    raise ConfigError(file, key, f"unknown role {text!r}", ROLES_HELP)


def parse_mail_sources(lines: list[str], start: int, end: int, file: Path) -> list[MailSourceEntry]:
    rows = [(i, lines[i]) for i in range(start, end) if lines[i].strip().startswith("|")]
    if not rows:
        raise ConfigError(file, "Mail sources", "section has no table", "| Backend | Role | Mandatory | Notes |")
    header = [c.lower() for c in _cells(rows[0][1])]
    expected = ["backend", "role", "mandatory", "notes"]
    if header[:3] != expected[:3]:
        raise ConfigError(file, "Mail sources", f"table header is {rows[0][1].strip()!r}",
                          "| Backend | Role | Mandatory | Notes |")
    entries: list[MailSourceEntry] = []
    for i, line in rows[1:]:
        cells = _cells(line)
        if all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
            continue
        while len(cells) < 4:
            cells.append("")
        name = _unquote(cells[0])
        key = f"Mail sources line {i + 1} ({name or 'no name'})"
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise ConfigError(file, key, f"backend name {cells[0]!r} is not a plain name", "e.g. mbox, imap, gmail")
        role, ops = parse_role(cells[1], file, key + " Role")
        mand = _unquote(cells[2]).lower()
        if mand not in ("yes", "no"):
            raise ConfigError(file, key + " Mandatory", f"{cells[2]!r} is not yes or no", "yes, no")
        if any(e.name == name for e in entries):
            raise ConfigError(file, key, f"backend {name} is listed twice", "each backend once")
        entries.append(MailSourceEntry(name, role, ops, mand == "yes", cells[3].strip(), i + 1))
    primaries = [e.name for e in entries if e.role == "primary"]
    if len(primaries) != 1:
        raise ConfigError(
            file,
            "Mail sources Role",
            f"{len(primaries)} backends carry the primary role ({', '.join(primaries) or 'none'})",
            "exactly one backend with role primary",
        )
    seen: dict[str, str] = {}
    for e in entries:
        for op in e.preferred_ops:
            if op in seen:
                raise ConfigError(file, f"Mail sources {e.name} Role",
                                  f"{op} is already preferred by {seen[op]}", "one preferred backend per op")
            seen[op] = e.name
    return entries


# project.md often lives in a shared repository: its YAML is untrusted input. Aliases
# are refused (a "billion laughs" block expands exponentially in whatever walks it, and
# no key of ours needs them), the block's size is capped, and so is its nesting.
MAX_CONFIG_BYTES = 256 * 1024
MAX_CONFIG_DEPTH = 32


def _yaml():
    # lazy: PyYAML loads with the first project.md read, not with every import of the
    # settings (about 13 ms of the app's start, which reads project.md in a child process)
    import yaml

    return yaml


def _safe_loader():
    yaml = _yaml()

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent, index):  # type: ignore[override]
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.MarkedYAMLError(None, None, f"YAML aliases (*{event.anchor}) are not allowed",
                                           event.start_mark)
            self._depth = getattr(self, "_depth", 0) + 1
            try:
                if self._depth > MAX_CONFIG_DEPTH:
                    event = self.peek_event()
                    raise yaml.MarkedYAMLError(None, None, f"nested deeper than {MAX_CONFIG_DEPTH} levels",
                                               event.start_mark)
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    return Loader


def safe_yaml(text: str):
    """``yaml.safe_load`` without aliases and with capped nesting (raises yaml.YAMLError)."""
    loader = _safe_loader()(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def parse_config_block(lines: list[str], start: int, end: int, file: Path) -> dict[str, Any]:
    i = start
    while i < end:
        m = _FENCE.match(lines[i])
        if m and m.group(2).lower() in ("yaml", "yml"):
            fence = m.group(1)
            j = i + 1
            while j < end and not lines[j].strip().startswith(fence):
                j += 1
            text = "\n".join(lines[i + 1 : j])
            if len(text.encode("utf-8")) > MAX_CONFIG_BYTES:
                raise ConfigError(file, f"Configuration line {i + 1}",
                                  f"the yaml block is too large ({len(text.encode('utf-8'))} bytes)",
                                  f"at most {MAX_CONFIG_BYTES // 1024} KiB of key: value lines")
            try:
                data = config_cache.parsed(text, file, safe_yaml)  # PyYAML only for a block not seen before
            except _yaml().YAMLError as exc:
                where = getattr(exc, "problem_mark", None)
                line = (where.line + i + 2) if where is not None else i + 1
                raise ConfigError(file, f"Configuration line {line}", f"not valid YAML: {getattr(exc, 'problem', exc)}",
                                  "key: value lines, nested by indentation, without anchors or aliases") from exc
            if data is None:
                return {}
            if not isinstance(data, dict):
                raise ConfigError(file, "Configuration", "the yaml block is not a mapping", "key: value lines")
            validate_config(data, file)
            return data
        i += 1
    return {}


# -- the type of every key we read ---------------------------------------------------

def _is_text(v: Any) -> bool:
    return isinstance(v, str)


def _is_name(v: Any) -> bool:
    return isinstance(v, (str, int, float)) and not isinstance(v, bool)


def _text(v: Any) -> bool:
    return _is_text(v)


def _text_or_null(v: Any) -> bool:
    return v is None or _is_text(v)


def _flag(v: Any) -> bool:
    return isinstance(v, bool)


def _names(v: Any) -> bool:
    return v is None or (isinstance(v, list) and all(_is_name(x) for x in v))


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


#: The longest queue deadline: ten years (a larger one is a typo, and would overflow a date).
MAX_QUEUE_DAYS = 3650


def _queue_days(v: Any) -> bool:
    return _whole(v) and v <= MAX_QUEUE_DAYS


def _seconds(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 1


def _since(v: Any) -> bool:
    return v is None or isinstance(v, (str, dt.date))


def _one_of(*choices: Any):
    return lambda v: v is None or v in choices


def _text_map(v: Any) -> bool:
    return v is None or (isinstance(v, dict) and all(_is_name(k) and _is_name(x) for k, x in v.items()))


def _attribution(v: Any) -> bool:
    return v is None or _is_text(v) or (isinstance(v, list) and all(_is_text(x) for x in v))


TEXT = (_text, "a text")
TEXT_OR_NULL = (_text_or_null, "a text, or null")
ADDRESS = (_text_or_null, "an address such as security@example.org, or null")
NAMES = (_names, "a list of names, e.g. [needs triage, valid]")
MAPPING = "a mapping of key: value lines"

# Every key the code reads: dotted key -> (check, what is valid). Parents of a dotted
# key must be mappings. Keys not listed here are left to their reader (e.g. each
# backend's own ``mail_sources.<name>.*`` settings, which it checks itself).
SCHEMA: dict[str, tuple[Any, str]] = {
    "organization": TEXT_OR_NULL,
    "security_list": ADDRESS,
    "security_inbox.foundation_security_address": ADDRESS,
    "import.since": (_since, "a date (YYYY-MM-DD) or a number of days such as 30d"),
    "import.since_days": (_whole, "a whole number of days, e.g. 30"),
    "import.labels": NAMES,
    "alerts.poll_seconds": (_seconds, "a number of seconds, at least 1"),
    "sweep.internal_domains": (_names, "a list of domains, e.g. [example.org]"),
    "templates.receipt": TEXT_OR_NULL,
    "signature": TEXT_OR_NULL,
    "tracker.platform": (_one_of("github", "jira", "local-files"), "github, jira, local-files"),
    "tracker.prefix": TEXT,
    "tracker.user": TEXT_OR_NULL,
    "tracker.commit_attribution": (_attribution, "a trailer line or a list of them"),
    "tracker.labels": NAMES,
    "tracker.milestones": NAMES,
    "tracker.assignees": NAMES,
    "tracker.close_reasons": NAMES,
    "tracker.fields": NAMES,
    "tracker.local.path": TEXT,
    "tracker.local.url_template": TEXT_OR_NULL,
    "tracker.github.repo": TEXT,
    "tracker.github.api_url": TEXT_OR_NULL,
    "tracker.jira.url": TEXT,
    "tracker.jira.project": TEXT,
    "tracker.jira.email": TEXT_OR_NULL,
    "tracker.jira.auth": (_one_of("basic", "bearer"), "basic, bearer"),
    "tracker.jira.issue_type": TEXT_OR_NULL,
    "tracker.jira.security_level": TEXT_OR_NULL,
    "tracker.jira.api_version": (_one_of(2, 3), "2, 3"),
    "tracker.jira.resolutions": (_text_map, "a mapping of close reason: Jira resolution name"),
    "tracker.jira.accounts": (_text_map, "a mapping of user name: Jira account ID"),
    # OpenPGP (docs/pgp.md): quote a fingerprint that YAML could read as a number.
    "pgp.team_key": (_text_or_null, "a key fingerprint (quoted), or null"),
    "pgp.encrypt_replies": (_flag, "true or false"),
    "pgp.sign_replies": (_flag, "true or false"),
    # The team's triage queue (docs/queue.md, application/queue.py).
    "queue.first_response_days": (_queue_days, "a whole number of days from 0 to 3650, e.g. 2"),
    "queue.disclosure_days": (_queue_days, "a whole number of days from 0 to 3650, e.g. 90"),
    "queue.team": (_names, "a list of the team's addresses, e.g. [alice@example.org]"),
    "queue.in_progress_labels": NAMES,
    "queue.fixed_labels": NAMES,
    "queue.closed_labels": NAMES,
}
# Keys that hold a mapping of settings (null allowed), besides the parents above.
MAPPINGS = ("security_inbox", "import", "alerts", "sweep", "templates", "tracker", "tracker.local",
            "tracker.github", "tracker.jira", "mail_sources", "pgp", "queue")


def _describe(value: Any) -> str:
    kind = {dict: "a mapping", list: "a list", bool: "true/false", type(None): "null"}.get(type(value))
    if kind is None:
        kind = f"{type(value).__name__} {str(value)[:40]!r}"
    return kind


def validate_config(data: dict[str, Any], file: Path | str) -> None:
    """Refuse a value of the wrong type for any key we read, naming the file, the key and what is valid."""
    for key in MAPPINGS:
        value = _dig(data, key)
        if value is not ABSENT and value is not None and not isinstance(value, dict):
            raise ConfigError(file, key, f"is {_describe(value)}", MAPPING)
    sources = data.get("mail_sources")
    if isinstance(sources, dict):
        for name, settings in sources.items():
            if settings is not None and not isinstance(settings, dict):
                raise ConfigError(file, f"mail_sources.{name}", f"is {_describe(settings)}",
                                  "a mapping of this backend's settings (path:, account:, list: …)")
    for key, (check, valid) in SCHEMA.items():
        value = _dig(data, key)
        if value is not ABSENT and not check(value):
            problem = _empty(key, "the Configuration block") if value is None else f"is {_describe(value)}"
            raise ConfigError(file, key, problem, valid)


def load_org_profile(name: str, file: Path) -> Layer:
    if not re.fullmatch(r"[a-z0-9_-]+", name or ""):
        raise ConfigError(file, "organization", f"{name!r} is not a profile name", _org_names())
    path = ORG_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(file, "organization", f"no organization profile named {name!r}", _org_names())
    data = config_cache.parsed(path.read_text(encoding="utf-8"), path, safe_yaml) or {}  # as project.md's block
    return Layer(f"organization:{name}", str(path), data)


def _org_names() -> str:
    return ", ".join(sorted(p.stem for p in ORG_DIR.glob("*.yaml"))) or "(none shipped)"


def load_project(directory: Path | str) -> ProjectConfig:
    directory = Path(directory).expanduser()
    file = directory / PROJECT_FILE
    if not file.is_file():
        raise ProjectFileError(file, "project.md", "file not found", "a folder holding project.md")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ProjectFileError(file, "project.md", f"not UTF-8 ({exc.reason} at byte {exc.start})",
                               "UTF-8 text") from exc
    lines = text.splitlines()
    title = next((m.group(2) for m in map(_HEADING.match, lines) if m and len(m.group(1)) == 1), directory.name)
    sources: list[MailSourceEntry] = []
    data: dict[str, Any] = {}
    found_sources = False
    for heading, _level, start, end in _sections(lines):
        if heading == "mail sources":
            sources = parse_mail_sources(lines, start, end, file)
            found_sources = True
        elif heading == "configuration":
            data = parse_config_block(lines, start, end, file)
    layers = [Layer("project", str(file), data)]
    org = data.get("organization")
    if org not in (None, ""):
        layers.append(load_org_profile(str(org), file))
    layers.append(Layer("default", "(framework default)", FRAMEWORK_DEFAULTS))
    config = ProjectConfig(directory, file, sources, layers, title)
    if not found_sources:
        config.mail_sources = []
    return config
