"""Fixtures of the OAuth tests (Gmail, Microsoft Graph): see fixtures.py."""

from tests.oauth.fixtures import *  # noqa: F401,F403
