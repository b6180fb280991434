"""Launch benchmarks of issue 15: the persisted caches, each beside a baseline from the same run.

    .venv/bin/python benchmarks/bench_launch.py mbox [--data-dir /dev/shm/mailtriage-bench] [--runs 5]
        [--compare OTHER_PYTHON]
    .venv/bin/python benchmarks/bench_launch.py imap [--messages 100000] [--dense 43000] [--runs 5] [--tui]
        [--compare OTHER_PYTHON]

Every figure is a fresh process (``python -c`` for the backend figures, the real app on a
pseudo-terminal for ``--tui``), timed from spawn to the answer: interpreter start-up and
imports included, with the compiled ``.pyc`` files a user's install has (a warm-up run
writes them first; ``PYTHONDONTWRITEBYTECODE`` is dropped from the children's
environment). Each backend figure also gives the process's peak memory (its maximum
resident set size). Caches go to a temporary ``MAILTRIAGE_CACHE_DIR`` of this run.

mbox (the 100,000-message archive of ``bench_mbox.py``, ~450 MB):
  * previous path: no persisted index (``persist_index: false``): a full scan every open;
  * first open: the scan plus saving the index;
  * second open: the persisted index (goal: at most 0.25 s, whole process);
  * after an append: one message appended since the last open (goal: at most 0.35 s);
  * ``--compare OTHER_PYTHON``: the first, second and appended opens of another checkout's
    virtualenv too (e.g. ``../main/.venv/bin/python``), alternated with ours in the same run,
    each with its own copy of the archive (``bench-append-compare.mbox``) and its own caches.

IMAP (a real Dovecot, the test fixture's, folders written as Maildir files):
  * a "sparse" folder of N messages, one every 10 minutes (≈ 4,300 in 30 days), and a
    "dense" one whose 30-day window holds ``--dense`` messages (43,000 by default);
  * for each: ``list_recent_threads`` first page (200 threads, what the app paints first)
    and the whole 30-day window, three ways: the previous path (no cache, the walk in
    windows of 500 messages), uncached (the window's start from ESEARCH, read in large
    FETCHes) and cached (the summary cache of a previous run, reconciled);
  * baseline, same run: a bare imapclient process that logs in, runs ``SORT (REVERSE DATE)``
    and fetches the 50 newest envelopes (no threading: the least a client can do).
  * ``--compare OTHER_PYTHON``: the same IMAP figures from another checkout's virtualenv
    (its ``python``, e.g. ``../main/.venv/bin/python``: the code before a change), run
    alternately with ours in the same run, each with its own cache folder.
  * ``--tui``: the app itself (``bench_tui.py``'s pseudo-terminal method) to the newest
    threads painted and to the whole window, with a cold and a warm cache, beside
    ``bench_tui.py``'s bare Textual + SORT app. The newest threads twice: the first paint
    (with a warm cache, the start screen the cold run kept: tui/first_paint.py) and live
    (the app's own frame); the whole window as the app itself draws it.
Goals: the whole dense window in at most 2 s, the process's peak memory under 150 MB; the
cached first page flat between the sparse and the dense folder (within 1.2x).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pwd
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import bench_mbox  # noqa: E402
import bench_tui  # noqa: E402
from bench_imap import LIST  # noqa: E402
from file_keyring import FileKeyring  # noqa: E402
from imapclient import IMAPClient  # noqa: E402
from tests.servers.dovecot import DovecotServer  # noqa: E402

PYTHON = sys.executable


CPU: dict[str, list[float]] = {}  # CPU seconds of each child, by label (less noisy than wall time on a loaded machine)
RSS: dict[str, list[float]] = {}  # peak resident set size of each child (MB), by label, when the child reports it


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def child_env(env: dict[str, str]) -> dict[str, str]:
    """A child's environment: ours plus ``env``, with bytecode written as in a user's install."""
    full = {**os.environ, **env}
    full.pop("PYTHONDONTWRITEBYTECODE", None)
    return full


def run_child(code: str, env: dict[str, str], label: str = "", python: str | None = None) -> tuple[float, dict]:
    """Spawn ``python -c code``; return the whole process's wall time and its JSON answer
    (its CPU time goes to ``CPU[label]``, and its peak RSS to ``RSS[label]`` when the
    answer carries ``maxrss_mb``)."""
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run([python or PYTHON, "-c", code], capture_output=True, text=True, env=child_env(env),
                          cwd=ROOT, check=False)
    elapsed = time.perf_counter() - started
    CPU.setdefault(label, []).append(_children_cpu() - cpu)
    if done.returncode != 0:
        raise SystemExit(f"child failed:\n{done.stderr[-3000:]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    if "maxrss_mb" in answer:
        RSS.setdefault(label, []).append(answer["maxrss_mb"])
    return elapsed, answer


def warm_up(python: str | None = None) -> None:
    """Import what the children import once, so their ``.pyc`` files exist (as pip writes
    them at install time) before anything is timed."""
    subprocess.run([python or PYTHON, "-c", "import mailtriage.backends.imap.source, mailtriage.backends.mbox, "
                    "mailtriage.cli.main, mailtriage.tui.app"], env=child_env({}), cwd=ROOT, check=True)


def summary(label: str, values: list[float], goal: float | None = None, extra: str = "", cpu: str = "",
            rss_goal: float | None = None) -> str:
    med = statistics.median(values)
    text = f"  {label:<44} {med:7.3f} s  (min {min(values):.3f}, max {max(values):.3f})"
    if CPU.get(cpu):
        text += f"  cpu {statistics.median(CPU[cpu]):.3f} s"
    if RSS.get(cpu):
        text += f"  peak RSS {max(RSS[cpu]):.0f} MB"
        if rss_goal is not None:
            text += f" (goal < {rss_goal:.0f} MB: {'met' if max(RSS[cpu]) < rss_goal else 'MISSED'})"
    if goal is not None:
        text += f"  goal <= {goal:.2f} s: {'met' if med <= goal else 'MISSED'}"
    return text + extra


# A child's own peak memory. Not ru_maxrss: Linux carries the parent's peak over fork and
# exec, so a child of this (large) benchmark process would report ours. VmHWM is the peak
# of the child's own address space.
PEAK_RSS = textwrap.dedent('''
    def peak_rss_mb():
        try:
            with open("/proc/self/status", encoding="ascii") as handle:
                for line in handle:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
''')


# -- mbox -------------------------------------------------------------------------------------

MBOX_CHILD = textwrap.dedent('''
    import json, resource, sys, time
    {peak}
    from datetime import datetime, timezone
    from mailtriage.backends.mbox import MboxSource
    path, since, persist = {path!r}, {since!r}, {persist!r}
    source = MboxSource("bench", {{"path": path, "persist_index": persist}})
    rows = source.list_recent_threads(None, datetime.fromtimestamp(since, tz=timezone.utc))
    print(json.dumps({{"threads": len(rows), "newest": rows[0].root_message_id if rows else None,
                       "maxrss_mb": peak_rss_mb()}}))
''')


def bench_mbox_part(data_dir: Path, runs: int, compare: str | None = None) -> None:
    path, last = bench_mbox.ensure_archive(data_dir)
    bench_mbox.warm_page_cache(path)
    since = last - 30 * 86400
    # Ours, and with --compare the other checkout's python, each with its own copy of the
    # archive to append to and its own caches (two index formats in one folder would rebuild
    # each other's files every run); the runs alternate between the two.
    pythons = {"": PYTHON, **({"compare: ": compare} if compare else {})}
    caches = {who: Path(tempfile.mkdtemp(prefix="mailtriage-bench-cache-")) for who in pythons}
    works = {who: data_dir / f"bench-append{'-compare' if who else ''}.mbox" for who in pythons}
    try:
        for who, python in pythons.items():
            shutil.copyfile(path, works[who])
            bench_mbox.warm_page_cache(works[who])
            warm_up(python)

        def child(who: str, persist: bool, label: str) -> tuple[float, dict]:
            return run_child(MBOX_CHILD.format(path=str(works[who]), since=since, persist=persist, peak=PEAK_RSS),
                             {"MAILTRIAGE_CACHE_DIR": str(caches[who])}, who + label, pythons[who])

        figures: dict[str, list[float]] = {}
        answers = set()
        for n in range(runs):
            t, answer = child("", False, "previous")
            figures.setdefault("previous", []).append(t)
            answers.add(answer["threads"])
            for who in pythons:
                shutil.rmtree(caches[who], ignore_errors=True)
                for label in ("first", "second"):
                    t, answer = child(who, True, label)
                    figures.setdefault(who + label, []).append(t)
                    answers.add(answer["threads"])
                with open(works[who], "ab") as handle:  # a new thread, appended as an MDA would
                    handle.write((f"From bench@example.org Mon Jan  1 00:00:00 2024\nFrom: New <new{n}@example.net>\n"
                                  f"To: {LIST}\nSubject: Appended {n}\nDate: {time.strftime('%a, %d %b %Y %H:%M:%S +0000', time.gmtime())}\n"
                                  f"Message-ID: <appended{n}@bench>\n\nNew report.\n\n").encode())
                t, answer = child(who, True, "appended")
                figures.setdefault(who + "appended", []).append(t)
                assert answer["newest"] == f"<appended{n}@bench>", answer
        print(f"mbox: {path.stat().st_size / 1e6:.0f} MB, {bench_mbox.MESSAGES:,} messages, 30-day window; "
              f"{runs} runs, fresh processes (whole process: spawn, imports, listing, exit); "
              f"load average {os.getloadavg()[0]:.2f}")
        print(summary("previous path (no persisted index)", figures["previous"], cpu="previous"))
        for who in pythons:
            print(summary(f"{who}first open (scan + save the index)", figures[who + "first"], cpu=who + "first"))
            print(summary(f"{who}second open (persisted index)", figures[who + "second"], 0.25, cpu=who + "second",
                          extra=f"  {statistics.median(figures['previous']) / statistics.median(figures[who + 'second']):.1f}x"
                                " faster than previous"))
            print(summary(f"{who}open after one appended message", figures[who + "appended"], 0.35,
                          cpu=who + "appended"))
        if compare:
            for label in ("second", "appended"):
                ratio = statistics.median(figures["compare: " + label]) / statistics.median(figures[label])
                print(f"  {label}: compare / ours (medians) {ratio:.2f}x")
        t, _ = run_child("import mailtriage.backends.mbox; print('{}')", {}, "imports")
        print(summary("for scale: python -c 'import mailtriage.backends.mbox'", [t], cpu="imports"))
        for who in pythons:
            files = {p.suffix: p.stat().st_size for p in (caches[who] / "mbox").iterdir() if not p.name.startswith(".")}
            print(f"  {who}index files after the last append: "
                  + ", ".join(f"{suffix} {size / 1e6:.3f} MB" for suffix, size in sorted(files.items())))
        print(f"  thread counts seen: {sorted(answers)}")
    finally:
        for who in pythons:
            shutil.rmtree(caches[who], ignore_errors=True)
            works[who].unlink(missing_ok=True)


# -- IMAP -------------------------------------------------------------------------------------

def hand_to_dovecot(server, user) -> None:
    """The user's freshly written Maildir given to Dovecot's user (when we run as root), then
    read once, headers only, so Dovecot's index and header cache are warm (as bench_imap does)."""
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        for path in (user.home, user.home / "Maildir"):
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
    client = IMAPClient("127.0.0.1", server.port, ssl=False, timeout=1800)  # indexing 100k files takes long
    client.login(user.name, user.password)
    with client:
        client.select_folder("INBOX", readonly=True)
        uids = client.sort(["REVERSE DATE"])
        for i in range(0, len(uids), 5000):
            client.fetch(uids[i:i + 5000], ["UID", "FLAGS", "INTERNALDATE", "RFC822.SIZE",
                                             "BODY.PEEK[HEADER.FIELDS (FROM TO CC SUBJECT DATE MESSAGE-ID "
                                             "IN-REPLY-TO REFERENCES LIST-ID LIST-POST)]"])


