"""The private python-gnupg members backends/gnupg_private.py uses exist on the installed
python-gnupg (issue 36 §4).

One check per member of its ``MEMBERS``: an upgrade that renames or reshapes one fails here,
naming it. The override of ``GPG._open_subprocess`` would not fail by itself (it would just no
longer be called: no time limit, no inherited pipe for a detached signature), so the I/O step
we call is also checked to start gpg through it.
"""

from __future__ import annotations

import inspect

import pytest

from mailtriage.backends import gnupg_private
from mailtriage.backends.gnupg_private import MEMBERS
from tests.core.private_members import check_member


@pytest.mark.parametrize("module, owner, member, use", MEMBERS, ids=[f"{o}.{m}" for _, o, m, _ in MEMBERS])
def test_the_private_member_is_still_there(module, owner, member, use):
    check_member(module, owner, member, use, "backends/gnupg_private.py")


def test_the_io_step_starts_gpg_through_the_overridden_process_start():
    import gnupg

    assert "self._open_subprocess(" in inspect.getsource(gnupg.GPG._handle_io), (
        "gnupg.GPG._handle_io no longer starts gpg through _open_subprocess: the kill timer and the "
        "inherited pipe of backends/gnupg_private.py would be skipped")
    piped = gnupg_private.piped_gpg_class()
    assert piped._open_subprocess is not gnupg.GPG._open_subprocess
