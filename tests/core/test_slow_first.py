"""The slow-marked tests start first on every xdist worker (tests/conftest.py), checked against
xdist's own work-stealing scheduler (what scripts/test runs): its first hand-out gives each
worker a run of consecutive tests of the collection order, so with every slow test at the
front, one worker ran them all one after the other (issue 36 §7)."""

from __future__ import annotations

import pytest
from xdist.scheduler.worksteal import WorkStealingScheduling

from tests.conftest import pytest_collection_modifyitems


class Item:
    """What the hook reads of a pytest item: its slow marker."""

    def __init__(self, name: str, slow: bool) -> None:
        self.name, self.slow = name, slow

    def get_closest_marker(self, name: str):
        return name if name == "slow" and self.slow else None


class Config:
    """What the scheduler reads of the controller's config (the workers asked for, ``-n``), and
    the hook of a worker's (its workerinput)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.workerinput = {"workercount": workers}

    def getvalue(self, name: str) -> list[str]:
        assert name == "tx"
        return [f"{self.workers}*popen"]


class Gateway:
    def __init__(self, name: str) -> None:
        self.id = name


class Worker:
    """A worker as the scheduler drives it: its name and the tests it is sent."""

    shutting_down = False

    def __init__(self, name: str) -> None:
        self.gateway = Gateway(name)
        self.sent: list[list[int]] = []

    def send_runtest_some(self, indices) -> None:
        self.sent.append(list(indices))


def collected(total: int, slow: int) -> list[Item]:
    """``total`` tests in collection order, ``slow`` of them marked, spread as files are."""
    marked = set(range(0, total, total // slow)[:slow])
    return [Item(f"t{n}", n in marked) for n in range(total)]


@pytest.mark.parametrize(("workers", "total", "slow"), [(4, 3709, 35), (3, 3709, 35), (4, 90, 9), (2, 10, 3)])
def test_each_worker_starts_with_its_share_of_the_slow_tests(workers, total, slow):
    items = collected(total, slow)
    pytest_collection_modifyitems(Config(workers), items)
    assert sorted(item.name for item in items) == sorted(f"t{n}" for n in range(total))  # the same tests, once each
    scheduler = WorkStealingScheduling(Config(workers))
    nodes = [Worker(f"gw{k}") for k in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, [item.name for item in items])
    scheduler.schedule()
    shares = []
    for node in nodes:
        (first,) = node.sent  # one hand-out each at the start
        marks = [items[n].slow for n in first]
        count = sum(marks)
        assert marks[:count] == [True] * count, "a worker's slow tests do not come first"
        shares.append(count)
    assert sum(shares) == slow and max(shares) - min(shares) <= 1, shares


def test_without_workers_the_slow_tests_come_first_in_their_order(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")  # a pytest started by a worker's test sees this
    items = collected(40, 5)
    pytest_collection_modifyitems(object(), items)  # a config without workerinput: no xdist here
    assert [item.name for item in items[:5]] == ["t0", "t8", "t16", "t24", "t32"]
    assert [item.name for item in items[5:]] == [f"t{n}" for n in range(40) if n % 8]
