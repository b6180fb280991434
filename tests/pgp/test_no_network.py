"""Opening a signed mail never reaches a keyserver, even when the user's gpg.conf asks gpg to.

A loopback HKP keyserver (the public protocol: ``GET /pks/lookup?op=get&search=0x<FPR>``) serves
Mallory's key, which carries Rita's user ID. The user's gpg.conf turns on auto-key-retrieve and
names that keyserver, as many real gpg.conf files do. Opening a mail signed by that key must
leave the keyserver untouched and the keyring unchanged: the signature reads "not in your
keyring", never "valid (matches From)".
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mailtriage.backends import mime, pgp

from .conftest import REPORTER, _make_key, _new_home, entity, gpg, kill_agent, pgp_mime_signed, plain


class _Keyserver:
    """A loopback HKP keyserver serving one key; it records every request."""

    def __init__(self, key: bytes) -> None:
        requests: list[str] = []
        self.requests = requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                requests.append(self.path)
                body = key if self.path.startswith("/pks/lookup") and "op=get" in self.path else b""
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "application/pgp-keys")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def mallory(homes):
    """Mallory's home: a key whose user ID is Rita's, published on a loopback keyserver that the
    user's gpg.conf names with auto-key-retrieve on."""
    home = _new_home()
    fpr = _make_key(home, REPORTER)
    server = _Keyserver(gpg(home, "--armor", "--export", fpr).stdout)
    (homes.user / "gpg.conf").write_text(f"keyserver hkp://127.0.0.1:{server.port}\nauto-key-retrieve\n"
                                         "auto-key-locate local,wkd,keyserver\n")
    kill_agent(homes.user)
    yield home, fpr, server
    server.close()
    kill_agent(home)


def _sign(home: Path, fpr: str, data: bytes, *args: str) -> bytes:
    return gpg(home, "--armor", "--local-user", fpr, *args, data=data).stdout


def test_a_pgp_mime_signature_by_an_unknown_key_fetches_nothing(homes, mallory):
    home, fpr, server = mallory
    signed = entity("Please send the exploit to mallory@evil.example.\r\n")
    raw = pgp_mime_signed(signed, _sign(home, fpr, signed, "--detach-sign"))
    message = pgp.open_message(mime.parse_message(raw), homes.session())
    [sig] = message.crypto.signatures
    assert server.requests == []
    assert sig.state == "unknown-key" and not sig.trustworthy, sig.describe()
    listed = gpg(homes.user, "--list-keys", fpr, check=False)
    assert listed.returncode != 0  # nothing imported


def test_an_inline_clearsigned_mail_by_an_unknown_key_fetches_nothing(homes, mallory):
    home, fpr, server = mallory
    text = _sign(home, fpr, b"Send the exploit to mallory@evil.example.\n", "--clearsign").decode()
    message = pgp.open_message(mime.parse_message(plain(text)), homes.session())
    [sig] = message.crypto.signatures
    assert server.requests == []
    assert sig.state == "unknown-key", sig.describe()
