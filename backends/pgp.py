"""OpenPGP with the user's own GnuPG: decrypt, verify, offer keys, encrypt replies (no UI here).

Built on python-gnupg (a kept wrapper around the ``gpg`` binary: the user's keyring, agent and
smartcard work as they do on the command line). Every call goes through stdin/stdout pipes:
nothing decrypted is ever written to a file, a cache or the trace (python-gnupg's own debug
logging, which would echo data, is kept off). A detached signature reaches gpg through an
inherited pipe (``-&FD``), not a temporary file.

Decryption is bounded: gpg's own ``--max-output`` stops a decompression bomb, a byte counter on
the pipe stops anything that slips past it, and a timer kills a gpg that runs too long. Every
failure becomes a plain, specific note on the message's :class:`CryptoStatus` (wrong key,
corrupt armor, expired key, no agent, no gpg at all, a bomb); the rest of the thread still
shows.

:func:`open_thread` is what ``read_thread`` runs (never the listing); :class:`GnuPG` is the
one session object the application keeps per run.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any

from mailtriage.backends import gnupg_private, mime, mime_header_text, mime_pgp
from mailtriage.backends.contract import AttachmentInfo, Message, TextPart, Thread
from mailtriage.backends.pgp_keyring import VALIDITY, KeyringKey, parse_colons, uid_mailbox
from mailtriage.backends.pgp_status import (CryptoStatus, DecryptedAttachment, OfferedKey, PartProtection,
                                            SignatureStatus)
from mailtriage.core.lazy_re import lazy
from mailtriage.core.lean_dataclass import frozen_dataclass

__all__ = ["DEFAULT_MAX_OUTPUT", "DEFAULT_TIMEOUT", "MAX_GPG_CALLS", "NO_NETWORK", "EncryptResult", "GnuPG",
           "PgpSettings", "carries_openpgp",
           "locked_ciphertext", "open_message", "PASSPHRASE_NOTE",
           "open_thread", "skip_thread"]

# python-gnupg logs data chunks and the start of verified data at DEBUG: never let that reach a log.
logging.getLogger("gnupg").setLevel(logging.WARNING)

DEFAULT_TIMEOUT = 20.0
DEFAULT_MAX_OUTPUT = 16 * 1024 * 1024
# One message gets at most this many decryptions and verifications, within one ``timeout`` and one
# ``max_output`` altogether (300 signed parts must not cost 300 gpg runs on every open).
MAX_GPG_CALLS = 50
SYMMETRIC = "encrypted with a passphrase (symmetric), not to a key"
HIDDEN_RECIPIENT = "0000000000000000"
PASSPHRASE_NOTE = "the secret key needs its passphrase and none was given (pinentry: see docs/pgp.md)"
_MAX_SIGNATURE = 60_000  # a detached signature goes through one pipe write
# On every gpg call, whatever the user's gpg.conf says: reading a mail never reaches the network
# (a keyserver, WKD or DANE lookup tells the sender the mail was opened, and a served key carrying
# the sender's user ID would make a forgery read "valid"), and never imports a key by itself.
NO_NETWORK = ("--no-auto-key-retrieve", "--keyserver-options", "no-auto-key-retrieve",
              "--auto-key-locate", "clear,local", "--no-auto-key-import", "--disable-dirmngr")
DECRYPTED_ATTACHMENT_NOTE = "from the encrypted part: decrypted, kept in memory only until saved"
_BEGIN_MESSAGE = "-----BEGIN PGP MESSAGE-----"
_END_MESSAGE = "-----END PGP MESSAGE-----"
_BEGIN_SIGNED = "-----BEGIN PGP SIGNED MESSAGE-----"
_END_SIGNATURE = "-----END PGP SIGNATURE-----"
_INLINE = re.compile(
    r"^-----BEGIN PGP MESSAGE-----\r?\n.*?^-----END PGP MESSAGE-----[ \t]*$"
    r"|^-----BEGIN PGP SIGNED MESSAGE-----\r?\n.*?^-----END PGP SIGNATURE-----[ \t]*$",
    re.MULTILINE | re.DOTALL)
_INLINE_BYTES = lazy(
    rb"^-----BEGIN PGP MESSAGE-----\r?\n.*?^-----END PGP MESSAGE-----[ \t]*\r?$"
    rb"|^-----BEGIN PGP SIGNED MESSAGE-----\r?\n.*?^-----END PGP SIGNATURE-----[ \t]*\r?$",
    re.MULTILINE | re.DOTALL)


@frozen_dataclass
class PgpSettings:
    """The user's GnuPG: home (None: gpg's default), binary, limits, pinentry mode."""

    gnupg_home: str | None = None
    binary: str = "gpg"
    timeout: float = DEFAULT_TIMEOUT
    max_output: int = DEFAULT_MAX_OUTPUT
    # "agent": the agent's own pinentry (the app suspends for a terminal one); "loopback": the
    # app asks and passes the passphrase (the user opted in).
    pinentry: str = "agent"
    # Inside the app: a gpg call made behind the screen must never start a terminal pinentry on it
    # (--pinentry-mode error); a key that needs its passphrase is unlocked on request instead.
    quiet: bool = False


class _Failed(Exception):
    """One gpg call could not run; ``note`` says why in plain words."""

    def __init__(self, note: str) -> None:
        super().__init__(note)
        self.note = note


@dataclass
class _Run:
    """What one gpg call returned: output (in memory only), status lines, stderr text."""

    data: bytes
    status: list[tuple[str, str]]
    stderr: str
    returncode: int | None
    over_limit: bool = False
    timed_out: bool = False


class GnuPG:
    """The user's GnuPG for one run: built on first use (once, whichever thread asks first),
    one gpg call at a time."""

    def __init__(self, settings: PgpSettings | None = None) -> None:
        self.settings = settings or PgpSettings()
        self._gpg: Any = None  # the python-gnupg instance, built on first use
        self._missing: str | None = None
        self._lock = threading.Lock()  # one gpg call at a time
        self._start_lock = threading.Lock()  # one python-gnupg (one gpg --list-config) per session
        self._keys: dict[str, KeyringKey | None] = {}
        self._by_address: dict[str, list[KeyringKey]] = {}

    # -- the process ------------------------------------------------------------------
    def _instance(self) -> Any:
        gpg = self._gpg
        if gpg is not None:
            return gpg
        with self._start_lock:  # threads asking at once wait for the one that starts it
            return self._gpg if self._gpg is not None else self._start()

    def _start(self) -> Any:
        if self._missing is not None:
            raise _Failed(self._missing)
        home = self.settings.gnupg_home
        if home and not os.path.isdir(home):
            self._missing = f"the GnuPG home {home} does not exist (set pgp.gnupg_home in your settings)"
            raise _Failed(self._missing)
        try:
            gpg = gnupg_private.piped_gpg_class()(gpgbinary=self.settings.binary, gnupghome=home,
                                                  timeout=self.settings.timeout, options=list(NO_NETWORK))
        except (OSError, ValueError) as exc:
            self._missing = (f"GnuPG ('{self.settings.binary}') could not be run: install gnupg "
                             f"(Debian: apt install gnupg) or put gpg on PATH ({type(exc).__name__})")
            raise _Failed(self._missing) from exc
        gpg.encoding = "utf-8"
        gpg.buffer_size = 64 * 1024  # python-gnupg reads 1 KiB at a time by default: slow for a report
        self._gpg = gpg  # published once set up: a thread that does not wait sees it whole
        return gpg

    def available(self) -> str | None:
        """None when gpg runs, else why not."""
        try:
            self._instance()
        except _Failed as exc:
            return exc.note
        return None

    def _call(self, args: list[str], data: bytes, *, pass_fds: tuple[int, ...] = (), limit: int | None = None,
              passphrase: str | None = None, env: dict[str, str] | None = None,
              timeout: float | None = None) -> _Run:
        gpg = self._instance()
        received = 0
        over = False

        def on_data(chunk: bytes) -> bool:
            nonlocal received, over
            received += len(chunk)
            if limit is not None and received > limit:
                over = True
                return False  # keep nothing more in memory; gpg is stopped by --max-output
            return True

        time_limit = self.settings.timeout if timeout is None else min(timeout, self.settings.timeout)
        with self._lock:
            try:
                result, timed_out = gnupg_private.run_piped(gpg, args, data, on_data=on_data, pass_fds=pass_fds,
                                                            time_limit=time_limit, env=env, passphrase=passphrase)
            except OSError as exc:
                raise _Failed(f"gpg could not be run ({type(exc).__name__})") from exc
        out = result.data if isinstance(result.data, bytes) else str(result.data).encode()
        status = []
        for line in (result.stderr or "").splitlines():
            if line.startswith("[GNUPG:] "):
                key, _, value = line[9:].partition(" ")
                status.append((key, value.strip()))
        text = "\n".join(line for line in (result.stderr or "").splitlines() if not line.startswith("[GNUPG:]"))
        return _Run(out if not over else b"", status, text, result.returncode, over, timed_out)

    # -- operations -------------------------------------------------------------------
    def _quiet(self) -> list[str]:
        return ["--pinentry-mode", "error"] if self.settings.quiet else []

    def decrypt(self, data: bytes, *, timeout: float | None = None, limit: int | None = None) -> _Run:
        limit = self.settings.max_output if limit is None else max(1, min(limit, self.settings.max_output))
        return self._call([*self._quiet(), "--decrypt", "--max-output", str(limit)], data, limit=limit,
                          timeout=timeout)

    def unlock(self, data: bytes, *, passphrase: str | None = None, tty: str | None = None) -> str | None:
        """Have the agent ask for (``tty``: on that terminal, the app suspended) or take
        (``passphrase``: loopback, the user opted in) the passphrase of the key ``data`` is
        encrypted to, so the next batch decryption finds it cached. The output is dropped.
        None when the key is now unlocked, else why not."""
        env = dict(os.environ, GPG_TTY=tty) if tty else None
        try:
            run = self._call(["--decrypt", "--max-output", "1"], data, limit=0, passphrase=passphrase, env=env)
        except _Failed as exc:
            return exc.note
        keys = {key for key, _ in run.status}
        if "DECRYPTION_OKAY" in keys or "max-output" in run.stderr.lower():
            return None
        return _problem_note(run) or "the key could not be unlocked"

    def verify_detached(self, signed: bytes, signature: bytes, *, timeout: float | None = None) -> _Run:
        if len(signature) > _MAX_SIGNATURE:
            raise _Failed(f"the signature part is {len(signature):,} bytes, too large to be a signature")
        read_end, write_end = os.pipe()
        try:
            os.write(write_end, signature)
            os.close(write_end)
            write_end = -1
            return self._call(["--enable-special-filenames", "--verify", "--", f"-&{read_end}", "-"], signed,
                              pass_fds=(read_end,), timeout=timeout)
        finally:
            os.close(read_end)
            if write_end >= 0:
                os.close(write_end)

    def _list(self, patterns: list[str]) -> list[KeyringKey]:
        """The public keys matching ``patterns``, as gpg's colon listing gives them."""
        run = self._call(["--list-keys", "--", *patterns], b"")
        return parse_colons(run.data.decode("utf-8", "replace"))

    def key(self, key_id: str) -> KeyringKey | None:
        """The key in the keyring that ``key_id`` (key ID or fingerprint, of a subkey too) names."""
        if key_id not in self._keys:
            self.prefetch([key_id])
        return self._keys.get(key_id)

    def key_info(self, key_id: str) -> tuple[str, tuple[str, ...]]:
        """(primary fingerprint, usable user IDs) of a key in the keyring, ("", ()) when absent."""
        key = self.key(key_id)
        return (key.fingerprint, key.uids) if key else ("", ())

    def prefetch(self, key_ids: list[str]) -> None:
        """Look up every key ID or fingerprint not known yet with one gpg call (each spawn costs)."""
        wanted = [k for k in dict.fromkeys(key_ids) if k and k not in self._keys]
        if not wanted:
            return
        keys = self._list(wanted)
        for key_id in wanted:
            self._keys[key_id] = next((k for k in keys if k.named_by(key_id)), None)

    def keys_for(self, address: str) -> list[KeyringKey]:
        """The usable keys with a valid user ID whose mailbox (as gpg reads it) is ``address``."""
        address = address.strip().lower()
        if not address:
            return []
        if address not in self._by_address:
            self._by_address[address] = [k for k in self._list([f"<{address}>"])
                                         if k.usable and address in k.mailboxes()]
        return self._by_address[address]

    def encryption_keys(self, address: str) -> list[str]:
        """The fingerprints of the usable (not expired, not revoked) encryption keys for ``address``."""
        return [k.fingerprint for k in self.keys_for(address) if "E" in k.capabilities]

    def has_key(self, fingerprint: str) -> bool:
        return bool(fingerprint) and bool(self.key_info(fingerprint)[0])

    def scan_keys(self, data: bytes) -> list[tuple[str, tuple[str, ...]]]:
        """(fingerprint, user IDs) of each public key in ``data``, nothing imported."""
        gpg = self._instance()
        with self._lock:
            try:
                found = gpg.scan_keys_mem(data)
            finally:
                gpg.stop_timers()
        return [(str(k.get("fingerprint") or ""), tuple(str(u) for u in k.get("uids") or ())) for k in found
                if k.get("type") == "pub"]

    def import_keys(self, data: bytes) -> tuple[str, ...]:
        """Import the public keys in ``data`` (only after the user confirmed); their fingerprints."""
        gpg = self._instance()
        with self._lock:
            try:
                result = gpg.import_keys(data)
            finally:
                gpg.stop_timers()
        self._keys.clear()
        self._by_address.clear()
        return tuple(str(f) for f in result.fingerprints)

    def encrypt(self, data: bytes, recipients: list[str], *, sign: str | None = None) -> EncryptResult:
        """Armored OpenPGP message of ``data`` to ``recipients`` (fingerprints)."""
        args = [*self._quiet(), "--encrypt", "--armor", "--trust-model", "always"]
        for fpr in recipients:
            args += ["--recipient", fpr]
        if sign:
            args += ["--sign", "--local-user", sign]
        run = self._call(args, data)
        if run.returncode != 0 or not run.data:
            return EncryptResult(b"", _problem_note(run) or "gpg could not encrypt")
        return EncryptResult(run.data, None)


