"""mailtriage.trackers."""