def write_maildir(maildir: Path, count: int, interval: float, seed: int = 1) -> None:
    """``count`` messages, one every ``interval`` seconds up to now (bench_imap's shapes:
    60% replies to recent threads, 90% to the security list)."""
    cur = maildir / "cur"
    for sub in ("cur", "new", "tmp"):
        (maildir / sub).mkdir(parents=True, exist_ok=True)
    rnd = random.Random(seed)
    now = time.time()
    start = now - count * interval
    open_threads: list[list[str]] = []
    owner = pwd.getpwnam("nobody") if os.geteuid() == 0 else None
    for i in range(count):
        ts = start + i * interval
        mid = f"<m{i}.{seed}@reporter.example.net>"
        if open_threads and rnd.random() < 0.6:
            thread = open_threads[-1 - rnd.randrange(min(50, len(open_threads)))]
            refs = f"References: {thread[0]} {thread[2]}\nIn-Reply-To: {thread[2]}\n"
            subject = "Re: " + thread[1]
            thread[2] = mid
        else:
            subject = f"Report {i}: overflow in component {i % 97}"
            open_threads.append([mid, subject, mid])
            if len(open_threads) > 200:
                del open_threads[:100]
            refs = ""
        to = LIST if rnd.random() < 0.9 else "someone@example.org"
        date = time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime(ts))
        data = (f"From: User {i % 300} <user{i % 300}@reporter.example.net>\nTo: {to}\nSubject: {subject}\n"
                f"Date: {date}\nMessage-ID: {mid}\n{refs}List-Id: <security.example.org>\nMIME-Version: 1.0\n"
                f"Content-Type: text/plain; charset=utf-8\n\nDetails of report {i}.\n" + "x" * 300 + "\n").encode()
        path = cur / f"{int(ts)}.M{i}P{os.getpid()}.bench,S={len(data)}:2,S"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
            if owner:
                os.fchown(fd, owner.pw_uid, owner.pw_gid)
        finally:
            os.close(fd)
        os.utime(path, (ts, ts))
    if owner:
        for dirpath in [maildir, *(maildir / s for s in ("cur", "new", "tmp"))]:
            os.chown(dirpath, owner.pw_uid, owner.pw_gid)


