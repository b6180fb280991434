"""``mailtriage modes …`` as a user runs it: a real process, stopped with SIGTERM and started
again on the same SQLite file, reading a real Dovecot mailbox."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.modes.harness import DOMAIN, TRUSTED, Party, build_mail


#: The ceiling of every wait here: a loaded machine (load 20-30) took over 20 s to stop a server
#: that stops in well under a second when it is quiet. Each wait ends as soon as its condition holds.
BOUND = 120.0

HOSTILE_SUBJECT = "Hello \u202egnp.exe \x1b]0;pwned\x07"

def run_cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mailtriage.cli.main", "modes", *args], env=env,
                          capture_output=True, text=True, timeout=BOUND)


class Served:
    def __init__(self, config: Path, env: dict) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "mailtriage.cli.main", "modes", "serve",
                                      "--config", str(config), "--port", "0"],
                                     env=env, stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        match = re.search(r"serving (http://\S+)", line)
        assert match, f"no 'serving' line: {line!r}"
        self.url = match.group(1)
        self.token = env.get("MT_TEST_MODES_TOKEN", "")

    def post(self, message: dict) -> tuple[int, dict]:
        response = httpx.post(self.url, json=message, timeout=BOUND, headers={"Authorization": f"Bearer {self.token}"})
        return response.status_code, response.json()

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(BOUND)
        finally:
            self.proc.stderr.close()


def wait_for(predicate, timeout: float = BOUND):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def mailbox_cursor(database: Path):
    """The stored mailbox cursor rows (empty until the server's first poll)."""
    import sqlite3

    if not database.exists():
        return []
    connection = sqlite3.connect(database)
    try:
        return connection.execute("SELECT * FROM cursors").fetchall()
    except sqlite3.OperationalError:  # the schema is not there yet
        return []
    finally:
        connection.close()


@pytest.fixture
def cli_env(tmp_path):
    env = dict(os.environ)
    env["MAILTRIAGE_CONFIG_DIR"] = str(tmp_path / "config")
    env["MAILTRIAGE_DATA_DIR"] = str(tmp_path / "data")
    # The endpoint always needs a token; these processes have no keyring to keep one in.
    env["MT_TEST_MODES_TOKEN"] = "cli-test-token-0123456789abcdef-0123"
    return env


@pytest.mark.slow  # serve processes started and stopped
def test_serve_stop_start_and_replay_gets_the_original_answer(tmp_path, dovecot, dovecot_user, cli_env):
    master = Party("master")
    cli_env["MT_TEST_MODES_IMAP"] = dovecot_user.password
    config = tmp_path / "modes.toml"
    config.write_text(f"""
domain = "{DOMAIN}"
role = "slave"
database = "{tmp_path / 'record.sqlite3'}"

[server]
token_env = "MT_TEST_MODES_TOKEN"
poll_seconds = 0.1
tick_seconds = 0.1

[mailbox]
host = "127.0.0.1"
port = {dovecot.port}
security = "starttls"
ca_file = "{dovecot.cert.cert}"
username = "{dovecot_user.name}"
password_env = "MT_TEST_MODES_IMAP"

[send]
authserv_id = "{TRUSTED}"

[master]
url = "{master.url}"

[types.ticket]
""", encoding="utf-8")
    try:
        served = Served(config, cli_env)
        try:
            # The first poll is a silent baseline of what the mailbox already holds: mail
            # appended before it would never be processed. Wait until the cursor is set.
            wait_for(lambda: mailbox_cursor(tmp_path / "record.sqlite3"))
            raw, _ = build_mail(sender="olga@example.com", to=f"ticket@{DOMAIN}", subject=HOSTILE_SUBJECT)
            dovecot.append(dovecot_user, "INBOX", raw)
            intake = wait_for(lambda: [m for m in master.messages() if m["type"] == "case.intake"])[0]
            assign = {"mas_modes_version": "0.1", "type": "case.assign", "id": "assign-cli",
                      "intake_ref": intake["intake_ref"], "resource_id": "CLI-1"}
            first = served.post(assign)
            assert first == (200, {"ok": True, "case": {"address": f"ticket=CLI-1@{DOMAIN}",
                                                        "key": f"ticket=CLI-1@{DOMAIN}"}})
        finally:
            assert served.stop() == 0
        served = Served(config, cli_env)
        try:
            assert served.post({**assign, "resource_id": "OTHER"}) == first
            status, body = served.post({**assign, "id": "assign-cli-2", "resource_id": "OTHER"})
            assert (status, body["error"]) == (409, "already-assigned")
        finally:
            assert served.stop() == 0
    finally:
        master.stop()
    assert len([m for m in master.messages() if m["type"] == "case.intake"]) == 1  # polled once, not again

    shown = run_cli("thread", "CLI-1", "--config", str(config), env=cli_env)
    assert shown.returncode == 0, shown.stderr
    thread = json.loads(shown.stdout)
    assert thread["case"]["address"] == f"ticket=CLI-1@{DOMAIN}" and thread["role"] == "slave"
    assert [m["sender"] for m in thread["mails"]] == ["olga@example.com"]
    # Mail text reaches the terminal inert: no raw escape or bidi override in the output,
    # while the JSON still decodes to what the mail said.
    assert "\x1b" not in shown.stdout and "\u202e" not in shown.stdout
    assert [m["subject"] for m in thread["mails"]] == [HOSTILE_SUBJECT]
    listed = run_cli("cases", "--config", str(config), env=cli_env)
    assert [c["key"] for c in json.loads(listed.stdout)] == [f"ticket=CLI-1@{DOMAIN}"]
    missing = run_cli("thread", "ticket=NOPE@mas.test", "--config", str(config), env=cli_env)
    assert missing.returncode == 3 and "no case" in missing.stderr


def test_serve_without_a_usable_configuration_says_which_key(tmp_path, cli_env):
    result = run_cli("serve", "--config", str(tmp_path / "absent.toml"), env=cli_env)
    assert result.returncode == 2 and "absent.toml" in result.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('domain = "mas.test"\n[mailbox]\nhost = "imap.example.org"\nsecurity = "plain"\n')
    result = run_cli("serve", "--config", str(bad), env=cli_env)
    assert result.returncode == 2 and "mailbox.security" in result.stderr and "loopback" in result.stderr
    result = run_cli("serve", env=cli_env)
    assert result.returncode == 2 and "domain" in result.stderr


def test_role_flag_and_health(tmp_path, cli_env):
    config = tmp_path / "m.toml"
    config.write_text(f'domain = "{DOMAIN}"\ndatabase = "{tmp_path / "r.sqlite3"}"\n'
                      '[server]\ntoken_env = "MT_TEST_MODES_TOKEN"\n', encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "mailtriage.cli.main", "modes", "serve", "--config", str(config),
                             "--port", "0", "--role", "slave"], env=cli_env, stderr=subprocess.PIPE, text=True)
    try:
        url = re.search(r"serving (http://\S+)", proc.stderr.readline()).group(1)
        assert httpx.get(url + "/health", timeout=BOUND).status_code == 401  # nothing without a token
        health = httpx.get(url + "/health", timeout=BOUND,
                           headers={"Authorization": f"Bearer {cli_env['MT_TEST_MODES_TOKEN']}"}).json()
        assert health == {"ok": True, "mas_modes_version": "0.1", "domain": DOMAIN, "role": "slave"}
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(BOUND) == 0
        proc.stderr.close()


