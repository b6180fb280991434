"""Which failures offer "press R to reconnect" (tui/errors.is_connection_problem).

Reported by a clean-clone run at load 10: a read after a dropped IMAP connection reconnects
first (the stale-ID check selects the folder again); when that connect fails the error is the
mandatory backend's "unavailable … run aborted", and the reader offered no reconnect though R
is exactly what helps (tests/tui/test_imap_network.py, the timing-dependent path)."""

from mailtriage.backends.errors import ConnectionLost, MandatoryBackendUnavailable, NotSupported, Unavailable
from mailtriage.tui.errors import is_connection_problem


def test_a_backend_gone_away_offers_a_reconnect():
    assert is_connection_problem(MandatoryBackendUnavailable("imap", "connect to 127.0.0.1:1 failed: EOF"))
    assert is_connection_problem(ConnectionLost("imap", "connection to 127.0.0.1:1 lost"))
    assert is_connection_problem(Unavailable("imap", "refused"))
    assert is_connection_problem(ConnectionResetError())


def test_a_refusal_that_retrying_cannot_change_offers_none():
    assert not is_connection_problem(NotSupported("imap", "search", "no SEARCH"))
    assert not is_connection_problem(ValueError("bad thread id"))
