"""Microsoft sign-in (msal) against the loopback authority: device code, interactive (PKCE,
loopback redirect), the token cache in keyring, refresh under a lock, and which errors mean
"sign-in needed"."""

from __future__ import annotations

import json
import queue
import threading

import httpx
import pytest

from mailtriage.backends.errors import SignInNeeded, Unavailable
from mailtriage.backends.microsoft.account import IMAP_SCOPE, cache_key
from mailtriage.backends.microsoft.api import GraphApi
from mailtriage.backends.microsoft.auth import MicrosoftSignIn, forget_cache, load_cache
from mailtriage.backends.microsoft.source import GraphSource
from mailtriage.core.secrets import get_secret
from tests.archives.fakehttp import Reply
from tests.oauth.fixtures import microsoft_account, sign_in_microsoft
from tests.servers.keyring_backend import CappedKeyring


def test_device_code_sign_in_keeps_the_msal_cache_in_keyring(microsoft_emulator, memory_keyring, tmp_path):
    account = microsoft_account(microsoft_emulator, access="draft")
    messages = []

    def approve(message):
        messages.append(message)
        microsoft_emulator.approve(message.rsplit("enter the code ", 1)[1].split()[0])

    result = MicrosoftSignIn(account).login_device_code(announce=approve, timeout=10)
    assert "microsoft.com/devicelogin" in messages[0]
    assert result["username"] == "me@contoso.com" and result["scopes"] == ["Mail.ReadWrite", "MailboxSettings.Read"]
    cache = json.loads(load_cache(account.id))
    assert cache["RefreshToken"] and cache["AccessToken"]
    assert not list(tmp_path.iterdir())
    # Another process (a new object) uses the cached token without asking the authority.
    microsoft_emulator.token_calls.clear()
    GraphSource("m365", {}, account=account).check_available()
    assert microsoft_emulator.token_calls == []


@pytest.fixture
def windows_keyring():
    """A keyring with Windows Credential Manager's 2,560-byte cap per entry."""
    import keyring

    previous = keyring.get_keyring()
    backend = CappedKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


def test_a_realistic_msal_cache_fits_a_keyring_capped_like_windows(microsoft_emulator, windows_keyring):
    account = microsoft_account(microsoft_emulator, access="draft")
    sign_in_microsoft(microsoft_emulator, account)  # raised "The stub received bad data" when stored whole
    cache = load_cache(account.id)
    assert 4000 <= len(cache) <= 7500  # msal's serialized cache at real token sizes
    assert windows_keyring.largest() <= CappedKeyring.CAP_BYTES
    assert json.loads(cache)["RefreshToken"]
    # A refresh rewrites the cache through the same capped store, and a new process reads it back.
    microsoft_emulator.expire_access_tokens()
    microsoft_emulator.token_calls.clear()
    GraphSource("m365", {}, account=account).check_available()
    assert microsoft_emulator.token_calls == ["refresh_token"]
    GraphSource("m365", {}, account=account).check_available()
    assert microsoft_emulator.token_calls == ["refresh_token"]
    # Signing out removes every piece.
    forget_cache(account.id)
    assert not [k for (_s, k) in windows_keyring._secrets if k.startswith(cache_key(account.id))]


def test_a_cache_saved_whole_by_an_earlier_version_still_signs_in(microsoft_emulator, memory_keyring):
    account = microsoft_account(microsoft_emulator)
    sign_in_microsoft(microsoft_emulator, account)
    from mailtriage.core.secrets import set_secret

    set_secret(cache_key(account.id), load_cache(account.id))  # one entry, as before the split
    microsoft_emulator.token_calls.clear()
    GraphSource("m365", {}, account=account).check_available()
    assert microsoft_emulator.token_calls == []


