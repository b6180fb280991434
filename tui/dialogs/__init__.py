"""Modal dialogs: proposal confirmation, error details."""

from pathlib import Path

#: The dialogs' stylesheet: each dialog screen names it (CSS_PATH), so Textual reads and
#: parses it when the first dialog opens, not while the app draws its first frame.
DIALOG_CSS = Path(__file__).resolve().parent.parent / "dialogs.tcss"
