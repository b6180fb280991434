"""Offer a key found in a report for import: an attached public key or an Autocrypt header.

Never imported silently: the proposal shows each key's fingerprint, its user IDs, where in which
message it was found and whether a user ID names that message's sender, and imports it into the
user's keyring only when confirmed. Importing does not certify the key: check the fingerprint
with the reporter on another channel before relying on it.
"""

from __future__ import annotations

from mailtriage.backends.contract import Thread
from mailtriage.backends.pgp import GnuPG
from mailtriage.backends.pgp_status import OfferedKey
from mailtriage.application.flows.proposals import BlockedBy, Field, Proposal, Write, WriteKind

__all__ = ["offered_keys", "propose_key_import"]

CHECK_OUT_OF_BAND = ("importing does not certify a key: compare the fingerprint with the reporter on another "
                     "channel before relying on it")


def offered_keys(thread: Thread) -> list[tuple[str, OfferedKey]]:
    """(sender address, key) for each key a message of ``thread`` offers, first offer of a fingerprint only."""
    seen: set[str] = set()
    out = []
    for message in thread.messages:
        for key in message.crypto.offered_keys if message.crypto else ():
            if key.fingerprint not in seen:
                seen.add(key.fingerprint)
                out.append((message.sender.email or "", key))
    return out


def propose_key_import(thread: Thread, gpg: GnuPG) -> Proposal:
    """The proposal to import the keys ``thread`` offers (nothing imported before confirmation)."""
    proposal = Proposal("Import an offered OpenPGP key")
    keys = offered_keys(thread)
    problem = gpg.available()
    if problem:
        return proposal.block(BlockedBy.GNUPG, problem)
    if not keys:
        proposal.notes.append("no message of this thread offers a key (no application/pgp-keys attachment, "
                              "no Autocrypt header)")
        return proposal
    proposal.notes.append(CHECK_OUT_OF_BAND)
    # Named by its setting, not its path (a path would differ per machine in every recap).
    home = ("your GnuPG home (pgp.gnupg_home in your settings)" if gpg.settings.gnupg_home
            else "gpg's default home ($GNUPGHOME or ~/.gnupg)")
    for sender, key in keys:
        if key.in_keyring:
            proposal.notes.append(f"{key.fingerprint} is already in your keyring")
            continue
        matches = any(sender and f"<{sender.lower()}>" in uid.lower() or uid.lower() == sender.lower()
                      for uid in key.uids)
        fields = [Field("Fingerprint", key.fingerprint),
                  Field("Found in", f"the {key.source} of a message from {sender or '(no address)'}")]
        fields += [Field("User ID", uid, None if matches else "does not name the sender") for uid in key.uids]
        fields.append(Field("Keyring", home))
        if not matches:
            proposal.warnings.append(f"no user ID of {key.fingerprint} names the sender {sender}")

        def apply(write: Write, key: OfferedKey = key):
            imported = gpg.import_keys(key.data)
            if key.fingerprint not in imported:
                raise RuntimeError(f"gpg did not import {key.fingerprint}")
            return list(imported)

        proposal.writes.append(Write(WriteKind.KEY, "gnupg", f"import OpenPGP key {key.fingerprint}", fields, apply,
                                     label="Import key", where=f"into {home}"))
    proposal.facts["offered_keys"] = [k.fingerprint for _, k in keys]
    return proposal
