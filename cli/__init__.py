"""mailtriage.cli."""
