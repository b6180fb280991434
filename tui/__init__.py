"""mailtriage.tui."""
