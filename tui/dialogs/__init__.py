"""Modal dialogs: proposal confirmation, error details."""
