"""The dependency rules of ``.importlinter``, checked by import-linter (issue 19 §7).

import-linter reads a package from disk, so each check runs over a copy of the tree laid out
as the installed package (tests/core/package_layout.py).
"""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.package_layout import ROOT, lay_out
CONFIG = ROOT / ".importlinter"
# Contracts declared but not enforced yet, with why. The tui contract holds once tui/ imports
# mail and tracker types from mailtriage.application (being done beside this change).
NOT_YET_ENFORCED: dict[str, str] = {}  # a contract written ahead of the code that keeps it

pytest.importorskip("importlinter", reason="import-linter is a test dependency (pip install -e '.[test]')")


def contract_ids() -> list[str]:
    parser = configparser.ConfigParser()
    parser.read(CONFIG, encoding="utf-8")
    prefix = "importlinter:contract:"
    return [s[len(prefix):] for s in parser.sections() if s.startswith(prefix)]


def lint(tree: Path, contracts: list[str]) -> subprocess.CompletedProcess:
    command = Path(sys.executable).with_name("lint-imports")
    args = [str(command) if command.exists() else "lint-imports", str(CONFIG), "--no-cache"]
    for contract in contracts:
        args += ["--contract", contract]
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "1000"}  # titles on one line
    return subprocess.run(args, cwd=tree, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return lay_out(tmp_path_factory.mktemp("layout"))


def test_the_contracts_cover_the_rules():
    ids = contract_ids()
    assert {"cli-front-end", "tui-front-end", "domain-below-the-front-ends", "application-without-ui",
            "only-adapters-talk-to-servers", "layers", "flows-below-the-application",
            "demo-below-the-front-ends", "themes-are-styles"} <= set(ids)
    assert set(NOT_YET_ENFORCED) <= set(ids)


def test_every_module_of_the_application_is_above_the_flows():
    """The flows' contract names the application's modules one by one (a layer cannot contain
    another): a module added to application/ goes into its upper layer."""
    parser = configparser.ConfigParser()
    parser.read(CONFIG, encoding="utf-8")
    named = {name.strip() for name in parser["importlinter:contract:flows-below-the-application"]["layers"]
             .strip().splitlines()[0].split(":")}
    modules = {p.stem for p in (ROOT / "application").glob("*.py") if p.stem != "__init__"}
    modules |= {p.name for p in (ROOT / "application").iterdir() if (p / "__init__.py").is_file() and p.name != "flows"}
    assert modules == named


def test_the_enforced_contracts_hold(tree):
    enforced = [c for c in contract_ids() if c not in NOT_YET_ENFORCED]
    result = lint(tree, enforced)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(enforced)} kept, 0 broken" in result.stdout


VIOLATIONS = [
    ("tui", "from mailtriage.backends.contract import ThreadSummary", "tui-front-end",
     "mailtriage.tui.zz_violation_0 -> mailtriage.backends.contract"),
    ("modes", "def later():\n    import imapclient\n", "only-adapters-talk-to-servers",
     "mailtriage.modes.zz_violation_1 -> imapclient"),
    ("application/flows", "import smtplib", "only-adapters-talk-to-servers",
     "mailtriage.application.flows.zz_violation_2 -> smtplib"),
    ("tui", "from google.auth.transport.requests import Request", "only-adapters-talk-to-servers",
     "mailtriage.tui.zz_violation_3 -> google"),
    ("cli", "from mailtriage.backends.errors import MailError", "cli-front-end",
     "mailtriage.cli.zz_violation_4 -> mailtriage.backends.errors"),
    ("cli", "def later():\n    import mailtriage.trackers.registry\n", "cli-front-end",
     "mailtriage.cli.zz_violation_5 -> mailtriage.trackers.registry"),
    ("backends", "from textual.app import App", "domain-below-the-front-ends",
     "mailtriage.backends.zz_violation_6 -> textual (l.1)"),
    ("trackers", "import mailtriage.application", "domain-below-the-front-ends",
     "mailtriage.trackers.zz_violation_7 -> mailtriage.application"),
    ("application", "from mailtriage.tui import app", "application-without-ui",
     "mailtriage.application.zz_violation_8 -> mailtriage.tui"),
    # The documented order (issue 36 §5): each of these passed every forbidden contract.
    ("backends", "import mailtriage.application.flows.security_thread", "layers",
     "mailtriage.backends.zz_violation_9 -> mailtriage.application.flows.security_thread"),
    ("application/flows", "import mailtriage.application.service", "flows-below-the-application",
     "mailtriage.application.flows.zz_violation_10 -> mailtriage.application.service"),
    ("core", "import mailtriage.backends.errors", "layers",
     "mailtriage.core.zz_violation_11 -> mailtriage.backends.errors"),
    ("tui", "import mailtriage.cli.main", "layers",
     "mailtriage.tui.zz_violation_12 -> mailtriage.cli.main"),
    # demo/ and themes/ sat outside every contract: each of these passed them all.
    ("demo", "import mailtriage.tui.app", "demo-below-the-front-ends",
     "mailtriage.demo.zz_violation_13 -> mailtriage.tui.app"),
    ("themes", "import mailtriage.cli.main", "themes-are-styles",
     "mailtriage.themes.zz_violation_14 -> mailtriage.cli.main"),
    ("themes", "def later():\n    import mailtriage.backends.registry\n", "themes-are-styles",
     "mailtriage.themes.zz_violation_15 -> mailtriage.backends.registry"),
]


@pytest.fixture(scope="module")
def broken_tree_report(tmp_path_factory) -> str:
    """One copy of the tree holding every violation below, linted once (a copy and a run per
    case cost a dozen seconds for the same answer)."""
    tree = lay_out(tmp_path_factory.mktemp("violations"))
    for index, (folder, bad_import, _contract, _named) in enumerate(VIOLATIONS):
        (tree / "mailtriage" / folder / f"zz_violation_{index}.py").write_text(bad_import + "\n")
    result = lint(tree, sorted({contract for _f, _b, contract, _n in VIOLATIONS}))
    assert result.returncode != 0
    return result.stdout


def contract_section(report: str, contract: str) -> str:
    """The part of lint-imports' report under the broken contract's name."""
    parser = configparser.ConfigParser()
    parser.read(CONFIG, encoding="utf-8")
    title = parser[f"importlinter:contract:{contract}"]["name"]
    _before, found, after = report.partition(title + "\n" + "-" * len(title))
    assert found, f"{contract} is not reported broken:\n{report}"
    return after


@pytest.mark.parametrize("folder, bad_import, contract, named", VIOLATIONS)
def test_the_linter_catches_a_violation(broken_tree_report, folder, bad_import, contract, named):
    assert named in contract_section(broken_tree_report, contract), broken_tree_report
