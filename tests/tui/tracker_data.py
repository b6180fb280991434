"""A local-files tracker with the demo's three filed reports, for the tracker pane tests.

The seed data is the demo workspace's own (``mailtriage.demo.tracker``), so the tests and
``--demo`` show the same issues.
"""

from mailtriage.demo.tracker import DEMO_ISSUES, make_demo_tracker

__all__ = ["DEMO_ISSUES", "make_demo_tracker"]
