"""The application layer: what both front ends call (issue 19 §1 and §2)."""

from __future__ import annotations

import ast
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

import mailtriage.application as application
from mailtriage.application.project import Project
from mailtriage.application.operations import CALLS, OpArgs, operation_call
from mailtriage.application.window import parse_since
from mailtriage.backends.contract import ALL_OPS, Op
from mailtriage.backends.errors import NotSupported
from tests.core.parsed import parse

ROOT = Path(__file__).resolve().parents[2]
# A name the front ends import under another name here (two layers each have a UsageError).
RENAMED = {("mailtriage.trackers.contract", "UsageError"): "TrackerUsageError",
           ("mailtriage.trackers.errors", "UsageError"): "TrackerUsageError",
           ("mailtriage.trackers.contract", "BackendError"): "TrackerBackendError",
           ("mailtriage.trackers.errors", "BackendError"): "TrackerBackendError"}


def front_end_imports(*folders: str, root: Path = ROOT) -> set[tuple[str, str]]:
    """(module, name) for every import of backends/ or trackers/ in ``folders``, function bodies included."""
    found: set[tuple[str, str]] = set()
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(parse(path)):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    if node.module.startswith(("mailtriage.backends", "mailtriage.trackers")):
                        found |= {(node.module, alias.name) for alias in node.names}
    return found


class FakeConfig:
    def __init__(self, **values):
        self.values = values

    def get(self, key, default=None):
        return self.values.get(key, default)


def test_every_reexport_resolves():
    for name in application.__all__:
        assert getattr(application, name) is not None, name


# The names tui/ imported from backends/ and trackers/ when the layer was made and still
# takes from the façade (issue 36 §2 dropped the concrete adapters, ImapMailbox and
# load_account, and what no front end uses, open_tracker since the tracker CLI calls the service; tests/application/test_facade.py keeps it so);
# the scan below adds whatever is imported today.
TUI_NAMES = {
    ("mailtriage.backends.contract", "ALL_OPS"), ("mailtriage.backends.contract", "Message"),
    ("mailtriage.backends.contract", "Op"), ("mailtriage.backends.contract", "Thread"),
    ("mailtriage.backends.contract", "ThreadId"), ("mailtriage.backends.contract", "ThreadSummary"),
    ("mailtriage.backends.errors", "MailError"), ("mailtriage.backends.errors", "MandatoryBackendUnavailable"),
    ("mailtriage.backends.errors", "Unavailable"),
    ("mailtriage.trackers", "rollup"), ("mailtriage.trackers.contract", "TrackerError"),
    ("mailtriage.trackers.fields", "get_field"), ("mailtriage.trackers.fields", "sections"),
    ("mailtriage.trackers.fields", "split_lines"),
}


def test_the_application_reexports_what_the_front_ends_import():
    # One test over every name, scanned when it runs: as a parametrization, the scan parsed tui/
    # and cli/ at collection in every worker (~0.5 CPU-s each, issue 36 §7).
    import importlib

    wrong = []
    for module, name in sorted(TUI_NAMES | front_end_imports("tui", "cli")):
        exported = getattr(application, RENAMED.get((module, name), name), None)
        source = importlib.import_module(module)
        original = getattr(source, name) if hasattr(source, name) else importlib.import_module(f"{module}.{name}")
        if exported is not original:
            wrong.append((module, name))
    assert wrong == []


def test_the_scan_sees_imports_inside_functions(tmp_path):
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "x.py").write_text("def f():\n    from mailtriage.backends.errors import MailError\n")
    assert front_end_imports("cli", root=tmp_path) == {("mailtriage.backends.errors", "MailError")}