@frozen_dataclass
class EncryptResult:
    armored: bytes
    problem: str | None


# -- status lines ------------------------------------------------------------------------

_SIG_STATES = {"GOODSIG": "valid", "BADSIG": "bad", "EXPSIG": "expired-signature", "EXPKEYSIG": "expired-key",
               "REVKEYSIG": "revoked-key", "ERRSIG": "error"}


def _status_key_ids(run: _Run) -> list[str]:
    """The key IDs and fingerprints a gpg run names (recipients, signers), to look up at once."""
    ids = []
    for key, value in run.status:
        parts = value.split()
        if key == "ENC_TO" and parts:
            ids.append(parts[0])
        elif key == "VALIDSIG" and parts:
            ids.append(parts[9] if len(parts) > 9 else parts[0])
        elif key in ("GOODSIG", "BADSIG", "EXPSIG", "EXPKEYSIG", "REVKEYSIG") and parts:
            ids.append(parts[0])
    return ids


def _signatures(run: _Run, gpg: GnuPG, sender: str) -> list[SignatureStatus]:
    """One SignatureStatus per signature the status lines report."""
    gpg.prefetch(_status_key_ids(run))
    sigs: list[dict[str, str]] = []
    for key, value in run.status:
        if key == "NEWSIG":
            sigs.append({})
        elif key in _SIG_STATES:
            if not sigs or "state" in sigs[-1]:
                sigs.append({})
            parts = value.split()
            sigs[-1]["state"] = _SIG_STATES[key]
            sigs[-1]["key_id"] = parts[0] if parts else ""
            if key == "ERRSIG":
                sigs[-1]["rc"] = parts[5] if len(parts) > 5 else ""
                sigs[-1]["fingerprint"] = parts[6] if len(parts) > 6 and parts[6] != "-" else ""
        elif key == "VALIDSIG" and sigs:
            parts = value.split()
            sigs[-1]["fingerprint"] = parts[9] if len(parts) > 9 else (parts[0] if parts else "")
        elif key == "NO_PUBKEY" and sigs:
            sigs[-1]["state"] = "unknown-key"
        elif key in _TRUST and sigs:
            sigs[-1]["validity"] = _TRUST[key]
    out = []
    for sig in sigs:
        state = sig.get("state", "error")
        if state == "error" and sig.get("rc") == "9":
            state = "unknown-key"
        if state == "unknown-key" and "state" not in sig:
            state = "unknown-key"
        fpr = sig.get("fingerprint", "")
        uids: tuple[str, ...] = ()
        matches: bool | None = None
        validity = sig.get("validity", "")
        others: tuple[str, ...] = ()
        if state != "unknown-key":
            key = gpg.key(fpr or sig.get("key_id", ""))
            if key is not None:
                fpr, uids = key.fingerprint, key.uids
                validity = validity or VALIDITY.get(key.validity, "")
            matches = _uid_matches(uids, sender) if uids else None
            # A second key claiming the sender's address: which one is really theirs is not ours to guess.
            others = tuple(k.fingerprint for k in gpg.keys_for(sender) if k.fingerprint != fpr) if sender else ()
        note = ""
        if state == "error":
            note = _problem_note(run) or "gpg could not check it"
        out.append(SignatureStatus(state, fpr, sig.get("key_id", ""), uids, matches, note, validity=validity,
                                   other_keys=others, address=sender.strip().lower()))
    return out


