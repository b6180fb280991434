"""Reply templates of a project: ``templates.<name>`` in project.md, relative to its folder.

The receipt-of-confirmation template is filled with ``{reporter_name}``, ``{subject}``,
``{project}``, ``{security_list}``, ``{sender_name}`` and ``{sign_off}`` (the name and "on
behalf of the … security team", or the team alone when no name is set); a placeholder the template
names that we do not know stays as written, so a typo shows in the proposal instead of
failing. Values taken from mail are made inert first: a reply never carries hidden
characters back out, and a subject cannot smuggle ``{placeholders}`` (the template is
formatted once, values are never formatted again).
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

from mailtriage.backends.contract import Thread, reply_subject
from mailtriage.backends.security_cc import resolve_security_cc
from mailtriage.core import settings
from mailtriage.application.flows.errors import ApplicationError
from mailtriage.application.flows.text import one_line, plain_lines
from mailtriage.core.lean_dataclass import frozen_dataclass

# One line per paragraph: the values (a subject, an address) have any length, so a break
# fixed in the template would fall anywhere in the filled text; the editor and the mail
# client wrap a paragraph where it fits. The sign-off keeps its lines ({sign_off}).
DEFAULT_RECEIPT = (
    "Hi {reporter_name},\n\n"
    "Thank you for your report \"{subject}\". The {project} security team has received it and is "
    "looking into it; we will keep you informed of our progress.\n\n"
    "Please keep the details private until a fix is released and an advisory is published. "
    "If you have more information, reply to this message and keep {security_list} in copy.\n\n"
    "{sign_off}\n"
)
#: The sign-off the demo's template and the default wrote before ``{sign_off}``: a project's copy
#: of them signs as ``{sign_off}`` does (unnamed, it signed "The security team / on behalf of
#: the … security team", issue 35; named, the two are the same text).
NAMED_SIGN_OFF = "{sender_name}\non behalf of the {project} security team"


class _KeepUnknown(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


@frozen_dataclass
class Rendered:
    text: str
    note: str | None = None  # why the project's template was not used


#: Who signs when no name is configured: never the operating system's login name.
UNNAMED_SENDER = "The security team"
SIGNATURE_LIMIT = 2000


@frozen_dataclass
class Identity:
    """Who writes our drafts: the configured display name (``From:`` and ``{sender_name}``)
    and the signature. Both come from settings, never from the operating system."""

    name: str | None = None
    signature: str | None = None

    @property
    def sender_name(self) -> str:
        return self.name or UNNAMED_SENDER


def _text_setting(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return value


def identity(config=None, user_settings=None) -> Identity:
    """``name`` of the user settings; ``signature`` of project.md, else of the user settings.

    ``user_settings`` is the front end's copy (loaded here when not given); unreadable
    settings never stop a proposal, they only leave the name and signature unset."""
    try:
        data = (user_settings or settings.load_settings()).data
    except Exception:  # a broken config.toml is reported where it is used, not by a draft
        data = {}
    name = _text_setting(data.get("name"))
    signature = _text_setting(config.get("signature")) if config is not None else None
    signature = signature or _text_setting(data.get("signature"))
    return Identity(one_line(name, 120) if name else None,
                    plain_lines(signature).strip("\n")[:SIGNATURE_LIMIT] if signature else None)


def sender_name_default() -> str:
    """The triager's name when the caller gives none: ``name`` in the user settings, else
    "The security team" (never the login name)."""
    return identity().sender_name


def _plain_placeholders(text: str) -> None:
    """Raise ValueError unless every field is a plain ``{name}``: project.md's template may come
    from a pull request, and a format spec (``{subject:>999999999}``) builds a huge string while
    ``{name.attr}``, ``{name[0]}`` and ``!r`` reach into Python objects."""
    for _literal, name, spec, conversion in string.Formatter().parse(text):
        if name is not None and (spec or conversion or not name.isidentifier()):
            raise ValueError(f"{{{name}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}} "
                             "is not a plain {name} placeholder")


class OutsideProject(ApplicationError):
    """A file project.md names lies outside the project's folder (or is no regular file)."""


def _project_file(config, path: Path) -> Path:
    """``path`` resolved, when it is a regular file inside the folder of project.md.

    project.md is team data (an attacker's pull request can change it): a file it names for
    text we mail out must not be ``~/.ssh/id_ed25519`` or a link to it."""
    real = path.resolve()
    folder = Path(config.directory).resolve()
    if not real.is_relative_to(folder):
        raise OutsideProject(f"{path} is outside the project folder {folder}")
    if real.exists() and not real.is_file():  # a FIFO would hang the proposal
        raise OutsideProject(f"{path} is not a regular file")
    return real


def receipt_body(config, thread: Thread, *, sender_name: str | None = None) -> Rendered:
    """The receipt-of-confirmation text for the report that opened ``thread``."""
    root = thread.messages[0] if thread.messages else None
    reporter = one_line(root.sender.name or root.sender.email, 120) if root else "reporter"
    subject = one_line(reply_subject(thread.subject)[len("Re: "):], 200)
    project = one_line(config.title, 120) or "project"
    signer = sender_name or sender_name_default()
    values = _KeepUnknown(
        reporter_name=reporter or "reporter",
        subject=subject,
        project=project,
        # The resolved security CC: the list, or the fallback address when the list is unset.
        security_list=resolve_security_cc(config).security_cc or "",
        sender_name=signer,
        # Nobody named: the team signs, once (not "The security team / on behalf of the … team").
        sign_off=(f"The {project} security team" if signer == UNNAMED_SENDER
                  else NAMED_SIGN_OFF.format(sender_name=signer, project=project)),
    )
    template_path = config.get("templates.receipt")
    if template_path:
        path = config.resolve_path(str(template_path))
        try:
            text = _project_file(config, path).read_text(encoding="utf-8").replace(NAMED_SIGN_OFF, "{sign_off}")
            _plain_placeholders(text)
            return Rendered(text.format_map(values))
        except OutsideProject as exc:
            note = f"templates.receipt: {exc}; the default text is proposed"
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or str(exc)
            note = f"the receipt template {path} could not be read ({why}); the default text is proposed"
        except (ValueError, IndexError, AttributeError) as exc:
            note = (f"the receipt template {path} is not a valid template ({exc}); "
                    "the default text is proposed (write literal braces as {{ and }})")
        return Rendered(DEFAULT_RECEIPT.format_map(values), note)
    return Rendered(DEFAULT_RECEIPT.format_map(values))