IMAP_CHILD = textwrap.dedent('''
    import json, os, resource, sys, time
    {peak}
    sys.path.insert(0, {bench!r})
    import keyring
    from file_keyring import FileKeyring
    keyring.set_keyring(FileKeyring())
    from datetime import datetime, timedelta, timezone
    from mailtriage.backends.imap import recent
    from mailtriage.backends.imap.account import ImapAccount
    from mailtriage.backends.imap.source import ImapSource
    mode, limit = {mode!r}, {limit!r}
    if mode == "previous":
        recent.window_start = lambda conn, since: None  # the walk in windows of 500, as before
    account = ImapAccount(id={account!r}, host="127.0.0.1", port={port!r}, security="plain", username={user!r},
                          timeout=600, cache_summaries=(mode == "cached"))
    source = ImapSource("bench", {{"list": {list!r}}}, account=account)
    since = datetime.now(timezone.utc) - timedelta(days=30)
    t0 = time.perf_counter()
    threads = source.list_recent_threads({list!r}, since, limit=limit)
    took = time.perf_counter() - t0
    print(json.dumps({{"threads": len(threads), "call": took,
                       "newest": threads[0].root_message_id if threads else None,
                       "maxrss_mb": peak_rss_mb()}}))
''')

SORT_CHILD = textwrap.dedent('''
    import json
    from imapclient import IMAPClient
    client = IMAPClient("127.0.0.1", {port!r}, ssl=False, timeout=600)
    client.login({user!r}, {password!r})
    client.select_folder("INBOX", readonly=True)
    uids = client.sort(["REVERSE DATE"])[:50]
    data = client.fetch(uids, ["ENVELOPE"])
    print(json.dumps({{"envelopes": len(data)}}))
''')


