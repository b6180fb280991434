"""The product chains the library error it translates (issue 36 §6: "``from None``
has grown to 120 against 30 ``from exc``"; "raise … from exc at boundaries").

Since 16068406 a boundary in backends/ or trackers/ (since 2026-12-04 anywhere in the product) that turns a library's or the OS's error
into ours raises ``from exc``, so a developer's traceback shows the library's own words. The
``from None`` left are the places where the cause's text can hold a secret or repeats the
message (sign-in, passwords, a URL refused as a secret's origin, an upload URL that
authenticates by itself, a retry re-raising the first error): ``ALLOWED`` counts them per
module, and may only shrink. A new one needs its reason in docs/security.md ("Chained
causes") and a line here.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from tests.core.parsed import parse

ROOT = Path(__file__).resolve().parents[2]

ALLOWED = {
    "backends/gmail/auth.py": 3,            # refresh and token endpoint answers
    "backends/imap/account.py": 1,          # password_command parsing
    "backends/imap/connection.py": 5,       # LOGIN/AUTHENTICATE, keyring
    "backends/imap/message_reads.py": 1,    # the first error re-raised when the retry failed too
    "backends/imap/wire.py": 2,             # imaplib's error re-raised with a prefix (stream_fetch)
    "backends/imap/smtp.py": 2,             # SMTP verification and its password
    "backends/microsoft/adapter.py": 1,     # a Graph upload-session URL (it authenticates by itself)
    "backends/microsoft/auth.py": 5,        # the token cache, msal's calls and answers
    "trackers/github.py": 2,                # a URL refused as a secret's origin
    "trackers/jira.py": 2,                  # a URL refused as a secret's origin
    "core/secrets.py": 7,                   # the keyring's and a secret command's errors (their output)
    "core/http.py": 1,                      # a credential refused for a URL's origin
    "modes/config.py": 1,                   # the keyring that holds the modes token
}
#: Every folder of the product: 45 ``from None`` outside backends/ and trackers/ until 2026-12-04,
#: chained since but for the three modules above (a parse, a file, a subprocess, a closed store:
#: the library's or the OS's words help a developer and hold no secret).
PRODUCT = ("application", "backends", "cli", "core", "demo", "modes", "trackers", "tui")


def unchained_raises(root: Path = ROOT, folders: tuple[str, ...] = PRODUCT) -> Counter:
    """``raise … from None`` per module of ``folders``."""
    found: Counter = Counter()
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(parse(path)):
                if isinstance(node, ast.Raise) and isinstance(node.cause, ast.Constant) and node.cause.value is None:
                    found[path.relative_to(root).as_posix()] += 1
    return found


def test_the_product_drops_a_cause_only_where_it_is_allowed():
    found = unchained_raises()
    over = {module: count for module, count in found.items() if count > ALLOWED.get(module, 0)}
    assert over == {}, (f"raise … from None beyond what is allowed: {over}; chain the library's error "
                        "(from exc) unless its text can hold a secret (then say why in ALLOWED)")


def test_the_scan_sees_from_none_and_not_from_exc(tmp_path):
    (tmp_path / "backends").mkdir()
    (tmp_path / "backends" / "x.py").write_text(
        "def f():\n    try:\n        g()\n    except OSError as exc:\n        raise ValueError('a') from None\n"
        "    try:\n        g()\n    except OSError as exc:\n        raise ValueError('b') from exc\n")
    assert unchained_raises(tmp_path, ("backends",)) == Counter({"backends/x.py": 1})
