"""Google sign-in against the loopback emulator: the installed-app flow (loopback redirect,
PKCE, state), scopes, refresh under a lock, rotation, and what is and is not "sign-in needed"."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
import queue
import threading

import httpx
import pytest

from mailtriage.backends.errors import SignInNeeded, Unavailable
from mailtriage.backends.gmail.account import (SCOPE_COMPOSE, SCOPE_LABELS, SCOPE_MODIFY, SCOPE_READONLY, SCOPE_SEND,
                                               client_secret_key, token_key)
from mailtriage.backends.gmail.api import USER, GmailApi
from mailtriage.backends.gmail.auth import GoogleSignIn
from mailtriage.backends.gmail.adapter import GmailMailbox
from mailtriage.backends.gmail.source import GmailSource
from mailtriage.core.secrets import get_secret, set_secret
from tests.archives.fakehttp import Reply
from tests.oauth.fixtures import google_account, save_google_sign_in


def run_login(signin: GoogleSignIn, browse):
    """Run login() in a thread; ``browse(url)`` plays the browser. Returns (result, error)."""
    urls: queue.Queue = queue.Queue()
    outcome: dict = {}

    def go():
        try:
            outcome["result"] = signin.login(announce=urls.put, open_browser=False, timeout=10)
        except Exception as exc:  # noqa: BLE001 - handed to the test
            outcome["error"] = exc

    worker = threading.Thread(target=go)
    worker.start()
    browse(urls.get(timeout=5))
    worker.join(10)
    return outcome.get("result"), outcome.get("error")


def test_installed_app_flow_saves_tokens_in_keyring_only(google_emulator, memory_keyring, tmp_path):
    account = google_account(google_emulator, access="draft")
    set_secret(client_secret_key(account.id), google_emulator.client_secret)
    seen = {}

    def browse(url):
        seen["url"] = url
        page = httpx.get(url, follow_redirects=True, timeout=5)  # Google redirects to our loopback server
        seen["page"] = page.text

    result, error = run_login(GoogleSignIn(account), browse)
    assert error is None and result["scopes"] == sorted(account.scopes)
    query = httpx.URL(seen["url"]).params
    assert query["redirect_uri"].startswith("http://127.0.0.1:") and query["code_challenge_method"] == "S256"
    assert query["scope"].split() == [SCOPE_READONLY, SCOPE_COMPOSE]
    assert "sign-in received" in seen["page"]
    saved = json.loads(get_secret(token_key(account.id)))
    assert saved["refresh_token"] in google_emulator.refresh_tokens
    assert [c["grant_type"] for c in google_emulator.token_calls] == ["authorization_code"]
    assert not list(tmp_path.iterdir())  # nothing written to files
    # The saved sign-in works: a Gmail call succeeds without another token request.
    GmailApi(account).get(f"{USER}/profile", "getProfile")
    assert len(google_emulator.token_calls) == 1


def test_a_redirect_with_another_state_is_refused(google_emulator, memory_keyring):
    account = google_account(google_emulator)
    set_secret(client_secret_key(account.id), google_emulator.client_secret)

    def forged(url):
        redirect = httpx.URL(url).params["redirect_uri"]
        httpx.get(redirect, params={"code": "4/forged", "state": "not-ours"}, timeout=5)

    result, error = run_login(GoogleSignIn(account), forged)
    assert result is None and isinstance(error, SignInNeeded) and "state" in str(error)
    assert get_secret(token_key(account.id)) is None
    assert google_emulator.token_calls == []  # the forged code was never exchanged


def test_a_refused_consent_is_sign_in_needed(google_emulator, memory_keyring):
    account = google_account(google_emulator)
    set_secret(client_secret_key(account.id), google_emulator.client_secret)
    result, error = run_login(GoogleSignIn(account),
                              lambda url: httpx.get(url + "&deny=1", follow_redirects=True, timeout=5))
    assert isinstance(error, SignInNeeded) and "access_denied" in str(error)


@pytest.mark.parametrize("settings, scopes", [
    ({"access": "read"}, [SCOPE_READONLY]),
    ({"access": "draft"}, [SCOPE_READONLY, SCOPE_COMPOSE]),
    ({"access": "send"}, [SCOPE_READONLY, SCOPE_COMPOSE, SCOPE_SEND]),
    ({"access": "read", "organize": True}, [SCOPE_READONLY, SCOPE_MODIFY, SCOPE_LABELS]),
    ({"kind": "imap", "username": "me@example.org"}, ["https://mail.google.com/"]),
])
def test_scopes_are_the_narrowest_for_the_access(google_emulator, settings, scopes):
    assert list(google_account(google_emulator, **settings).scopes) == scopes


def test_no_saved_sign_in_is_sign_in_needed_naming_the_account(google_emulator, memory_keyring):
    account = google_account(google_emulator, "work-gmail")
    with pytest.raises(SignInNeeded) as caught:
        GmailSource("gmail", {}, account=account).check_available()
    assert "work-gmail" in str(caught.value) and "mailtriage account login work-gmail" in str(caught.value)


def test_an_expired_token_mid_session_refreshes_once_and_retries(google_emulator, gmail_account):
    api = GmailApi(gmail_account)
    api.get(f"{USER}/profile", "getProfile")
    google_emulator.expire_access_tokens()  # Google stops accepting it before our expiry says so
    profile = api.get(f"{USER}/profile", "getProfile")
    assert profile["emailAddress"] == google_emulator.address
    assert [c["grant_type"] for c in google_emulator.token_calls] == ["refresh_token"]
    profile_calls = [r for r in google_emulator.server.requests if r.path.endswith("/profile")]
    assert [len(profile_calls)] == [3]  # ok, 401, retried ok
    api.get(f"{USER}/profile", "getProfile")
    assert len(google_emulator.token_calls) == 1  # the new token is kept


def test_a_token_due_to_expire_is_refreshed_before_the_call(google_emulator, memory_keyring):
    account = google_account(google_emulator)
    save_google_sign_in(google_emulator, account, expired=True)
    GmailApi(account).get(f"{USER}/profile", "getProfile")
    assert [c["grant_type"] for c in google_emulator.token_calls] == ["refresh_token"]
    # Refreshed first, so Gmail was asked once, never with the dead token.
    assert len([r for r in google_emulator.server.requests if r.path.endswith("/profile")]) == 1


def test_a_revoked_refresh_token_is_sign_in_needed_with_the_account_named(google_emulator, gmail_account):
    google_emulator.revoke_refresh_tokens()
    source = GmailSource("gmail", {}, account=gmail_account)
    with pytest.raises(SignInNeeded) as caught:
        source.check_available()
    assert "'me'" in str(caught.value) and "invalid_grant" in str(caught.value)


def test_a_token_endpoint_outage_is_an_outage_not_a_sign_out(google_emulator, memory_keyring):
    account = google_account(google_emulator)
    save_google_sign_in(google_emulator, account, expired=True)
    google_emulator.server.fail("/token", Reply.json({"error": "temporarily_unavailable"}, 503), times=None)
    with pytest.raises(Unavailable) as caught:
        GmailSource("gmail", {}, account=account).check_available()
    assert not isinstance(caught.value, SignInNeeded)
    assert json.loads(get_secret(token_key(account.id)))["refresh_token"]  # the sign-in is kept


def test_a_gmail_outage_is_an_outage(google_emulator, gmail_account):
    google_emulator.server.fail("/profile", Reply.json({"error": {"code": 503, "message": "Backend Error"}}, 503),
                                times=None)
    clock = FakeClock()  # the default backoff's 60 s deadline passes on it, not on the wall clock (was ~50 s)
    api = GmailApi(gmail_account, sleep=clock.sleep, clock=clock)
    with pytest.raises(Unavailable) as caught:
        GmailSource("gmail", {}, mailbox=GmailMailbox(gmail_account, api=api)).check_available()
    assert not isinstance(caught.value, SignInNeeded)
    assert clock.waits and sum(clock.waits) <= 60.0  # it backed off, within the deadline, then gave up


class FakeClock:
    """A monotonic clock that only a sleep moves."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def test_two_workers_needing_a_refresh_refresh_once(google_emulator, memory_keyring):
    account = google_account(google_emulator)
    save_google_sign_in(google_emulator, account, expired=True)
    google_emulator.token_delay = 0.3  # a slow token endpoint widens the race
    barrier = threading.Barrier(3)
    tokens: list[str] = []

    def worker():
        signin = GoogleSignIn(account)  # separate objects, as two TUI workers would have
        barrier.wait()
        tokens.append(signin.access_token())

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(tokens) == 3 and len(set(tokens)) == 1
    assert [c["grant_type"] for c in google_emulator.token_calls] == ["refresh_token"]


