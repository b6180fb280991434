"""The service lock lets a call the user waits on (a thread read) go before a listing's next
part (issue 33: an Enter typed on the first frame waited for the whole start-up listing)."""

from __future__ import annotations

import threading

from mailtriage.application.service_lock import ServiceLock


def _until(condition, what: str) -> None:
    done = threading.Event()
    for _ in range(1000):
        if condition():
            return
        done.wait(0.005)
    raise AssertionError(f"timed out waiting for {what}")


def test_an_urgent_call_goes_before_a_listing_part_that_asks_later():
    lock = ServiceLock()
    order: list[str] = []
    lock.acquire()  # the listing's first part holds the lock

    def read() -> None:
        with lock.urgently():
            order.append("read")

    def next_part() -> None:
        with lock:
            order.append("next part")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    _until(lambda: lock.urgent_waiting == 1, "the read to wait")
    lister = threading.Thread(target=next_part, daemon=True)
    lister.start()
    # The next part has asked before the first ends (else the read, alone at the lock, goes
    # first with or without the priority): it waits for the read's turn.
    _until(lambda: lock.waiting_behind_urgent == 1, "the next part to wait behind the read")
    lock.release()  # the first part ends: the read goes first
    reader.join(5)
    lister.join(5)
    assert order == ["read", "next part"]


def test_a_call_holding_the_lock_takes_it_again_while_an_urgent_one_waits():
    lock = ServiceLock()
    lock.acquire()
    reader = threading.Thread(target=lambda: lock.urgently().__enter__() and lock.release(), daemon=True)
    reader.start()
    _until(lambda: lock.urgent_waiting == 1, "the read to wait")
    assert lock.acquire(timeout=2)  # re-entrant: no deadlock with the waiting read
    lock.release()
    lock.release()
    reader.join(5)
    assert not reader.is_alive()
