"""Suite-wide settings."""

import os

from hypothesis import settings

# In CI, property tests explore the same examples every run: a failure is reproducible,
# never a coin toss. Locally they search freshly each run.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


import pytest  # noqa: E402

from mailtriage.core.secrets import forget_remembered_secrets  # noqa: E402


@pytest.fixture(autouse=True)
def _secrets_of_one_test_only():
    """A worker runs many tests in one process: a password one test stored ("nope") must not
    be masked in the next test's messages."""
    yield
    forget_remembered_secrets()
