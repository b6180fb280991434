"""Suite-wide settings."""

import gc
import inspect
import os
import time

from hypothesis import HealthCheck, settings

# Hypothesis's wall-clock checks (an example's deadline, the "too slow" health check) fail on a
# loaded machine though nothing is wrong (issue 36 §7: green at load 10); the suite's own
# ceilings bound a test that hangs. In every run, not only in CI.
settings.register_profile("load-proof", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# In CI, property tests explore the same examples every run: a failure is reproducible,
# never a coin toss. Locally they search freshly each run.
settings.register_profile("ci", parent=settings.get_profile("load-proof"), derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "load-proof")

# Listings show dates in the user's time zone (application/dates.py): the suite's user lives
# in UTC on every machine, so rows and snapshots read the same wherever it runs. A test of
# another zone sets TZ itself (tests/tui/test_loose_ends.py).
os.environ["TZ"] = "UTC"
time.tzset()


import pytest  # noqa: E402

from mailtriage.core.secrets import forget_remembered_secrets  # noqa: E402

# The real servers' fixtures (tests/servers/fixtures.py), defined once for the whole suite: a
# session fixture is one per definition, so when each of 50 test modules imported them, each
# worker started (and kept alive to the end) its own Dovecot per module, over 100 per run.
# Now a worker has one Dovecot (and one of each special kind) for all its tests; each test
# still gets a fresh user and mailbox (issue 36 §7).
from tests.servers.fixtures import *  # noqa: E402,F401,F403


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector, name, obj):
    """``async def`` tests (the Pilot tests of tests/tui and tests/pgp) run on asyncio through
    anyio's pytest plugin (each folder's ``anyio_backend`` fixture). They are marked as they are
    collected: marked later (pytest_collection_modifyitems), anyio swapped each for a new
    ``[asyncio]`` item that syrupy never saw collected, and a run without -n of a file mixing
    snapshot and async tests ended in syrupy's KeyError, exit 1 (tests/core/test_suite_exit.py)."""
    if inspect.iscoroutinefunction(obj) and collector.istestfunction(obj, name):
        # An async test drives an app (Pilot): the collector runs rarer in it (the fixture below).
        pytest.mark.usefixtures("anyio_backend", "young_collections_rarer")(pytest.mark.anyio(obj))


#: The collector's first threshold in the tests that run an app (Python's default: 700).
YOUNG_THRESHOLD = 10_000


@pytest.fixture
def young_collections_rarer():
    """The collector is about a third of a Pilot test's CPU: over tests/tui/test_flows.py, ~2,000
    collections (3.2-3.6 s of 10-11.6 CPU-s), 14 of them full (2.5-2.8 s, each walking ~400,000
    objects). With the first threshold at 10,000, 106 collections (0.9-1.3 s), 1 full: the file
    cost 6.5-9.3 CPU-s instead of 10.0-11.6 (alternate runs, load 11-13). Only how often the
    collector runs changes (reference counting frees as before); a test of the collector sets
    what it needs (test_gc_pacing compares with the threshold it finds; test_alerts and
    test_textual_private collect explicitly). Restored after each test (issue 36 §7). Every test
    of tests/tui has it (tests/tui/conftest.py: snapshot tests run apps in sync tests), and every
    ``async def`` test elsewhere (the Pilot tests of tests/pgp)."""
    before = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, *before[1:])
    yield
    gc.set_threshold(*before)


@pytest.fixture
def dialogs_made_on_the_key(monkeypatch):
    """The app under test makes no dialog ready ahead (issue 35's ``DIALOGS_AHEAD_AFTER``, once a
    list is first painted: the dialogs' stylesheet parsed, every widget restyled, an empty
    compose dialog mounted hidden): each dialog is made on its key, as when the key comes before
    they are ready. Every TUI test has it unless it asks for ``dialogs_ahead``
    (tests/tui/conftest.py says why); the Pilot and snapshot tests of tests/pgp take it too."""
    from mailtriage.tui.controllers import reading

    monkeypatch.setattr(reading, "DIALOGS_AHEAD_AFTER", None)


@pytest.fixture(autouse=True)
def _secrets_of_one_test_only():
    """A worker runs many tests in one process: a password one test stored ("nope") must not
    be masked in the next test's messages."""
    yield
    forget_remembered_secrets()


