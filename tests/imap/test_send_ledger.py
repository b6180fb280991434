"""The send ledger behind Principle 10's cap: per account, a rolling window, persisted."""

from __future__ import annotations

import pytest

from mailtriage.backends.send_policy import SendRefused, check_send
from mailtriage.backends.send_ledger import SendLedger


def test_counts_only_the_window_per_account_and_persists(tmp_path):
    ledger = SendLedger(tmp_path / "ledger.json")
    ledger.record("work", now=0.0)  # long ago
    ledger.record("work")
    ledger.record("work")
    ledger.record("home")
    assert ledger.count("work") == 2 and ledger.count("home") == 1 and ledger.count("nobody") == 0
    assert SendLedger(tmp_path / "ledger.json").count("work") == 2
    refusal = check_send(None, authserv_id=None, sent_recently=ledger.count("work"), send_cap=2)
    assert refusal.reason == "send-cap-reached"


def test_an_unreadable_ledger_refuses_rather_than_resetting(tmp_path):
    path = tmp_path / "ledger.json"
    path.write_text("{not json")
    with pytest.raises(SendRefused) as err:
        SendLedger(path).count("work")
    assert err.value.refusal.reason == "send-cap-reached" and "unreadable" in str(err.value)
