"""r -> the editable draft, and f ... Ctrl+s on 200 tagged -> the server: the UI thread's CPU
time, headless (issue 35).

    .venv/bin/python benchmarks/bench_habits_headless.py [--messages 2000] [--rounds 3]
        [--before CHECKOUT] [--profile FILE] [--at-once] [--timeline] [--steps]

What load does not inflate (much): the CPU time of the app's UI thread (``time.thread_time``)
in a headless Textual app (160 x 50) on a real Dovecot INBOX of ``--messages`` messages plus
the newest one, set up as bench_habits.py does (a personal account with ``access = "send"``,
the project's list on the same account). Per process: into INBOX by keys, Enter on the newest
row, and the moment its body is painted (as bench_habits.py types it; ``--ahead``: once the app
has settled, the reply built ahead and its compose dialog mounted ahead):

  ahead at r  what r finds made ahead: 0 nothing, 1 the compose dialog mounted, 2 also laid
          out and rendered (``prepare_hidden``);
  reply   r -> the first frame (``App._display``; headless, Textual computes the frame's
          strips but writes no bytes) with the compose dialog on screen and its text area
          focused; ``settle``: r -> nothing pending (the dialog's footer keys included);
  f       (q back to the list, 200 x v, settled) f -> the first frame of the proposal dialog;
  ctrl+s  Ctrl+s the moment that frame is made -> the apply worker done (its UID STOREs
          answered: the flags are on the server), UI thread CPU and wall time (to the UI
          thread's handling of the report); ``write wall``: the key -> ``Service.apply``
          returned on the writing thread (the last STORE's answer read and checked).

``--at-once``: r as soon as the reader holds the message (its frame still on its way); ``enter ->
dialog`` is the UI thread's CPU from Enter to the compose dialog's first frame. ``--timeline``
prints, per process, when each step from Enter to that frame ran (the read shown, the reply's
build, its dialog filled or mounted, prepared hidden, r handled), wall clock.

``--steps``: Enter and r go to the app as a terminal's keys would (the driver's queue, without
Pilot's waits: Pilot.press returns only once everything the key caused is done, so a timeline
taken through it shows r after the work it would have waited for), r the moment the body's
frame is made; per process, every step of the UI thread's event loop that used 0.3 ms of CPU or
more from Enter to the compose dialog's frame: the widget and the messages it handled (or the
callback; a screen's update timer is named with its screen), with each frame (``FRAME``), the keys'
moments (``---``) and what each screen update draws (``... MainScreen update: layout repaint 6
widgets ...``: a layout of the whole screen, the widgets repainted).

``--before CHECKOUT`` runs a second copy, process by process alternated with this one, from
another checkout (a throwaway worktree of the base commit). ``--profile FILE`` writes a
pyinstrument profile (text) of this code's r and f ... Ctrl+s in the last round (UI thread only;
``pip install pyinstrument``, not a dependency). Pilot's own polling runs on the UI thread too
(a few ms); both sides pay it.

Figures: see the end of the module docstring of bench_habits.py (Reply3).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")
sys.path.insert(0, str(Path(__file__).resolve().parent))
TAGGED = 200


def probe_steps(steps: list[tuple[float, float, str]]) -> None:
    """--steps: record every step of the UI thread's event loop that takes 0.3 ms of CPU or more:
    (wall start, CPU, what: the widget and the message it handles, or the callback)."""
    import asyncio.events
    import threading

    from textual.message_pump import MessagePump

    handled: dict[object, list[str]] = {}  # task -> what it dispatched in its running step
    dispatch = MessagePump._dispatch_message

    def name(pump, message) -> str:
        what = type(message).__name__
        if what == "Key":
            what += f"({message.key})"
        elif what in ("InvokeLater", "Callback"):
            what += f"[{getattr(message.callback, '__qualname__', '')}]"
        return f"{type(pump).__name__}{'#' + pump.id if getattr(pump, 'id', None) else ''} {what}"

    async def dispatching(self, message):
        handled.setdefault(asyncio.current_task(), []).append(name(self, message))
        return await dispatch(self, message)
    MessagePump._dispatch_message = dispatching
    run = asyncio.events.Handle._run

    def running(handle):
        if threading.current_thread() is not threading.main_thread():
            return run(handle)
        owner = getattr(handle._callback, "__self__", None)
        handled.pop(owner, None)
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return run(handle)
        finally:
            used = time.thread_time() - cpu
            if used >= 0.0003:
                if isinstance(owner, asyncio.Task):
                    what = ", ".join(handled.get(owner, [])[:4]) or f"(resumed) {owner.get_name()[:60]}{timer_of(owner)}"
                else:
                    what = getattr(handle._callback, "__qualname__", repr(handle._callback))
                steps.append((wall, used, what))
    asyncio.events.Handle._run = running
    from textual.screen import Screen

    update = Screen._on_timer_update

    def updating(screen) -> None:  # what a screen's update draws: its layout, the widgets to repaint
        if screen.is_current and (screen._layout_required or screen._repaint_required or screen._dirty_widgets):
            dirty = sorted({f"{type(w).__name__}{'#' + w.id if w.id else ''}" for w in screen._dirty_widgets})
            what = ("layout " if screen._layout_required else "") + ("repaint " if screen._repaint_required else "")
            steps.append((time.perf_counter(), 0.0, f"  ... {type(screen).__name__} update: {what}"
                                                    f"{len(dirty)} widgets {', '.join(dirty[:6])}"))
        update(screen)
    Screen._on_timer_update = updating


def timer_of(task) -> str:
    """--steps: the widget whose timer a resumed task runs (a screen's update timer: which screen)."""
    frame = getattr(task.get_coro(), "cr_frame", None)
    timer = frame.f_locals.get("self") if frame is not None else None
    target = getattr(timer, "_target", None)
    widget = target() if callable(target) else None
    return f" of {type(widget).__name__}" if widget is not None else ""


def mark_steps(marks: list[tuple[float, str]]) -> None:
    """Record when each step of the reply's path runs (wall clock, any thread): --timeline."""
    import functools
    import threading

    from mailtriage.tui.controllers import compose
    from mailtriage.tui.controllers import reading
    from mailtriage.tui.dialogs.compose import ComposeDialog

    def probe(cls, name: str, label: str, returned: bool = False) -> None:
        original = getattr(cls, name, None)
        if original is None:
            return

        @functools.wraps(original)  # Textual passes a handler as many arguments as it names
        def probed(*args, **kwargs):
            where = "" if threading.current_thread() is threading.main_thread() else " (worker)"
            marks.append((time.perf_counter(), f"{label}{where}"))
            try:
                return original(*args, **kwargs)
            finally:
                if returned:
                    marks.append((time.perf_counter(), f"{label} returned{where}"))
        setattr(cls, name, probed)
    # Reading: a component the screen holds (a mixin of the screen before: its handler's name).
    reader = getattr(reading, "Reading", None) or reading.ReadingController
    probe(reader, "thread_loaded" if reader is not getattr(reading, "ReadingController", None) else "on_thread_loaded",
          "read done: on_thread_loaded", True)
    probe(reader, "_after_shown", "after shown (build_reply_ahead)")
    # Compose: a component the screen holds (a mixin of the screen before: its handlers' names).
    composing = getattr(compose, "Compose", None) or compose.ComposeController
    component = composing is not getattr(compose, "ComposeController", None)
    probe(composing, "_build_compose", "_build_compose", True)
    probe(composing, "built_ahead" if component else "on_draft_built_ahead",
          "on_draft_built_ahead (dialog mounted ahead)", True)
    probe(composing, "compose_on", "r handled: compose_on", True)
    probe(composing, "ready" if component else "on_compose_ready", "on_compose_ready", True)
    probe(ComposeDialog, "on_mount", "ComposeDialog.on_mount")
    probe(ComposeDialog, "_prepare", "ComposeDialog prepared hidden", True)


async def measure(project: Path, subject: str, profile: str | None, port: int, user: str, password: str,
                  trace: bool = False, ahead: bool = False, timeline: bool = False, at_once: bool = False,
                  direct: bool = False) -> dict:
    from imapclient import IMAPClient
    from textual import events
    from textual.widgets import TextArea

    from mailtriage.core.trace import TRACE
    from mailtriage.tui.controllers import proposals
    from tests.tui.helpers import make_app, settle

    profiler = None
    profiles: list[tuple[str, object]] = []

    def profiling(phase: str):  # one pyinstrument profile per phase (None: not asked for)
        if not profile:
            return None
        from pyinstrument import Profiler

        started = Profiler(async_mode="disabled", interval=0.0005)
        profiles.append((phase, started))
        started.start()
        return started
    app = make_app(project)
    frames: list[tuple[float, float, str, object]] = []  # (CPU, wall, screen class, focused) per frame
    display = app._display

    def frame(screen, renderable) -> None:  # Textual's private hook, measured here only
        if renderable is not None:
            frames.append((time.thread_time(), time.perf_counter(), type(app.screen).__name__, app.focused))
        display(screen, renderable)

    app._display = frame
    lines: list[tuple[float, str, str]] = []  # (wall, direction, text) of the protocol while Ctrl+s writes

    def seen(line) -> None:
        if hasattr(line, "direction"):
            lines.append((time.perf_counter(), line.direction, line.text[:70]))
    out: dict[str, float] = {}
    applied: list[tuple[float, float]] = []  # (CPU, wall) when the UI thread is told the write is done
    # Where a written proposal is answered: the proposals component (a mixin of the screen before).
    owner, name = ((proposals.Proposals, "applied") if hasattr(proposals, "Proposals")
                   else (proposals.ProposalsController, "on_proposal_applied"))
    handler = getattr(owner, name)

    def on_applied(self, message) -> None:
        applied.append((time.thread_time(), time.perf_counter()))
        handler(self, message)
    setattr(owner, name, on_applied)  # this process only: the benchmark's probe
    steps: list[tuple[str, float]] = []  # what happens between Ctrl+s and the write, in order (wall)
    from mailtriage.application import Service
    from mailtriage.tui.dialogs.proposal import ProposalDialog

    def probe(cls, name: str) -> None:
        original = getattr(cls, name)

        def probed(*args, **kwargs):
            steps.append((name, time.perf_counter()))
            try:
                return original(*args, **kwargs)
            finally:
                steps.append((f"{name} returned", time.perf_counter()))
        setattr(cls, name, probed)
    probe(ProposalDialog, "action_confirm")
    probe(Service, "apply")
    marks: list[tuple[float, str]] = []  # --timeline: (wall, what) from Enter to the compose dialog's frame
    if timeline:
        mark_steps(marks)
    ran: list[tuple[float, float, str]] = []  # --steps: the UI thread's steps (wall, CPU, what)
    if direct:
        probe_steps(ran)

    def press(key: str):
        """--steps: the key goes to the app as a terminal's would, without Pilot's waits for
        the app to be idle after it (Pilot.press returns once everything it caused is done)."""
        if not direct:
            return pilot.press(key)
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(app)
        app._driver.send_message(event)
        return asyncio.sleep(0)

    async def first_frame(screen_name: str, since: int, focused=None) -> tuple[float, float]:
        deadline = time.perf_counter() + 60
        while time.perf_counter() < deadline:
            for cpu, wall, name, focus in frames[since:]:
                if name == screen_name and (focused is None or focused(focus)):
                    return cpu, wall
            await asyncio.sleep(0.001 if direct else 0)
        raise TimeoutError(f"no frame of {screen_name}: {[(n, type(f).__name__) for _c, _w, n, f in frames[since:]]}")

    async def until(condition, what: str) -> None:
        deadline = time.perf_counter() + 60
        while not condition():
            if time.perf_counter() > deadline:
                raise TimeoutError(what)
            await asyncio.sleep(0.001 if direct else 0)

    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        for keys in (["1"], ["down", "enter"], ["enter"]):
            await pilot.press(*keys)
            await settle(pilot)
        listing = app.main.threads.thread_list
        assert subject in listing.rows.peek(0).subject, listing.rows.peek(0)
        reader = app.main.reader
        since = len(frames)
        marks.clear()
        entered = time.perf_counter()
        marks.append((entered, "Enter"))
        entered_cpu = time.thread_time()
        ran.clear()
        await press("enter")
        # r the moment the body is painted, as bench_habits.py types it (the reply ahead and its
        # dialog are on their way then): the first frame whose reader holds the newest message
        await until(lambda: reader.thread is not None and subject in reader.thread.subject, "the body")
        if not at_once:  # --at-once: r as soon as the reader holds the message (its frame on its way)
            # Pilot's press returns once the app is idle: the body's frame is made by then
            body_cpu, body_wall = await first_frame("MainScreen", len(frames) if direct else since)
            marks.append((body_wall, "frame with the body"))
        if ahead:  # --ahead: r once the reply built ahead and its dialog are ready
            await settle(pilot)
            await pilot.pause(0.5)
            await settle(pilot)
        # r -> the compose dialog with its body focused, first frame
        kept = getattr(app.main, "composing", app.main)._dialog_ahead  # what r finds: 0 nothing made ahead, 1 the dialog mounted, 2 also rendered
        out["ahead at r"] = 0 if kept is None else 1 + bool(getattr(kept[1], "_prepared", False))
        profiler = profiling("r")
        since = len(frames)
        cpu, wall = time.thread_time(), time.perf_counter()
        marks.append((wall, "r pressed"))
        await press("r")
        shown_cpu, shown_wall = await first_frame("ComposeDialog", since, lambda f: isinstance(f, TextArea))
        if direct:
            frame_marks = [(w, f"FRAME {n}") for _c, w, n, _f in frames if w >= entered]
            for when, what in sorted([(w, f"{c * 1000:5.1f} {what}") for w, c, what in ran]
                                     + [(w, f"  --- {what}") for w, what in marks + frame_marks]):
                if when <= shown_wall + 0.001:
                    print(f"TIMELINE {(when - entered) * 1000:7.1f} ms  {what}", file=sys.stderr)
            marks.clear()
        marks.append((shown_wall, "frame of the compose dialog"))
        out["enter -> dialog wall"] = shown_wall - entered
        out["enter -> dialog"] = shown_cpu - entered_cpu
        for when, what in sorted(marks):
            print(f"TIMELINE {(when - entered) * 1000:7.1f} ms  {what}", file=sys.stderr)
        if profiler is not None:
            profiler.stop()
        out["reply"] = shown_cpu - cpu
        out["reply wall"] = shown_wall - wall
        await settle(pilot)
        out["reply settle"] = time.thread_time() - cpu
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("q")  # back to the list
        await settle(pilot)
        await pilot.press(*["v"] * TAGGED)
        await settle(pilot)
        assert len(listing.tags.rows()) == TAGGED, len(listing.tags.rows())
        profiler = profiling("f")
        since = len(frames)
        cpu, wall = time.thread_time(), time.perf_counter()
        await pilot.press("f")
        shown_cpu, shown_wall = await first_frame("ProposalDialog", since)
        if profiler is not None:
            profiler.stop()
        profiler = profiling("ctrl+s")
        out["f"] = shown_cpu - cpu
        out["f wall"] = shown_wall - wall
        # the protocol lines only when asked: each line redacted on the writing thread slows it
        stop = TRACE.subscribe(seen) if trace else (lambda: None)
        steps.clear()
        cpu, wall = time.thread_time(), time.perf_counter()
        await pilot.press("ctrl+s")
        await until(lambda: applied, "the write's report")
        out["ctrl+s"] = applied[0][0] - cpu
        out["ctrl+s wall"] = applied[0][1] - wall
        stop()
        written = [when for name, when in steps if name == "apply returned"]
        out["write wall"] = written[0] - wall  # Ctrl+s -> the write's last answer read (Service.apply returned)
        for name, when in steps:
            print(f"{(when - wall) * 1000:7.1f} ms ! {name}", file=sys.stderr)
        for when, direction, text in lines:
            print(f"{(when - wall) * 1000:7.1f} ms {direction} {text}", file=sys.stderr)
        if profiler is not None:
            profiler.stop()
        await settle(pilot)
    client = IMAPClient("127.0.0.1", port, ssl=False)
    client.login(user, password)
    client.select_folder("INBOX", readonly=True)
    out["flagged"] = len(client.search(["FLAGGED"]))
    client.logout()
    if profiles:
        Path(profile).write_text("\n".join(f"== {phase}\n" + started.output_text(unicode=True, color=False, show_all=True)
                                           for phase, started in profiles), encoding="utf-8")
    return out


def child(args) -> None:
    figures = asyncio.run(measure(Path(args.project), args.subject, args.profile, args.port, args.user,
                                  args.password, args.show_trace, args.ahead, args.timeline, args.at_once, args.steps))
    print(json.dumps(figures))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, metavar="CHECKOUT")
    parser.add_argument("--profile", metavar="FILE")
    parser.add_argument("--ahead", action="store_true",
                        help="r once the reply built ahead and its dialog are ready (not the moment the body shows)")
    parser.add_argument("--at-once", action="store_true",
                        help="r as soon as the reader holds the message, not once its frame is made")
    parser.add_argument("--timeline", action="store_true",
                        help="print the steps from Enter to the compose dialog's frame of each process (wall, ms)")
    parser.add_argument("--steps", action="store_true",
                        help="keys sent as a terminal's (no Pilot waits); print each UI-thread step "
                             ">= 0.3 ms CPU from Enter to the compose dialog's frame")
    parser.add_argument("--show-trace", action="store_true", help="print the protocol lines of the last Ctrl+s")
    for hidden in ("--project", "--subject", "--user", "--password"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.child:
        child(args)
        return 0
    from bench_habits import newest_message, sending_project, unflag_all
    from bench_launch import hand_to_dovecot, write_maildir
    from tests.servers.dovecot import DovecotServer

    print(f"load average at the start {', '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    figures: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="mailtriage-habits-headless-") as name:
        tmp = Path(name)
        server = DovecotServer().start()
        try:
            user = server.add_user("benchhabit")
            server.mail_root.mkdir(exist_ok=True)
            write_maildir(user.home / "Maildir", args.messages, 600.0)
            hand_to_dovecot(server, user)
            address = f"{user.name}@example.org"
            raw, subject, _body = newest_message(uuid.uuid4().hex[:8], address)
            server.append(user, "INBOX", raw)
            config, project = sending_project(tmp, server, user, address)
            codes = {"ours": {}}
            if args.before is not None:
                (tmp / "before").mkdir()
                (tmp / "before" / "mailtriage").symlink_to(args.before.resolve())
                codes["before"] = {"PYTHONPATH": f"{tmp / 'before'}:{ROOT / 'benchmarks'}"}
            for rnd in range(-1, args.rounds):  # round -1: warm-up (.pyc files, Dovecot's caches)
                for label, extra in codes.items():
                    shutil.rmtree(tmp / f"cache-{label}", ignore_errors=True)
                    env = {**os.environ, "MAILTRIAGE_CACHE_DIR": str(tmp / f"cache-{label}"),
                           "MAILTRIAGE_DATA_DIR": str(tmp / f"data-{label}"), "MAILTRIAGE_CONFIG_DIR": str(config),
                           "MAILTRIAGE_BENCH_KEYRING": os.environ["MAILTRIAGE_BENCH_KEYRING"],
                           "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring",
                           "PYTHONPATH": str(ROOT / "benchmarks"), **extra}
                    argv = [PYTHON, __file__, "--child", "--project", str(project), "--subject", subject,
                            "--port", str(server.port), "--user", user.name, "--password", user.password]
                    argv += ["--show-trace"] * args.show_trace + ["--ahead"] * args.ahead + ["--timeline"] * args.timeline + ["--at-once"] * args.at_once + ["--steps"] * args.steps
                    if args.profile and label == "ours" and rnd == args.rounds - 1:
                        argv += ["--profile", args.profile]
                    out = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
                    unflag_all(server, user)
                    if out.returncode:
                        print(out.stdout[-2000:], out.stderr[-4000:])
                        return 1
                    got = json.loads(out.stdout.strip().splitlines()[-1])
                    if args.show_trace and rnd == args.rounds - 1:
                        print(f"{label}, Ctrl+s -> the protocol lines:")
                        print("\n".join(line for line in out.stderr.splitlines() if " ms " in line))
                    if (args.timeline or args.steps) and rnd >= 0:
                        print(f"{label}, round {rnd + 1}, Enter -> the compose dialog's frame:")
                        print("\n".join(line[9:] for line in out.stderr.splitlines() if line.startswith("TIMELINE ")))
                    if rnd >= 0:
                        for key, value in got.items():
                            figures.setdefault(label, {}).setdefault(key, []).append(value)
                print(f"round {rnd + 1}: load {os.getloadavg()[0]:.2f}", flush=True)
        finally:
            server.stop()
    print(f"\nUI thread CPU (and wall), ms, {args.messages + 1:,}-message Dovecot INBOX, {args.rounds} processes, "
          f"median [min-max]; load at the end {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for key in ("ahead at r", "enter -> dialog", "enter -> dialog wall", "reply", "reply wall", "reply settle", "f", "f wall", "ctrl+s", "ctrl+s wall", "write wall",
                "flagged"):
        line = f"  {key:<14}"
        for label in codes:
            values = figures.get(label, {}).get(key)
            if not values:
                continue
            scale = 1 if key in ("flagged", "ahead at r") else 1000
            values = [v * scale for v in values]
            line += f"  {label} {statistics.median(values):7.1f} [{min(values):6.1f}-{max(values):7.1f}]"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