def test_the_token_is_required_everywhere_and_checked(tmp_path, cli_env):
    config = tmp_path / "m.toml"
    config.write_text(f'domain = "{DOMAIN}"\ndatabase = "{tmp_path / "r.sqlite3"}"\n'
                      '[server]\ntoken_env = "MT_TEST_MODES_TOKEN"\n', encoding="utf-8")
    del cli_env["MT_TEST_MODES_TOKEN"]
    for host in ("0.0.0.0", "127.0.0.1"):  # no token, no endpoint: loopback included
        refused = run_cli("serve", "--config", str(config), "--host", host, "--port", "0", env=cli_env)
        assert refused.returncode == 2 and "server.token_env" in refused.stderr and "token" in refused.stderr

    cli_env["MT_TEST_MODES_TOKEN"] = "s3cret-token-0123456789abcdef-0123456789"
    served = Served(config, cli_env)
    try:
        message = {"mas_modes_version": "0.1", "type": "case.assign", "id": "t-1", "intake_ref": "in-x",
                   "resource_id": "X-1"}
        response = httpx.post(served.url, json=message, timeout=BOUND)
        assert (response.status_code, response.json()["error"]) == (401, "unauthorized")
        response = httpx.post(served.url, json=message, timeout=BOUND,
                              headers={"Authorization": "Bearer s3cret-token-0123456789abcdef-0123456789"})
        assert (response.status_code, response.json()["error"]) == (404, "unknown-intake")
    finally:
        assert served.stop() == 0
