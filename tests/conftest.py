"""Suite-wide settings."""

import os

from hypothesis import settings

# In CI, property tests explore the same examples every run: a failure is reproducible,
# never a coin toss. Locally they search freshly each run.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
