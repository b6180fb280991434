"""What OpenPGP protected in a message, as plain data (no GnuPG here, no UI).

:mod:`mailtriage.backends.mime` records the OpenPGP pieces it meets while walking a message
(:class:`PgpMaterial`: a PGP/MIME encrypted or signed part, or an inline armor block);
:mod:`mailtriage.backends.pgp` decrypts and verifies them with the user's GnuPG and fills a
:class:`CryptoStatus` on the ``Message``. The status says, in words a reader cannot mistake,
what was encrypted and to which key, which parts were *not*, and who signed what — a valid
signature by a key whose user IDs do not name the From address is said to be so, never shown
as a plain "valid".

Every string here may come from the mail or from a key's user ID: untrusted, rendered only
through :mod:`mailtriage.core.inert` like any other mail text.
"""

from __future__ import annotations

from dataclasses import field

from mailtriage.core.lean_dataclass import frozen_dataclass

__all__ = ["CryptoStatus", "DecryptedAttachment", "OfferedKey", "PartProtection", "PgpMaterial", "SignatureStatus"]


@frozen_dataclass
class PgpMaterial:
    """One OpenPGP piece found in a message, before any GnuPG ran.

    ``kind``: ``"encrypted"`` (RFC 3156 multipart/encrypted that is the whole message; ``data``
    is the armored OpenPGP message), ``"attached-encrypted"`` (a multipart/encrypted inside a
    clear mail: listed as an attachment, never decrypted), ``"key"`` (an application/pgp-keys attachment), ``"signed"``
    (multipart/signed; ``data`` is the signed entity as the raw mail carries it, in CRLF form,
    ``signature`` the detached signature) or ``"inline"`` (a text part holding armor: ``data`` is
    its transfer-decoded bytes, ``label`` its declared charset). ``first``..``end`` are the
    indexes in ``Message.text_parts`` this piece covers (a placeholder part for an encrypted
    piece).
    """

    kind: str
    first: int
    end: int
    data: bytes = field(repr=False)
    signature: bytes = field(default=b"", repr=False)
    label: str = ""  # ``"key"``: the attachment's file name; ``"inline"``: the part's charset
    forwarded: bool = False  # inside a forwarded message (message/rfc822): its signature is not this mail's


@frozen_dataclass
class SignatureStatus:
    """One signature and what GnuPG said of it.

    ``state``: ``valid``, ``bad``, ``unknown-key``, ``expired-key``, ``revoked-key``,
    ``expired-signature`` or ``error``. ``matches_from`` is True when one of the key's user
    IDs names the message's From address, False when none does, None when unknown (no key).
    """

    state: str
    fingerprint: str = ""
    key_id: str = ""
    uids: tuple[str, ...] = ()
    matches_from: bool | None = None
    note: str = ""
    validity: str = ""  # the key's validity as gpg computes it (unknown, marginal, full, ultimate, ...)
    other_keys: tuple[str, ...] = ()  # other usable keys in the keyring whose user IDs claim the From address
    address: str = ""  # the From address the user IDs were matched against

    @property
    def trustworthy(self) -> bool:
        """Valid and by a key naming the sender: the only case worth a calm word."""
        return self.state == "valid" and self.matches_from is True

    def describe(self) -> str:
        text = self._verdict()
        if self.validity:
            text += f"; key validity: {self.validity}"
        if self.other_keys:
            text += f"; another key in your keyring also claims {self.address}: {', '.join(self.other_keys)}"
        return text

    def _verdict(self) -> str:
        who = self.fingerprint or self.key_id or "an unknown key"
        uid = f" \"{self.uids[0]}\"" if self.uids else ""
        if self.state == "valid":
            if self.matches_from:
                return f"signature valid by {who}{uid} (matches From)"
            if self.matches_from is False:
                return f"signature valid but by a key whose user IDs do not match From: {who}{uid}"
            return f"signature valid by {who}{uid} (From not checked)"
        text = {
            "bad": f"BAD signature (the signed text was changed, or forged) claiming {who}{uid}",
            "unknown-key": f"signed by a key not in your keyring ({who}): not verified",
            "expired-key": f"signature by an EXPIRED key {who}{uid}",
            "revoked-key": f"signature by a REVOKED key {who}{uid}",
            "expired-signature": f"EXPIRED signature by {who}{uid}",
        }.get(self.state, f"signature could not be checked: {self.note or 'unknown error'}")
        return text

    def to_json(self) -> dict:
        return {"state": self.state, "fingerprint": self.fingerprint, "key_id": self.key_id,
                "uids": list(self.uids), "matches_from": self.matches_from, "note": self.note,
                "validity": self.validity, "other_keys": list(self.other_keys), "text": self.describe()}


@frozen_dataclass
class PartProtection:
    """How one shown text part (by index in ``Message.text_parts``) was protected."""

    index: int
    encrypted: bool
    signed: bool  # under a signature that checks (valid, or by a key that is unknown, expired, revoked)
    bad_signature: bool = False  # under signatures that all read BAD (or could not be checked)

    def to_json(self) -> dict:
        return {"index": self.index, "encrypted": self.encrypted, "signed": self.signed,
                "bad_signature": self.bad_signature}


