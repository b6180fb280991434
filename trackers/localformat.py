"""The on-disk format of a local-files tracker (see docs/tracker-local-files.md).

One Markdown file per issue, ``<PREFIX>-<NNNN>.md``::

    ---
    id: "SEC-0012"
    title: "Heap overflow in the parser"
    state: "open"
    labels: ["needs-triage"]
    assignees: []
    milestone: null
    author: "alice"
    created: "2025-01-02T03:04:05Z"
    updated: "2025-01-02T03:04:05Z"
    close_reason: null
    ---
    ### Affected versions

    1.2.3
    <!-- mailtriage:comment {"id": 1, "kind": "rollup", "author": "alice", "created": "…", "updated": "…"} -->
    <!-- status rollup v1 -->
    …

The front matter is YAML; mailtriage writes each value as JSON (a subset of YAML) so it can
read its own files without a YAML parser and still read files a human edited. The body
runs to the first comment header; each comment runs to the next. Exactly one line end
separates a text from the header after it. A text line that itself starts with
``<!-- mailtriage:`` is written with one extra leading backslash, removed on reading, so no
body can forge a comment.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any

from mailtriage.core.lazy_re import lazy
from mailtriage.trackers.contract import MalformedIssue

MAX_FILE_BYTES = 16 * 1024 * 1024  # far over any issue; bounds what one file can make us hold


def read_tracker_file(path: Any) -> bytes:
    """The bytes of a file in the tracker folder: a regular file, never a link, at most
    MAX_FILE_BYTES. The folder is team data (a pull request can add a link to ~/.ssh or to
    /dev/zero; git stores links). Raises OSError naming what is wrong."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "is a symbolic link (never followed in a tracker)") from exc
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "is not a regular file")
        # as much as the file holds, plus one byte: a read of the bound itself would set up a
        # 16 MB buffer for each file (4x the cost of a 1 KB issue file's read; a sync reads 10,000)
        want = min(info.st_size, MAX_FILE_BYTES) + 1
        data = handle.read(want)
        if len(data) == want <= MAX_FILE_BYTES:  # it grew since: the rest, up to the bound
            data += handle.read(MAX_FILE_BYTES + 1 - len(data))
    if len(data) > MAX_FILE_BYTES:
        raise OSError(errno.EFBIG, f"is larger than {MAX_FILE_BYTES:,} bytes")
    return data


FORMAT_NAME = "mailtriage-local-tracker"
FORMAT_VERSION = 1
DESCRIPTOR_NAME = "tracker-format.yaml"
ISSUE_SUFFIX = ".md"
ATTACHMENTS_SUFFIX = ".attachments"

META_KEYS = ("id", "title", "state", "labels", "assignees", "milestone", "author", "created", "updated",
             "close_reason")
_LIST_KEYS = ("labels", "assignees")
_HEADER_RE = lazy(r"^<!-- mailtriage:comment (\{.*\}) -->\r?$")
_ESCAPED_RE = lazy(r"^(\\*)<!-- mailtriage:")
_FM_LINE = lazy(r"^([a-z_][a-z0-9_]*): (.*)$")


@dataclass
class StoredComment:
    id: int
    kind: str  # "comment" | "rollup" | "attachment"
    author: str | None
    created: str | None
    updated: str | None
    text: str
    extra: dict = field(default_factory=dict)

    def header(self) -> str:
        data = {"id": self.id, "kind": self.kind, "author": self.author, "created": self.created,
                "updated": self.updated}
        data.update(self.extra)
        # '>' is escaped so no value can end the HTML comment early
        encoded = json.dumps(data, ensure_ascii=False).replace(">", "\\u003e").replace("\n", "\\n")
        return f"<!-- mailtriage:comment {encoded} -->"


@dataclass
class IssueFile:
    meta: dict[str, Any]
    body: str
    comments: list[StoredComment] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.meta["id"]

    def rollup(self) -> StoredComment | None:
        return next((c for c in self.comments if c.kind == "rollup"), None)

    def next_comment_id(self) -> int:
        return max((c.id for c in self.comments), default=0) + 1


def escape_text(text: str) -> str:
    if "<!-- mailtriage:" not in text:
        return text
    return "\n".join("\\" + line if _ESCAPED_RE.match(line) else line for line in text.split("\n"))


def unescape_text(text: str) -> str:
    if "<!-- mailtriage:" not in text:
        return text
    return "\n".join(line[1:] if _ESCAPED_RE.match(line) and line.startswith("\\") else line
                     for line in text.split("\n"))


# -- front matter ----------------------------------------------------------------------

def _render_value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def render_front_matter(meta: dict[str, Any]) -> str:
    keys = [k for k in META_KEYS] + [k for k in meta if k not in META_KEYS]
    lines = ["---"] + [f"{k}: {_render_value(meta.get(k))}" for k in keys] + ["---"]
    return "\n".join(lines) + "\n"


