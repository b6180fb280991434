"""The application service (application/service.py): the surface tui/ calls, reached only
through the application layer, and the user's settings it owns for both front ends."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from mailtriage.application.service import Service
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.settings import UserSettings
from tests.tui.helpers import mbox_project

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ROOT / "application" / "service.py"


def used_by_tui() -> set[str]:
    """Every ``session.X`` (and ``self.session.X``) that tui/ reads: the app's service is its
    ``session`` attribute."""
    names: set[str] = set()
    for path in sorted((ROOT / "tui").rglob("*.py")):
        names |= set(re.findall(r"\bsession\.([A-Za-z_][A-Za-z0-9_]*)", path.read_text(encoding="utf-8")))
    return names


def test_the_service_keeps_what_the_tui_uses(tmp_path):
    service = Service(tmp_path, demo=False, settings=UserSettings(tmp_path / "config.toml", {}))
    missing = sorted(name for name in used_by_tui() if not hasattr(service, name))
    assert missing == []


def test_the_service_is_the_only_facade_the_tui_holds():
    assert not (ROOT / "tui" / "session.py").exists()
    assert not list((ROOT / "tui").glob("session_*.py"))


def test_the_service_does_not_branch_on_a_kind():
    assert not re.search(r"\.kind\s*[!=]=", SERVICE.read_text(encoding="utf-8"))  # a backend's or a tracker's


def test_the_service_never_imports_a_front_end():
    tree = ast.parse(SERVICE.read_text(encoding="utf-8"))
    modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not [m for m in modules if m.startswith(("mailtriage.tui", "mailtriage.cli", "textual"))]


def _service(tmp_path, settings: dict, **project) -> Service:
    folder = tmp_path / "p"
    mbox_project(folder, **project)
    service = Service(folder, demo=False, settings=UserSettings(tmp_path / "config.toml", settings))
    service.open()
    return service


def test_poll_interval_user_setting_wins_and_zero_turns_polling_off(tmp_path):
    project = {"extra_config": {"alerts": {"poll_seconds": 45}}}
    assert _service(tmp_path / "a", {}, **project).poll_interval() == 45
    assert _service(tmp_path / "b", {"alerts": {"poll_seconds": 300}}, **project).poll_interval() == 300
    off = _service(tmp_path / "c", {"alerts": {"poll_seconds": 0}}, **project)
    assert off.poll_interval() == 0 and off.alert_watch() is None
    assert off.poll_interval(7.5) == 7.5  # the command line's --interval
    with pytest.raises(ConfigError) as err:
        _service(tmp_path / "d", {"alerts": {"poll_seconds": "soon"}}, **project).poll_interval()
    assert err.value.key == "alerts.poll_seconds"
