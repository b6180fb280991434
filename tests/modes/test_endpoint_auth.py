"""The MAS-modes endpoint authenticates (issue 20 §4): a credential for every
state-changing request, always; a Host header that is ours; loopback by default."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import httpx
import pytest

from mailtriage.modes.config import DEFAULT_TOKEN_KEY, parse_config
from mailtriage.modes.server import ModesServer, ServerThread
from tests.modes.harness import DOMAIN
from tests.servers.fixtures import memory_keyring  # noqa: F401

ASSIGN = {"mas_modes_version": "0.1", "type": "case.assign", "id": "t-1", "intake_ref": "in-x", "resource_id": "X-1"}


@pytest.fixture
def served(tmp_path, memory_keyring):  # noqa: F811
    config = parse_config({"domain": DOMAIN, "database": str(tmp_path / "r.sqlite3"),
                           "server": {"poll_seconds": None, "tick_seconds": None}}, tmp_path / "modes.toml")
    thread = ServerThread(ModesServer(config, port=0, background=False)).start()
    try:
        yield thread
    finally:
        thread.stop()


def test_loopback_is_the_default(tmp_path):
    config = parse_config({"domain": DOMAIN}, tmp_path / "modes.toml")
    assert config.host == "127.0.0.1" and ModesServer(config).host == "127.0.0.1"


def test_without_a_configured_token_one_is_generated_kept_in_the_keyring_and_required(served, memory_keyring):  # noqa: F811
    token = memory_keyring.get_password("mailtriage", DEFAULT_TOKEN_KEY)
    assert token and len(token) >= 32 and served.server.token == token
    response = httpx.post(served.url, json=ASSIGN, timeout=10)
    assert (response.status_code, response.json()["error"]) == (401, "unauthorized")
    wrong = httpx.post(served.url, json=ASSIGN, timeout=10, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    right = httpx.post(served.url, json=ASSIGN, timeout=10, headers={"Authorization": f"Bearer {token}"})
    assert (right.status_code, right.json()["error"]) == (404, "unknown-intake")


def test_the_kept_token_is_reused_on_the_next_start(tmp_path, memory_keyring):  # noqa: F811
    memory_keyring.set_password("mailtriage", DEFAULT_TOKEN_KEY, "kept-token-" + "x" * 30)
    config = parse_config({"domain": DOMAIN, "database": str(tmp_path / "r.sqlite3")}, tmp_path / "m.toml")
    thread = ServerThread(ModesServer(config, port=0, background=False)).start()
    try:
        assert thread.server.token == "kept-token-" + "x" * 30 and not thread.server.token_generated
    finally:
        thread.stop()


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8025", "127.0.0.1.nip.io", "localhost.evil.example"])
def test_a_foreign_host_header_is_refused_even_with_the_token(served, host):
    headers = {"Authorization": f"Bearer {served.server.token}", "Host": host}
    response = httpx.post(served.url, json=ASSIGN, timeout=10, headers=headers)
    assert response.status_code == 421 and response.json()["error"] == "misdirected-request"
    assert httpx.get(served.url + "/health", headers={"Host": host}, timeout=10).status_code == 421


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST.", "localhost:{port}", "127.0.0.1:{port}"])
def test_the_bound_address_and_localhost_are_accepted(served, host):
    headers = {"Authorization": f"Bearer {served.server.token}", "Host": host.format(port=served.server.port)}
    response = httpx.post(served.url, json=ASSIGN, timeout=10, headers=headers)
    assert response.status_code == 404  # through both checks, to the engine
    assert httpx.get(served.url + "/health", headers=headers, timeout=10).status_code == 200


def cli_env(tmp_path) -> dict:
    env = dict(os.environ, MAILTRIAGE_CONFIG_DIR=str(tmp_path / "config"), MAILTRIAGE_DATA_DIR=str(tmp_path / "data"))
    env.pop("MT_TEST_TOKEN", None)
    return env


def test_serve_without_a_keyring_or_token_env_refuses_to_start(tmp_path):
    config = tmp_path / "m.toml"
    config.write_text(f'domain = "{DOMAIN}"\ndatabase = "{tmp_path / "r.sqlite3"}"\n', encoding="utf-8")
    env = cli_env(tmp_path)
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    done = subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "modes", "serve", "--config", str(config),
                           "--port", "0"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "server.token_env" in done.stderr and "keyring" in done.stderr


def test_serve_says_how_to_give_the_token_to_the_modes_without_printing_it(tmp_path):
    config = tmp_path / "m.toml"
    config.write_text(f'domain = "{DOMAIN}"\ndatabase = "{tmp_path / "r.sqlite3"}"\n'
                      '[server]\ntoken_env = "MT_TEST_TOKEN"\n', encoding="utf-8")
    env = cli_env(tmp_path)
    env["MT_TEST_TOKEN"] = "t0ken-from-the-environment-0123456789"
    proc = subprocess.Popen([sys.executable, "-m", "mailtriage.cli.main", "modes", "serve", "--config", str(config),
                             "--port", "0"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stderr.readline()
        url = re.search(r"serving (http://\S+)", first).group(1)
        hint = proc.stderr.readline()
        assert "Authorization: Bearer" in hint and "MT_TEST_TOKEN" in hint
        assert "t0ken-from-the-environment" not in first + hint
        assert httpx.post(url, json=ASSIGN, timeout=10).status_code == 401
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
        proc.stderr.close()
    shown = subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "modes", "token", "--config", str(config)],
                           env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and shown.stdout.strip() == "t0ken-from-the-environment-0123456789"


def test_an_unset_token_env_is_a_configuration_error(tmp_path):
    config = tmp_path / "m.toml"
    config.write_text(f'domain = "{DOMAIN}"\ndatabase = "{tmp_path / "r.sqlite3"}"\n'
                      '[server]\ntoken_env = "MT_TEST_TOKEN"\n', encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "modes", "serve", "--config", str(config),
                           "--port", "0"], env=cli_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "server.token_env" in done.stderr and "MT_TEST_TOKEN" in done.stderr
