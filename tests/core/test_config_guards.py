"""Configuration bombs and types (issue 20 §6): project.md and config.toml errors are
refused quickly, name the file, the key and what is valid, and exit 2 from the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mailtriage.core.projectconfig import ConfigError, load_project

from .helpers import write_project

LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
security_list: *i
"""


def cli(project: Path, *args: str, config_dir: Path | None = None, timeout: float = 60):
    env = dict(os.environ, MAILTRIAGE_PROJECT=str(project),
               MAILTRIAGE_CONFIG_DIR=str(config_dir or project / "no-config"))
    return subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "--project", str(project), *args],
                          capture_output=True, text=True, env=env, timeout=timeout)


def test_yaml_aliases_are_refused_not_expanded(tmp_path):
    write_project(tmp_path, [("mbox", "primary", "no")], raw_config=LAUGHS)
    started = time.monotonic()
    with pytest.raises(ConfigError) as info:
        load_project(tmp_path)
    assert time.monotonic() - started < 30  # refused, not expanded (9**9 items would take far longer)
    assert info.value.file.endswith("project.md")
    assert "alias" in info.value.problem and info.value.key.startswith("Configuration line ")


def test_billion_laughs_exits_2_quickly_from_the_cli(tmp_path):
    write_project(tmp_path, [("mbox", "primary", "no")], raw_config=LAUGHS)
    done = cli(tmp_path, "sources", "--json", timeout=60)
    assert done.returncode == 2, done.stderr
    assert "project.md" in done.stderr and "alias" in done.stderr


def test_oversized_configuration_block_is_refused(tmp_path):
    big = "security_list: x@example.org\nnotes:\n" + "".join(f"  - item {n}\n" for n in range(60_000))
    write_project(tmp_path, [("mbox", "primary", "no")], raw_config=big)
    with pytest.raises(ConfigError) as info:
        load_project(tmp_path)
    assert "too large" in info.value.problem


@pytest.mark.parametrize("raw, key, valid", [
    ("security_list: [a@example.org, b@example.org]\n", "security_list", "an address"),
    ("security_list: 12\n", "security_list", "an address"),
    ("security_inbox: security@example.org\n", "security_inbox", "a mapping"),
    ("security_inbox:\n  foundation_security_address: [x]\n", "security_inbox.foundation_security_address",
     "an address"),
    ("tracker:\n  labels: needs triage\n", "tracker.labels", "a list"),
    ("tracker:\n  labels: [valid, {x: 1}]\n", "tracker.labels", "a list"),
    ("tracker:\n  platform: gitlab\n", "tracker.platform", "github, jira, local-files"),
    ("tracker: [github]\n", "tracker", "a mapping"),
    ("tracker:\n  jira:\n    api_version: four\n", "tracker.jira.api_version", "2, 3"),
    ("tracker:\n  local:\n    path: [a, b]\n", "tracker.local.path", "a text"),
    ("import:\n  since_days: soon\n", "import.since_days", "a whole number"),
    ("import:\n  since_days: true\n", "import.since_days", "a whole number"),
    ("import:\n  since: [2026]\n", "import.since", "a date"),
    ("organization: [asf]\n", "organization", "a text"),
    ("mail_sources: [mbox]\n", "mail_sources", "a mapping"),
    ("mail_sources:\n  mbox: here\n", "mail_sources.mbox", "a mapping"),
    ("alerts:\n  poll_seconds: often\n", "alerts.poll_seconds", "a number"),
    ("sweep:\n  internal_domains: {a: b}\n", "sweep.internal_domains", "a list"),
    ("templates:\n  receipt: 3\n", "templates.receipt", "a text"),
])
def test_every_key_is_type_checked(tmp_path, raw, key, valid):
    write_project(tmp_path, [("mbox", "primary", "no")], raw_config=raw)
    with pytest.raises(ConfigError) as info:
        load_project(tmp_path)
    assert info.value.key == key
    assert info.value.file.endswith("project.md")
    assert valid in (info.value.valid or "")


def test_a_type_error_exits_2_naming_file_key_and_valid(tmp_path):
    write_project(tmp_path, [("mbox", "primary", "no")], raw_config="tracker:\n  labels: needs triage\n")
    done = cli(tmp_path, "sources")
    assert done.returncode == 2
    assert "project.md: tracker.labels:" in done.stderr and "valid:" in done.stderr


def test_well_typed_configuration_still_loads(tmp_path):
    write_project(tmp_path, [("mbox", "primary", "no")], raw_config="""\
        organization: asf
        security_list: security@foo.apache.org
        security_inbox:
          foundation_security_address: null
        mail_sources:
          mbox:
            path: archive.mbox
        import:
          since: 2026-09-01
          since_days: 30
          labels: [needs triage]
        alerts:
          poll_seconds: 60
        tracker:
          platform: local-files
          labels: [needs triage, valid]
          commit_attribution: "Generated-by: mailtriage"
          close_reasons: [completed]
          jira:
            api_version: 2
            security_level: null
          local:
            url_template: null
        """)
    config = load_project(tmp_path)
    assert config.get("tracker.labels") == ["needs triage", "valid"]


def test_broken_config_toml_exits_2_not_as_an_unavailable_backend(tmp_path):
    project = write_project(tmp_path / "p", [("imap", "primary", "yes")],
                            raw_config="mail_sources:\n  imap:\n    account: work\n    list: s@example.org\n")
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text("[accounts.work\nhost = 1\n", encoding="utf-8")
    done = cli(project, "sources", "--json", config_dir=config_dir)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "config.toml" in done.stderr and "unavailable" not in done.stderr


def test_missing_account_in_config_toml_exits_2(tmp_path):
    project = write_project(tmp_path / "p", [("imap", "primary", "yes")],
                            raw_config="mail_sources:\n  imap:\n    account: work\n    list: s@example.org\n")
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text('[accounts.home]\nhost = "h"\n', encoding="utf-8")
    done = cli(project, "list", config_dir=config_dir)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "config.toml: accounts.work" in done.stderr
