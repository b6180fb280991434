"""``confirm_flag_changes = false``: reversible flag changes are written without the dialog.

Off by default (every write is confirmed). When the user turns it off in the settings, a
proposal whose every write is a *flag* change — mark read / unread, flag / unflag, on one
message or on the tagged ones — is written at once and the toast says what was done (the
same key undoes it). Never a move, a trash, an archive, a draft, a send, a save, a key
import or a tracker write: those always show the proposal dialog.
"""

from __future__ import annotations

from mailtriage.core.errors import ConfigError

#: The reversible changes: each is undone by the other of its pair.
REVERSIBLE = frozenset({"read", "unread", "flag", "unflag"})


def confirm_flag_changes(settings) -> bool:
    """The setting (default True).

    Raises:
        ConfigError: it is not true or false.
    """
    value = settings.data.get("confirm_flag_changes", True)
    if not isinstance(value, bool):
        raise ConfigError(settings.path, "confirm_flag_changes", f"is {value!r}", "true or false")
    return value


def skips_confirmation(proposal, settings) -> bool:
    """Whether ``proposal`` is written without the dialog: the setting is off, and the
    proposal is nothing but flag changes of a personal account's messages."""
    try:
        if confirm_flag_changes(settings):
            return False
    except ConfigError:
        return False  # a wrong value is reported at start-up; until fixed, every write is confirmed
    # The organize workflow marks a proposal of flag changes only (never a move) as reversible.
    return not proposal.blocked and proposal.facts.get("reversible") is True and proposal.facts.get("action") in REVERSIBLE