def test_a_rotated_refresh_token_replaces_the_old_one(google_emulator, memory_keyring):
    account = google_account(google_emulator)
    _access, first = save_google_sign_in(google_emulator, account, expired=True)
    google_emulator.rotate_refresh_tokens = True
    signin = GoogleSignIn(account)
    signin.access_token()
    second = json.loads(get_secret(token_key(account.id)))["refresh_token"]
    assert second != first and first not in google_emulator.refresh_tokens
    google_emulator.expire_access_tokens()
    api = GmailApi(account, signin=signin)
    api.get(f"{USER}/profile", "getProfile")  # refreshes with the rotated token
    assert len(google_emulator.token_calls) == 2


def test_throttling_honours_retry_after(google_emulator, gmail_account, trace_lines):
    google_emulator.server.fail("/profile", Reply.json({"error": {"code": 429, "message": "Rate Limit Exceeded"}},
                                                       429, **{"Retry-After": "1"}))
    waits = []
    profile = GmailApi(gmail_account, sleep=waits.append).get(f"{USER}/profile", "getProfile")
    assert profile["emailAddress"]
    assert waits == [1.0]  # the sleeper is recorded: no real second waited
    assert len([r for r in google_emulator.server.requests if r.path.endswith("/profile")]) == 2
    # Gmail's own backoff waits (not the HTTP client's fixed retry), here as Retry-After said.
    assert any("429" in line.text and "backing off 1.00s" in line.text for line in trace_lines)