@pytest.fixture(autouse=True, scope="session")
def _caches_of_this_session_only(tmp_path_factory):
    """Persisted caches (IMAP summaries, mbox indexes) go to a folder of this test session,
    never to the user's cache folder; child processes (CLI tests) inherit it."""
    folder = tmp_path_factory.mktemp("cache")
    old = os.environ.get("MAILTRIAGE_CACHE_DIR")
    os.environ["MAILTRIAGE_CACHE_DIR"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("MAILTRIAGE_CACHE_DIR", None)
    else:
        os.environ["MAILTRIAGE_CACHE_DIR"] = old


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache folder of this test's own (summary caches, mbox indexes), to look into."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("MAILTRIAGE_CACHE_DIR", str(folder))
    return folder


def pytest_unconfigure(config):
    """At the end of each process's session, pytest's unraisable-exception plugin collects the
    garbage five times over (``gc_collect_harder(5)``, the Trio project's number) to report a
    finalizer's exception: five full walks of everything alive, ~900,000 objects in a worker
    (the parsed source, Textual, the imports): 2.5 CPU-s a worker at load 19. Collected here
    until a round finds nothing (the same garbage freed, its finalizers run and reported as
    before: pytest's hook is still installed), then the survivors frozen, so pytest's five
    rounds walk only what was made since. This hook runs before pytest's cleanup; no test runs
    after it, so core/collector.py's frozen path is never taken by a test (issue 36 §7)."""
    for _ in range(5):
        if gc.collect() == 0:
            break
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    """Tests marked slow start first (stable otherwise): on scripts/test's few workers a
    run no longer ends with one worker alone on a state machine or a process race it met last.
    Under xdist they head each worker's share: ``--dist worksteal`` first hands the workers
    consecutive slices of this order, so with all of them in front one worker got every slow
    test and ran them one after the other while the others ran the quick ones (see
    ``_worksteal_slices``)."""
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    rest = [item for item in items if item.get_closest_marker("slow") is None]
    # An xdist worker's config has its workerinput (the environment's PYTEST_XDIST_WORKER_COUNT
    # would also reach the pytest a test starts: tests/core/test_suite_exit.py).
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    if workers < 2 or not slow:
        items[:] = slow + rest
        return
    shares: list[list] = [slow[k::workers] for k in range(workers)]
    ordered: list = []
    start = 0
    for k, size in enumerate(_worksteal_slices(len(items), workers)):
        take = size - len(shares[k])
        ordered += shares[k] + rest[start:start + take]
        start += max(take, 0)
    ordered += rest[start:]
    items[:] = ordered


def _worksteal_slices(total: int, workers: int) -> list[int]:
    """The sizes of the slices xdist's worksteal scheduler first sends (``check_schedule``:
    each idle worker in turn gets ``len(pending) // workers_left`` of the tests in order)."""
    sizes = []
    for left in range(workers, 0, -1):
        sizes.append(total // left)
        total -= sizes[-1]
    return sizes


# -- MAILTRIAGE_TEST_CPU=1: what each test costs in CPU, beside its wall time (issue 36 §8) --
# Wall time alone does not say whether a slow test computes (worth making cheaper) or waits
# (a server, a child process, a timer). The report lists the tests by CPU seconds: this
# process's and its finished children's (mypy, lint-imports, the CLI's), setup to teardown.
CPU_REPORT = bool(os.environ.get("MAILTRIAGE_TEST_CPU"))
_CPU_START = pytest.StashKey[tuple]()


def _cpu_seconds() -> tuple[float, float]:
    """This process's CPU seconds and its finished children's (a child counts when it is reaped,
    so a child a test left running is billed to the test that reaps it: the split shows it)."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time(), children.ru_utime + children.ru_stime


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if CPU_REPORT:
        item.stash[_CPU_START] = _cpu_seconds()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if CPU_REPORT and call.when == "teardown" and _CPU_START in item.stash:
        (own0, kids0), (own1, kids1) = item.stash[_CPU_START], _cpu_seconds()
        report = outcome.get_result()
        report.user_properties.append(("cpu_seconds", own1 - own0 + kids1 - kids0))
        report.user_properties.append(("cpu_children", kids1 - kids0))
        report.user_properties.append(("cpu_worker", f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
                                                     f"@{time.monotonic():.1f}"))


def pytest_terminal_summary(terminalreporter):
    if not CPU_REPORT:
        return
    rows = []
    for reports in terminalreporter.stats.values():
        for report in reports:
            props = dict(getattr(report, "user_properties", ()))
            cpu = props.get("cpu_seconds")
            if cpu is not None and getattr(report, "when", None) == "teardown":
                rows.append((cpu, props.get("cpu_children", 0.0), props.get("cpu_worker", ""), report.nodeid))
    rows.sort(reverse=True)
    total = sum(row[0] for row in rows)
    children = sum(row[1] for row in rows)
    terminalreporter.write_sep("=", f"CPU seconds per test (MAILTRIAGE_TEST_CPU): {total:.1f} s in {len(rows)} tests "
                                    f"({children:.1f} s of it in child processes)")
    for cpu, kids, _where, nodeid in rows[:40]:
        terminalreporter.write_line(f"{cpu:8.2f}s  {nodeid}" + (f"  ({kids:.2f}s children)" if kids >= 0.01 else ""))
    # MAILTRIAGE_TEST_CPU=some/file.tsv: every test's CPU seconds too, to add up per file or area:
    # seconds, of which in children, worker@its monotonic clock at the end (the order), test.
    if os.environ["MAILTRIAGE_TEST_CPU"].endswith(".tsv"):
        with open(os.environ["MAILTRIAGE_TEST_CPU"], "w", encoding="utf-8") as out:
            out.writelines(f"{cpu:.3f}\t{kids:.3f}\t{where}\t{nodeid}\n" for cpu, kids, where, nodeid in rows)