def test_cli_imports_only_the_application_and_core():
    allowed = ("mailtriage.application", "mailtriage.core", "mailtriage.cli", "mailtriage.tui", "mailtriage.demo")
    bad = []
    for path in sorted((ROOT / "cli").rglob("*.py")):
        for node in ast.walk(parse(path)):
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                       [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
            bad += [(path.name, m) for m in modules if m.startswith("mailtriage.") and not m.startswith(allowed)]
    assert bad == []


def test_no_module_is_passed_around_as_a_bag_of_helpers():
    for path in sorted((ROOT / "cli").rglob("*.py")):
        assert "sys.modules[__name__]" not in path.read_text(encoding="utf-8"), path


def test_the_application_layer_loads_no_user_interface():
    code = ("import sys, pkgutil, importlib, mailtriage.application as a\n"
            "for info in pkgutil.walk_packages(a.__path__, a.__name__ + '.'):\n"
            "    importlib.import_module(info.name)\n"
            "for name in a.__all__:\n"
            "    getattr(a, name)\n"
            "loaded = [m for m in sys.modules if m == 'textual' or m.startswith(('textual.', 'mailtriage.tui',"
            " 'mailtriage.cli'))]\n"
            "assert not loaded, loaded\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the one window parser ------------------------------------------------------------------

def test_days_iso_dates_and_instants():
    now = datetime.now(timezone.utc)
    assert abs(parse_since("7d") - (now - timedelta(days=7))) < timedelta(minutes=1)
    assert parse_since("2024-03-01") == datetime(2024, 3, 1, tzinfo=timezone.utc)
    assert parse_since(" 2024-03-01T10:00:00+02:00 ").utcoffset() == timedelta(hours=2)


def test_an_empty_window_is_the_configured_one():
    now = datetime.now(timezone.utc)
    assert parse_since(None, FakeConfig(**{"import.since": date(2024, 1, 2)})) == datetime(2024, 1, 2,
                                                                                            tzinfo=timezone.utc)
    assert parse_since("", FakeConfig(**{"import.since": "2024-01-02"})) == datetime(2024, 1, 2, tzinfo=timezone.utc)
    assert abs(parse_since(None, FakeConfig(**{"import.since": "3d"})) - (now - timedelta(days=3))) < timedelta(
        minutes=1)
    assert abs(parse_since(None, FakeConfig(**{"import.since_days": 5})) - (now - timedelta(days=5))) < timedelta(
        minutes=1)
    assert abs(parse_since(None) - (now - timedelta(days=30))) < timedelta(minutes=1)


def test_a_bad_window_is_a_usage_error_naming_the_input():
    with pytest.raises(application.UsageError, match="--since 'yesterday'"):
        parse_since("yesterday", label="--since")


def test_the_window_is_parsed_in_one_place():
    # The day arithmetic of "Nd" lives in the window module only.
    offenders = [p for folder in ("cli", "tui", "application")
                 for p in sorted((ROOT / folder).rglob("*.py"))
                 if 'endswith("d")' in p.read_text(encoding="utf-8") and p.name != "window.py"]
    assert offenders == []


# -- the one operation table ----------------------------------------------------------------

def test_every_operation_but_create_draft_has_one_call():
    assert set(CALLS) == set(ALL_OPS) - {Op.CREATE_DRAFT}
    with pytest.raises(application.UsageError):
        operation_call(Op.CREATE_DRAFT, OpArgs())


class _Backend:
    class features:
        listing_limit = True

    def __init__(self):
        self.calls = []

    def list_recent_threads(self, list_name, since, **kw):
        self.calls.append(("list", list_name, since, kw))

    def read_thread(self, tid):
        self.calls.append(("read", tid))


def test_the_listing_limit_is_asked_for_only_from_a_backend_that_declares_it():
    backend = _Backend()
    operation_call(Op.LIST_RECENT_THREADS, OpArgs(list_name="l", since=None, limit=5))(backend)
    backend.features = type("F", (), {"listing_limit": False})
    operation_call(Op.LIST_RECENT_THREADS, OpArgs(list_name="l", since=None, limit=5))(backend)
    operation_call(Op.READ_THREAD, OpArgs(thread_id="t"))(backend)
    assert backend.calls == [("list", "l", None, {"limit": 5}), ("list", "l", None, {}), ("read", "t")]


def test_the_operation_table_exists_once():
    # Front ends build no lambdas over backend methods of their own.
    for folder in ("cli", "tui"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            assert "b.list_recent_threads(" not in text and "b.read_thread(" not in text, path


# -- personal mailboxes: a declared table of kinds ------------------------------------------

def test_a_mailbox_kind_without_an_adapter_is_declined(tmp_path):
    from mailtriage.backends.registry import MAILBOX_KINDS, open_mailbox

    class Settings:
        def account(self, account_id):
            return {"kind": "gmail"}

    assert "imap" in MAILBOX_KINDS
    with pytest.raises(NotSupported, match="cannot be browsed yet"):
        open_mailbox("me", Settings())


def test_sources_learn_where_they_were_configured_from_a_typed_origin(tmp_path):
    """No hidden ``_project_dir``/``_notes``/``_context`` keys ride in a backend's settings:
    the project directory, the entry's notes and the user settings come as a SourceOrigin,
    and a relative archive path resolves against the project directory."""
    (tmp_path / "archive.mbox").write_bytes(b"")
    (tmp_path / "project.md").write_text(
        "# P\n\n## Mail sources\n\n| Backend | Role | Mandatory | Notes |\n|---|---|---|---|\n"
        "| `mbox` | primary | yes | the list archive |\n\n## Configuration\n\n```yaml\nmail_sources:\n"
        "  mbox:\n    path: archive.mbox\n    list: security@example.org\n```\n")
    marker = object()
    project = Project.open(tmp_path, user_settings=marker)
    (backend,) = project.sources.backends.values()
    assert not [key for key in backend.settings if key.startswith("_")]
    assert backend.origin.project_dir == tmp_path and backend.origin.user_settings is marker
    assert backend.origin.notes == "the list archive"
    assert backend.origin.project_file == str(tmp_path / "project.md")
    assert backend.path == (tmp_path / "archive.mbox").resolve()