def test_no_token_or_code_reaches_the_trace(google_emulator, memory_keyring, trace_lines):
    account = google_account(google_emulator, access="draft")
    set_secret(client_secret_key(account.id), google_emulator.client_secret)
    run_login(GoogleSignIn(account), lambda url: httpx.get(url, follow_redirects=True, timeout=5))
    google_emulator.expire_access_tokens()
    source = GmailSource("gmail", {}, account=account)
    source.check_available()  # 401, refresh, retry
    google_emulator.revoke_refresh_tokens()
    with pytest.raises(SignInNeeded):
        source.check_available()
    assert [c["grant_type"] for c in google_emulator.token_calls] == ["authorization_code", "refresh_token",
                                                                       "refresh_token"]
    text = "\n".join(f"{line.channel} {line.direction} {line.text}" for line in trace_lines)
    assert "/token" in text and "/profile" in text  # the exchanges were traced...
    for secret in [*google_emulator.secrets_issued, google_emulator.client_secret]:
        assert secret not in text  # ...without any token, code or client secret


def test_a_testing_status_app_says_why_after_its_7_days(google_emulator, memory_keyring):
    account = google_account(google_emulator)
    google_emulator.test_users = {google_emulator.address}
    # Signed in 8 days before the failing refresh, as mailtriage recorded it.
    save_google_sign_in(google_emulator, account, expired=True,
                        signed_in=datetime.now(timezone.utc) - timedelta(days=8))
    GmailSource("gmail", {}, account=account).check_available()  # day 0: the refresh works
    google_emulator.clock_offset = 8 * 86400
    google_emulator.expire_access_tokens()
    with pytest.raises(SignInNeeded) as caught:
        GmailSource("gmail", {}, account=account).check_available()
    text = str(caught.value)
    assert "invalid_grant" in text and "sign in again" in text
    assert "Testing-status apps expire every 7 days" in text and "mailtriage account login me" in text


def test_sign_in_without_the_client_secret_stops_before_the_browser(google_emulator, memory_keyring):
    account = google_account(google_emulator)
    announced: list[str] = []
    with pytest.raises(SignInNeeded) as caught:
        GoogleSignIn(account).login(announce=announced.append, open_browser=False, timeout=5)
    assert announced == [] and google_emulator.server.requests == []  # no flow began
    text = str(caught.value)
    assert "google-client-secret:me" in text and "invalid_request" not in text


def test_a_user_who_is_not_a_test_user_is_told_so(google_emulator, memory_keyring):
    account = google_account(google_emulator)
    set_secret(client_secret_key(account.id), google_emulator.client_secret)
    google_emulator.test_users = {"someone-else@example.org"}
    result, error = run_login(GoogleSignIn(account),
                              lambda url: httpx.get(url, follow_redirects=True, timeout=5))
    assert result is None and isinstance(error, SignInNeeded)
    assert "access_denied" in str(error) and "test user" in str(error)


def test_a_revoked_grant_is_refreshed_once_and_said_to_be_revoked(google_emulator, gmail_account):
    # A grant revoked while a listing runs: its eight concurrent reads must not make eight
    # refresh attempts, and a sign-in of today is not blamed on the 7-day Testing expiry.
    from mailtriage.backends.gmail.api import USER, GmailApi

    google_emulator.revoke_refresh_tokens()
    api = GmailApi(gmail_account)
    with pytest.raises(SignInNeeded) as caught:
        api.fetch_all(lambda _n: api.get(f"{USER}/profile", "getProfile"), range(8))
    with pytest.raises(SignInNeeded):
        GmailSource("gmail", {}, account=gmail_account).check_available()  # later calls: no new attempt
    assert [c["grant_type"] for c in google_emulator.token_calls] == ["refresh_token"]
    text = str(caught.value)
    assert "revoked" in text and "invalid_grant" in text and "mailtriage account login me" in text
    assert "Testing" not in text and "7 days" not in text
    save_google_sign_in(google_emulator, gmail_account, expired=True)  # signed in again
    GmailSource("gmail", {}, account=gmail_account).check_available()
    assert [c["grant_type"] for c in google_emulator.token_calls] == ["refresh_token", "refresh_token"]