_TRUST = {"TRUST_UNDEFINED": "unknown", "TRUST_NEVER": "never", "TRUST_MARGINAL": "marginal",
          "TRUST_FULLY": "full", "TRUST_ULTIMATE": "ultimate"}


def _uid_matches(uids: tuple[str, ...], sender: str) -> bool:
    """Whether a (usable) user ID names ``sender``, reading each UID's mailbox as gpg does."""
    address = sender.strip().lower()
    return bool(address) and any(uid_mailbox(uid) == address for uid in uids)


def _problem_note(run: _Run, limit: int | None = None) -> str | None:
    """Why a gpg call failed, in plain words; None when nothing failed."""
    keys = {key for key, _ in run.status}
    err = run.stderr
    low = err.lower()
    if run.timed_out:
        return "gpg did not finish within the time limit and was stopped"
    if run.over_limit or "max-output" in low:
        size = f" of {limit:,} bytes" if limit else ""
        return (f"the decrypted text is larger than the limit{size} (a compressed bomb?); "
                "decryption was stopped and nothing is shown")
    if "no gpg-agent running" in low or "can't connect to the agent" in low or "failed to start agent" in low \
            or "no agent running" in low:
        return "the GnuPG agent could not be reached (is gpg-agent installed and may it start?)"
    if "NEED_PASSPHRASE_SYM" in keys and "DECRYPTION_OKAY" not in keys and "ENC_TO" not in keys:
        return (f"{SYMMETRIC}: decrypt it by hand (gpg --decrypt); mailtriage does not ask for the passphrase "
                "of a message")
    if "NO_SECKEY" in keys and "DECRYPTION_OKAY" not in keys:
        ids = ", ".join(value.split()[0] for key, value in run.status if key == "NO_SECKEY")
        return f"wrong key: encrypted to {ids}, and no secret key for any of them is in your keyring"
    if {"MISSING_PASSPHRASE", "BAD_PASSPHRASE"} & keys or any(
            word in low for word in ("no pinentry", "operation cancelled", "inappropriate ioctl", "no passphrase given",
                                     "bad passphrase")):
        return PASSPHRASE_NOTE
    if "crc error" in low or "invalid armor" in low or "armor header" in low or "invalid radix64" in low:
        return "corrupt armor: the OpenPGP block is damaged (CRC or base64 error)"
    if "NODATA" in keys or "no valid openpgp data" in low:
        return "corrupt armor: no valid OpenPGP data found"
    if "KEYEXPIRED" in keys or "key expired" in low:
        return "the key has expired"
    if "KEYREVOKED" in keys or "key revoked" in low:
        return "the key has been revoked"
    if "DECRYPTION_FAILED" in keys or (run.returncode not in (0, None) and "DECRYPTION_OKAY" not in keys
                                        and "VALIDSIG" not in keys and "BADSIG" not in keys):
        last = next((line.removeprefix("gpg: ") for line in reversed(err.splitlines()) if line.strip()), "")
        return f"gpg failed: {last}" if last else "gpg failed"
    return None


