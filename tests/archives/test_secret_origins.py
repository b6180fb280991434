"""A Pony Mail session cookie goes only to the origin it was stored for (issue 31, item 1).

project.md is team data (a colleague's, or an attacker's pull request): it names a URL and
nothing else; the keyring key follows from that URL's exact origin. Every request the
emulated archive gets is recorded, so a secret that reached it would show.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailtriage.core.origins import secret_key
from mailtriage.core.projectconfig import ConfigError
from mailtriage.core.secrets import get_secret, set_secret
from tests.archives.conftest import SESSION_COOKIE

IMAP_PASSWORD = "alice-imap-password-5531"


def _sent(server, secret: str) -> list[str]:
    """Every recorded request that carried ``secret`` anywhere (path, any header)."""
    return [f"{r.method} {r.path}" for r in server.requests
            if secret in r.path or any(secret in v for v in r.headers.values())]


def test_project_cannot_name_a_keyring_entry(pm_source, pm_server, now):
    # failed first on main: session_key: imap:alice sent the IMAP password as Cookie: ponymail=…
    set_secret("imap:alice", IMAP_PASSWORD)
    with pytest.raises(ConfigError) as info:
        source = pm_source(list="private", session_key="imap:alice")
        source.list_recent_threads(None, now - timedelta(days=30))
    assert info.value.key == "mail_sources.pony.session_key"
    assert "keyring" in str(info.value) and IMAP_PASSWORD not in str(info.value)
    assert _sent(pm_server, IMAP_PASSWORD) == []


def test_hostile_project_md_sends_no_password_through_the_sources_matrix(tmp_path, pm_server, memory_keyring):
    from mailtriage.backends.registry import SourceSet
    from mailtriage.core.projectconfig import load_project

    set_secret("imap:alice", IMAP_PASSWORD)
    (tmp_path / "project.md").write_text(f"""# Planted

## Mail sources

| Backend | Role | Mandatory | Notes |
|---|---|---|---|
| `ponymail` | primary | no | from a pull request |

## Configuration

```yaml
mail_sources:
  ponymail:
    base_url: {pm_server.base_url}
    list: private
    domain: example.org
    session_key: "imap:alice"
```
""", encoding="utf-8")
    with pytest.raises(ConfigError, match="session_key"):
        SourceSet(load_project(tmp_path)).matrix()
    assert _sent(pm_server, IMAP_PASSWORD) == []


def test_cookie_stored_for_its_origin_signs_in(pm_source, pm_server, now):
    set_secret(secret_key("ponymail", pm_server.base_url), SESSION_COOKIE)
    listing = pm_source(list="private").list_recent_threads(None, now - timedelta(days=30))
    assert [s.subject for s in listing] == ["Embargoed fix"]
    assert pm_server.requests and all(f"ponymail={SESSION_COOKIE}" in r.headers.get("cookie", "")
                                      for r in pm_server.requests)


def test_cookie_stored_for_another_scheme_or_port_is_not_sent(pm_source, pm_server, now):
    host_port = pm_server.base_url.split("//")[1]
    host, port = host_port.rsplit(":", 1)
    set_secret(secret_key("ponymail", f"https://{host_port}"), SESSION_COOKIE)  # same host and port, https
    set_secret(secret_key("ponymail", f"http://{host}:{int(port) + 1}"), SESSION_COOKIE + "-b")  # another port
    set_secret(secret_key("ponymail", f"http://localhost:{port}"), SESSION_COOKIE + "-c")  # another host name
    source = pm_source(list="security")
    source.list_recent_threads(None, now - timedelta(days=30))
    assert _sent(pm_server, SESSION_COOKIE) == []


def test_old_host_only_entry_is_not_sent_and_the_reason_says_how_to_move_it(pm_source, pm_server, now):
    from mailtriage.backends.errors import Unavailable

    old = f"ponymail:{pm_server.base_url.split('//')[1]}"
    set_secret(old, SESSION_COOKIE)
    with pytest.raises(Unavailable) as info:
        pm_source(list="private").list_recent_threads(None, now - timedelta(days=30))
    assert _sent(pm_server, SESSION_COOKIE) == []
    reason = info.value.reason
    assert secret_key("ponymail", pm_server.base_url) in reason and old in reason
    assert "mailtriage account store-secret ponymail" in reason and "--from-old-key" in reason


def test_plain_http_to_another_host_reads_no_secret(pm_source, memory_keyring):
    from mailtriage.core.origins import OriginRefused

    with pytest.raises(OriginRefused, match="plain http"):
        secret_key("ponymail", "http://lists.example.org")
    # an entry planted under that key by hand is never read: the source reads anonymously
    memory_keyring.set_password("mailtriage", "ponymail:http://lists.example.org:80", SESSION_COOKIE)
    source = pm_source(base_url="http://lists.example.org")
    assert source.session_cookie() is None
    assert "plain http" in source.session_note
    assert get_secret("ponymail:http://lists.example.org:80") == SESSION_COOKIE  # it was there to be read


@pytest.mark.parametrize("url", ["https://user:pw@lists.example.org", "ftp://lists.example.org"])
def test_urls_that_cannot_carry_a_secret_are_refused_by_key(url):
    from mailtriage.core.origins import OriginRefused

    with pytest.raises(OriginRefused):
        secret_key("ponymail", url)


def test_key_shape_names_purpose_scheme_host_and_port():
    assert secret_key("ponymail", "https://Lists.Apache.org/") == "ponymail:https://lists.apache.org:443"
    assert secret_key("jira", "http://127.0.0.1:8080/jira") == "jira:http://127.0.0.1:8080"
    assert secret_key("github", "https://api.github.com", "acme/sec") == "github:https://api.github.com:443/acme/sec"
    assert secret_key("ponymail", "http://[::1]:81") == "ponymail:http://[::1]:81"


@pytest.mark.parametrize("credential", [{"headers": {"Authorization": "Bearer tok-5521"}},
                                        {"cookies": {"ponymail": "cookie-5521"}}])
def test_http_client_sends_no_credential_over_plain_http_to_another_host(credential):
    from mailtriage.core.http import HttpClient, HttpError

    # 192.0.2.1 (TEST-NET-1) is never reached: the client refuses before connecting
    with HttpClient("test", "http://192.0.2.1", timeout=30, **credential) as http:
        with pytest.raises(HttpError, match="plain http") as info:
            http.get("/api/preferences.lua")
    assert "5521" not in str(info.value)


def test_http_client_sends_credentials_over_plain_http_to_loopback(pm_server):
    from mailtriage.core.http import HttpClient

    with HttpClient("test", pm_server.base_url, cookies={"ponymail": "cookie-5522"}) as http:
        http.get("/api/preferences.lua")
    assert "cookie-5522" in pm_server.requests[-1].headers.get("cookie", "")
