"""The reply flow's encryption step: a reply to an encrypted report is encrypted in kind.

A reply draft on a thread whose messages were encrypted is encrypted (inline OpenPGP, an armored
body every drafting backend stores as it is) to the reporter's key when the keyring holds a
usable one, and to the team's key (project.md ``pgp.team_key``) so the team can read its
Drafts. Signing is optional (``pgp.sign_replies``, with the team key).

When no key of the reporter is there, the proposal says so and is blocked: decrypted text is
never drafted in clear unless the user chose that explicitly (``--allow-clear`` in the CLI, the
toggle of the proposal in the app). ``pgp.encrypt_replies: false`` turns the step off for a
project (the proposal still says the thread was encrypted).

The body is encrypted when the write is applied, after any edit in the proposal dialog; a
failure then writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from mailtriage.backends.contract import Message, Thread
from mailtriage.backends.pgp import GnuPG
from mailtriage.backends.security_cc import resolve_security_cc
from mailtriage.core.projectconfig import ConfigError, ProjectConfig
from mailtriage.application.flows.errors import ApplicationError
from mailtriage.application.flows.proposals import Field

__all__ = ["ENCRYPTED_IMPORT", "EncryptionPlan", "ProjectPgp", "ReplyEncryptionFailed", "plan_reply_encryption", "thread_was_encrypted"]


#: What an import proposal of an encrypted report says (the tracker's guard does the refusing).
ENCRYPTED_IMPORT = ("this report came from an ENCRYPTED mail: the issue gets its subject, reporter and dates (never "
                    "the decrypted body), and the tracker writes only when it is access-restricted (local files: "
                    "access_restricted: true; GitHub: a private repository; Jira: the configured security level)")


class ReplyEncryptionFailed(ApplicationError, RuntimeError):
    """gpg could not encrypt the confirmed body: nothing was written."""


class ProjectPgp:
    """project.md's ``pgp`` block: the team's key, whether replies must be encrypted, signed."""

    def __init__(self, config: ProjectConfig) -> None:
        team = config.get("pgp.team_key", None)
        if team is not None and not isinstance(team, str):
            raise ConfigError(config.file, "pgp.team_key", "must be a key fingerprint", "team_key: 0123…CDEF")
        self.team_key = "".join(str(team or "").split()).upper() or None
        encrypt = config.get("pgp.encrypt_replies", True)
        if not isinstance(encrypt, bool):
            raise ConfigError(config.file, "pgp.encrypt_replies", "must be true or false", "encrypt_replies: true")
        self.encrypt_replies = encrypt
        sign = config.get("pgp.sign_replies", False)
        if not isinstance(sign, bool):
            raise ConfigError(config.file, "pgp.sign_replies", "must be true or false", "sign_replies: false")
        self.sign_replies = sign
        # Our own addresses (the list, the resolved security CC): the team key speaks for them.
        cc = resolve_security_cc(config)
        self.own = {a.lower() for a in (cc.security_cc, config.get("security_list", None))
                    if isinstance(a, str) and a}


_SEVERAL = "several keys in your keyring claim"


def _recipient_key(address: str, target: Message, gpg: GnuPG) -> tuple[str | None, str | None]:
    """The encryption key of ``address`` and None, or None and why not (none, or several claim it).

    With several keys for the reporter's address, the one that made a valid signature on the report
    is used; otherwise the choice is the user's (never whichever key was imported first)."""
    found = gpg.encryption_keys(address)
    if len(found) <= 1:
        return (found[0] if found else None), (None if found else
                                               f"no usable OpenPGP key for {address} in your keyring")
    sender = (target.sender.email or "").lower()
    signed = target.crypto.signatures if target.crypto and address.lower() == sender else ()
    signers = {s.fingerprint for s in signed if s.trustworthy}
    chosen = [f for f in found if f in signers]
    if len(chosen) == 1:
        return chosen[0], None
    return None, (f"{_SEVERAL} {address}: {', '.join(found)}, and the report is not validly signed by one "
                  "of them; remove or disable the wrong one (gpg --edit-key) and ask again")


