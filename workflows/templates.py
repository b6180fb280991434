"""Reply templates of a project: ``templates.<name>`` in project.md, relative to its folder.

The receipt-of-confirmation template is filled with ``{reporter_name}``, ``{subject}``,
``{project}``, ``{security_list}`` and ``{sender_name}``; a placeholder the template
names that we do not know stays as written, so a typo shows in the proposal instead of
failing. Values taken from mail are made inert first: a reply never carries hidden
characters back out, and a subject cannot smuggle ``{placeholders}`` (the template is
formatted once, values are never formatted again).
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass

from mailtriage.backends.contract import Thread, reply_subject
from mailtriage.backends.security_cc import resolve_security_cc
from mailtriage.core import settings
from mailtriage.workflows.text import one_line

DEFAULT_RECEIPT = (
    "Hi {reporter_name},\n\n"
    "Thank you for your report \"{subject}\". The {project} security team has received it and is\n"
    "looking into it; we will keep you informed of our progress.\n\n"
    "Please keep the details private until a fix is released and an advisory is published.\n"
    "If you have more information, reply to this message and keep {security_list} in copy.\n\n"
    "{sender_name}\n"
    "on behalf of the {project} security team\n"
)


class _KeepUnknown(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


@dataclass(frozen=True)
class Rendered:
    text: str
    note: str | None = None  # why the project's template was not used


def sender_name_default() -> str:
    """The triager's name when the caller gives none: ``name`` in the user settings,
    else the login name."""
    try:
        name = settings.load_settings().data.get("name")
        if isinstance(name, str) and name.strip():
            return one_line(name, 120)
    except Exception:  # unreadable settings never stop a proposal; the login name stands in
        pass
    try:
        return getpass.getuser()
    except Exception:
        return "The security team"


def receipt_body(config, thread: Thread, *, sender_name: str | None = None) -> Rendered:
    """The receipt-of-confirmation text for the report that opened ``thread``."""
    root = thread.messages[0] if thread.messages else None
    reporter = one_line(root.sender.name or root.sender.email, 120) if root else "reporter"
    subject = one_line(reply_subject(thread.subject)[len("Re: "):], 200)
    values = _KeepUnknown(
        reporter_name=reporter or "reporter",
        subject=subject,
        project=one_line(config.title, 120) or "project",
        # The resolved security CC: the list, or the fallback address when the list is unset.
        security_list=resolve_security_cc(config).security_cc or "",
        sender_name=sender_name or sender_name_default(),
    )
    template_path = config.get("templates.receipt")
    if template_path:
        path = config.resolve_path(str(template_path))
        try:
            return Rendered(path.read_text(encoding="utf-8").format_map(values))
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or str(exc)
            note = f"the receipt template {path} could not be read ({why}); the default text is proposed"
        except (ValueError, IndexError, AttributeError) as exc:
            note = (f"the receipt template {path} is not a valid template ({exc}); "
                    "the default text is proposed (write literal braces as {{ and }})")
        return Rendered(DEFAULT_RECEIPT.format_map(values), note)
    return Rendered(DEFAULT_RECEIPT.format_map(values))
