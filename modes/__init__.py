"""mailtriage.modes: the email side of the MAS mode contract v0.1 (master and slave roles).

Imports mailtriage.core and mailtriage.backends only; never Textual or the TUI.
See docs/modes.md.
"""