def split_front_matter(text: str, where: str) -> tuple[str, str]:
    """(front matter text, rest). Raises MalformedIssue when the file does not start with one."""
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        raise MalformedIssue(where, "the file does not start with a '---' front matter line")
    start = text.index("\n") + 1
    m = re.compile(r"^---\r?$", re.M).search(text, start)
    if not m:
        raise MalformedIssue(where, "the front matter has no closing '---' line")
    end = m.end()
    if end < len(text) and text[end] == "\n":
        end += 1
    return text[start:m.start()], text[end:]


def _json_value(text: str) -> Any:
    """``json.loads(text)``, with the shapes the format writes most taken without the decoder
    (a sync's first read parses 10,000 front matters of eleven values each): ``null``, ``[]``
    and a string with no escape, no quote and no control character, which JSON reads as its
    very characters. Anything else goes to json.loads (and its ValueError)."""
    if text == "null":
        return None
    if text == "[]":
        return []
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        inner = text[1:-1]
        if '"' not in inner and "\\" not in inner and inner.isprintable():
            return inner
    return json.loads(text)


def parse_front_matter(fm: str, where: str) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    fast = True
    for line in fm.split("\n"):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        m = _FM_LINE.match(line)
        if not m:
            fast = False
            break
        try:
            meta[m.group(1)] = _json_value(m.group(2))
        except ValueError:
            fast = False
            break
    if not fast:
        # hand-edited YAML (plain scalars, block lists): the general reader
        yaml = _yaml()
        try:
            loaded = safe_load(fm)
        except yaml.YAMLError as exc:
            raise MalformedIssue(where, f"the front matter is not valid YAML: {getattr(exc, 'problem', exc)}") from exc
        if not isinstance(loaded, dict):
            raise MalformedIssue(where, "the front matter is not a mapping of keys")
        meta = {str(k): _plain(v) for k, v in loaded.items()}
    return check_meta(meta, where)


def _plain(value: Any) -> Any:
    # YAML turns timestamps into datetime objects; the format keeps them as text
    if hasattr(value, "isoformat"):
        text = value.isoformat()
        return text.replace("+00:00", "Z")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def check_meta(meta: dict[str, Any], where: str) -> dict[str, Any]:
    for key in ("id", "title", "state"):
        if not isinstance(meta.get(key), str) or not meta[key]:
            raise MalformedIssue(where, f"front matter key {key!r} is missing or not text")
    if meta["state"] not in ("open", "closed"):
        raise MalformedIssue(where, f"state is {meta['state']!r} (valid: open, closed)")
    for key in _LIST_KEYS:
        value = meta.get(key)
        if value is None:
            meta[key] = []
        elif not isinstance(value, list) or not all(isinstance(v, (str, int)) for v in value):
            raise MalformedIssue(where, f"front matter key {key!r} is not a list of names")
        else:
            meta[key] = [str(v) for v in value]
    for key in ("milestone", "author", "created", "updated", "close_reason"):
        value = meta.get(key)
        if value is not None and not isinstance(value, (str, int, float)):
            raise MalformedIssue(where, f"front matter key {key!r} is not text")
        meta[key] = None if value is None else str(value)
    return meta


# -- whole files -----------------------------------------------------------------------

def parse_issue(text: str, where: str, known: tuple[str, dict[str, Any]] | None = None) -> IssueFile:
    """Raises MalformedIssue naming the file and what is wrong with it.

    ``known``: (front matter text, what :func:`parse_front_matter` made of it), used (a copy)
    when this file's front matter is exactly that text, instead of parsing it again."""
    fm, rest = split_front_matter(text, where)
    if known is not None and known[0] == fm:
        meta = {k: list(v) if isinstance(v, list) else v for k, v in known[1].items()}
    else:
        meta = parse_front_matter(fm, where)
    lines = rest.split("\n")
    headers: list[tuple[int, dict]] = []
    for i, line in enumerate(lines):
        if line.startswith("<!-- mailtriage:comment "):
            m = _HEADER_RE.match(line)
            if not m:
                raise MalformedIssue(where, f"comment header on line {i + 1} after the front matter is malformed")
            try:
                data = json.loads(m.group(1))
            except ValueError as exc:
                raise MalformedIssue(where, f"comment header on line {i + 1} is not valid JSON") from exc
            if not isinstance(data, dict) or not isinstance(data.get("id"), int):
                raise MalformedIssue(where, f"comment header on line {i + 1} has no numeric id")
            headers.append((i, data))

    def segment(a: int, b: int) -> str:
        # the text between two headers loses the one line end that separates it from the next
        chunk = "\n".join(lines[a:b])
        return unescape_text(chunk)

    if not headers:
        body = rest[:-1] if rest.endswith("\n") else rest
        return IssueFile(meta, unescape_text(body), [])
    first = headers[0][0]
    body = segment(0, first)
    comments: list[StoredComment] = []
    for n, (i, data) in enumerate(headers):
        end = headers[n + 1][0] if n + 1 < len(headers) else len(lines)
        text = segment(i + 1, end)
        if n + 1 == len(headers) and end == len(lines) and text.endswith("\n"):
            text = text[:-1]
        extra = {k: v for k, v in data.items() if k not in ("id", "kind", "author", "created", "updated")}
        comments.append(StoredComment(data["id"], str(data.get("kind") or "comment"), data.get("author"),
                                      data.get("created"), data.get("updated"), text, extra))
    return IssueFile(meta, body, comments)