def test_interactive_sign_in_with_pkce_and_a_loopback_redirect(microsoft_emulator, memory_keyring, oauth_certificate):
    account = microsoft_account(microsoft_emulator)
    urls: queue.Queue = queue.Queue()
    outcome = {}

    def go():
        try:
            outcome["result"] = MicrosoftSignIn(account).login_interactive(announce=urls.put, open_browser=False,
                                                                           timeout=10)
        except Exception as exc:  # noqa: BLE001
            outcome["error"] = exc

    worker = threading.Thread(target=go)
    worker.start()
    url = urls.get(timeout=10)
    params = httpx.URL(url).params
    assert params["code_challenge_method"] == "S256" and params["redirect_uri"].startswith("http://localhost:")
    httpx.get(url, verify=oauth_certificate.client_context(), timeout=5)
    # An answer as a GET with a query (the authority's default response mode) is taken too.
    redirect = httpx.URL(params["redirect_uri"])
    httpx.get(f"http://127.0.0.1:{redirect.port}/", params=microsoft_emulator.form_posts[-1], timeout=5)
    worker.join(10)
    assert "error" not in outcome, outcome.get("error")
    assert outcome["result"]["username"] == "me@contoso.com"
    assert microsoft_emulator.token_calls == ["authorization_code"]


def _interactive(account):
    urls: queue.Queue = queue.Queue()
    outcome: dict = {}

    def go():
        try:
            outcome["result"] = MicrosoftSignIn(account).login_interactive(announce=urls.put, open_browser=False,
                                                                           timeout=10)
        except Exception as exc:  # noqa: BLE001
            outcome["error"] = exc

    worker = threading.Thread(target=go)
    worker.start()
    return urls.get(timeout=10), worker, outcome


@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]"])
def test_interactive_sign_in_takes_a_form_post_on_what_localhost_names(microsoft_emulator, memory_keyring,
                                                                       oauth_certificate, host):
    account = microsoft_account(microsoft_emulator)
    url, worker, outcome = _interactive(account)
    params = httpx.URL(url).params
    assert params["response_mode"] == "form_post"  # msal's advice: the code never sits in a URL
    page = httpx.get(url, verify=oauth_certificate.client_context(), timeout=5)
    assert page.status_code == 200 and 'method="POST"' in page.text
    answer = microsoft_emulator.form_posts[-1]
    port = httpx.URL(params["redirect_uri"]).port
    # The browser resolves localhost to 127.0.0.1 or to ::1, and POSTs the form there.
    reply = httpx.post(f"http://{host}:{port}/", data=answer, timeout=5)
    assert reply.status_code == 200 and "sign-in received" in reply.text
    worker.join(10)
    assert "error" not in outcome, outcome.get("error")
    assert outcome["result"]["username"] == "me@contoso.com"
    assert microsoft_emulator.token_calls == ["authorization_code"]


def test_scopes_follow_the_access_setting(microsoft_emulator):
    assert microsoft_account(microsoft_emulator, access="read").scopes == ("Mail.Read", "MailboxSettings.Read")
    assert microsoft_account(microsoft_emulator, access="send").scopes == ("Mail.ReadWrite", "MailboxSettings.Read",
                                                                           "Mail.Send")
    assert microsoft_account(microsoft_emulator, organize=True).scopes == ("Mail.ReadWrite",
                                                                           "MailboxSettings.ReadWrite")
    assert microsoft_account(microsoft_emulator, kind="imap", username="me@contoso.com").scopes == (IMAP_SCOPE,)


def test_no_sign_in_is_sign_in_needed(microsoft_emulator, memory_keyring):
    with pytest.raises(SignInNeeded) as caught:
        GraphSource("m365", {}, account=microsoft_account(microsoft_emulator, "team")).check_available()
    assert "mailtriage account login team" in str(caught.value)


def test_expiry_mid_session_refreshes_once_and_retries(microsoft_emulator, graph_account):
    api = GraphApi(graph_account)
    api.get("/me/mailFolders/inbox", "inbox")
    microsoft_emulator.expire_access_tokens()
    assert api.get("/me/mailFolders/inbox", "inbox")["displayName"] == "Inbox"
    assert microsoft_emulator.token_calls == ["refresh_token"]
    api.get("/me/mailFolders/inbox", "inbox")
    assert microsoft_emulator.token_calls == ["refresh_token"]


def test_a_revoked_refresh_token_is_sign_in_needed_naming_the_account(microsoft_emulator, graph_account):
    microsoft_emulator.revoke_refresh_tokens()
    with pytest.raises(SignInNeeded) as caught:
        GraphSource("m365", {}, account=graph_account).check_available()
    assert "'work'" in str(caught.value) and "invalid_grant" in str(caught.value)


