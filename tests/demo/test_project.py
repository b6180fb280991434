"""The demo project configuration loads, and names the bundled archive and template."""

from __future__ import annotations

import re
import string
from datetime import date

import pytest

from mailtriage.core.projectconfig import load_project
from mailtriage.demo import demo_archive, demo_project_dir

# The placeholders project.md documents for reply templates.
DOCUMENTED_PLACEHOLDERS = {"reporter_name", "subject", "project", "security_list", "sender_name", "sign_off"}


@pytest.fixture(scope="module")
def config():
    return load_project(demo_project_dir())


def test_demo_folder_holds_project_archive_and_templates():
    folder = demo_project_dir()
    assert (folder / "project.md").is_file()
    assert demo_archive() == folder / "security.mbox"
    assert (folder / "templates" / "receipt.md").is_file()


def test_one_primary_mandatory_mbox_source_and_a_local_maildir_for_drafts(config):
    assert config.title == "Apache Frobnicator (demo)"
    assert [(e.name, e.mandatory) for e in config.mail_sources] == [("mbox", True), ("drafts", False)]
    assert config.mail_sources[0].role == "primary"
    assert config.source_kind(config.mail_sources[0]) == "mbox"
    assert config.source_kind(config.mail_sources[1]) == "maildir"
    assert config.source_settings("drafts")["path"] == "Mail"


def test_mbox_source_names_the_bundled_archive(config):
    settings = config.source_settings("mbox")
    assert config.resolve_path(settings["path"]) == demo_archive()
    assert settings["list"] == config.get("security_list")


def test_security_list_comes_from_the_project_layer(config):
    found = config.lookup("security_list")
    assert found.value == "security@frobnicator.apache.org"
    assert found.layer == "project"
    # The organization profile is selected, so its fallback is visible but unused.
    assert config.lookup("security_inbox.foundation_security_address").layer == "organization:asf"


def test_import_window_is_an_absolute_date(config):
    # An absolute date: the demo must not go empty as time passes.
    assert config.get("import.since") == date(2026, 9, 1)


def test_tracker_is_local_files_with_declared_labels_and_fields(config):
    assert config.get("tracker.platform") == "local-files"
    assert config.get("tracker.prefix") == "SEC"
    assert config.lookup("tracker.local.url_template").value is None
    labels = config.get("tracker.labels")
    for label in ("needs triage", "valid", "invalid", "duplicate", "cve allocated", "fix released",
                  "embargoed", "low", "moderate", "important", "critical"):
        assert label in labels
    assert len(labels) == len(set(labels))
    assert "Security mailing list thread" in config.get("tracker.fields")
    assert config.get("tracker.close_reasons") == ["completed", "not-planned"]


def test_receipt_template_uses_only_documented_placeholders(config):
    path = config.resolve_path(config.get("templates.receipt"))
    text = path.read_text(encoding="utf-8")
    used = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    assert used == DOCUMENTED_PLACEHOLDERS - {"sender_name"}  # the sign-off names the sender (or the team)
    filled = text.format(reporter_name="Zoë", subject="XSS", project="Apache Frobnicator",
                         security_list="security@frobnicator.apache.org", sign_off="Priya")
    assert "{" not in filled and "Hi Zoë," in filled


def test_placeholders_are_documented_in_project_md():
    text = (demo_project_dir() / "project.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^#\s+\{(\w+)\}", text, re.M))
    assert documented == DOCUMENTED_PLACEHOLDERS
