"""mailtriage.workflows."""
