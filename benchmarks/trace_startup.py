"""Where a start's time goes: timestamps at each start-up step of ``mailtriage --demo`` (issue 33).

    .venv/bin/python benchmarks/trace_startup.py [--runs 3] [--no-key] [--compare DIR] [--no-first-paint]
        [--profile FILE] [--server FILE [--cold] [--round-trip MS] [--first-page-wait SECONDS]]   (TRACE_STARTUP_DETAIL=1: also Textual's layouts, renders, CSS passes and frames)

``--cold`` (with ``--server``): each run a cold start instead (the cache removed before it: no summary
cache, no kept frame), Enter typed when the newest subject is first on the terminal; the child's frames
(head start, first page, read ahead, window) and the app's first rows are marked too.

Each run is a fresh warm start on a pseudo-terminal (bench_tui.Terminal, as bench_startup.py
plays it: one unmeasured warm-up start first keeps the first frame). Enter is typed the moment
the thread list is first on the terminal (the kept frame), as bench_startup.py's "first key
acts" does, unless ``--no-key``. The app runs under a wrapper that replays
tui/startup.launch step by step and wraps a few methods of the app (none of its behaviour
changes), writing for each step the time since the spawn and the UI thread's CPU time so far
(``time.thread_time``: what the load does not inflate). The steps, per run, then their medians:

  python up, child forked, first paint, textual imported, app imported, app built, app mounted,
  main screen composed, main screen ready (keys released), first key (Enter) dispatched,
  reader shows the thread, the body's frame written (to the terminal), and from the terminal's side: the first frame, the app live
  (its own first frame), the body on screen.
  Beside them, each process's work that competes for the two cores while the Enter waits: the child's
  head start (its project opening and summary cache), its sign-in and its read ahead, the app's own
  project opening and first listing (their CPU column is the thread's that ran them).

Tried with it and removed, 2026-12-03: holding the app's repaints (Textual's batch_update) from
the release of keys typed on the kept frame until they had gone through the app's queues, so
that the first live frame would already show what they did. It did not pay: the layouts Textual
runs meanwhile still rendered a whole frame that the batch then dropped, and the whole screen
was painted again at the end; UI CPU from the keys released to the body's frame 0.17-0.18 s
with the hold against 0.10 s without (two alternations of 3 runs, load 2.6-4.7).

Kept, 2026-12-03 (branch firstkey2), each against 612ee71 (``--compare``), demo, warm:
- The held Enter opens the first row at the keys' release (tui/first_screen.py open_held_enter), before
  Textual lays out the first live frame: the list's own frame, then the body a frame later, was ~0.08 s
  of the UI thread. --runs 3, load 6.4-5.2: UI CPU from the main screen up to the body's frame written
  0.060 s (before 0.142 s).
- The garbage collector held from the fork until the main screen is up (tui/startup.py): collections on
  the UI thread before the main screen (gc callbacks, one start each, load 5-7.7) 38.1 ms -> 4.3 ms.
- Both, --runs 5, load 3.6-5.6: UI CPU at the body's frame written 0.594 s (before 0.660 s). These UI
  CPU figures move by +-30 % between runs of the same code at this load (the machine's other work).
  Again at load 11, --runs 5: main screen up 0.492 s (before 0.559), the body's frame written 0.549 s
  (before 0.715), body on the terminal 2.372 s wall (before 2.474). (bench_startup.py's UI CPU "until it
  acted", read when the body is seen on the terminal, also counts what the UI thread did after that frame
  until the benchmark looked: equal medians there, 0.760 s against 0.754 s at load 11-14.)
Looked at and left: the CSS parse (6 parses, ~21 ms of UI CPU, Textual parses every start: a disk cache
would go through Textual's private Stylesheet); the dataclasses built at import (~23 ms of ours, 17 ms of
Textual's); the demo workspace's copy (~10 ms of CPU); Textual's import (~0.2 s, most of what is left,
with its first layout and paint).
Kept, 2026-12-03 (branch first6), against ee086a7 (``--compare``), demo, warm, --runs 5, load 23 -> 18.6:
- The app's command line (no command word) parsed by the global options alone (cli/main.py _app_args):
  building the ~30 subcommands' parsers was 11-18 ms of the UI thread before the child forks (0.3-0.4 ms
  now). UI CPU at the child forked 0.124 s (before 0.138 s); at the body's frame written 0.536 s (before
  0.573 s, within this load's spread); body on the terminal 3.39 s wall (before 3.46 s).
Looked at the same day and left (UI CPU, one warm demo start each, measured with thread_time): the CSS
parsed before the keys are released ~35 ms (app.tcss ~10 ms, Textual's App/Screen/Widget/Footer defaults
the rest); the dialogs' CSS ahead (tui/dialogs/ahead.py) re-parses every stylesheet from scratch after the
app is live (Stylesheet.reparse starts with an empty parse cache: ~25 ms, then ~20 ms for the dialogs'
widgets); unpickling the head start on the UI thread imports application.project, backends.registry,
backends.security_cc and resolution (its ListEntry, CcResolution and Dispatch: 10-14 ms before the main
screen); the collector before the fork (12 young collections in start-up's import, ~4 ms); the frozen
dataclasses of backends/contract.py (~11 ms of the import).
Looked at, 2026-12-03 (branch first7), demo, warm, --runs 3 against a163c0b, load 9-10 (UI CPU per step,
this checkout): python up 0.035 s; the command's imports to the fork +0.117 s (stdlib pathlib, typing,
dataclasses, datetime, tomllib, platformdirs, argparse, pickle and core.settings: all needed again later, so
moving them saves nothing); Textual's import +0.197 s; the app's import +0.067 s; built and mounted +0.035 s;
main screen ready +0.051 s; the held Enter's body frame +0.064 s (0.58 s in all, base 0.595 s). Measured
and left: unpickling the head start is 13-15 ms of the UI thread (thread_time, 3 runs), 1.1-1.7 ms of it the
loads; the rest imports application.project, backends.registry, backends.resolution (4-6 ms: its frozen
dataclasses) and backends.security_cc (2-4 ms), which this process needs only when its own session opens,
after the key: a stand-in for ListEntry, CcResolution and Resolution on the first frame would move ~12 ms
past the key (not done: those objects stay in the panes). CSS parsed before the main screen is ready, one
headless demo start: 24 ms in 94 parses, app.tcss 9.5 ms of it (its first parse also compiles Textual's
tokenizer patterns; 4.7 ms warm), the help and first-run rules ~14 % of app.tcss, the two themes not shown
1.2 ms: under 3 ms to gain by parsing less.
2026-12-04 (branch first8), demo, warm. Kept: the main screen's first show restyles nothing (MainScreen.on_event
turns refresh_styles off for its first ScreenResume): Textual restyled its 30 widgets again just after each was
styled at its mount, 9.4-9.7 ms of UI CPU (thread_time around Stylesheet.update_nodes, headless, load ~16).
--runs 5 --compare b67b714, load 15.6-18.3: UI CPU from the main screen ready to the body's frame written
0.056 s (before 0.068 s); at the body's frame 0.472 s (before 0.539 s, but the steps before the change, the
same code, already differ by ~10 % between the two checkouts at that load).
Measured and left (direction A of issue 33: pay less of Textual's start). UI thread CPU per module imported
(exclusive, medians of 5 fresh imports in start-up's order, load 16): 326 ms in 405 modules. ``import
textual.app`` alone loads every Textual and Rich module the app loads but textual.widgets._footer (0.5 ms):
the command palette, Input, OptionList, Select, Tree, rich.console, rich.table come with textual.app
itself, so no lazy import of ours avoids any of them (only patching Textual would). Ours ~80 ms (tui 51,
backends 14, core 12, application 3, cli 2), 39 ms of it the dataclass decorator (119 classes; the 13
frozen ones of backends/contract.py 11 ms, which the head start's rows need); each module of ours loaded
before the key is one the first screen's classes import, and of what the command loads before the fork
only argparse and cli.* (~5 ms, which read the command line) are not needed again after it. The first
compose builds 37 widgets, 8 hidden (the folded tracker pane's 5, the banner, the alerts, the publish mark):
mounting the tracker pane after the key would save some 5 ms, against every path that queries it. The
dialogs' and the console's CSS load after the key already. So A's whole reach is tens of ms of the
~0.47-0.59 s the UI thread spends before the key acts; Textual's import, first layout and full render
are most of it (a bare Textual app with a 41-row table needs ~0.34-0.43 s of CPU to go live).
Direction B (the kept frame acts on j/k/Enter itself before Textual is live) not built: the body's frame
differs from the kept frame in more than the reading pane's lines (the focus moves to the reader: both
panes' borders, the list's cursor style and the footer's keys change; the reader's border title and
status line), and a kept frame may hold no body, so the part before Textual would have to draw all of it
as Textual lays out, wraps and styles it, then hand the cursor and the open thread over: not exact by
construction, and not small.
Same day, the benchmarks beside b67b714 (load 15.8-18.7): bench_startup.py --runs 5, first key acts 2.78 s
(before 2.88 s), UI thread CPU until it acted 0.597 s (before 0.640 s), 0 of 5 keys lost in each;
bench_read_newest.py --phases firstkey --runs 5 on the 100k folder, 3.26 s (before 3.10 s, aerc 2.93 s), UI
CPU 0.602 s (before 0.591 s): ~10 ms does not show at that load. Looked at on the 100k folder: the child's
project opening is mostly importing the IMAP stack (~105 ms of its CPU at load 17; imapclient 10 ms, our
backends 50 ms); its sign-in's LIST "" "*" before the SELECT makes Dovecot's SELECT take 0.17-0.46 s (1-3 ms
without it), but reordering gains nothing: the same work (its read of the folder's 4.7 MB uidlist) then comes
with the first body FETCH (0.28-0.37 s), which the read ahead needs anyway. So the start's CPU on two cores
(the UI thread ~0.6 s, the child ~0.25 s, Dovecot's uidlist read, the terminal's reader) is what the 100k
first key waits for beyond the demo's.
2026-12-04 (branch audit36): a cold start's wait for the child's first page (tui/first_screen.py,
FIRST_PAGE_WAIT = 0.1 s) was a select() on the child's pipe on the UI thread as the main screen mounted.
``--server --cold --first-page-wait 0`` on a 20k Dovecot folder, through a loopback proxy that delays each
direction (/tmp, not kept: a remote server's round trip), load 3-5, seconds, medians:
  | round trip | UI thread waited (0.1 s) | page in the first frame | newest subject: 0.1 s / 0 s |
  | none       | 0-1 ms, 5 of 5           | 5 of 5 / 5 of 5         | 0.583 / 0.489 (the same code path) |
  | 16 ms      | 10-103 ms, 16 of 16      | 8 of 16 / 0 of 16       | 0.535 / 0.614 (9 runs each)        |
  | 50 ms      | 100-101 ms, 7 of 7       | 0 of 7 / 0 of 7         | 1.000 / 0.971                      |
  So the UI blocked up to 0.1 s in every start against a server that is not on this machine, yet dropping
  the wait cost ~0.08 s at 16 ms: the app's own opening, started at mount, held the interpreter when the page
  came (its rows came ~0.1 s after the page was sent, against ~0.03 s). Tried and reverted: the wait off the
  UI thread (the first frame drawn at once, the page taken on the event loop when the pipe is readable and
  shown then, the opening after it or at FIRST_PAGE_WAIT). ``--compare`` the base at load 1.9-3.3, 16 ms:
  the newest subject no later (0.445 s against 0.417 s this checkout first; 0.409 s against 0.475 s the base
  first), but the body 0.13 s later in both orders (0.608 / 0.479 s; 0.670 / 0.715 s with the first four quiet
  runs 0.48-0.64 s against 0.46-0.47 s): the opening, no longer behind the first frame's paint, ended before
  the child's read ahead came (received 0.57-0.61 s against 0.43-0.45 s), the listing stops waiting for a
  read ahead once the project is open, and the Enter read the thread itself. 50 ms: equal (body 0.900 /
  0.890 s). So the UI's wait is the price of the read ahead's race with the opening; removing it needs the
  read ahead served after the opening too (until the listing is whole, as tui/head_start.py says it is),
  then this measured again. bench_startup.py --runs 5 --compare (the demo: a warm head start, not this path),
  load 11-12: first key acts 1.044 s (base 1.061 s).
2026-12-04 (branch first12), built as audit36 asked. The read ahead after a cold first page is received on a
thread of its own as soon as it comes (ForkedHeadStart.next_listing starts it), before or after the app's own
opening, and offered to the reader until the listing is whole. The main screen takes the page only when it is
in the pipe at its mount (select with no timeout); else the first frame is drawn without it, the event loop
watches the pipe (loop.add_reader) and shows the page when it comes, and the app's opening starts after that
frame, or OPENING_WAITS_FOR_PAGE after the mount (a timer). FIRST_PAGE_WAIT is gone. ``--round-trip MS`` is
the proxy (benchmarks/delay_proxy.py). 20k Dovecot folder, ``--cold``, this checkout and /work/base
alternated, seconds from the spawn, medians (paired: the median of this minus base, run by run):
  | round trip, runs, load | newest subject          | Enter dispatched        | body on screen          |
  | 50 ms, 12, 9 (wait .1) | 1.122 / 1.195 (-0.168)  | 1.133 / 1.218 (-0.171)  | 1.160 / 1.338 (-0.165)  |
  | 50 ms, same (wait .4)  | 0.920 / 1.195 (-0.175)  | 0.928 / 1.218 (-0.164)  | 1.221 / 1.338 (-0.038)  |
  | 16 ms, 10, 10-17 (.1)  | 2.513 / 2.924 (-0.168)  | 2.589 / 3.028 (-0.169)  | 2.998 / 3.365 (-0.118)  |
  | 16 ms, 15, 10->6.7 (.1)| 0.967 / 0.866 (+0.077)  | 0.989 / 0.879 (+0.064)  | 1.133 / 1.044 (-0.125)  |
  | 0 ms, 10, 12.5 (.1)    | 2.246 / 2.233 (-0.205)  | 2.327 / 2.276 (-0.160)  | 2.515 / 2.428 (-0.158)  |
  | 50 ms, 8, 17.5 (.4)    | 2.427 / 2.351 (+0.087)  | 2.485 / 2.426 (+0.018)  | 2.856 / 3.028 (-0.260)  |
  | 16 ms, 8, 18.6 (.4)    | 2.439 / 2.272 (-0.005)  | 2.536 / 2.370 (+0.029)  | 2.823 / 2.804 (-0.019)  |
  At load 10-17 the app mounts late and the page is in the pipe at the mount in most starts of both (the same
  path then), so those rows mostly measure the load. What the change does, seen in each start's steps: the
  read ahead received 0.01-0.04 s (median) after the child sent it, against 0.03-0.19 s, up to 0.5-0.76 s,
  when the base's listing was in its sources check; the UI thread no longer waits at the mount (the base:
  100-113 ms whenever the page had not come). The cost: a page that comes just after the mount waits for the
  empty first frame's layout and render (~50-80 ms of UI CPU at this load), then its rows' layout (~15-25 ms);
  the base's wait put it in that first frame. At 50 ms the page came 0.1-0.33 s after the mount: with the
  opening's timer at 0.1 s the opening started first in 12 of 12 and the page was on screen 0.30 s after it
  was sent (base 0.28 s: the listing's worker beside the opening's imports, audit36's finding); at 0.4 s the
  event loop took it first in 12 of 12, on screen 0.03 s after it was sent. The last two rows (the code as
  kept, load 15-18: ~2x the walls of load 9) are even, run by run (ours earlier in 3-5 of 8 on each figure).
  Then the machine went quiet (18:05-18:12 UTC), three checkouts alternated: the code as kept (0.4 s), the read
  ahead's thread alone (FIRST_PAGE_WAIT back on the UI thread: "thread only") and the base:
  | round trip, runs, load | newest subject                    | Enter dispatched    | body on screen      |
  | 16 ms, 14, 2.3         | 0.495 (-0.049, 11/14) / 0.515     | 0.498 / 0.525       | 0.597 (-0.010) / 0.595 |
  |   thread only          | 0.523 (+0.015, 5/14)              | 0.541               | 0.588 (-0.008)      |
  | 16 ms, 14, 2.5-3.9     | 0.593 (-0.038, 8/14) / 0.593      | 0.595 / 0.621       | 0.709 (-0.032) / 0.711 |
  |   thread only          | 0.626 (+0.024, 6/14)              | 0.640               | 0.719 (+0.014)      |
  | 50 ms, 10, 2.6-3.9     | 0.620 (-0.268, 10/10) / 0.883     | 0.623 / 0.884       | 0.889 (-0.043) / 0.907 |
  | 0 ms, 10, 0.9-2.6      | 0.406 (-0.033) / 0.518            | 0.410 / 0.528       | 0.443 (-0.027) / 0.547 |
  (kept (paired median, runs earlier) / base.) So kept: no figure later than the base's in these runs (the
  body's median +2 ms in one, its paired median -10 ms), the subject and the first key 0.03-0.27 s earlier;
  the thread alone is even with the base (the Enter rarely beats the read ahead on this folder). The page on
  screen 0.019 s after the child sent it (the event loop, before the opening), base 0.061 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_startup import PAINTED, READ, demo_start  # noqa: E402 (the benchmark folder is not a package on the path)
from bench_tui import Terminal  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

WRAPPER = r'''
import functools, os, sys, time
_log = open(os.environ["TRACE_STARTUP_FILE"], "a")
_profile = None
if os.environ.get("TRACE_STARTUP_PROFILE"):
    import cProfile
    _profile = cProfile.Profile()
def mark(step):
    if _profile is not None and step == os.environ.get("TRACE_STARTUP_PROFILE_FROM", "first paint"):
        _profile.enable()
    if _profile is not None and step in ("body's frame written", "keys released" if os.environ.get("TRACE_STARTUP_NO_KEY") else "-"):
        _profile.disable()
        _profile.dump_stats(os.environ["TRACE_STARTUP_PROFILE"])
    _log.write(f"{time.perf_counter():.6f} {time.thread_time():.6f} {step}\n"); _log.flush()
mark("python up")
from mailtriage.tui import startup
from mailtriage.tui.head_start import ForkedHeadStart
from mailtriage.core.settings import settings_file

# What the child does (patched before the fork) and the app's own project opening (below): what
# competes for the two cores while the Enter waits for the child's read ahead.
from mailtriage.tui import head_start as head_start_module, head_start_sign_in
_parent = os.getpid()
def around(owner, name, step):
    original = getattr(owner, name)
    @functools.wraps(original)
    def wrapped(*a, **k):
        who = "app" if os.getpid() == _parent else "child"
        mark(f"{who}: {step} starts")
        try:
            return original(*a, **k)
        finally:
            mark(f"{who}: {step} ends")
    setattr(owner, name, wrapped)
around(head_start_module, "read_head_start", "head start (project opening, summary cache)")
around(head_start_sign_in.SignIn, "_run", "sign-in (connect, login, SELECT)")
around(head_start_module, "_read_ahead", "read ahead")
around(head_start_module, "_list_first", "cold listing (first page, read ahead, window)")
_sent = []
_original_send = head_start_module._send
def _send(fd, value):
    _original_send(fd, value)
    _sent.append(1)
    mark(f"child: frame #{len(_sent)} sent ({type(value).__name__})")
head_start_module._send = _send

def launch(folder, *, demo):
    head_start = ForkedHeadStart.start(folder, demo=demo)
    held = startup.hold_collector() if hasattr(startup, "hold_collector") else None
    mark("child forked")
    shown = startup.first_paint.show(folder, demo=demo, settings_path=settings_file(), fd=sys.__stderr__.fileno())
    mark("first paint")
    import textual.app
    mark("textual imported")
    from mailtriage.tui import app as appmod
    mark("app imported")
    from mailtriage.tui.screens.main import MainScreen
    from mailtriage.tui.controllers import listing as listing_module
    from mailtriage.tui.startup_keys import StartupKeys
    def wrap(cls, name, step, once=True):
        original = getattr(cls, name)
        done = []
        @functools.wraps(original)
        def wrapped(self, *a, **k):
            result = original(self, *a, **k)
            if not (once and done):
                done.append(1)
                mark(step)
            return result
        setattr(cls, name, wrapped)
    wrap(appmod.MailTriageApp, "__init__", "app built")
    wrap(appmod.MailTriageApp, "on_mount", "app mounted")
    wrap(MainScreen, "on_mount", "main screen ready")
    wrap(appmod.MailTriageApp, "release_keys", "keys released")
    original_event = StartupKeys.on_event
    seen = []
    @functools.wraps(original_event)
    async def on_event(self, event):
        from textual import events
        if isinstance(event, events.Key) and event.key == "enter" and not seen and self._held_keys is None:
            seen.append(1)
            mark("Enter dispatched")
        return await original_event(self, event)
    StartupKeys.on_event = on_event
    from mailtriage.tui.panes.reader import ReaderPane
    wrap(ReaderPane, "show_thread", "reader shows the thread")
    from mailtriage.tui.controllers import reading  # the reading component (a mixin of MainScreen before)
    wrap(getattr(reading, "Reading", None) or reading.ReadingController, "open_thread", "Enter opens the thread")
    wrap(ForkedHeadStart, "_keep_read", "read ahead received (a worker)")
    wrap(ForkedHeadStart, "next_listing", "app: child's first listing part received (a worker)")
    wrap(getattr(listing_module, "Listing", MainScreen), "loaded", "app: first rows loaded (UI)")
    loaded_rows = getattr(listing_module, "Listing", MainScreen).loaded
    @functools.wraps(loaded_rows)
    def loaded_whole(self, message):
        result = loaded_rows(self, message)
        if not message.partial:
            mark("app: the whole window shown (UI)")
        return result
    getattr(listing_module, "Listing", MainScreen).loaded = loaded_whole
    from mailtriage.application import Service
    around(Service, "open", "project opening")  # the app's own (the child's is in its head start)
    from mailtriage.tui.controllers import listing  # the listing component (a mixin of MainScreen before)
    wrap(getattr(listing, "Listing", MainScreen), "start_first_listing", "app: first listing starts")
    from mailtriage.tui import first_screen as first_screen_module
    from mailtriage.tui.first_screen import FirstScreen
    if os.environ.get("TRACE_FIRST_PAGE_WAIT"):  # --first-page-wait: the opening's wait (before: the UI thread's)
        name = "OPENING_WAITS_FOR_PAGE" if hasattr(first_screen_module, "OPENING_WAITS_FOR_PAGE") else "FIRST_PAGE_WAIT"
        setattr(first_screen_module, name, float(os.environ["TRACE_FIRST_PAGE_WAIT"]))
    if hasattr(FirstScreen, "first_page_for_first_frame"):
        original_page = FirstScreen.first_page_for_first_frame
        @functools.wraps(original_page)
        def first_page_for_first_frame(self):
            before = time.perf_counter()
            page = original_page(self)
            if self._listing_child is not None or page is not None:
                mark(f"app: first page {'in' if page is not None else 'not in'} the first frame "
                     f"(the UI thread waited {(time.perf_counter() - before) * 1000:.0f} ms)")
            return page
        FirstScreen.first_page_for_first_frame = first_page_for_first_frame
    if hasattr(FirstScreen, "_watch_for_first_page"):  # first12: the page taken by the event loop, after the first frame
        wrap(FirstScreen, "_watch_for_first_page", "app: the event loop watches for the first page")
        wrap(FirstScreen, "_stop_watching", "app: the watch ends (the page came, or the opening's timer)")
        wrap(FirstScreen, "_take_first_page", "app: first page taken (UI)")
    if hasattr(FirstScreen, "open_held_enter"):  # the held Enter acted at its release (not posted)
        original_open = FirstScreen.open_held_enter
        @functools.wraps(original_open)
        def open_held_enter(self, key):
            acted = original_open(self, key)
            if acted:
                mark("Enter dispatched")
            return acted
        FirstScreen.open_held_enter = open_held_enter
    # The first frame written after the reader showed the thread: what the UI thread had spent
    # by the body's frame (Textual's private _display: a benchmark's detail only).
    shown_display = appmod.MailTriageApp._display
    body_frame = []
    @functools.wraps(shown_display)
    def display_body(self, screen, renderable):
        result = shown_display(self, screen, renderable)
        if renderable is not None and not body_frame and getattr(screen, "reader", None) is not None \
                and screen.reader.thread is not None:
            body_frame.append(1)
            mark("body's frame written")
        return result
    appmod.MailTriageApp._display = display_body
    if os.environ.get("TRACE_STARTUP_DETAIL"):  # Textual's own steps (private names: a benchmark's detail only)
        from textual.screen import Screen
        from textual.css.stylesheet import Stylesheet
        from textual._compositor import Compositor
        counts = {}
        def each(cls, name, step):
            original = getattr(cls, name)
            @functools.wraps(original)
            def wrapped(self, *a, **k):
                before = time.thread_time()
                result = original(self, *a, **k)
                counts[step] = counts.get(step, 0) + 1
                mark(f"{step} #{counts[step]} ({(time.thread_time() - before) * 1000:.0f} ms)")
                return result
            setattr(cls, name, wrapped)
        each(Screen, "_refresh_layout", "layout")
        each(Stylesheet, "parse", "css parse")
        each(Stylesheet, "update_nodes", "css update nodes")
        each(Compositor, "render_full_update", "full render")
        each(Compositor, "render_partial_update", "partial render")
        wrap(MainScreen, "compose", "main screen compose")
        original_display = appmod.MailTriageApp._display
        displays = []
        @functools.wraps(original_display)
        def display(self, screen, renderable):
            if renderable is not None:
                displays.append(1)
                held = " (held: a batch)" if self._batch_count else ""
                mark(f"frame #{len(displays)} to the terminal{held}")
            return original_display(self, screen, renderable)
        appmod.MailTriageApp._display = display
    if held is None:  # the code before start-up held the collector (--compare)
        return appmod.run_app(folder, demo=demo, head_start=head_start, first_paint=shown)
    return appmod.run_app(folder, demo=demo, head_start=head_start, first_paint=shown, collector_held=held)

startup.launch = launch
sys.argv = ["mailtriage", *os.environ.get("TRACE_STARTUP_ARGS", "--demo").split("\t")]
from mailtriage.cli.main import main
sys.exit(main())
'''


def run_once(workdir: Path, trace: Path, *, key: bool, profile: Path | None = None,
             python: str = sys.executable, cwd: Path = ROOT, imap: dict[str, str] | None = None,
             keep: bool = False, cold: re.Pattern | None = None) -> dict[str, tuple[float, float]]:
    """One start's steps. ``cold``: no cache (removed first), Enter typed when this pattern (the
    newest subject) is first on the terminal."""
    env = {"MAILTRIAGE_CONFIG_DIR": str(workdir / "config"), "MAILTRIAGE_DEMO_DIR": str(workdir / "demo-workspace"),
           "MAILTRIAGE_CACHE_DIR": str(workdir / "cache"), "TRACE_STARTUP_FILE": str(trace), **(imap or {})}
    trace.write_text("")
    if cold is not None:
        shutil.rmtree(workdir / "cache", ignore_errors=True)
    if profile is not None:
        env["TRACE_STARTUP_PROFILE"] = str(profile)
        if not key:
            env["TRACE_STARTUP_NO_KEY"] = "1"
    term = Terminal([python, "-c", WRAPPER], env, cwd=cwd)
    steps: dict[str, tuple[float, float]] = {}
    try:
        if keep:
            term.read_until(PAINTED, live=True, timeout=120)
            if not term.wait_for_kept_frame(workdir / "cache", timeout=60):
                print(f"  (warm-up: the app kept no start screen in {workdir / 'cache'}; no first paint follows)")
            return steps
        if cold is not None:
            steps["terminal: newest subject"] = (term.read_until(cold, timeout=120) - term.started, 0.0)
        else:
            steps["terminal: first frame"] = (term.read_until(PAINTED, timeout=120) - term.started, 0.0)
        if key:
            term.send(b"\r")
            steps["terminal: body on screen"] = (term.read_until(READ, timeout=15, live=True) - term.started, 0.0)
        else:
            steps["terminal: live frame"] = (term.read_until(PAINTED, live=True) - term.started, 0.0)
    finally:
        term.close()
    for line in trace.read_text().splitlines():
        at, cpu, step = line.split(" ", 2)
        steps.setdefault(step, (float(at) - term.started, float(cpu)))
    return steps


def imap_project(tmp: Path, server: Path, port: int | None = None) -> dict[str, str]:
    """The environment of a start on the folder ``bench_read_newest.py --serve`` keeps (its config,
    project and password, as that benchmark writes them); ``port``: reached there instead (a proxy's)."""
    import json
    from types import SimpleNamespace

    sys.path.insert(0, str(ROOT))
    from bench_tui import write_project
    from file_keyring import FileKeyring

    reached = json.loads(server.read_text(encoding="utf-8"))
    user = SimpleNamespace(name=reached["user"], password=reached["password"])
    keyring_file = tmp / "keyring.json"
    os.environ["MAILTRIAGE_BENCH_KEYRING"] = str(keyring_file)
    FileKeyring().set_password("mailtriage", "imap:bench-read", user.password)
    config, project = write_project(tmp, "read", reached["port"] if port is None else port, user)
    return {"MAILTRIAGE_CONFIG_DIR": str(config), "MAILTRIAGE_DATA_DIR": str(tmp / "data"),
            "MAILTRIAGE_BENCH_KEYRING": str(keyring_file), "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring",
            "PYTHONPATH": str(ROOT / "benchmarks"), "TRACE_STARTUP_ARGS": f"--project\t{project}"}


def report(runs: list[dict[str, tuple[float, float]]]) -> None:
    steps = sorted({step for run in runs for step in run},
                   key=lambda step: statistics.median(run[step][0] for run in runs if step in run))
    print(f"  {'step':<40} {'wall since spawn (median, runs)':<44} UI thread CPU")
    for step in steps:
        walls = [run[step][0] for run in runs if step in run]
        cpus = [run[step][1] for run in runs if step in run]
        print(f"  {step:<40} {statistics.median(walls):6.3f} s  ({', '.join(f'{w:.3f}' for w in walls)})"
              f"{'':<4} {statistics.median(cpus):6.3f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-key", action="store_true", help="type no Enter: time the live frame instead")
    parser.add_argument("--compare", type=Path, metavar="DIR",
                        help="another checkout with its own .venv (e.g. the code before), alternated in the same run")
    parser.add_argument("--profile", type=Path, metavar="FILE",
                        help="cProfile the UI thread from the first paint (TRACE_STARTUP_PROFILE_FROM: another "
                        "step) to the body's frame written (the last run's, to FILE)")
    parser.add_argument("--no-first-paint", action="store_true", help="[settings] first_paint = false")
    parser.add_argument("--server", type=Path, metavar="FILE",
                        help="start on the IMAP folder that bench_read_newest.py --serve FILE keeps (e.g. its "
                        "100k Dovecot INBOX), not on the demo")
    parser.add_argument("--cold", action="store_true", help="with --server: cold starts (no summary cache, no "
                        "kept frame: the cache removed before each), Enter typed when the newest subject shows")
    parser.add_argument("--first-page-wait", type=float, metavar="SECONDS",
                        help="with --cold: this checkout once more, alternated, with tui/first_screen.py's "
                        "OPENING_WAITS_FOR_PAGE (how long the app's own opening waits, on a timer, for the child's "
                        "first page; before first12 FIRST_PAGE_WAIT, the main screen's wait for it) set so")
    parser.add_argument("--round-trip", type=float, metavar="MS",
                        help="with --server: reach it through a loopback proxy that delays each direction by half "
                        "of this (benchmarks/delay_proxy.py: a server across a network)")
    args = parser.parse_args()
    cold = None
    if args.cold:
        if args.server is None:
            parser.error("--cold needs --server")
        cold = re.compile(re.escape(json.loads(args.server.read_text(encoding="utf-8"))["subject"].encode()))
    print(f"load average: {os.getloadavg()[0]:.1f}")
    subjects = {"this checkout": (sys.executable, ROOT, {})}
    if args.first_page_wait is not None:
        subjects[f"this checkout, OPENING_WAITS_FOR_PAGE = {args.first_page_wait:g}"] = (
            sys.executable, ROOT, {"TRACE_FIRST_PAGE_WAIT": str(args.first_page_wait)})
    if args.compare is not None:
        other = args.compare.resolve()
        subjects[f"compare: {other.name}"] = (str(other / ".venv" / "bin" / "python"), other, {})
    results: dict[str, list[dict[str, tuple[float, float]]]] = {name: [] for name in subjects}
    with tempfile.TemporaryDirectory(prefix="mailtriage-trace-startup-") as tmp:
        workdirs = {}
        proxy = None
        if args.server is not None and args.round_trip:
            from delay_proxy import DelayProxy

            proxy = DelayProxy(json.loads(args.server.read_text(encoding="utf-8"))["port"], args.round_trip / 1000)
            print(f"through a proxy of a {args.round_trip:g} ms round trip")
        imap = None if args.server is None else imap_project(Path(tmp), args.server,
                                                              None if proxy is None else proxy.port)
        for i, (name, (python, cwd, _extra)) in enumerate(subjects.items()):
            workdirs[name] = Path(tmp) / f"subject{i}"
            (workdirs[name] / "config").mkdir(parents=True)
            if imap is not None and cold is not None:
                continue  # nothing to keep: every start is cold
            if imap is not None:  # the warm-up: the summary cache and a kept frame (a start with no key)
                run_once(workdirs[name], workdirs[name] / "trace.txt", key=False, python=python, cwd=cwd,
                         imap=imap, keep=True)
                continue
            if args.no_first_paint:
                (workdirs[name] / "config" / "config.toml").write_text("[settings]\nfirst_paint = false\n")
            demo_start(python, cwd, workdirs[name], keep=True)  # the warm-up: the demo workspace, a kept frame
        for _ in range(args.runs):  # alternated: a loaded machine weighs on both alike
            for name, (python, cwd, extra) in subjects.items():
                results[name].append(run_once(workdirs[name], workdirs[name] / "trace.txt", key=not args.no_key,
                                              profile=args.profile, python=python, cwd=cwd,
                                              imap=None if imap is None else {**imap, **extra}, cold=cold))
    for name, runs in results.items():
        print(f"{name}:")
        report(runs)
    print(f"load average: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