def _symmetric(run: _Run) -> bool:
    keys = {key for key, _ in run.status}
    return "NEED_PASSPHRASE_SYM" in keys and "ENC_TO" not in keys


def _encrypted_to(run: _Run, gpg: GnuPG) -> tuple[str, ...]:
    gpg.prefetch(_status_key_ids(run))
    out = []
    for key, value in run.status:
        if key == "ENC_TO":
            key_id = value.split()[0]
            if key_id == HIDDEN_RECIPIENT:
                out.append(f"a hidden recipient (key ID {key_id}: gpg tried your secret keys)")
                continue
            _, uids = gpg.key_info(key_id)
            out.append(f"{key_id} ({uids[0]})" if uids else key_id)
    return tuple(dict.fromkeys(out))


# -- messages --------------------------------------------------------------------------

class _Budget:
    """One message's gpg budget: MAX_GPG_CALLS calls within one ``timeout`` (from the first call) and
    one ``max_output`` of decrypted bytes, shared by the decrypted parts nested in it."""

    def __init__(self, settings: PgpSettings) -> None:
        self.settings = settings
        self.calls = MAX_GPG_CALLS
        self.deadline: float | None = None
        self.bytes = settings.max_output
        self.skipped = 0

    def take(self) -> float | None:
        """The seconds the next gpg call may take, or None (and one more piece skipped) when spent."""
        now = time.monotonic()
        if self.deadline is None:
            self.deadline = now + self.settings.timeout
        left = self.deadline - now
        if self.calls <= 0 or left <= 0 or self.bytes <= 0:
            self.skipped += 1
            return None
        self.calls -= 1
        return left

    def note(self) -> str:
        return (f"the gpg budget of this message is spent ({MAX_GPG_CALLS} gpg runs, {self.settings.timeout:g} s, "
                f"{self.settings.max_output:,} bytes decrypted): {self.skipped} more OpenPGP pieces were not "
                "opened or checked")


