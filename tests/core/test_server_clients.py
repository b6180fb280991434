"""Only adapters talk to servers.

The libraries that open a connection to a mail server, an HTTP API or a sign-in service
(imapclient, imaplib, aiosmtplib, smtplib, httpx, msal, google-auth) are imported only by
the mail backends (``backends/``), the trackers (``trackers/``) and the shared HTTP client
(``core/http.py``, with its transport ``core/http_sockets.py``). Everything else reaches a server through them. The scan reads every
installed source file with ``ast`` and counts imports anywhere in a file, inside functions
included, so a lazy import cannot slip past.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.core.parsed import parse

ROOT = Path(__file__).resolve().parents[2]

# Top-level names of the server-client libraries ("google.auth" is google-auth's package;
# "google.oauth2" ships with it too).
SERVER_CLIENTS = ("imapclient", "imaplib", "aiosmtplib", "smtplib", "httpx", "msal", "google.auth", "google.oauth2")

# Where they may be imported: the adapters and the one HTTP client.
ALLOWED = ("backends/", "trackers/", "core/http.py", "core/http_sockets.py")

# Folders of the repository that are not installed source (see setup.py's NOT_INSTALLED).
NOT_SOURCE = {"tests", "benchmarks", "scripts", "docs", "build", "dist"}


def source_files(root: Path = ROOT) -> list[Path]:
    """Every ``.py`` file of the installed packages (top-level folders with an ``__init__.py``)."""
    files: list[Path] = []
    for top in sorted(root.iterdir()):
        if (not top.is_dir() or top.name.startswith(".") or top.name in NOT_SOURCE
                or not (top / "__init__.py").is_file()):
            continue
        files += sorted(p for p in top.rglob("*.py") if "__pycache__" not in p.parts)
    return files


def imports_of(path: Path) -> set[str]:
    """Every absolute module a file imports, wherever the import statement sits."""
    tree = parse(path)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            if not is_server_client(node.module):
                # "from google import auth" imports google.auth
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def is_server_client(module: str) -> bool:
    return any(module == lib or module.startswith(lib + ".") for lib in SERVER_CLIENTS)


def violations(root: Path = ROOT) -> list[str]:
    bad = []
    for path in source_files(root):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(ALLOWED):
            continue
        for module in sorted(m for m in imports_of(path) if is_server_client(m)):
            bad.append(f"{rel} imports {module}")
    return bad


def test_only_adapters_import_server_clients():
    bad = violations()
    assert bad == [], ("only backends/, trackers/ and core/http.py may talk to servers; use the adapters instead:\n"
                       + "\n".join(bad))


def test_the_scan_catches_a_violation_inside_a_function(tmp_path):
    # The scan must see a lazy import in a package outside the adapters, and name the file.
    package = tmp_path / "modes"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "inbox.py").write_text("def read():\n    from imapclient import IMAPClient\n    import smtplib\n")
    (package / "web.py").write_text("from google import auth\n")
    allowed = tmp_path / "backends"
    allowed.mkdir()
    (allowed / "__init__.py").write_text("")
    (allowed / "imap.py").write_text("import imapclient\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "__init__.py").write_text("")
    (tests / "server.py").write_text("import aiosmtplib\n")
    assert violations(tmp_path) == [
        "modes/inbox.py imports imapclient",
        "modes/inbox.py imports smtplib",
        "modes/web.py imports google.auth",
    ]


def test_the_scan_sees_the_whole_installed_tree():
    names = {p.relative_to(ROOT).parts[0] for p in source_files()}
    assert {"application", "backends", "cli", "core", "modes", "trackers", "tui"} <= names
    assert "tests" not in names and "benchmarks" not in names


# -- one path each ------------------------------------------------------------------------------
# Inside the adapters, each kind of server talk has one home: one IMAP connection class, one
# IMAP APPEND, one SMTP client, one composer of outgoing mail.

def calls_named(path: Path, name: str) -> list[ast.Call]:
    """Calls of ``name(...)`` or ``anything.name(...)`` in a file."""
    tree = parse(path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if called == name:
                found.append(node)
    return found


def homes(predicate, root: Path = ROOT) -> set[str]:
    return {p.relative_to(root).as_posix() for p in source_files(root) if predicate(p)}


def test_one_imap_connection_class():
    # imaplib_private.AbortableClient is the IMAPClient whose socket a quit can end while it connects.
    made = homes(lambda p: bool(calls_named(p, "IMAPClient") or calls_named(p, "AbortableClient")))
    assert made == {"backends/imap/connection.py"}


def test_one_imap_append():
    # An IMAP APPEND is the only append() call that passes flags.
    def appends(path: Path) -> bool:
        return any(any(k.arg == "flags" for k in call.keywords) for call in calls_named(path, "append"))

    assert homes(appends) == {"backends/imap/adapter.py"}


def test_one_smtp_client():
    assert homes(lambda p: any(is_server_client(m) and m.split(".")[0] in ("aiosmtplib", "smtplib")
                               for m in imports_of(p))) == {"backends/imap/smtp.py"}


def test_one_composer_of_outgoing_mail():
    # demo/ writes the sample archive the demo reads (incoming mail), not mail we send.
    composers = homes(lambda p: bool(calls_named(p, "EmailMessage")))
    assert {c for c in composers if not c.startswith("demo/")} == {"backends/outgoing.py"}