def render_issue(issue: IssueFile) -> str:
    out = [render_front_matter(issue.meta), escape_text(issue.body), "\n"]
    for c in issue.comments:
        out += [c.header(), "\n", escape_text(c.text), "\n"]
    return "".join(out)


# -- YAML ------------------------------------------------------------------------------

def _yaml() -> Any:
    import yaml  # lazy: only for a document the plain readers here decline

    return yaml


def safe_load(text: str) -> Any:
    """``yaml.safe_load``, through libyaml's parser (PyYAML's ``CSafeLoader``) where PyYAML was
    built with it: about 7x faster than the pure-Python one, the same documents
    (tests/trackers/test_localformat_yaml.py compares them); the pure loader where it is missing."""
    yaml = _yaml()
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


#: ``key: value`` of a plain descriptor line; the value is checked by _plain_scalar.
_SIMPLE_LINE = lazy(r"([a-z_][a-z0-9_]*): +(\S+) *")  # a trailing tab: PyYAML refuses it
_SIMPLE_INT = lazy(r"0|[1-9][0-9]{0,17}")
_SIMPLE_WORD = lazy(r"[A-Za-z][A-Za-z0-9-]*")
#: Plain words YAML 1.1 (PyYAML's resolver) reads as something other than text.
_YAML_WORDS = frozenset(("yes", "no", "true", "false", "on", "off", "null", "y", "n"))


def _simple_mapping(text: str) -> dict[str, Any] | None:
    """``yaml.safe_load(text)`` for a flat mapping of ``key: value`` lines whose values are
    ``true``/``false``, a decimal number or a plain word, with ``#`` comment lines; None for
    anything else (the caller reads it with PyYAML). It declines rather than guess: a key or
    word YAML would read otherwise (``on``, ``Yes``, ``null``), quotes, a trailing comment, an
    indented line, a repeated key, a document marker."""
    data: dict[str, Any] = {}
    for line in text.split("\n"):
        if not line or line.startswith("#"):
            continue
        m = _SIMPLE_LINE.fullmatch(line)
        if m is None or m.group(1) in data or m.group(1) in _YAML_WORDS:
            return None
        value = m.group(2)
        if value in ("true", "false"):
            data[m.group(1)] = value == "true"
        elif _SIMPLE_INT.fullmatch(value):
            data[m.group(1)] = int(value)
        elif _SIMPLE_WORD.fullmatch(value) and value.lower() not in _YAML_WORDS:
            data[m.group(1)] = value
        else:
            return None
    return data or None


# -- descriptor ------------------------------------------------------------------------

@dataclass
class Descriptor:
    prefix: str
    digits: int = 4
    access_restricted: bool = False
    version: int = FORMAT_VERSION

    def render(self) -> str:
        return (
            "# mailtriage local-files tracker: format descriptor. Commit it with the tracker.\n"
            "# access_restricted is set only by `mailtriage tracker init --access-restricted` or\n"
            "# `detect --write --access-restricted`, after a person confirmed who can read this repository.\n"
            f"format: {FORMAT_NAME}\n"
            f"version: {self.version}\n"
            f"prefix: {self.prefix}\n"
            f"digits: {self.digits}\n"
            f"access_restricted: {'true' if self.access_restricted else 'false'}\n"
        )

    def format_id(self, number: int) -> str:
        return f"{self.prefix}-{number:0{self.digits}d}"


PREFIX_RE = lazy(r"^[A-Z][A-Z0-9]{0,15}$")


def parse_descriptor(text: str, where: str) -> Descriptor:
    """Raises MalformedIssue (exit 5) naming the descriptor file and the bad key."""
    data = _simple_mapping(text)  # what Descriptor.render writes: read without PyYAML
    if data is None:
        yaml = _yaml()  # lazy: importing PyYAML costs a command-line child some 30-60 ms
        try:
            data = safe_load(text)
        except yaml.YAMLError as exc:
            raise MalformedIssue(where, f"not valid YAML: {getattr(exc, 'problem', exc)}") from exc
    if not isinstance(data, dict):
        raise MalformedIssue(where, "not a mapping of keys")
    if data.get("format") != FORMAT_NAME:
        raise MalformedIssue(where, f"format is {data.get('format')!r} (valid: {FORMAT_NAME})")
    version = data.get("version")
    if version != FORMAT_VERSION:
        raise MalformedIssue(where, f"version {version!r} is not supported (valid: {FORMAT_VERSION})")
    prefix = str(data.get("prefix") or "")
    if not PREFIX_RE.match(prefix):
        raise MalformedIssue(where, f"prefix {prefix!r} is not upper-case letters and digits (e.g. SEC)")
    digits = data.get("digits", 4)
    if not isinstance(digits, int) or not 1 <= digits <= 9:
        raise MalformedIssue(where, f"digits {digits!r} is not a number from 1 to 9")
    restricted = data.get("access_restricted", False)
    if not isinstance(restricted, bool):
        raise MalformedIssue(where, f"access_restricted {restricted!r} is not true or false")
    return Descriptor(prefix, digits, restricted, version)