def thread_was_encrypted(thread: Thread) -> bool:
    return any(m.crypto is not None and m.crypto.encrypted for m in thread.messages)


@dataclass
class EncryptionPlan:
    """What the reply proposal shows and does about encryption."""

    fields: list[Field] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    blocked: str | None = None
    recipients: tuple[str, ...] = ()
    sign: str | None = None
    encrypt: Callable[[str], str] | None = None  # body -> armored body; None: the body goes as written
    facts: dict = field(default_factory=dict)


def plan_reply_encryption(thread: Thread, target: Message, gpg: GnuPG, project: ProjectPgp,
                          recipients: tuple[str, ...] | None = None, *, allow_clear: bool = False) -> EncryptionPlan:
    """The encryption step for a reply to ``target`` on ``thread`` (no write, no gpg secret-key use).

    ``recipients``: the draft's To and Cc (default: the reporter). Each one that is not ours gets
    the text encrypted to their own key — a forward to a third party is encrypted to that party,
    not to the reporter; our own addresses are served by the team key."""
    plan = EncryptionPlan()
    if not thread_was_encrypted(thread):
        return plan
    plan.facts["thread_encrypted"] = True
    if not project.encrypt_replies:
        plan.notes.append("the report was encrypted, and this project drafts replies in clear "
                          "(pgp.encrypt_replies: false)")
        plan.fields.append(Field("Encryption", "none: pgp.encrypt_replies is false", "IN CLEAR"))
        plan.facts["encryption"] = "off"
        return plan
    problem = gpg.available()
    wanted = [a for a in dict.fromkeys(a.strip().lower() for a in (recipients if recipients is not None
                                                                  else (target.sender.email,)) if a and a.strip())
              if a not in project.own]
    keys: list[tuple[str, str]] = []  # (address, fingerprint)
    missing: list[str] = []
    for address in [] if problem else wanted:
        fpr, why = _recipient_key(address, target, gpg)
        if fpr is None:
            missing.append(why or f"no usable OpenPGP key for {address} in your keyring")
            if why and why.startswith(_SEVERAL):
                plan.facts["reporter_keys"] = "several"
        else:
            keys.append((address, fpr))
    team = project.team_key if project.team_key and not problem and gpg.has_key(project.team_key) else None
    if project.team_key and not team and not problem:
        plan.notes.append(f"the team key {project.team_key} (pgp.team_key) is not in your keyring")
    if not problem and not missing and not keys and not team:
        missing.append("no recipient of this draft has a key to encrypt to, and the team key is not usable")
    if problem or missing:
        why = problem or "; ".join(missing)
        if allow_clear:
            plan.fields.append(Field("Encryption", f"none: {why}", "IN CLEAR (you chose this)"))
            plan.notes.append("the report was encrypted; this reply is drafted IN CLEAR because you chose so")
            plan.facts["encryption"] = "clear-chosen"
            return plan
        plan.blocked = (f"the report was encrypted and the reply cannot be: {why}. Import the reporter's key "
                        "(K in the reader) or choose explicitly to draft in clear")
        plan.facts["encryption"] = "no-key"
        return plan
    plan.recipients = tuple(dict.fromkeys(filter(None, (*(fpr for _, fpr in keys), team))))
    plan.sign = team if project.sign_replies and team else None
    text = "inline OpenPGP to " + ", ".join(f"{address} ({fpr})" for address, fpr in keys)
    if team:
        text += (" and the team key " if keys else "the team key ") + team
    else:
        text += " (the team key is not used: see the notes)"
    plan.fields.append(Field("Encryption", text + ("; signed by the team key" if plan.sign else ""), "encrypted"))
    plan.facts["encryption"] = "encrypted"
    plan.facts["encrypted_to"] = list(plan.recipients)

    def encrypt(body: str) -> str:
        result = gpg.encrypt(body.encode("utf-8"), list(plan.recipients), sign=plan.sign)
        if result.problem:
            raise ReplyEncryptionFailed(f"the reply could not be encrypted, nothing was written: {result.problem}")
        return result.armored.decode("ascii")

    plan.encrypt = encrypt
    return plan
