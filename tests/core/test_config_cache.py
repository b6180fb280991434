"""project.md's parsed YAML block, kept in the cache folder (core/config_cache.py).

A later open of the same text reads the value PyYAML gave, without importing PyYAML, and
gets exactly that value (types included); any other text, a damaged file, a value the cache
does not keep, or a block the parser refuses is parsed as before.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mailtriage.core import config_cache
from mailtriage.core.projectconfig import ConfigError, load_project, safe_yaml

ROOT = Path(__file__).resolve().parents[2]

BLOCK = textwrap.dedent("""\
    security_list: security@example.org
    import:
      since: 2026-11-01
      since_days: 30
    stamps: [2026-11-01 10:20:30, 2026-11-01T10:20:30.25+01:30, 2026-11-01T10:20:30Z, 2001-12-14 21:59:43.10 -5]
    numbers: [1, -2, 0x1f, 0o17, 1_000, 3.5, -0.0, 1e3, .inf, -.inf]
    flags: [yes, no, on, off, true, False, ~, null, '']
    text: "line one\\nline two ✓"
    empty_map: {}
    empty_list: []
    nested: {a: {b: [1, {c: d}]}}
    security_cc: null
""")


def _shape(value):
    """The value with its types spelled out (``==`` alone takes 1 for True, a date for itself)."""
    if isinstance(value, dict):
        return ("dict", [(_shape(k), _shape(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_shape(v) for v in value])
    if isinstance(value, dt.datetime):
        return ("datetime", value.isoformat(), repr(value.tzinfo), value.fold)
    if isinstance(value, float) and value != value:
        return ("float", "nan")
    return (type(value).__name__, repr(value))


def _counting(parse):
    calls = []

    def counted(text):
        calls.append(text)
        return parse(text)
    return counted, calls


def test_the_same_text_is_read_back_with_its_types_and_without_parsing(tmp_path, cache):
    fresh = safe_yaml(BLOCK)
    parse, calls = _counting(safe_yaml)
    first = config_cache.parsed(BLOCK, tmp_path / "project.md", parse)
    second = config_cache.parsed(BLOCK, tmp_path / "project.md", parse)
    assert len(calls) == 1  # the second came from the cache
    assert _shape(first) == _shape(second) == _shape(fresh)
    assert second is not first and second["nested"] is not first["nested"]  # rebuilt each time: the caller's own
    files = list((cache / "project-config").iterdir())
    assert len(files) == 1 and (files[0].stat().st_mode & 0o777) == 0o600


def test_another_text_of_the_same_file_is_parsed_again(tmp_path, cache):
    parse, calls = _counting(safe_yaml)
    assert config_cache.parsed("a: 1\n", tmp_path / "project.md", parse) == {"a": 1}
    assert config_cache.parsed("a: 2\n", tmp_path / "project.md", parse) == {"a": 2}
    assert config_cache.parsed("a: 2\n", tmp_path / "project.md", parse) == {"a": 2}
    assert len(calls) == 2


@pytest.mark.parametrize("text", ["s: !!set {a, b}\n", "b: !!binary aGk=\n", "1: one\n", "p: !!pairs [a: 1, b: 2]\n",
                                  "o: !!omap [a: 1]\n", "nan: .nan\n"])
def test_a_value_the_cache_does_not_keep_is_parsed_every_time(tmp_path, cache, text):
    parse, calls = _counting(safe_yaml)
    values = [config_cache.parsed(text, tmp_path / "project.md", parse) for _ in range(2)]
    assert _shape(values[0]) == _shape(values[1]) == _shape(safe_yaml(text))
    kept = "nan" in text  # a float: kept, and read back as NaN
    assert len(calls) == (1 if kept else 2)


def test_a_damaged_or_foreign_cache_file_is_parsed_again(tmp_path, cache):
    parse, calls = _counting(safe_yaml)
    config_cache.parsed(BLOCK, tmp_path / "project.md", parse)
    (path,) = (cache / "project-config").iterdir()
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))
    assert _shape(config_cache.parsed(BLOCK, tmp_path / "project.md", parse)) == _shape(safe_yaml(BLOCK))
    path.write_bytes(b"not a cache file")
    assert _shape(config_cache.parsed(BLOCK, tmp_path / "project.md", parse)) == _shape(safe_yaml(BLOCK))
    assert len(calls) == 3


def test_an_unusable_cache_folder_is_no_cache(tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder would be", encoding="utf-8")
    monkeypatch.setenv("MAILTRIAGE_CACHE_DIR", str(blocked))
    parse, calls = _counting(safe_yaml)
    for _ in range(2):
        assert config_cache.parsed("a: 1\n", tmp_path / "project.md", parse) == {"a": 1}
    assert len(calls) == 2
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # writable by others: never used for our state
    monkeypatch.setenv("MAILTRIAGE_CACHE_DIR", str(shared))
    assert config_cache.parsed("a: 1\n", tmp_path / "project.md", parse) == {"a": 1}
    assert list(shared.iterdir()) == []


def _project(folder: Path, block: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "project.md").write_text("# P\n\n## Configuration\n\n```yaml\n" + block + "```\n", encoding="utf-8")
    return folder


def test_a_refused_block_is_refused_every_time_with_the_same_error(tmp_path, cache):
    project = _project(tmp_path / "p", "security_list: [unclosed\n")
    errors = []
    for _ in range(2):
        with pytest.raises(ConfigError) as caught:
            load_project(project)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and "not valid YAML" in errors[0]
    assert not (cache / "project-config").exists() or list((cache / "project-config").iterdir()) == []


def test_a_second_open_in_a_fresh_process_needs_no_yaml_parser(tmp_path, cache):
    """The app and every CLI command open the project in a new process: the second one
    reads the kept block, the same configuration, and never imports PyYAML."""
    project = _project(tmp_path / "p", "organization: asf  # its profile's YAML is kept too\n" + BLOCK)
    code = textwrap.dedent(f"""
        import json, sys
        from mailtriage.core.projectconfig import load_project
        config = load_project({str(project)!r})
        print(json.dumps({{"yaml": "yaml" in sys.modules, "config": repr(config)}}))
    """)
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60,
                              env={**os.environ, "MAILTRIAGE_CACHE_DIR": str(cache)})
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert [r["yaml"] for r in runs] == [True, False]
    assert runs[0]["config"] == runs[1]["config"] == repr(load_project(project))
