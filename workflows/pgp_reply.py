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
from mailtriage.core.projectconfig import ConfigError, ProjectConfig
from mailtriage.workflows.proposals import Field

__all__ = ["ENCRYPTED_IMPORT", "EncryptionPlan", "ProjectPgp", "ReplyEncryptionFailed", "plan_reply_encryption", "thread_was_encrypted"]


#: What an import proposal of an encrypted report says (the tracker's guard does the refusing).
ENCRYPTED_IMPORT = ("this report came from an ENCRYPTED mail: the issue gets its subject, reporter and dates (never "
                    "the decrypted body), and the tracker writes only when it is access-restricted (local files: "
                    "access_restricted: true; GitHub: a private repository; Jira: the configured security level)")


class ReplyEncryptionFailed(RuntimeError):
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


_SEVERAL = "several keys in your keyring claim"


def _reporter_key(target: Message, gpg: GnuPG) -> tuple[str | None, str | None]:
    """The reporter's encryption key and None, or None and why not (none, or several claim the address).

    With several keys for one address, the one that made a valid signature on the report is used;
    otherwise the choice is the user's (replies never go to whichever key was imported first)."""
    address = target.sender.email or ""
    found = gpg.encryption_keys(address)
    if len(found) <= 1:
        return (found[0] if found else None), None
    signers = {s.fingerprint for s in (target.crypto.signatures if target.crypto else ()) if s.trustworthy}
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


def plan_reply_encryption(thread: Thread, target: Message, gpg: GnuPG, project: ProjectPgp, *,
                          allow_clear: bool = False) -> EncryptionPlan:
    """The encryption step for a reply to ``target`` on ``thread`` (no write, no gpg secret-key use)."""
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
    reporter = None
    if not problem:
        reporter, problem = _reporter_key(target, gpg)
    team = project.team_key if project.team_key and not problem and gpg.has_key(project.team_key) else None
    if project.team_key and not team and not problem:
        plan.notes.append(f"the team key {project.team_key} (pgp.team_key) is not in your keyring")
    if reporter is None:
        why = problem or f"no usable OpenPGP key for {target.sender.email} in your keyring"
        if problem and problem.startswith(_SEVERAL):
            plan.facts["reporter_keys"] = "several"
        if allow_clear:
            plan.fields.append(Field("Encryption", f"none: {why}", "IN CLEAR (you chose this)"))
            plan.notes.append("the report was encrypted; this reply is drafted IN CLEAR because you chose so")
            plan.facts["encryption"] = "clear-chosen"
            return plan
        plan.blocked = (f"the report was encrypted and the reply cannot be: {why}. Import the reporter's key "
                        "(K in the reader) or choose explicitly to draft in clear")
        plan.facts["encryption"] = "no-key"
        return plan
    plan.recipients = tuple(dict.fromkeys(filter(None, (reporter, team))))
    plan.sign = team if project.sign_replies and team else None
    text = f"inline OpenPGP to {target.sender.email} ({reporter})"
    text += f" and the team key {team}" if team else " (the team key is not used: see the notes)"
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
