"""A device-code sign-in the tenant refuses (Conditional Access, admin consent): the error
says what to do instead (``--interactive``, an admin's consent), not "run it again"."""

from __future__ import annotations

import pytest

from mailtriage.cli.main import main
from tests.oauth.test_account_cli import settings


@pytest.fixture
def cli_account(microsoft_emulator, memory_keyring, tmp_path, monkeypatch):
    settings(tmp_path, monkeypatch, {"work": microsoft_emulator.account_settings(access="draft")})
    microsoft_emulator.auto_approve = True
    return microsoft_emulator


def test_device_code_blocked_by_conditional_access_points_to_interactive(cli_account, capsys):
    cli_account.device_code_refusal = "conditional_access"
    assert main(["account", "login", "work"]) != 0
    err = capsys.readouterr().err
    assert "Conditional Access" in err and "AADSTS53003" in err
    assert "mailtriage account login work --interactive" in err
    assert "admin" in err


def test_device_code_needing_admin_consent_says_so(cli_account, capsys):
    cli_account.device_code_refusal = "admin_consent"
    assert main(["account", "login", "work"]) != 0
    err = capsys.readouterr().err
    assert "admin consent" in err and "AADSTS90094" in err
    assert cli_account.client_id in err  # what the admin consents to
    assert "adminconsent?client_id=" in err
