"""Server search is declared, not discovered (issue 14 §4): a backend declares
``SourceFeatures.server_search`` exactly when its class implements ``search``, and a personal
mailbox adapter its ``server_search`` likewise, so the front ends may trust the declaration."""

import pytest

from mailtriage.backends.contract import MailSource
from mailtriage.backends.mailbox_contract import MailboxAdapter
from mailtriage.backends.registry import BACKEND_KINDS, MAILBOX_KINDS, _load, backend_class


@pytest.mark.parametrize("kind", sorted(BACKEND_KINDS))
def test_a_declared_server_search_is_one_the_class_implements(kind):
    """server_search is declared exactly by the classes that override ``search`` (issue 14 §4)."""
    cls = backend_class(kind)
    implements = cls.search is not MailSource.search
    assert cls.features.server_search == implements, kind
    assert set(cls.features.server_search_fields) <= {"text", "body", "from", "subject"}


def test_a_mailbox_that_declares_search_implements_it():
    for adapter, _loader in MAILBOX_KINDS.values():
        cls = _load(adapter)
        assert cls.server_search == (cls.search is not MailboxAdapter.search), adapter
