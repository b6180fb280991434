"""No module of ours reads a private member of a library outside the one seam module kept for
that library (issue 36 §4: "each private API call in one module with a test that fails when the
upstream name changes").

tests/tui/test_textual_private.py and tests/imap/test_imaplib_private.py scan tui/ and
backends/imap/ only; this scans every folder of ours, so a private call of another library
(python-gnupg's ``GPG._handle_io`` sat in backends/pgp.py) cannot stand outside a seam.
"""

from __future__ import annotations

from tests.core.private_members import OURS, SEAMS, private_reads_outside


def test_no_module_outside_the_seams_reads_a_private_member_of_a_library():
    found = [hit for folder in OURS for hit in private_reads_outside(folder, SEAMS)]
    assert found == [], ("private members of a library read outside the seams ("
                         + ", ".join(str(s.name) for s in SEAMS) + "): " + ", ".join(found))
