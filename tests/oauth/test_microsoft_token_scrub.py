"""Microsoft tokens are masked by the secret scrubber (issue 31, item 4): the msal cache is
kept in keyring as 1,000-character pieces (Windows' cap per entry), and a 1,600-character
access token spans two of them, so remembering the pieces alone never matched a token."""

from __future__ import annotations

import json

from mailtriage.backends.microsoft.account import cache_key
from mailtriage.backends.microsoft.source import GraphSource
from mailtriage.core.secrets import MASK, forget_remembered_secrets, scrub
from tests.oauth.fixtures import microsoft_account, sign_in_microsoft


def _tokens(ring, account) -> list[str]:
    """The tokens of the stored cache, read from the keyring backend itself (not through
    core.secrets, which would remember them and so make the test pass by itself)."""
    head = ring.get_password("mailtriage", cache_key(account.id))
    generation, count = head.removeprefix("msal-split:").split(":")
    text = "".join(ring.get_password("mailtriage", f"{cache_key(account.id)}:{generation}:{i}")
                   for i in range(int(count)))
    cache = json.loads(text)
    return [entry["secret"] for kind in ("AccessToken", "RefreshToken") for entry in cache[kind].values()]


def test_tokens_read_back_from_the_split_cache_are_masked(microsoft_emulator, memory_keyring):
    # failed first on main: a new process read the pieces, and scrub() left every token as it was
    account = microsoft_account(microsoft_emulator, access="draft")
    sign_in_microsoft(microsoft_emulator, account)
    tokens = _tokens(memory_keyring, account)
    assert tokens and all(len(t) > 1000 for t in tokens)  # longer than a piece
    forget_remembered_secrets()  # a new process: only what it reads itself is known
    GraphSource("m365", {}, account=account).check_available()  # reads the cache, uses the token
    for token in tokens:
        assert scrub(f"Graph said: Bearer {token} was refused") == f"Graph said: Bearer {MASK} was refused"


def test_a_refreshed_token_is_masked_too(microsoft_emulator, memory_keyring):
    account = microsoft_account(microsoft_emulator, access="draft")
    sign_in_microsoft(microsoft_emulator, account)
    old = set(_tokens(memory_keyring, account))
    microsoft_emulator.expire_access_tokens()
    forget_remembered_secrets()
    GraphSource("m365", {}, account=account).check_available()  # refreshes and saves the cache
    fresh = [t for t in _tokens(memory_keyring, account) if t not in old]
    assert fresh
    for token in fresh:
        assert token not in scrub(json.dumps({"detail": token}))
