"""Fixtures for the modes tests: real Dovecot and aiosmtpd (tests/servers), a memory keyring,
the email side under test with its mode and master parties (tests/modes/harness.py)."""

from __future__ import annotations

import pytest

from tests.servers.fixtures import memory_keyring, smtp_server  # noqa: F401 (dovecot, dovecot_user: tests/conftest.py)
from tests.modes.harness import Harness


@pytest.fixture
def make_harness(tmp_path, dovecot, dovecot_user, smtp_server, memory_keyring):  # noqa: F811
    made: list[Harness] = []

    def make(role: str, **kwargs) -> Harness:
        harness = Harness(role=role, tmp_path=tmp_path / f"h{len(made)}", dovecot=dovecot, user=dovecot_user,
                          smtp=smtp_server, keyring=memory_keyring, **kwargs)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.close()
