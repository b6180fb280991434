"""mailtriage.backends."""
