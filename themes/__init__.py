"""mailtriage.themes."""
