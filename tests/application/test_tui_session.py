"""tui/session.py stays a thin shell over the application layer with the surface tui/ uses."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mailtriage.core.settings import UserSettings
from mailtriage.tui.session import Session

ROOT = Path(__file__).resolve().parents[2]


def used_by_tui() -> set[str]:
    """Every ``session.X`` (and ``self.session.X``) that tui/ reads, besides session.py itself."""
    names: set[str] = set()
    for path in sorted((ROOT / "tui").rglob("*.py")):
        if path.name == "session.py":
            continue
        names |= set(re.findall(r"\bsession\.([A-Za-z_][A-Za-z0-9_]*)", path.read_text(encoding="utf-8")))
    return names


def test_the_session_keeps_what_the_tui_uses(tmp_path):
    session = Session(tmp_path, demo=False, settings=UserSettings(tmp_path / "config.toml", {}))
    missing = sorted(name for name in used_by_tui() if not hasattr(session, name))
    assert missing == []


def test_the_session_reaches_mail_and_trackers_only_through_the_application():
    tree = ast.parse((ROOT / "tui" / "session.py").read_text(encoding="utf-8"))
    modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    modules |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not [m for m in modules if m.startswith(("mailtriage.backends", "mailtriage.trackers",
                                                    "mailtriage.workflows"))]


def test_the_session_does_not_branch_on_a_kind():
    text = (ROOT / "tui" / "session.py").read_text(encoding="utf-8")
    assert not re.search(r"kind\s*[!=]=", text)
