"""The private imapclient and imaplib members backends/imap/ uses exist on the installed
versions (issue 36 §4).

One check per member of ``backends/imap/imaplib_private.py``'s ``MEMBERS``: an upgrade of
imapclient (or of Python's imaplib) that renames or reshapes one fails here, naming it,
instead of in the middle of a listing. And no other module of backends/imap/ reads one.
"""

from __future__ import annotations

import pytest

from mailtriage.backends.imap.imaplib_private import MEMBERS
from tests.core.private_members import SEAMS, check_member, private_reads_outside


@pytest.mark.parametrize("module, owner, member, use", MEMBERS,
                         ids=[f"{owner or module}.{member}" for module, owner, member, _ in MEMBERS])
def test_the_private_member_is_still_there(module, owner, member, use):
    check_member(module, owner, member, use, "backends/imap/imaplib_private.py")


def test_no_other_module_of_the_imap_backend_reads_a_private_member():
    found = private_reads_outside("backends/imap", SEAMS)
    assert found == [], ("private members of a library read outside backends/imap/imaplib_private.py: "
                         + ", ".join(found))
