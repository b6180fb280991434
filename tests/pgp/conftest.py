"""Real GnuPG for the OpenPGP tests: keys generated here, a throwaway GNUPGHOME per test.

Two homes per test, copied from templates generated once per session (ed25519/cv25519, no
passphrase, %no-protection):

- ``world``: the other people's side, used only to BUILD test mails: the reporter's secret
  key, a stranger's, a signer whose key expired, a signer whose key is revoked (for the
  user), and the team's public key to encrypt to.
- ``user``: the triager's GnuPG, what mailtriage reads with: the team's secret key and the
  public keys of the reporter, the expired signer and the revoked signer (with its
  revocation imported). The stranger's key is not in it.

Mails are built the way a mail client builds them: the MIME entity as bytes, signed or
encrypted by ``gpg``, wrapped into RFC 3156 multipart/signed or multipart/encrypted by hand.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from mailtriage.backends import pgp


@pytest.fixture
def anyio_backend():
    """The app tests (test_app.py) are async Pilot tests: on asyncio through anyio (tests/conftest.py)."""
    return "asyncio"


TEAM = "Security Team <security@example.org>"
REPORTER = "Rita Reporter <rita@example.net>"
STRANGER = "Sam Stranger <sam@example.com>"
EXPIRED = "Old Signer <old@example.net>"
REVOKED = "Gone Signer <gone@example.net>"


def gpg(home: Path, *args: str, data: bytes = b"", check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["gpg", "--homedir", str(home), "--batch", "--yes", "--pinentry-mode", "loopback",
                           "--passphrase", "", *args], input=data, capture_output=True, timeout=60)
    if check and done.returncode != 0:
        raise AssertionError(f"gpg {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done


def _new_home() -> Path:
    # Short paths: the agent's socket lives in the home when /run/user/<uid> is absent.
    home = Path(tempfile.mkdtemp(prefix="mtg", dir="/tmp"))
    home.chmod(0o700)
    return home


def kill_agent(home: Path) -> None:
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], capture_output=True, timeout=30)


def lock_key(home: Path, fpr: str, passphrase: bytes, pinentry: str = "/nonexistent/pinentry") -> None:
    """Protect ``fpr``'s secret key in ``home`` with ``passphrase``; the agent started next asks
    ``pinentry`` for it. The agent hashes a passphrase the fewest times OpenPGP allows
    (``s2k-count``): by default it calibrates the count to ~100 ms of CPU on each start and
    spends that on every protect and unlock, ~1 s of wall a locked-key test (issue 36 §7)."""
    (home / "gpg-agent.conf").write_text(f"pinentry-program {pinentry}\ns2k-count 65536\n")
    kill_agent(home)
    done = subprocess.run(["gpg", "--homedir", str(home), "--batch", "--pinentry-mode", "loopback",
                           "--passphrase-fd", "0", "--change-passphrase", fpr],
                          input=passphrase + b"\n", capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    kill_agent(home)


def fingerprint(home: Path, uid: str) -> str:
    out = gpg(home, "--with-colons", "--list-keys", uid).stdout.decode()
    return next(line.split(":")[9] for line in out.splitlines() if line.startswith("fpr"))


def _make_key(home: Path, uid: str, *extra: str) -> str:
    gpg(home, *extra, "--quick-gen-key", uid, "ed25519", "sign", "0" if not extra else "1y")
    fpr = fingerprint(home, uid)
    gpg(home, *extra, "--quick-add-key", fpr, "cv25519", "encr", "0" if not extra else "1y")
    return fpr


@dataclass
class Keys:
    world: Path
    user: Path
    fprs: dict[str, str]
    revocation: bytes


@pytest.fixture(scope="session")
def key_templates():
    if shutil.which("gpg") is None:
        pytest.fail("gpg is missing: install gnupg (scripts/test does)")
    world, user = _new_home(), _new_home()
    fprs = {
        "team": _make_key(user, TEAM),
        "reporter": _make_key(world, REPORTER),
        "stranger": _make_key(world, STRANGER),
        # Made in 2020 with a one-year expiry: expired today, its old signatures still check.
        "expired": _make_key(world, EXPIRED, "--faked-system-time", "20200101T000000!"),
        "revoked": _make_key(world, REVOKED),
    }
    # The user knows the reporter, the expired and the revoked signer; the world knows the team.
    for name in ("reporter", "expired", "revoked"):
        gpg(user, "--import", data=gpg(world, "--export", fprs[name]).stdout)
    gpg(world, "--import", data=gpg(user, "--export", fprs["team"]).stdout)
    rev = (world / "openpgp-revocs.d" / f"{fprs['revoked']}.rev").read_bytes()
    revocation = rev.replace(b":-----BEGIN PGP PUBLIC KEY BLOCK-----", b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    gpg(user, "--import", data=revocation)
    for home in (world, user):
        kill_agent(home)
    yield Keys(world, user, fprs, revocation)
    for home in (world, user):
        kill_agent(home)
        shutil.rmtree(home, ignore_errors=True)


def _copy_home(template: Path) -> Path:
    home = _new_home()
    for item in template.iterdir():
        if item.name.startswith("S.") or item.is_socket():
            continue
        if item.is_dir():
            shutil.copytree(item, home / item.name)
        else:
            shutil.copy2(item, home / item.name)
    return home


@dataclass
class Homes:
    world: Path
    user: Path
    fprs: dict[str, str]
    revocation: bytes

    def session(self, **settings) -> pgp.GnuPG:
        """mailtriage's GnuPG session on the user's home."""
        return pgp.GnuPG(pgp.PgpSettings(gnupg_home=str(self.user), **settings))

    # -- building mails the way a client does ------------------------------------------
    def encrypt(self, data: bytes, *recipients: str, sign: str | None = None, home: Path | None = None,
                extra: tuple[str, ...] = ()) -> bytes:
        args = ["--armor", "--trust-model", "always", *extra, "--encrypt"]
        for r in recipients:
            args += ["--recipient", self.fprs.get(r, r)]
        if sign:
            args += ["--sign", "--local-user", self.fprs[sign]]
        return gpg(home or self.world, *args, data=data).stdout

    def detach_sign(self, data: bytes, signer: str, extra: tuple[str, ...] = ()) -> bytes:
        return gpg(self.world, *extra, "--armor", "--local-user", self.fprs[signer], "--detach-sign",
                   data=data).stdout

    def detach_sign_clear(self, data: bytes, signer: str) -> bytes:
        """A cleartext signature of ``data`` (bytes in any charset), as gpg writes it."""
        return gpg(self.world, "--local-user", self.fprs[signer], "--clearsign", data=data).stdout

    def clearsign(self, text: str, signer: str) -> str:
        return gpg(self.world, "--local-user", self.fprs[signer], "--clearsign", data=text.encode()).stdout.decode()


@pytest.fixture
def homes(key_templates):
    """A fresh copy of both homes for this test (nothing one test does leaks into another)."""
    world, user = _copy_home(key_templates.world), _copy_home(key_templates.user)
    yield Homes(world, user, key_templates.fprs, key_templates.revocation)
    for home in (world, user):
        kill_agent(home)
        shutil.rmtree(home, ignore_errors=True)


HEADERS = ("From: {sender}\r\nTo: security@example.org\r\nSubject: {subject}\r\n"
           "Message-ID: <{mid}@example.net>\r\nDate: Tue, 01 Dec 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\n")


def headers(sender: str = REPORTER, subject: str = "Report: heap overflow", mid: str = "r1", extra: str = "") -> str:
    return HEADERS.format(sender=sender, subject=subject, mid=mid) + extra


def entity(text: str, content_type: str = "text/plain; charset=utf-8") -> bytes:
    return (f"Content-Type: {content_type}\r\nContent-Transfer-Encoding: 8bit\r\n\r\n{text}").encode()


def pgp_mime_encrypted(armored: bytes, **kw) -> bytes:
    b = "==enc-boundary=="
    return (headers(**kw) + f'Content-Type: multipart/encrypted; protocol="application/pgp-encrypted"; '
            f'boundary="{b}"\r\n\r\nThis is an OpenPGP/MIME encrypted message (RFC 4880 and 3156)\r\n'
            f"--{b}\r\nContent-Type: application/pgp-encrypted\r\nContent-Description: PGP/MIME version "
            f"identification\r\n\r\nVersion: 1\r\n\r\n--{b}\r\nContent-Type: application/octet-stream; "
            f'name="encrypted.asc"\r\nContent-Disposition: inline; filename="encrypted.asc"\r\n\r\n'
            ).encode() + armored + f"\r\n--{b}--\r\n".encode()


def pgp_mime_signed(signed_entity: bytes, signature: bytes, **kw) -> bytes:
    b = "==sig-boundary=="
    return (headers(**kw) + f'Content-Type: multipart/signed; micalg=pgp-sha512; '
            f'protocol="application/pgp-signature"; boundary="{b}"\r\n\r\n'
            f"This is an OpenPGP/MIME signed message (RFC 4880 and 3156)\r\n--{b}\r\n").encode() \
        + signed_entity + (f"\r\n--{b}\r\nContent-Type: application/pgp-signature; name=\"signature.asc\"\r\n"
                           f"Content-Disposition: attachment; filename=\"signature.asc\"\r\n\r\n").encode() \
        + signature + f"\r\n--{b}--\r\n".encode()


def plain(text: str, **kw) -> bytes:
    return headers(**kw).encode() + entity(text)


def mixed(*parts: bytes, **kw) -> bytes:
    b = "==mixed=="
    body = b"".join(f"--{b}\r\n".encode() + p + b"\r\n" for p in parts)
    return (headers(**kw) + f'Content-Type: multipart/mixed; boundary="{b}"\r\n\r\n').encode() + body \
        + f"--{b}--\r\n".encode()


def encrypted_entity_part(armored: bytes) -> bytes:
    """A multipart/encrypted part without message headers (inside a multipart/mixed)."""
    full = pgp_mime_encrypted(armored)
    start = full.index(b"Content-Type: multipart/encrypted")
    return full[start:]
