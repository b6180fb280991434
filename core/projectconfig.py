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

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

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


class ConfigError(Exception):
    """A configuration problem, always naming the file, the key and what is valid."""

    def __init__(self, file: Path | str, key: str, problem: str, valid: str | None = None) -> None:
        self.file = str(file)
        self.key = key
        self.problem = problem
        self.valid = valid
        text = f"{self.file}: {key}: {problem}"
        if valid:
            text += f" (valid: {valid})"
        super().__init__(text)


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


@dataclass(frozen=True)
class Declared:
    """A value together with the layer that declared it (``project``, ``organization:asf``, ``default``)."""

    value: Any
    layer: str
    file: str


@dataclass(frozen=True)
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


def parse_config_block(lines: list[str], start: int, end: int, file: Path) -> dict[str, Any]:
    import yaml

    i = start
    while i < end:
        m = _FENCE.match(lines[i])
        if m and m.group(2).lower() in ("yaml", "yml"):
            fence = m.group(1)
            j = i + 1
            while j < end and not lines[j].strip().startswith(fence):
                j += 1
            text = "\n".join(lines[i + 1 : j])
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                where = getattr(exc, "problem_mark", None)
                line = (where.line + i + 2) if where is not None else i + 1
                raise ConfigError(file, f"Configuration line {line}", f"not valid YAML: {getattr(exc, 'problem', exc)}",
                                  "key: value lines, nested by indentation") from None
            if data is None:
                return {}
            if not isinstance(data, dict):
                raise ConfigError(file, "Configuration", "the yaml block is not a mapping", "key: value lines")
            return data
        i += 1
    return {}


def load_org_profile(name: str, file: Path) -> Layer:
    import yaml

    if not re.fullmatch(r"[a-z0-9_-]+", name or ""):
        raise ConfigError(file, "organization", f"{name!r} is not a profile name", _org_names())
    path = ORG_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(file, "organization", f"no organization profile named {name!r}", _org_names())
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return Layer(f"organization:{name}", str(path), data)


def _org_names() -> str:
    return ", ".join(sorted(p.stem for p in ORG_DIR.glob("*.yaml"))) or "(none shipped)"


def load_project(directory: Path | str) -> ProjectConfig:
    directory = Path(directory).expanduser()
    file = directory / PROJECT_FILE
    if not file.is_file():
        raise ConfigError(file, "project.md", "file not found", "a folder holding project.md")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(file, "project.md", f"not UTF-8 ({exc.reason} at byte {exc.start})", "UTF-8 text") from None
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