@frozen_dataclass
class OfferedKey:
    """A public key the message offers (an attached key, an Autocrypt header): import only on request."""

    source: str  # "attachment <name>" or "Autocrypt header"
    fingerprint: str
    uids: tuple[str, ...]
    data: bytes = field(repr=False, compare=False)
    in_keyring: bool = False

    def to_json(self) -> dict:
        return {"source": self.source, "fingerprint": self.fingerprint, "uids": list(self.uids),
                "in_keyring": self.in_keyring}


@frozen_dataclass
class DecryptedAttachment:
    """The bytes of an attachment that was inside the whole-message encryption, kept in memory
    only (the backend holds only the ciphertext): ``index`` in ``Message.attachments``."""

    index: int
    data: bytes = field(repr=False, compare=False)


@frozen_dataclass
class CryptoStatus:
    """What OpenPGP protected in one message.

    ``encrypted``: an encrypted piece was found; ``decrypted``: it was opened (False with a
    note saying why not). ``encrypted_to``: the key IDs the message was encrypted to.
    ``parts``: per shown text part, whether it was encrypted / signed (a mixed message has
    parts with False). ``notes``: each problem in plain words (wrong key, corrupt armor, …).
    """

    encrypted: bool = False
    decrypted: bool = False
    skipped: bool = False
    encrypted_to: tuple[str, ...] = ()
    signatures: tuple[SignatureStatus, ...] = ()
    parts: tuple[PartProtection, ...] = ()
    notes: tuple[str, ...] = ()
    offered_keys: tuple[OfferedKey, ...] = ()
    # The secret key needs its passphrase and no pinentry could ask (the app offers to unlock).
    needs_passphrase: bool = False
    # The Subject inside a whole-message encryption (the outer one is often "..."): shown here
    # only, never made the message's subject (drafts, forwards and issue titles read that one).
    hidden_subject: str | None = None
    symmetric: bool = False  # encrypted with a passphrase, to no key
    # Attachments that came out of the decryption: their bytes (never in the JSON, never on disk).
    decrypted_attachments: tuple[DecryptedAttachment, ...] = field(default=(), repr=False, compare=False)

    def attachment_data(self, index: int) -> bytes | None:
        """The decrypted bytes of attachment ``index``, or None when it did not come from the encryption."""
        return next((a.data for a in self.decrypted_attachments if a.index == index), None)

    @property
    def mixed(self) -> bool:
        """Some shown parts were protected and some were not (encrypted, or signed: an unsigned part
        inside an encrypted and signed report counts)."""
        encrypted = [p.encrypted for p in self.parts] if self.encrypted else []
        signed = [p.signed or p.bad_signature for p in self.parts] if self.signatures else []
        return (any(encrypted) and not all(encrypted)) or (any(signed) and not all(signed))

    @property
    def wholly_encrypted(self) -> bool:
        return self.decrypted and bool(self.parts) and all(p.encrypted for p in self.parts)

    def lines(self) -> list[str]:
        """The status in plain words, one line each (the reader pane and the JSON show these)."""
        out: list[str] = []
        to = ", ".join(self.encrypted_to) or "a key that could not be read"
        head = ("encrypted with a passphrase (symmetric), not to a key" if self.symmetric and not self.encrypted_to
                else f"encrypted to {to}")
        if self.encrypted and self.skipped:
            out.append("encrypted: not decrypted (decryption was switched off)")
        elif self.encrypted and self.decrypted:
            out.append(f"{head}; decrypted")
        elif self.encrypted:
            out.append(f"{head}; NOT decrypted")
        if self.hidden_subject is not None:
            out.append(f"hidden subject (inside the encryption; never written to a header or an issue): "
                       f"{self.hidden_subject}")
        out.extend(s.describe() for s in self.signatures)
        for part in () if self.skipped else self.parts:
            if self.encrypted and not part.encrypted:
                out.append(f"part {part.index + 1} was NOT encrypted")
            if self.signatures and not part.signed and not part.bad_signature:
                out.append(f"part {part.index + 1} was NOT signed")
        out.extend(self.notes)
        if self.offered_keys:
            for key in self.offered_keys:
                state = "already in your keyring" if key.in_keyring else "not imported (K to import)"
                out.append(f"offers a key {key.fingerprint} from the {key.source}: {state}")
        return out

    def to_json(self) -> dict:
        return {
            "encrypted": self.encrypted,
            "decrypted": self.decrypted,
            "skipped": self.skipped,
            "encrypted_to": list(self.encrypted_to),
            "signatures": [s.to_json() for s in self.signatures],
            "parts": [p.to_json() for p in self.parts],
            "mixed": self.mixed,
            "notes": list(self.notes),
            "offered_keys": [k.to_json() for k in self.offered_keys],
            "needs_passphrase": self.needs_passphrase,
            "hidden_subject": self.hidden_subject,
            "symmetric": self.symmetric,
            "summary": self.lines(),
        }
