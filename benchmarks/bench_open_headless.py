"""Enter -> the thread's body, the UI thread's CPU time, headless (issues 33 and 35).

    .venv/bin/python benchmarks/bench_open_headless.py [--opens 12] [--rounds 3] [--messages 5]
        [--before CHECKOUT] [--profile FILE] [--steps]

What load does not inflate: the CPU time of the app's UI thread (``time.thread_time``) from
Enter on a row whose thread was read ahead (the cursor rested on it) to the frame that shows
its body, in a headless Textual app (160 x 50) on a real mbox project. The project holds
``--opens`` threads alternating between ``--messages`` messages and one message (a longer
thread then a shorter one, as a triager goes down the list), each body some 30 lines. For
each open: j (the next row), the read ahead waited for, Enter, then the app is let run until
the reading pane holds that thread and the next frame is done (``App._display`` called; headless,
Textual computes the frame's strips but writes no bytes), then q back to the list. Two
figures per open: ``paint`` (Enter -> that frame: the body on screen) and ``settle`` (Enter ->
no worker, no message, nothing pending: the footer's new keys and what the workers started
after the paint hand back included: what delays the next key).

``--before CHECKOUT`` runs the same measurement, round by round alternated with this one, on
the package of another checkout (a throwaway worktree of the base commit): before and after of
one session. ``--profile FILE`` writes a cProfile of this code's opens (UI thread only).
Pilot's own polling runs on the UI thread too (a few ms); both sides pay it.

``--steps`` (the last round of each build): Enter goes to the app as a terminal's key would (the
driver's queue, without Pilot's wait for idle), and each open prints every step of the UI thread's
event loop of 0.3 ms of CPU or more from Enter to settled (bench_habits_headless.probe_steps: the
widget and the messages it handled, or the callback), the frames (``FRAME``; "the reader holds the
thread" once it does) and what each screen update draws (``... MainScreen update: layout 4
widgets ReaderPane#reader-pane, ...``: a layout of the whole screen, the widgets repainted).

Figures, 2026-12-03, the 2-core development machine shared with four other sessions, ms of UI
thread CPU, median [min-max] of 11 opens x N processes ("before" 771e378, same run):

  | change                                  | load | paint: after / before          | settle: after / before |
  |-----------------------------------------|------|--------------------------------|------------------------|
  | reader widgets kept (N=3)               | 5.9  | 59.7 [30-144] / 61.1 [34-155]  | 164 / 157              |
  | + focus without full repaint (N=2)      | 5.2  | 43.1 [31-174] / 46.4 [36-73]   | 114 / 120              |

  open3 (2026-12-03, "before" 612ee71, --rounds 3, N=3, median of 33 opens): the focused pane marked
  by a class (.pane.-active: two nodes restyled, not both panes' subtrees), the footer's keys
  changed in place (not ~20 removed and ~20 mounted per focus move), the view's focus restyling
  the view alone (not its messages' Statics):

  | change                                  | load  | paint: after / before          | settle: after / before |
  |-----------------------------------------|-------|--------------------------------|------------------------|
  | -active + footer in place               | 4.4-6 | 39.6 [23-132] / 50.0 [28-155]  | 112.5 / 139.2          |
  | + the view's focus alone + one j update | 15-16 | 36.8 [21-126] / 49.5 [33-158]  | 120.2 / 149.5          |

  Per open (a trace of thread_time around Textual's steps, load ~5, after): keys and show_thread
  ~6 ms, the panes' -active restyle ~2, the list's and the view's own focus restyles ~2 + ~2,
  the frame's reflow 5-9 and partial render 13-15 (the reader's 126x27): the body's frame; then
  the footer's keys ~6-7 (was 12-15), a frame for the list's blurred cursor and the footer
  (reflow ~5, render ~16), and a last small one for the footer's row.

  open4 (2026-12-03, "before" c6bbf59 = /work/base, --rounds 3, N=3, median of 33 opens, load 21-29
  throughout: the figures are inflated ~2x against load 5):

  | change                                              | load  | paint: after / before         | settle: after / before |
  |-----------------------------------------------------|-------|-------------------------------|------------------------|
  | the list and the view not restyled by the focus move | 23-28 | 40.1 [25-127] / 56.2 [38-145] | 146.0 / 170.6          |
  | + young collections held 0.1 s from a key (both      | 25-28 | 32.0 [20-51] / 38.0 [28-55]   | 114.3 / 115.9          |
  |   sides paced as run_app paces: pace_collections)    |       |                               |                        |

  Per open before (a trace of thread_time, load ~24): the key to the Opened message ~2 ms,
  show_thread 5-7, the set_focus callback (the panes' -active restyle) ~2.6, the list's Blur
  ~3.9 (its restyle 3.3) and the view's Focus ~2.5 (its restyle 2.2): both restyles computed
  the styles they had (no rule styles either by focus) and are gone; then the frame: reflow
  12-15 (the bodies' heights, ~1.3-1.9 each for 30 lines: wrapped once for the height and once
  more to paint) and the render 19-20 (the reader pane, the view, its scrollbar and the
  visible Statics ~12, the compositor's chops the rest). 10-20 young collections (~5 ms) ran
  before the frame with the app's start-up frozen (gc.callbacks): they now wait 0.1 s.
  Since this benchmark paces the collector as run_app does (``pace_collections``), a full
  collection no longer falls inside an open (the 120-187 ms maxima above).

  open5 (2026-12-03, "before" ee086a7 = /work/base, load 11-19 throughout; the paint is now also
  given by the opened thread's size, ``paint N msg``):

  | change                                                   | load  | paint 1 msg / 5 msg: after - before |
  |----------------------------------------------------------|-------|-------------------------------------|
  | headers and bodies WrappedText (rows counted, not        | 11-13 | 34.0 - 38.0 / 42.5 - 50.0           |
  |   wrapped; only the chunks on screen rendered) + texts   |       |                                     |
  |   made by the read ahead's worker                        |       |                                     |
  | + nothing rendered behind the reading pane in its frame  | 16    | 30.1 - 35.4 / 37.2 - 44.0           |

  Per open before (a trace of thread_time, load ~8, 5 messages): the layout's reflow 13-15 ms,
  of which ~9 wrapping the five headers and bodies for their heights (~1.5 ms a 30-line body),
  then the paint wrapping the body on screen whole again (2.5-2.8 ms for its 17 rows on
  screen); show_thread ~5 (the texts ~1.7, the widgets' updates and a CSS query the rest). The
  body's frame's render box is the reading pane; behind it its three containers were rendered
  (27 lines each) for nothing. After the body's frame: the footer's keys in place (~7 ms) and a
  second frame whose box spans rows 1-49 (the footer, the list pane's border, the reader's
  status line), ~25-45 ms, left as it is (it follows the body).

  CPU time is inflated by load too on this machine (shared caches): the same build measured
  ~60 ms at load 5-6 and ~135 ms at load 8-9. Compare only within one run.

  open10 (2026-12-04, "before" c34f710 = /work/base). ``--steps`` showed what came after the body's
  frame (load 9-12, per open): Textual's Focus and Blur handlers repainted the list and the view
  whole (``refresh()``: every visible row of the list styled again, ~1.4 ms, and a box spanning the
  screen), and the view's new virtual size asked a second layout of the whole screen: a second
  frame of 9.5-10 ms UI CPU ("layout 6 widgets"), then a third for the footer. With the focus
  handlers of tui/focus_paint.py (the list's cursor row repainted alone, the view not at all) and
  the view sized in place (SizedInPlace): one frame after the body's, 6.5 ms, no layout ("5
  widgets": the footer line, the thread pane's border, the list's cursor row, the status line,
  the scrollbar). The body's frame itself is unchanged (layout 2-3 ms, the body's lines ~3, the
  reading pane's border ~1.4, the scrollbar ~0.9; Opened 3-5 ms and the focus's set_focus 1.6-2 ms
  before it). 3 processes each, load 21-22, ms: paint 24.0 vs 22.2 (inside the spread), settle
  46.7 vs 49.4, the first open's settle 64.5 vs 78.4.
  Left: the frame after the body's still renders a box from the thread pane's top to the footer
  (its border changes with the focus); the pane's border restyle (update_nodes of two panes,
  1.6-2 ms) and the reading pane's border re-render (1.4 ms) are in the body's frame. Without
  the border change at all (measured by turning mark_active_pane off, not kept: the focused pane
  must stay obvious), paint -2 to -3 ms and settle -5 ms at load 12-14.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")


def messages(threads: int, per_thread: int):
    from tests.tui.helpers import mail

    out = []
    for t in range(threads):
        count = per_thread if t % 2 == 0 else 1
        root = f"<bench-{t}-0@example.com>"
        for m in range(count):
            body = "\n".join(f"Report {t}.{m}, line {n}: the frob parser overflows when fed a crafted file."
                             for n in range(30))
            out.append(mail(("Re: " if m else "") + f"Bench thread {t:02d}", f"Sender {m} <s{m}@example.com>",
                            f"Thu, {1 + t:02d} Oct 2026 {9 + m:02d}:00:00 +0000",
                            f"<bench-{t}-{m}@example.com>", body + "\n",
                            in_reply_to=root if m else None))
    return out


async def measure(project: Path, opens: int, profile: str | None, steps: bool = False) -> dict[str, list[float]]:
    import asyncio

    from textual import events

    from mailtriage.tui.panes.reader import ReaderPane
    from mailtriage.tui.panes.thread_list import ThreadList
    from tests.tui.helpers import make_app, settle

    app = make_app(project)
    app.pace_collections = True  # the collector as run_app paces it (tui/idle_collection.py)
    paint: list[float] = []
    settled: list[float] = []
    sizes: list[float] = []  # the opened thread's message count, per open
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
    panes: list[ReaderPane] = []
    frames: list[tuple[float, object]] = []  # (CPU time, the thread the reader held) per frame
    display = app._display

    def frame(screen, renderable) -> None:  # Textual's private hook, measured here only
        if renderable is not None:
            frames.append((time.thread_time(), panes[0].thread if panes else None))
        display(screen, renderable)

    app._display = frame
    ran: list[tuple[float, float, str]] = []  # --steps: the UI thread's steps (wall, CPU, what)
    walls: list[tuple[float, str]] = []  # --steps: each frame's wall time and what it showed
    if steps:
        from bench_habits_headless import probe_steps

        probe_steps(ran)
        shown_display = app._display

        def framed(screen, renderable) -> None:
            if renderable is not None:
                walls.append((time.perf_counter(), "FRAME" + (" (the reader holds the thread)" if panes
                                                              and panes[0].thread is not None else "")))
            shown_display(screen, renderable)
        app._display = framed

    async def enter() -> None:
        if not steps:
            await pilot.press("enter")
            return
        # --steps: Enter as a terminal's key (the driver's queue), without Pilot's wait for idle
        event = events.Key("enter", "\r")
        event.set_sender(app)
        app._driver.send_message(event)
        await asyncio.sleep(0)

    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        listing = app.screen.query_one(ThreadList)
        reader = app.screen.query_one(ReaderPane)
        panes.append(reader)
        for n in range(opens):
            if n:
                await pilot.press("j")
            await pilot.pause(0.5)  # the rest that starts the read ahead (thread_ahead.REST)
            await settle(pilot)
            row = listing.current
            if profiler is not None:
                profiler.enable()
            frames.clear()
            ran.clear()
            walls.clear()
            wall = time.perf_counter()
            cpu = time.thread_time()
            await enter()
            while reader.thread is None or reader.thread.thread_id != row.thread_id:
                await asyncio.sleep(0.001) if steps else await pilot.pause(0)
            # the first frame that shows it (each frame goes through App._display)
            while not (shown := [when for when, thread in frames if thread is reader.thread]):
                await pilot.pause(0)
            paint.append(shown[0] - cpu)
            sizes.append(len(reader.thread.messages))
            if profiler is not None:
                profiler.disable()
            await settle(pilot)
            settled.append(time.thread_time() - cpu)
            if steps:
                print(f"STEPS open {n}{' (the first of the process)' if n == 0 else ''} ({len(reader.thread.messages)} msg), ms from Enter: wall, UI CPU of the step",
                      file=sys.stderr)
                for when, what in sorted([(w, f"{c * 1000:5.1f} {what}") for w, c, what in ran]
                                         + [(w, f"  --- {what}") for w, what in walls]):
                    print(f"  {(when - wall) * 1000:7.1f}  {what}", file=sys.stderr)
            await pilot.press("q")
            await settle(pilot)
    if profiler is not None:
        profiler.dump_stats(profile)
    return {"paint": paint, "settle": settled, "sizes": sizes}


def child(args) -> None:
    import asyncio

    figures = asyncio.run(measure(Path(args.project), args.opens, args.profile, args.steps))
    print(json.dumps(figures))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opens", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=5, help="messages of every other thread")
    parser.add_argument("--before", type=Path, metavar="CHECKOUT")
    parser.add_argument("--profile", metavar="FILE")
    parser.add_argument("--steps", action="store_true",
                        help="print, per open, every UI-thread step of 0.3 ms or more from Enter to settled, "
                             "the frames and what each screen update draws (Enter sent as a terminal's key)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--project", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.child:
        child(args)
        return 0
    from tests.tui.helpers import mbox_project

    print(f"load average at the start {', '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    figures: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="mailtriage-open-") as name:
        tmp = Path(name)
        project = mbox_project(tmp / "project", messages=messages(args.opens, args.messages))
        codes = {"ours": {}}
        if args.before is not None:
            (tmp / "before").mkdir()
            (tmp / "before" / "mailtriage").symlink_to(args.before.resolve())
            codes["before"] = {"PYTHONPATH": str(tmp / "before")}
        for rnd in range(args.rounds):
            for label, extra in codes.items():
                env = {**os.environ, "MAILTRIAGE_CACHE_DIR": str(tmp / f"cache-{label}"),
                       "MAILTRIAGE_DATA_DIR": str(tmp / f"data-{label}"),
                       "MAILTRIAGE_CONFIG_DIR": str(tmp / f"config-{label}"), **extra}
                argv = [PYTHON, __file__, "--child", "--project", str(project), "--opens", str(args.opens)]
                if args.profile and label == "ours" and rnd == args.rounds - 1:
                    argv += ["--profile", args.profile]
                if args.steps and rnd == args.rounds - 1:
                    argv += ["--steps"]
                out = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
                if out.returncode:
                    print(out.stderr[-3000:])
                    return 1
                if args.steps and rnd == args.rounds - 1:
                    print(f"== {label}\n" + "\n".join(line for line in out.stderr.splitlines()
                                                      if line.startswith(("STEPS", "  "))))
                got = json.loads(out.stdout.strip().splitlines()[-1])
                sizes = got.pop("sizes")
                for n, paint in list(zip(sizes, got["paint"]))[1:]:  # the paint by the thread's size
                    figures.setdefault(label, {}).setdefault(f"paint {n:.0f} msg", []).append(paint)
                for key, values in got.items():
                    # the first open of a process pays one-off costs (imports, CSS): reported apart
                    figures.setdefault(label, {}).setdefault(key, []).extend(values[1:])
                    figures[label].setdefault(key + " first", []).append(values[0])
            print(f"round {rnd + 1}: load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"\nUI thread CPU, ms, Enter -> ..., {args.opens} opens x {args.rounds} processes (threads of "
          f"{args.messages} and 1 messages), median [min-max]; load at the end "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    by_size = sorted({key for label in codes for key in figures[label] if key.endswith(" msg")},
                     key=lambda key: int(key.split()[1]))
    for key in ("paint", *by_size, "settle", "paint first", "settle first"):
        line = f"  {key:<14}"
        for label in codes:
            values = [v * 1000 for v in figures[label][key]]
            line += f"  {label} {statistics.median(values):6.1f} [{min(values):5.1f}-{max(values):6.1f}]"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
