"""Which date a listing shows, one rule for the app's thread list and ``mailtriage list``.

``date_column = "sent"`` (the default) shows the sender's ``Date:`` where the backend knows it
apart from the arrival (IMAP lists by arrival: ``row.sent``), "arrival" the time the mail
arrived (``last_activity``). A row without a sender's date shows its arrival either way.

Either is shown in the user's own time zone (the machine's, ``TZ``), never the sender's nor
UTC: an archive's index keeps epoch seconds (the sender's zone is gone), IMAP keeps the
sender's ``Date:`` with its offset, and the same instant must read the same in both. The
reading pane still shows each message's ``Date:`` as the sender wrote it, offset and all.
"""

from __future__ import annotations

from datetime import datetime

SENT = "sent"
ARRIVAL = "arrival"

#: The column header each choice prints under (the CLI) and the docs name.
HEADINGS = {SENT: "sent (Date:)", ARRIVAL: "arrived"}


def shown_date(row, column: str = SENT) -> datetime | None:
    """The date a listing shows for ``row`` (a thread summary) under ``column``, in local time."""
    when = row.sent if column == SENT and row.sent is not None else row.last_activity
    return when.astimezone() if when is not None else None
