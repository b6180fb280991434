"""The main screen's controllers: each owns the workers and message handlers of one area."""
