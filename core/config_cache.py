"""project.md's parsed YAML block, kept so that opening a project needs no YAML parser.

Importing PyYAML costs 12-18 ms (python -X importtime: its reader and resolver compile
large patterns), on the path of every project open, the app's and each CLI command's,
for a block of a few lines that rarely changes. The value the parser gave is kept in the
cache folder with the block's exact text and a fingerprint of the installed PyYAML (size
and mtime of the files that decide what a block means); a later open of the same text under
the same PyYAML takes that value, rebuilt fresh each time, without importing PyYAML.

Only what YAML's safe loader builds from plain blocks is kept: mappings with string keys,
lists, strings, integers, floats, booleans, null, dates and timestamps. Anything else (a
set, binary, pairs, a non-string key), and any block the parser refused, is parsed every
time as before. A cache file that is missing, damaged (:mod:`core.cache_file` checks it),
of another format, Python or PyYAML, or for another text is simply parsed again. Nothing
here raises: a cache folder that cannot be used is no cache. Deleting it is always safe.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import os
import zlib
from pathlib import Path
from typing import Any, Callable

from mailtriage.core import cache_file
from mailtriage.core.paths import UnsafePath, private_cache_dir

KIND = "project-config"
#: Raise it when what ``projectconfig.safe_yaml`` accepts or builds changes: kept values then go.
VERSION = 1

#: PyYAML's files whose change may change what a block means.
_FINGERPRINTED = ("__init__.py", "constructor.py", "resolver.py", "scanner.py", "parser.py", "composer.py")


class _NotKept(Exception):
    """A value this cache does not keep."""


def parsed(text: str, file: Path | str, parse: Callable[[str], Any]) -> Any:
    """``parse(text)``, or the value it gave for this exact ``text`` before (same PyYAML).

    ``parse``'s errors pass through unchanged, and a refused block is never kept."""
    fingerprint = _yaml_fingerprint()
    path = _cache_path(file) if fingerprint is not None else None
    if path is not None:
        kept = _read(path, text, fingerprint)
        if kept is not _MISSING:
            return kept
    value = parse(text)
    if path is not None:
        _write(path, text, fingerprint, value)
    return value


_MISSING = object()


def _yaml_fingerprint() -> tuple | None:
    """(size, mtime) of PyYAML's deciding files, found without importing it; None if not found."""
    try:
        spec = importlib.util.find_spec("yaml")
        if spec is None or not spec.origin:
            return None
        folder = os.path.dirname(spec.origin)
        stats = [os.stat(os.path.join(folder, name)) for name in _FINGERPRINTED]
    except (OSError, ImportError, ValueError):
        return None
    return tuple((s.st_size, s.st_mtime_ns) for s in stats)


def _cache_path(file: Path | str) -> Path | None:
    name = os.path.abspath(os.fspath(file)).encode("utf-8", "surrogatepass")
    try:
        folder = private_cache_dir(KIND)
    except (OSError, UnsafePath):  # a folder we cannot use, or must not (others could write it): no cache
        return None
    # Two project files that share a name here only take turns: the text is compared.
    return folder / f"{zlib.crc32(name):08x}{zlib.adler32(name):08x}.cache"


def _read(path: Path, text: str, fingerprint: tuple) -> Any:
    try:
        payload, _why = cache_file.read(path, KIND, VERSION)
        if not isinstance(payload, tuple) or len(payload) != 3:
            return _MISSING
        kept_fingerprint, kept_text, encoded = payload
        if kept_text != text or kept_fingerprint != fingerprint:
            return _MISSING
        return _decode(encoded)
    except (OSError, ValueError, TypeError, KeyError, IndexError, RecursionError, _NotKept):
        return _MISSING


def _write(path: Path, text: str, fingerprint: tuple, value: Any) -> None:
    try:
        cache_file.write(path, KIND, VERSION, (fingerprint, text, _encode(value)))
    except (OSError, ValueError, RecursionError, _NotKept):
        pass


def _encode(value: Any) -> Any:
    """``value`` as marshal-able data; tuples tag dates and timestamps (the parser makes no tuple
    that is kept)."""
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return value
    if kind is dict:
        if not all(type(key) is str for key in value):
            raise _NotKept("a mapping key that is not a string")
        return {key: _encode(item) for key, item in value.items()}
    if kind is list:
        return [_encode(item) for item in value]
    if kind is dt.date:
        return ("date", value.year, value.month, value.day)
    if kind is dt.datetime:
        offset = None
        if value.tzinfo is not None:
            delta = value.tzinfo.utcoffset(None)
            if type(value.tzinfo) is not dt.timezone or repr(value.tzinfo) != repr(dt.timezone(delta)):
                raise _NotKept("a timestamp whose time zone is more than an offset")
            offset = (delta.days, delta.seconds, delta.microseconds)
        return ("datetime", value.year, value.month, value.day, value.hour, value.minute, value.second,
                value.microsecond, value.fold, offset)
    raise _NotKept(f"a {kind.__name__}")


def _decode(value: Any) -> Any:
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return value
    if kind is dict:
        return {key: _decode(item) for key, item in value.items()}
    if kind is list:
        return [_decode(item) for item in value]
    if kind is tuple and value and value[0] == "date" and len(value) == 4:
        return dt.date(*value[1:])
    if kind is tuple and value and value[0] == "datetime" and len(value) == 10:
        offset = value[9]
        tzinfo = None if offset is None else dt.timezone(dt.timedelta(*offset))
        return dt.datetime(*value[1:8], tzinfo=tzinfo, fold=value[8])
    raise _NotKept(f"a {kind.__name__} in the cache")
