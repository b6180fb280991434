"""mailtriage.demo."""