def _cover(signatures: list[SignatureStatus]) -> str:
    """What the signatures over a part make of it: "" (none), "signed", or "bad" (none checks out)."""
    if not signatures:
        return ""
    return "bad" if all(s.state in ("bad", "error") for s in signatures) else "signed"


@dataclass
class _Opened:
    """What opening one message built: parts, attachments and the status pieces."""

    parts: list[tuple[TextPart, bool, str]]  # (part, encrypted, _cover of its signatures)
    attachments: list[AttachmentInfo]
    encrypted: bool = False
    decrypted: bool = False
    encrypted_to: tuple[str, ...] = ()
    signatures: list[SignatureStatus] | None = None
    notes: list[str] | None = None
    needs_passphrase: bool = False
    subject: str | None = None  # the protected Subject inside the whole-message encryption, when there is one
    budget: _Budget | None = None
    symmetric: bool = False  # a piece was encrypted with a passphrase, to no key
    # index in ``attachments`` -> the decrypted bytes of an attachment from inside the encryption
    attachment_data: dict[int, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.signatures = self.signatures or []
        self.notes = self.notes or []


def open_message(message: Message, gpg: GnuPG, *, depth: int = 0, budget: _Budget | None = None) -> Message:
    """``message`` with its encrypted parts opened and its signatures checked (never raises)."""
    if not _has_pgp(message):
        offered = _offered_keys(message, gpg)
        if offered:
            return replace(message, crypto=CryptoStatus(offered_keys=tuple(offered)))
        return message
    sender = message.sender.email or ""
    opened = _Opened([(p, False, "") for p in message.text_parts], list(message.attachments),
                     budget=budget or _Budget(gpg.settings))
    # PGP/MIME pieces, last first so the indexes of the earlier ones stay right.
    for material in sorted(message.pgp, key=lambda m: m.first, reverse=True):
        try:
            if material.kind == "encrypted":
                _open_encrypted(material, opened, gpg, sender, depth)
            elif material.kind == "attached-encrypted":
                opened.notes.append(f"part {material.first + 1}: {mime_pgp.ATTACHED_ENCRYPTED_NOTE}; it may be "
                                    "someone else's old ciphertext, wrapped to be decrypted and quoted back")
            elif material.kind == "signed":
                _verify_signed(material, opened, gpg, sender)
        except _Failed as exc:
            opened.notes.append(exc.note)
            if material.kind == "encrypted":
                # gpg or its home is missing: the part is encrypted and stays so (never "NOT encrypted").
                opened.encrypted = True
                part, _, _ = opened.parts[material.first]
                opened.parts[material.first] = (part, True, "")
    inline = {id(message.text_parts[m.first]): m for m in message.pgp
              if m.kind == "inline" and 0 <= m.first < len(message.text_parts)}
    # An inline encrypted block is opened only when it is the whole body: the one text/plain part, or
    # the one HTML part whose armor mime extracted (webmail); never an HTML part html2text rendered.
    only = message.text_parts[0] if len(message.text_parts) == 1 else None
    whole = only if only is not None and (
        (only.content_type == "text/plain" and not only.from_html)
        or (only.content_type == "text/html" and id(only) in inline)) else None
    _open_inline(opened, gpg, sender, inline, whole)
    status = CryptoStatus(
        encrypted=opened.encrypted, decrypted=opened.decrypted, encrypted_to=opened.encrypted_to,
        signatures=tuple(opened.signatures),
        parts=tuple(PartProtection(i, enc, cover == "signed", bad_signature=cover == "bad")
                    for i, (_, enc, cover) in enumerate(opened.parts)),
        notes=tuple(dict.fromkeys(opened.notes + ([opened.budget.note()] if depth == 0 and opened.budget.skipped
                                                  else []))),
        offered_keys=tuple(_offered_keys(message, gpg)),
        needs_passphrase=PASSPHRASE_NOTE in opened.notes, symmetric=opened.symmetric,
        hidden_subject=opened.subject if opened.subject and opened.subject != message.subject else None,
        decrypted_attachments=tuple(DecryptedAttachment(i, data) for i, data in opened.attachment_data.items()))
    return replace(message, text_parts=tuple(p for p, _, _ in opened.parts), attachments=tuple(opened.attachments),
                   crypto=status)


def _verify_signed(material, opened: _Opened, gpg: GnuPG, sender: str) -> None:
    """A multipart/signed: check it; a forwarded message's signature is said for that message only."""
    timeout = opened.budget.take()
    if timeout is None:
        return
    run = gpg.verify_detached(material.data, material.signature, timeout=timeout)
    if material.forwarded:
        # It speaks for the forwarded message, whose From is not this mail's: never this mail's verdict.
        for sig in _signatures(run, gpg, ""):
            opened.notes.append(f"part {material.first + 1} is in a forwarded message; its signature speaks for "
                                f"that message, not for this mail: {sig.describe()}")
        return
    sigs = _signatures(run, gpg, sender)
    if not sigs:
        opened.notes.append("signed part: " + (_problem_note(run) or "no signature found"))
    opened.signatures.extend(sigs)
    for i in range(material.first, min(material.end, len(opened.parts))):
        part, enc, _ = opened.parts[i]
        opened.parts[i] = (part, enc, _cover(sigs))


def _offers_key(message: Message) -> bool:
    return any(name.lower() == "autocrypt" for name, _ in message.headers)


def _has_pgp(message: Message) -> bool:
    return bool(message.pgp) or any(_BEGIN_MESSAGE in p.text or _BEGIN_SIGNED in p.text for p in message.text_parts)


def _open_encrypted(material, opened: _Opened, gpg: GnuPG, sender: str, depth: int) -> None:
    opened.encrypted = True
    timeout = opened.budget.take()
    if timeout is None:
        part, _, _ = opened.parts[material.first]
        opened.parts[material.first] = (part, True, "")
        return
    run = gpg.decrypt(material.data, timeout=timeout, limit=opened.budget.bytes)
    opened.budget.bytes -= len(run.data)
    opened.symmetric = opened.symmetric or _symmetric(run)
    opened.encrypted_to = tuple(dict.fromkeys(opened.encrypted_to + _encrypted_to(run, gpg)))
    problem = _problem_note(run, gpg.settings.max_output)
    if problem or "DECRYPTION_OKAY" not in {k for k, _ in run.status}:
        opened.notes.append(problem or "decryption failed")
        part, _, _ = opened.parts[material.first]
        opened.parts[material.first] = (TextPart(part.content_type, "[encrypted part: could not be decrypted]\n",
                                                 note=problem or "decryption failed"), True, "")
        return
    opened.decrypted = True
    signatures = _signatures(run, gpg, sender)
    opened.signatures.extend(signatures)
    inner = mime.parse_message(run.data)
    # Protected headers: a client that hides the subject ("...") carries the real one inside.
    if inner.header("Subject") and inner.subject:
        opened.subject = inner.subject
    if inner.pgp and depth < 3:
        inner = open_message(replace(inner, sender=replace(inner.sender, email=sender)), gpg, depth=depth + 1,
                             budget=opened.budget)
    inner_cover = {p.index: "signed" if p.signed else "bad" for p in (inner.crypto.parts if inner.crypto else ())
                   if p.signed or p.bad_signature}
    if inner.crypto:
        opened.signatures.extend(inner.crypto.signatures)
        opened.notes.extend(inner.crypto.notes)
    new_parts = [(p, True, _cover(signatures) or inner_cover.get(i, "")) for i, p in enumerate(inner.text_parts)]
    if not new_parts:
        new_parts = [(TextPart("text/plain", "", note="the encrypted part holds no text"), True, _cover(signatures))]
    opened.parts[material.first:material.end] = new_parts
    # Their bytes are kept here, in memory: the backend has only the ciphertext to fetch from.
    clear_bytes = mime.all_attachment_bytes(run.data) if inner.attachments else []
    for index, attachment in enumerate(inner.attachments):
        data = inner.crypto.attachment_data(index) if inner.crypto else None
        if data is None:
            data = clear_bytes[index] if index < len(clear_bytes) else b""
        note = "; ".join(filter(None, (DECRYPTED_ATTACHMENT_NOTE, attachment.note)))
        opened.attachment_data[len(opened.attachments)] = data
        opened.attachments.append(replace(attachment, note=note))
    opened.notes.extend(n for n in inner.notes if "MIME-Version" not in n)


def _original_block(material, block: str) -> tuple[bytes, str | None, Any]:
    """The armor block as the part's own bytes (its charset, its transfer decoding), that charset,
    and the material of the text after it (for a second block); the block re-encoded as UTF-8 only
    when the part's bytes are not known."""
    if material is not None:
        found = _INLINE_BYTES.search(material.data)
        if found is not None:
            return found.group(0), material.label or None, replace(material, data=material.data[found.end():])
    return block.encode("utf-8"), None, None


_ENCRYPTED_PACKETS = frozenset((1, 3, 9, 18, 20))  # session keys, or symmetrically encrypted data


def _armor_is_encrypted(block: str) -> bool:
    """Whether a PGP MESSAGE block is encrypted (its first packet is a session key or encrypted
    data), not an opaque-signed text; unreadable armor counts as encrypted (the safe side)."""
    lines = block.replace("\r", "").split("\n")[1:]
    try:
        body = lines[lines.index("") + 1:]
    except ValueError:
        return True
    chunk = "".join(line.strip() for line in body[:2] if not line.startswith(("=", "-----")))
    try:
        first = base64.b64decode(chunk[: len(chunk) // 4 * 4])[:1]
    except (ValueError, base64.binascii.Error):
        return True
    if not first or not first[0] & 0x80:
        return True
    tag = first[0] & 0x3F if first[0] & 0x40 else (first[0] >> 2) & 0x0F
    return tag in _ENCRYPTED_PACKETS


_INLINE_NOT_WHOLE = ("an inline encrypted block inside a clear text was not decrypted: only an encryption of the "
                     "whole message is opened (it may be someone else's old ciphertext, wrapped to be decrypted "
                     "and quoted back)")


def _open_inline(opened: _Opened, gpg: GnuPG, sender: str, inline: dict, whole: TextPart | None) -> None:
    """Inline armor inside a text part: split the part into clear / protected / clear pieces.

    gpg reads the block in the part's original bytes (``inline``: the material of each original
    text part), and its output is decoded in the part's charset."""
    index = 0
    while index < len(opened.parts):
        part, enc, signed = opened.parts[index]
        match = _INLINE.search(part.text) if not enc else None
        if match is None:
            index += 1
            continue
        block = match.group(0)
        before, after = part.text[: match.start()], part.text[match.end():]
        is_encrypted = block.startswith(_BEGIN_MESSAGE) and _armor_is_encrypted(block)
        if is_encrypted and (part is not whole or before.strip() or after.strip()):
            opened.notes.append(_INLINE_NOT_WHOLE)
            index += 1
            continue
        material = inline.pop(id(part), None)  # used once: a later part may reuse the id
        data, charset, rest = _original_block(material, block)
        timeout = opened.budget.take()
        failed = None
        if timeout is not None:
            try:
                run = gpg.decrypt(data, timeout=timeout, limit=opened.budget.bytes)
            except _Failed as exc:
                failed = exc.note
        if timeout is None or failed is not None:
            if failed is not None:
                opened.notes.append(failed)
            if is_encrypted:
                # Left closed (no gpg, no home, the budget spent): encrypted still, never "NOT encrypted".
                opened.encrypted = True
                opened.parts[index] = (part, True, signed)
            index += 1
            continue
        opened.budget.bytes -= len(run.data)
        problem = _problem_note(run, gpg.settings.max_output)
        if material is not None and material.forwarded:
            # A forwarded message's clearsigned text: its signature is that message's, not this mail's.
            for sig in _signatures(run, gpg, ""):
                opened.notes.append(f"part {index + 1} is in a forwarded message; its signature speaks for that "
                                    f"message, not for this mail: {sig.describe()}")
            index += 1
            continue
        sigs = _signatures(run, gpg, sender)
        opened.signatures.extend(sigs)
        pieces: list[tuple[TextPart, bool, str]] = []
        if before.strip():
            pieces.append((TextPart(part.content_type, before, note=part.note, from_html=part.from_html), enc, signed))
        if is_encrypted:
            opened.encrypted = True
            opened.symmetric = opened.symmetric or _symmetric(run)
            opened.encrypted_to = tuple(dict.fromkeys(opened.encrypted_to + _encrypted_to(run, gpg)))
            if problem or "DECRYPTION_OKAY" not in {k for k, _ in run.status}:
                opened.notes.append(problem or "decryption failed")
                pieces.append((TextPart(part.content_type, block, note=problem or "decryption failed"), True, ""))
            else:
                opened.decrypted = True
                text, charset_note = mime_header_text.decode_bytes(run.data, charset)
                pieces.append((TextPart("text/plain", text.replace("\r\n", "\n"), note=charset_note), True,
                               _cover(sigs)))
        else:
            if not sigs:
                opened.notes.append("inline signature: " + (problem or "no signature found"))
            text, _ = mime_header_text.decode_bytes(run.data, charset) if run.data else (block, None)
            pieces.append((TextPart(part.content_type, text.replace("\r\n", "\n")), enc, _cover(sigs)))
        if after.strip():
            tail = TextPart(part.content_type, after, from_html=part.from_html)
            pieces.append((tail, enc, signed))
            if rest is not None:
                inline[id(tail)] = rest
        opened.parts[index:index + 1] = pieces
        # The text after the block is read again: a second armor block in one part is opened too.
        index += len(pieces) - (1 if after.strip() else 0)


_AUTOCRYPT_KEYDATA = lazy(r"keydata=([A-Za-z0-9+/=\s]+)", re.IGNORECASE)


def _offered_keys(message: Message, gpg: GnuPG) -> list[OfferedKey]:
    """Keys the message offers: an Autocrypt header, application/pgp-keys attachments (found by mime)."""
    blobs: list[tuple[str, bytes]] = []
    for name, value in message.headers:
        if name.lower() == "autocrypt":
            match = _AUTOCRYPT_KEYDATA.search(value)
            if match:
                try:
                    blobs.append(("Autocrypt header", base64.b64decode(re.sub(r"\s+", "", match.group(1)))))
                except (ValueError, base64.binascii.Error):
                    continue
    blobs.extend((f"attachment {m.label}", m.data) for m in message.pgp if m.kind == "key")
    if not blobs:
        return []
    out = []
    try:
        for source, data in blobs:
            for fpr, uids in gpg.scan_keys(data):
                out.append(OfferedKey(source, fpr, uids, data, gpg.has_key(fpr)))
    except _Failed:
        return []
    return out


def locked_ciphertext(thread: Thread) -> bytes | None:
    """The first encrypted piece whose key needs a passphrase (to unlock with), or None."""
    for message in thread.messages:
        if message.crypto is not None and message.crypto.needs_passphrase:
            for material in message.pgp:
                if material.kind == "encrypted":
                    return material.data
            for part in message.text_parts:
                match = _INLINE.search(part.text)
                if match and match.group(0).startswith(_BEGIN_MESSAGE):
                    return match.group(0).encode("utf-8")
    return None


def carries_openpgp(thread: Thread) -> bool:
    """Whether any message holds OpenPGP pieces or offers a key (cheap: no gpg runs)."""
    return any(_has_pgp(m) or _offers_key(m) for m in thread.messages)


def open_thread(thread: Thread, gpg: GnuPG) -> Thread:
    """The thread with every message's OpenPGP opened (what ``read_thread`` returns)."""
    if not carries_openpgp(thread):
        return thread
    # The thread keeps its outer subject: a hidden one is on the message's status only.
    return replace(thread, messages=tuple(open_message(m, gpg) for m in thread.messages))


def skip_thread(thread: Thread) -> Thread:
    """``--no-decrypt``: say which messages are encrypted or signed, open and check nothing."""
    messages = []
    for message in thread.messages:
        # An inline PGP MESSAGE block may be only signed (opaque-signed): a signature, not encryption.
        blocks = [m.group(0) for p in message.text_parts for m in _INLINE.finditer(p.text)]
        # A marker without a whole block (cut, damaged) counts as what it announces: the safe side.
        cut = " ".join(p.text for p in message.text_parts if not _INLINE.search(p.text))
        encrypted = any(m.kind == "encrypted" for m in message.pgp) or _BEGIN_MESSAGE in cut or any(
            b.startswith(_BEGIN_MESSAGE) and _armor_is_encrypted(b) for b in blocks)
        # A signature left unchecked is said too: silence would read as "not signed".
        signed = any(m.kind == "signed" for m in message.pgp) or _BEGIN_SIGNED in cut or any(
            b.startswith(_BEGIN_SIGNED) or not _armor_is_encrypted(b) for b in blocks)
        if encrypted or signed:
            notes = ("a signature was NOT checked (decryption and checking were switched off)",) if signed else ()
            message = replace(message, crypto=CryptoStatus(encrypted=encrypted, skipped=True, notes=notes))
        messages.append(message)
    return replace(thread, messages=tuple(messages))