def bench_imap_part(messages: int, dense: int, runs: int, tui: bool, compare: str | None = None) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="mailtriage-bench-launch-"))
    server = DovecotServer().start()
    try:
        folders = {"sparse": (messages, 600.0), "dense": (messages, 30 * 86400 / dense)}
        users = {}
        for label, (count, interval) in folders.items():
            user = server.add_user(f"bench{label}")
            server.mail_root.mkdir(exist_ok=True)
            t0 = time.perf_counter()
            child = multiprocessing.get_context("fork").Process(target=write_maildir,
                                                                args=(user.home / "Maildir", count, interval))
            child.start()
            child.join()
            hand_to_dovecot(server, user)
            print(f"IMAP {label}: {count:,} messages, one every {interval:.0f} s, written and warmed in "
                  f"{time.perf_counter() - t0:.0f} s")
            users[label] = user
        keyring_file = tmp / "keyring.json"
        os.environ["MAILTRIAGE_BENCH_KEYRING"] = str(keyring_file)
        for label, user in users.items():
            FileKeyring().set_password("mailtriage", f"imap:bench-{label}", user.password)
        # Ours, and with --compare the other checkout's python, each with its own caches
        # (two cache formats in one folder would rebuild each other's files every run).
        pythons = {"": PYTHON, **({"compare: ": compare} if compare else {})}
        envs = {who: {"MAILTRIAGE_BENCH_KEYRING": str(keyring_file),
                      "MAILTRIAGE_CACHE_DIR": str(tmp / f"cache{'-compare' if who else ''}")} for who in pythons}

        def ours(label: str, mode: str, limit: int | None, who: str = "", tag: str = "") -> tuple[float, dict]:
            user = users[label]
            code = IMAP_CHILD.format(bench=str(HERE), mode=mode, limit=limit, account=f"bench-{label}",
                                     port=server.port, user=user.name, list=LIST, peak=PEAK_RSS)
            return run_child(code, envs[who], tag or f"{who}{label} {mode} {limit}", pythons[who])

        def sort_baseline(label: str) -> float:
            user = users[label]
            return run_child(SORT_CHILD.format(port=server.port, user=user.name, password=user.password), envs[""],
                             f"{label} sort")[0]

        results: dict[tuple, list[float]] = {}
        counts: dict[tuple, set] = {}
        for who, python in pythons.items():
            warm_up(python)
            for label in users:
                ours(label, "cached", None, who, tag="fill")  # fill the cache once (a previous run of the app)
        for _ in range(runs):
            for label in users:
                results.setdefault((label, "sort"), []).append(sort_baseline(label))
                for mode in ("previous", "uncached", "cached"):
                    for limit in (200, None):
                        for who in pythons:
                            took, answer = ours(label, mode, limit, who)
                            results.setdefault((who, label, mode, limit), []).append(took)
                            counts.setdefault((who, label, limit), set()).add(answer["threads"])
        print(f"IMAP list_recent_threads, 30-day window, median of {runs} fresh processes (whole process: "
              f"spawn, imports, login, listing; peak RSS: the largest of the runs); "
              f"load average {os.getloadavg()[0]:.2f}")
        for label in users:
            print(f" {label} folder ({folders[label][0]:,} messages; threads in the window: "
                  f"{sorted(counts[('', label, None)])}):")
            print(summary("bare imapclient: SORT + 50 envelopes (baseline)", results[(label, "sort")],
                          cpu=f"{label} sort"))
            for mode in ("previous", "uncached", "cached"):
                for who in pythons:
                    print(summary(f"{who}{mode}: first page (200 threads)", results[(who, label, mode, 200)],
                                  cpu=f"{who}{label} {mode} 200"))
                    dense_goal = label == "dense" and not who
                    print(summary(f"{who}{mode}: whole window", results[(who, label, mode, None)],
                                  2.0 if dense_goal else None, cpu=f"{who}{label} {mode} None",
                                  rss_goal=150 if dense_goal else None))
        for who in pythons:
            flat = (statistics.median(results[(who, "dense", "cached", 200)])
                    / statistics.median(results[(who, "sparse", "cached", 200)]))
            print(f" {who}cached first page, dense / sparse: {flat:.2f}x (goal <= 1.2x)")
        base = statistics.median(results[("sparse", "sort")])
        for label in users:
            print(f" {label}: cached first page / bare SORT baseline: "
                  f"{statistics.median(results[('', label, 'cached', 200)]) / base:.2f}x; "
                  f"cached whole window / previous whole window: "
                  f"{statistics.median(results[('', label, 'cached', None)]) / statistics.median(results[('', label, 'previous', None)]):.2f}x")
            if compare:
                ratios = ", ".join(
                    f"{mode} {'whole window' if limit is None else 'first page'} "
                    f"{statistics.median(results[('compare: ', label, mode, limit)]) / statistics.median(results[('', label, mode, limit)]):.2f}x"
                    for mode in ("uncached", "cached") for limit in (None, 200))
                print(f" {label}: ours faster than --compare by: {ratios}")
        if tui:
            bench_tui_part(server, users, tmp, runs, pythons)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def peak_rss_mb(pid: int) -> float | None:
    """The peak resident set size of a running process so far (Linux: VmHWM), in MB."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def bench_tui_part(server, users, tmp: Path, runs: int, pythons: dict[str, str] | None = None) -> None:
    """The app on a pseudo-terminal (bench_tui.py's method): cold and warm summary cache,
    with the app's peak memory once the whole window is listed (ours, and with --compare
    the other checkout's app, alternately)."""
    pythons = pythons or {"": PYTHON}
    baseline = tmp / "bare_imap.py"
    baseline.write_text(bench_tui.IMAP_BASELINE_APP, encoding="utf-8")
    for label, user in users.items():
        config, project = bench_tui.write_project(tmp, label, server.port, user)
        caches = {who: tmp / f"tui-cache-{label}{'-compare' if who else ''}" for who in pythons}
        figures: dict[str, list[float]] = {}
        memory: dict[str, list[float]] = {}

        def launch(kind: str, who: str) -> None:
            env = {"MAILTRIAGE_CONFIG_DIR": str(config), "MAILTRIAGE_CACHE_DIR": str(caches[who]),
                   "MAILTRIAGE_DATA_DIR": str(tmp / f"data-{label}{'-compare' if who else ''}"),
                   "MAILTRIAGE_BENCH_KEYRING": os.environ["MAILTRIAGE_BENCH_KEYRING"],
                   "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring", "PYTHONPATH": str(HERE)}
            term = bench_tui.Terminal([pythons[who], "-m", "mailtriage.cli.main", "--project", str(project)], env)
            try:
                first, live = term.read_painted(re.compile(rb"threads[^\x1b]{0,40} \xc2\xb7 via list_recent"),
                                                timeout=300)
                figures.setdefault(f"{who}{kind} newest", []).append(first - term.started)
                figures.setdefault(f"{who}{kind} live", []).append(live - term.started)
                # The whole window in what the app drew itself (a first paint may show an earlier one).
                figures.setdefault(f"{who}{kind} whole", []).append(term.read_until(
                    re.compile(rb"\d threads \xc2\xb7 via list_recent"), timeout=600, live=True) - term.started)
                peak = peak_rss_mb(term.proc.pid)
                if peak is not None:
                    memory.setdefault(f"{who}{kind}", []).append(peak)
                if kind == "cold":
                    term.wait_for_kept_frame(caches[who])  # the warm start's first paint
            finally:
                term.close()

        for _ in range(runs):
            term = bench_tui.Terminal([PYTHON, str(baseline), str(server.port), user.name, user.password])
            try:
                figures.setdefault("bare", []).append(
                    term.read_until(re.compile(rb"newest-envelopes-painted"), timeout=300) - term.started)
            finally:
                term.close()
            for who in pythons:
                shutil.rmtree(caches[who], ignore_errors=True)
                launch("cold", who)
                launch("warm", who)
        print(f" app on a pseudo-terminal, {label} folder, median of {runs} launches (peak RSS: the app's "
              f"largest, read once the whole window is listed):")
        print(summary("bare Textual + SORT, 50 envelopes (baseline)", figures["bare"]))
        for who in pythons:
            for kind in ("cold", "warm"):
                print(summary(f"{who}mailtriage, {kind} cache: newest threads, first paint",
                              figures[f"{who}{kind} newest"], 0.40 if kind == "warm" and not who else None))
                print(summary(f"{who}mailtriage, {kind} cache: newest threads, live", figures[f"{who}{kind} live"]))
                peak = memory.get(f"{who}{kind}")
                extra = ""
                if peak:
                    extra = f"  app peak RSS {max(peak):.0f} MB"
                    if not who:
                        extra += f" (goal < 150 MB: {'met' if max(peak) < 150 else 'MISSED'})"
                print(summary(f"{who}mailtriage, {kind} cache: whole window", figures[f"{who}{kind} whole"],
                              extra=extra))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=("mbox", "imap", "all"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data-dir", type=Path,
                        default=Path("/dev/shm/mailtriage-bench") if Path("/dev/shm").is_dir() else HERE / "data")
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--dense", type=int, default=43_000, help="messages in the dense folder's 30-day window")
    parser.add_argument("--tui", action="store_true", help="also launch the app on a pseudo-terminal")
    parser.add_argument("--compare", metavar="OTHER_PYTHON",
                        help="also run the mbox and IMAP figures with another checkout's virtualenv python "
                             "(same run, alternated)")
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # every child (the app on --tui too) as in a user's install
    if args.part in ("mbox", "all"):
        bench_mbox_part(args.data_dir, args.runs, args.compare)
    if args.part in ("imap", "all"):
        bench_imap_part(args.messages, args.dense, args.runs, args.tui, args.compare)
    return 0


if __name__ == "__main__":
    sys.exit(main())
