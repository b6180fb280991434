"""One token per caller of the endpoint (issue 31, item 4): the outside master has its own,
each mode endpoint its own, and each may send only what its route in the contract allows; a
token shorter than MIN_TOKEN_LENGTH is refused; /health says nothing without a token."""

from __future__ import annotations

from datetime import datetime, timezone

import httpx
import pytest

from mailtriage.core.projectconfig import ConfigError
from mailtriage.modes.config import DEFAULT_TOKEN_KEY, MIN_TOKEN_LENGTH, mode_token_key, parse_config
from mailtriage.modes.server import ModesServer, ServerThread
from mailtriage.modes.store import Store
from tests.modes.harness import DOMAIN
from tests.servers.fixtures import memory_keyring  # noqa: F401

CASE = f"ticket=gs-1@{DOMAIN}"
ASSIGN = {"mas_modes_version": "0.1", "type": "case.assign", "id": "t-1", "intake_ref": "in-x", "resource_id": "X-1"}


def status(handoff_id: str, msg_id: str) -> dict:
    return {"mas_modes_version": "0.1", "type": "handoff.status", "id": msg_id, "case": {"address": CASE, "key": CASE},
            "handoff_id": handoff_id, "seq": 1, "status": "running"}


def config_data(tmp_path, **server) -> dict:
    return {"domain": DOMAIN, "database": str(tmp_path / "r.sqlite3"),
            "server": {"poll_seconds": None, "tick_seconds": None, **server},
            "types": {"ticket": {"modes": {"callback": {"endpoint": "http://127.0.0.1:9/cb"},
                                           "video": {"endpoint": "http://127.0.0.1:9/video"}}}}}


@pytest.fixture
def served(tmp_path, memory_keyring):  # noqa: F811
    config = parse_config(config_data(tmp_path), tmp_path / "modes.toml")
    store = Store(config.database)  # a case email masters, with one handoff sent to the callback mode
    now = datetime.now(timezone.utc)
    store.add_case(key=CASE, address=CASE, resource_type="ticket", resource_id="gs-1", role="master",
                   participant=None, now=now)
    store.add_handoff(handoff_id="h-cb", case_key=CASE, mode="callback", role="master", status="requested", now=now,
                      endpoint="http://127.0.0.1:9/cb")
    store.close()
    thread = ServerThread(ModesServer(config, port=0, background=False)).start()
    try:
        yield thread
    finally:
        thread.stop()


