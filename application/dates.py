"""Which date a listing shows, one rule for the app's thread list and ``mailtriage list``.

``date_column = "sent"`` (the default) shows the sender's ``Date:`` where the backend knows it
apart from the arrival (IMAP lists by arrival: ``row.sent``), "arrival" the time the mail
arrived (``last_activity``). A row without a sender's date shows its arrival either way.
"""

from __future__ import annotations

from datetime import datetime

SENT = "sent"
ARRIVAL = "arrival"

#: The column header each choice prints under (the CLI) and the docs name.
HEADINGS = {SENT: "sent (Date:)", ARRIVAL: "arrived"}


def shown_date(row, column: str = SENT) -> datetime | None:
    """The date a listing shows for ``row`` (a thread summary) under ``column``."""
    return row.sent if column == SENT and row.sent is not None else row.last_activity
