"""Errors shared below the backend and tracker layers."""

from mailtriage.core.projectconfig import ConfigError

__all__ = ["ConfigError"]