def post(served, message: dict, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(served.url, json=message, headers=headers, timeout=10)


def test_the_master_and_each_mode_get_their_own_token(served, memory_keyring):  # noqa: F811
    master = memory_keyring.get_password("mailtriage", DEFAULT_TOKEN_KEY)
    callback = memory_keyring.get_password("mailtriage", mode_token_key("ticket", "callback"))
    video = memory_keyring.get_password("mailtriage", mode_token_key("ticket", "video"))
    assert all(t and len(t) >= MIN_TOKEN_LENGTH for t in (master, callback, video))
    assert len({master, callback, video}) == 3
    assert mode_token_key("ticket", "callback") == "modes:mode:ticket.callback"


def test_a_mode_token_cannot_send_what_only_the_master_sends(served, memory_keyring):  # noqa: F811
    # failed first on main: one token served the master and every mode
    callback = memory_keyring.get_password("mailtriage", mode_token_key("ticket", "callback"))
    refused = post(served, ASSIGN, callback)
    assert (refused.status_code, refused.json()["error"]) == (403, "forbidden")
    master = memory_keyring.get_password("mailtriage", DEFAULT_TOKEN_KEY)
    assert post(served, ASSIGN, master).json()["error"] == "unknown-intake"  # past the check, to the engine


def test_the_master_token_cannot_send_a_mode_status(served, memory_keyring):  # noqa: F811
    master = memory_keyring.get_password("mailtriage", DEFAULT_TOKEN_KEY)
    refused = post(served, status("h-cb", "s-1"), master)
    assert (refused.status_code, refused.json()["error"]) == (403, "forbidden")


def test_a_mode_reports_only_on_its_own_handoffs(served, memory_keyring):  # noqa: F811
    video = memory_keyring.get_password("mailtriage", mode_token_key("ticket", "video"))
    refused = post(served, status("h-cb", "s-2"), video)
    assert (refused.status_code, refused.json()["error"]) == (403, "forbidden")
    callback = memory_keyring.get_password("mailtriage", mode_token_key("ticket", "callback"))
    accepted = post(served, status("h-cb", "s-3"), callback)
    assert (accepted.status_code, accepted.json()) == (200, {"ok": True, "recorded": "running"})


def test_health_says_nothing_without_a_token(served, memory_keyring):  # noqa: F811
    # failed first on main: /health named the domain and role to anyone
    bare = httpx.get(served.url + "/health", timeout=10)
    assert bare.status_code == 401 and DOMAIN not in bare.text and "master" not in bare.text
    wrong = httpx.get(served.url + "/health", headers={"Authorization": "Bearer " + "x" * 40}, timeout=10)
    assert wrong.status_code == 401 and DOMAIN not in wrong.text
    token = memory_keyring.get_password("mailtriage", mode_token_key("ticket", "video"))
    shown = httpx.get(served.url + "/health", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert shown.status_code == 200 and shown.json()["domain"] == DOMAIN


def _start(config) -> None:
    thread = ServerThread(ModesServer(config, port=0, background=False))
    try:
        thread.start()
    finally:
        thread.stop()


def test_a_short_token_from_the_environment_is_refused(tmp_path, monkeypatch, memory_keyring):  # noqa: F811
    short = "s" * (MIN_TOKEN_LENGTH - 1)
    monkeypatch.setenv("MT_SHORT_TOKEN", short)
    config = parse_config(config_data(tmp_path, token_env="MT_SHORT_TOKEN"), tmp_path / "modes.toml")
    with pytest.raises(ConfigError) as info:
        _start(config)
    assert info.value.key == "server.token_env" and f"at least {MIN_TOKEN_LENGTH}" in str(info.value)
    assert short not in str(info.value)


def test_a_short_token_in_the_keyring_is_refused(tmp_path, memory_keyring):  # noqa: F811
    memory_keyring.set_password("mailtriage", mode_token_key("ticket", "video"), "short-token")
    config = parse_config(config_data(tmp_path), tmp_path / "modes.toml")
    with pytest.raises(ConfigError) as info:
        _start(config)
    assert info.value.key == "types.ticket.modes.video.token_key"
    assert mode_token_key("ticket", "video") in str(info.value) and "short-token" not in str(info.value)


def test_a_mode_may_not_share_the_masters_token(tmp_path, monkeypatch, memory_keyring):  # noqa: F811
    shared = "t" * 40
    monkeypatch.setenv("MT_SHARED", shared)
    data = config_data(tmp_path, token_env="MT_SHARED")
    data["types"]["ticket"]["modes"]["video"]["token_env"] = "MT_SHARED"
    config = parse_config(data, tmp_path / "modes.toml")
    with pytest.raises(ConfigError) as info:
        _start(config)
    assert info.value.key == "types.ticket.modes.video.token_env" and "same token" in str(info.value)


def test_modes_token_prints_the_masters_or_one_modes_token(tmp_path, capsys, memory_keyring):  # noqa: F811
    from mailtriage.cli.modes import main as modes_main

    config = tmp_path / "modes.toml"
    config.write_text(f'domain = "{DOMAIN}"\ndatabase = "{tmp_path / "r.sqlite3"}"\n'
                      '[types.ticket.modes.callback]\nendpoint = "http://127.0.0.1:9/cb"\n', encoding="utf-8")
    assert modes_main(["token", "--config", str(config)]) == 0
    master = capsys.readouterr().out.strip()
    assert modes_main(["token", "--config", str(config), "--mode", "ticket.callback"]) == 0
    callback = capsys.readouterr().out.strip()
    assert master == memory_keyring.get_password("mailtriage", DEFAULT_TOKEN_KEY)
    assert callback == memory_keyring.get_password("mailtriage", mode_token_key("ticket", "callback"))
    assert master != callback
    assert modes_main(["token", "--config", str(config), "--mode", "ticket.video"]) == 2
    assert "ticket.callback" in capsys.readouterr().err


def test_a_mode_cannot_read_the_masters_answer_by_reusing_its_id(served, memory_keyring):  # noqa: F811
    master = memory_keyring.get_password("mailtriage", DEFAULT_TOKEN_KEY)
    first = post(served, ASSIGN, master)
    callback = memory_keyring.get_password("mailtriage", mode_token_key("ticket", "callback"))
    replay = post(served, {**status("h-cb", "unused"), "id": ASSIGN["id"]}, callback)
    assert (replay.status_code, replay.json()["error"]) == (403, "forbidden")
    assert post(served, ASSIGN, master).json() == first.json()  # the master still gets its answer
