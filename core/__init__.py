"""mailtriage.core."""
