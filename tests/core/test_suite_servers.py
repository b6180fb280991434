"""The suite starts one of each test server per xdist worker (issue 36 §7).

A pytest session fixture is one per *definition*: a test module or an area's conftest.py that
imports the session fixtures of tests/servers/fixtures.py defines them again, and every worker
then started (and kept alive to the end of the run) that module's own Dovecot. Fifty modules
did, so a run of four workers kept over a hundred Dovecot servers. tests/conftest.py offers the
fixtures to every test; no other file imports the session ones.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.core.parsed import parse

TESTS = Path(__file__).resolve().parents[1]
ROOT_CONFTEST = TESTS / "conftest.py"


def session_fixtures() -> set[str]:
    """The names of tests/servers/fixtures.py's fixtures of session scope."""
    names = set()
    for node in parse(TESTS / "servers" / "fixtures.py").body:
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and any(
                        k.arg == "scope" and getattr(k.value, "value", None) == "session" for k in decorator.keywords):
                    names.add(node.name)
    return names


def imports_of_session_servers(path: Path, session: set[str]) -> list[str]:
    found = []
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.ImportFrom) and node.module == "tests.servers.fixtures":
            names = {alias.name for alias in node.names}
            if "*" in names or names & session:
                found.append(f"{path}:{node.lineno} imports {sorted(names & session) or '*'}")
    return found


def test_the_servers_session_fixtures_are_defined_once_for_the_suite():
    session = session_fixtures()
    assert {"dovecot", "dovecot_acl", "dovecot_minimal"} <= session
    candidates = [path for path in sorted(TESTS.rglob("*.py")) if path != ROOT_CONFTEST
                  and "tests.servers.fixtures" in path.read_text(encoding="utf-8")]  # parse only these
    found = [line for path in candidates for line in imports_of_session_servers(path, session)]
    assert not found, ("these files define the servers' session fixtures again (each starts its own servers "
                       "in every worker; tests/conftest.py already offers them):\n" + "\n".join(found))
    assert imports_of_session_servers(ROOT_CONFTEST, session), "tests/conftest.py no longer offers the servers"


@pytest.mark.parametrize("line, caught", [
    ("from tests.servers.fixtures import *  # noqa: F401,F403\n", True),
    ("from tests.servers.fixtures import dovecot, memory_keyring\n", True),
    ("from tests.servers.fixtures import memory_keyring, smtp_server\n", False),
])
def test_the_check_catches_a_module_that_imports_them(tmp_path, line, caught):
    module = tmp_path / "test_example.py"
    module.write_text(line, encoding="utf-8")
    assert bool(imports_of_session_servers(module, session_fixtures())) is caught