def test_an_authority_outage_is_an_outage(microsoft_emulator, graph_account):
    microsoft_emulator.expire_access_tokens()
    microsoft_emulator.server.fail("/oauth2/v2.0/token", Reply.text("Service Unavailable", 503), times=None)
    with pytest.raises(Unavailable) as caught:
        GraphSource("m365", {}, account=graph_account).check_available()
    assert not isinstance(caught.value, SignInNeeded)
    assert get_secret(cache_key(graph_account.id))  # the sign-in is kept


def test_a_graph_outage_is_an_outage(microsoft_emulator, graph_account, monkeypatch):
    from mailtriage.backends.microsoft import api

    monkeypatch.setattr(api, "DEFAULT_BACKOFF", api.Backoff(base=0.01, cap=0.02, deadline=0.1))
    microsoft_emulator.server.fail("/mailFolders", Reply.json({"error": {"code": "ServiceNotAvailable",
                                                                         "message": "down"}}, 503), times=None)
    with pytest.raises(Unavailable) as caught:
        GraphSource("m365", {}, account=graph_account).check_available()
    assert not isinstance(caught.value, SignInNeeded)


def test_two_workers_needing_a_refresh_refresh_once(microsoft_emulator, memory_keyring):
    account = microsoft_account(microsoft_emulator)
    microsoft_emulator.token_lifetime = 30  # msal treats a token this close to expiry as expired
    sign_in_microsoft(microsoft_emulator, account)
    microsoft_emulator.token_lifetime = 3599
    microsoft_emulator.token_calls.clear()
    microsoft_emulator.token_delay = 0.3
    barrier = threading.Barrier(3)
    tokens = []

    def worker():
        signin = MicrosoftSignIn(account)
        barrier.wait()
        tokens.append(signin.access_token())

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)  # generous: a loaded CI machine serialises three msal sign-ins slowly (15 s failed at load 10)
    assert not any(t.is_alive() for t in threads), "a worker is stuck on the sign-in lock"
    assert len(tokens) == 3 and len(set(tokens)) == 1
    assert microsoft_emulator.token_calls == ["refresh_token"]


def test_throttling_honours_retry_after(microsoft_emulator, graph_account, trace_lines):
    microsoft_emulator.server.fail("/mailFolders/inbox", Reply.json(
        {"error": {"code": "ApplicationThrottled", "message": "Too many requests"}}, 429, **{"Retry-After": "1"}))
    waits = []
    assert GraphApi(graph_account, sleep=waits.append).get("/me/mailFolders/inbox", "inbox")["displayName"] == "Inbox"
    assert waits == [1.0]  # the sleeper is recorded: no real second waited
    assert len([r for r in microsoft_emulator.server.requests if r.path.endswith("/mailFolders/inbox")]) == 2
    assert any("429: backing off 1.00s" in line.text for line in trace_lines)


def test_every_graph_request_asks_for_immutable_ids(microsoft_emulator, graph_account):
    GraphSource("m365", {}, account=graph_account).list_recent_threads(None,
                                                                       __import__("datetime").datetime(2000, 1, 1))
    assert microsoft_emulator.graph_requests
    assert all(r.headers.get("prefer") == 'IdType="ImmutableId"' for r in microsoft_emulator.graph_requests)


def test_no_token_reaches_the_trace(microsoft_emulator, memory_keyring, trace_lines):
    account = microsoft_account(microsoft_emulator)
    sign_in_microsoft(microsoft_emulator, account)
    microsoft_emulator.expire_access_tokens()
    source = GraphSource("m365", {}, account=account)
    source.check_available()
    microsoft_emulator.revoke_refresh_tokens()
    with pytest.raises(SignInNeeded):
        GraphSource("m365", {}, account=account).check_available()
    text = "\n".join(f"{line.channel} {line.direction} {line.text}" for line in trace_lines)
    assert "/oauth2/v2.0/token" in text and "/v1.0/me/mailFolders" in text
    for secret in microsoft_emulator.secrets_issued:
        assert secret not in text


def test_redaction_covers_device_code_grants():
    from mailtriage.core.trace import redact

    line = redact('POST /token grant_type=device_code&device_code=DAQABsecret {"device_code": "DAQABsecret"}')
    assert "DAQABsecret" not in line
