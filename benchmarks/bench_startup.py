"""Start-up benchmark: the demo cold start beside a bare Textual DataTable app, same run.

    .venv/bin/python benchmarks/bench_startup.py [--runs 7] [--compare DIR]

Every figure comes from fresh processes, alternated (ours, bare, ours, bare, …) so a
loaded machine weighs on both alike; the medians are printed with the ratio.

1. Cold start: from spawning ``mailtriage --demo`` on a pseudo-terminal to the end of
   the first frame that shows the thread list with its rows (the status line
   "N threads · via …"), measured as ``bench_tui.py`` does (the benchmark plays the
   terminal). Two figures: the **first paint** (the screen the app kept at its previous
   start, written before Textual loads: tui/first_paint.py) and **live** (the app's own
   first frame with the rows: it takes keys from then on). A third row starts the app
   with ``[settings] first_paint = false``: the start as it is without a kept frame.
   Baseline: a bare Textual app showing a 41-row DataTable (the demo has 41
   threads). Goal (issue 15): at most 0.40 s, or within 1.6x of the bare app.
2. Launch to the first key that acts (issue 33): in the same alternation, a start that types
   Enter the moment the thread list is first on the terminal (the first paint: the kept
   frame, before the app is live) and times the reading pane showing the newest thread
   (``Message 1/``, drawn by the live app), beside that start's first paint. A key the app
   lost is counted, not timed (the start is then cut off after KEY_TIMEOUT); beside it the CPU of the app's
   process and of its UI (main) thread until it acted (/proc), which a load inflates least. Goal: at most
   0.6 s on a warm cache.
3. Import time: the wall time of a fresh ``python -c "import …"`` for the command line
   (``mailtriage.cli.main``), the app (``mailtriage.tui.app``) and, as the baseline, what
   the bare app imports (``textual.app`` and ``textual.widgets.DataTable``).

``--compare DIR`` adds another checkout with its own ``.venv`` (e.g. an older commit, in
a worktree) to the same alternation, so a before/after pair comes from one run.

Figures, 2026-12-02, ``--runs 5 --compare`` main at f329a7b, the 2-core machine at load
average 7-10 (other helpers' suites: every figure 3-4x the idle one), medians, seconds:

  |                         | this branch | main  | bare Textual app |
  |-------------------------|-------------|-------|------------------|
  | first paint (kept frame)| 0.43        | 0.45  |                  |
  | live (app's own frame)  | 1.96        | 1.83  | 1.06             |
  | first key acts (Enter)  | 3.04        | 2.65  |                  |
  | import mailtriage.tui.app | 1.11      | 1.18  | 1.03 (textual.app + DataTable) |

  At that load the spread (min-max 2.08-3.29 against 2.29-3.26 for the first key) hides any
  difference. Traced at the same load: Textual's import ends 1.4-1.9 s after launch, the held
  Enter acts 0.3-0.5 s after the main screen is up (after the list's first live frame), and the
  demo's thread now comes from start-up's read ahead (served in < 1 ms; before, it waited for
  the app's own project opening after its first frame), shown 0.01-0.1 s later.

Figures, 2026-12-03 (branch firstkey: start-up's read ahead handed to the reader with the first
rows, so the Enter shows it in its own frame), ``--runs 5 --compare`` main at 771e378, load average
2.9 at the start, 6.6 at the end, medians (min-max), seconds:

  |                          | this branch        | main               | bare Textual app |
  |--------------------------|--------------------|--------------------|------------------|
  | first paint (kept frame) | 0.27               | 0.33               |                  |
  | live (app's own frame)   | 1.15               | 1.74               | 0.60             |
  | CPU until live           | 0.44               | 0.49               | 0.30             |
  | first key acts (Enter)   | 1.52 (0.79-2.84)   | 1.70 (0.84-2.23)   |                  |

  The spread hides the difference at that load; benchmarks/trace_startup.py --compare (the UI
  thread's CPU time at each step, which the load inflates least; --runs 5, load 4.4-6.0) shows
  it: from the keys released to the thread shown 0.080 s of UI CPU (before 0.089 s), 0 s of wall
  between the Enter reaching the reader and the body handed to it (before 0.054 s: a read
  worker's turn), body on screen 1.58 s (before 1.65 s). Where the UI thread's CPU goes in a warm
  demo start (trace medians): python up 0.03 s; imports of the command and start-up, the demo's
  workspace copy and the fork 0.14 s; Textual imported 0.34 s; the app imported 0.41 s; mounted
  0.46 s; main screen up (keys act) 0.51 s; the thread shown 0.59 s; its frame 0.04-0.08 s more.
  About 0.6 s of one core before the body is on screen: on a quiet machine the 0.6 s goal is at
  the edge, and most of it is Textual's import, layout and paint.

Quiet machine (2026-12-03, 10:50 UTC, load 0.3-1.1; the figures above ran loaded), --runs 5 --compare 771e378,
demo, warm: first key acts 0.592 s (0.503-0.718; goal <= 0.60: met by the median only), before 0.579 s
(0.490-0.610); CPU of the app's process until it acted 0.56 s (before 0.54): the UI thread's own work
(Textual's import, layout, first paint) is most of the goal, so under load it cannot be met. First paint
0.140 s (before 0.128); no key lost in 10 starts.

2026-12-03, 12:52 UTC (branch firstkey2: the held Enter opens its row at the keys' release, before the first
live layout; the garbage collector held from the fork until the main screen is up), --runs 5 --compare
612ee71, demo, warm, load 4.7 at the start, 2.8 at the end: first key acts 0.443 s (0.344-0.834), before
0.511 s (0.393-0.915); 0 of 5 keys lost in each; first paint 0.104 s (before 0.083); live 0.543 s (before
0.603); CPU of the app's process until it acted 0.28 s in both (/proc's 10 ms ticks: too coarse for the
~0.1 s of UI CPU benchmarks/trace_startup.py measures). Goal (<= 0.6 s): the median met at that load, the
max not (a load spike: 0.834 against 0.915 before). Again at load 11-14 (13:19 UTC): first key acts 2.493 s
(1.571-2.919), before 2.499 s (2.029-2.824), 0 of 5 lost in each; UI thread CPU until it acted 0.760 s,
before 0.754 s (read once the body is seen: it counts the UI thread's work after the body's frame until
the benchmark looks; trace_startup.py's UI CPU at the body's frame written: 0.549 s against 0.715 s).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tui import BASELINE_APP, Terminal  # noqa: E402 (the benchmark folder is not a package on the path)

ROOT = Path(__file__).resolve().parents[1]
PAINTED = re.compile(rb"\d+ threads? \xc2\xb7 via")
BARE_PAINTED = re.compile(rb"row 000030 subject")
READ = re.compile(rb"Message 1/\d+")
KEY_GOAL_SECONDS = 0.60
#: How long a start may take to act on the Enter typed at its first frame before the key is
#: counted as lost.
KEY_TIMEOUT = 15.0
GOAL_SECONDS = 0.40
GOAL_RATIO = 1.6
BARE = "bare Textual + 41-row DataTable"
NO_FIRST_PAINT = "this checkout, first_paint = false"

IMPORTS = {
    "mailtriage.cli.main": "import mailtriage.cli.main",
    "mailtriage.tui.app": "import mailtriage.tui.app",
    "bare: textual.app + DataTable": "import textual.app; from textual.widgets import DataTable",
}


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far (all its threads; Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def ui_cpu_seconds(pid: int) -> float:
    """CPU time of the process's main thread so far (the app's UI thread; Linux, nanoseconds): what
    start-up's UI work costs, which a load inflates least."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


def _start(term: Terminal, painted: re.Pattern) -> tuple[float, float, float]:
    """(first paint, live, CPU seconds) of one start."""
    try:
        first, live = term.read_painted(painted)
        return first - term.started, live - term.started, cpu_seconds(term.proc.pid)
    finally:
        term.close()


def demo_start(python: str, cwd: Path, workdir: Path, *, keep: bool = False) -> tuple[float, float, float]:
    """Seconds from spawning ``python -m mailtriage.cli.main --demo`` to its painted list (first
    paint, live) and its CPU seconds. ``keep``: wait until the app kept its start screen
    (a warm-up: the next start shows it first)."""
    env = {"MAILTRIAGE_CONFIG_DIR": str(workdir / "config"), "MAILTRIAGE_DEMO_DIR": str(workdir / "demo-workspace"),
           "MAILTRIAGE_CACHE_DIR": str(workdir / "cache")}
    term = Terminal([python, "-m", "mailtriage.cli.main", "--demo"], env, cwd=cwd)
    if keep:
        try:
            term.read_until(PAINTED, live=True)
            if not term.wait_for_kept_frame(workdir / "cache"):
                print(f"  (warm-up: the app kept no start screen in {workdir / 'cache'}; no first paint follows)")
        finally:
            term.close()
        term = Terminal([python, "-m", "mailtriage.cli.main", "--demo"], env, cwd=cwd)
    return _start(term, PAINTED)


def demo_key_start(python: str, cwd: Path, workdir: Path
                   ) -> tuple[float, float | None, float | None, float | None]:
    """(first paint, first key that acts, CPU seconds of the app's process and of its UI thread by then) of one start,
    in seconds from spawning it: Enter is typed the moment the thread list is first on the
    terminal; the key acts when the live app's reading pane shows the newest thread. None: the
    key was lost (not acted on within KEY_TIMEOUT). The CPU figure (user+sys, all its threads,
    not the head start child's) is what a load inflates least."""
    env = {"MAILTRIAGE_CONFIG_DIR": str(workdir / "config"), "MAILTRIAGE_DEMO_DIR": str(workdir / "demo-workspace"),
           "MAILTRIAGE_CACHE_DIR": str(workdir / "cache")}
    term = Terminal([python, "-m", "mailtriage.cli.main", "--demo"], env, cwd=cwd)
    try:
        first = term.read_until(PAINTED) - term.started
        term.send(b"\r")
        try:
            acted = term.read_until(READ, timeout=KEY_TIMEOUT, frame=True, live=True) - term.started
            cpu, ui = cpu_seconds(term.proc.pid), ui_cpu_seconds(term.proc.pid)
        except TimeoutError:
            acted = cpu = ui = None
        return first, acted, cpu, ui
    finally:
        term.close()


def bare_start(script: Path) -> tuple[float, float, float]:
    return _start(Terminal([sys.executable, str(script), "41"]), BARE_PAINTED)


def import_time(python: str, code: str, cwd: Path) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as installed: with .pyc files
    started = time.perf_counter()
    subprocess.run([python, "-c", code], check=True, cwd=cwd, env=env)
    return time.perf_counter() - started


def _line(label: str, samples: list[float], extra: str = "") -> str:
    return (f"  {label:<46} {statistics.median(samples):6.3f} s   "
            f"(min {min(samples):.3f}, max {max(samples):.3f}){extra}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="fresh processes of each kind (default 7)")
    parser.add_argument("--compare", type=Path, metavar="DIR",
                        help="another checkout with its own .venv, measured in the same alternation")
    args = parser.parse_args()

    subjects = {"this checkout": (sys.executable, ROOT, True)}
    subjects[NO_FIRST_PAINT] = (sys.executable, ROOT, False)
    first = "this checkout"
    if args.compare is not None:
        other = args.compare.resolve()
        subjects[f"compare: {other.name}"] = (str(other / ".venv" / "bin" / "python"), other, True)

    with tempfile.TemporaryDirectory(prefix="mailtriage-bench-startup-") as tmp:
        tmp_path = Path(tmp)
        bare_script = tmp_path / "bare_datatable.py"
        bare_script.write_text(BASELINE_APP, encoding="utf-8")
        workdirs = {}
        for i, (name, (_python, _cwd, first_paint)) in enumerate(subjects.items()):
            workdirs[name] = tmp_path / f"subject{i}"
            (workdirs[name] / "config").mkdir(parents=True)
            if not first_paint:
                (workdirs[name] / "config" / "config.toml").write_text("[settings]\nfirst_paint = false\n")

        # One warm-up of each: the demo workspace is made, the OS file cache is warm for all,
        # and the app keeps its start screen (the next start's first paint).
        bare_start(bare_script)
        for name, (python, cwd, _first_paint) in subjects.items():
            demo_start(python, cwd, workdirs[name], keep=True)

        names = [*subjects, BARE]
        firsts: dict[str, list[float]] = {name: [] for name in names}
        walls: dict[str, list[float]] = {name: [] for name in names}
        cpus: dict[str, list[float]] = {name: [] for name in names}
        imports: dict[str, list[float]] = {}
        key_firsts: dict[str, list[float]] = {name: [] for name in subjects if name != NO_FIRST_PAINT}
        key_acts: dict[str, list[float | None]] = {name: [] for name in key_firsts}
        key_cpus: dict[str, list[float | None]] = {name: [] for name in key_firsts}
        key_uis: dict[str, list[float | None]] = {name: [] for name in key_firsts}
        for _ in range(args.runs):
            for name in key_firsts:
                python, cwd, _first_paint = subjects[name]
                first_paint, acted, cpu, ui = demo_key_start(python, cwd, workdirs[name])
                key_firsts[name].append(first_paint)
                key_acts[name].append(acted)
                key_cpus[name].append(cpu)
                key_uis[name].append(ui)
            for name, (python, cwd, _first_paint) in subjects.items():
                for who, run in ((name, lambda: demo_start(python, cwd, workdirs[name])),
                                 (BARE, lambda: bare_start(bare_script))):
                    first_paint, wall, cpu = run()
                    firsts[who].append(first_paint)
                    walls[who].append(wall)
                    cpus[who].append(cpu)
            for name, (python, cwd, _first_paint) in subjects.items():
                if name == NO_FIRST_PAINT:
                    continue
                for label, code in IMPORTS.items():
                    if label.startswith("bare") and name != first:
                        continue
                    key = label if label.startswith("bare") else f"{label} ({name})"
                    imports.setdefault(key, []).append(import_time(python, code, cwd))

    print(f"Cold start to the painted thread list (demo, 41 threads), median of {args.runs} fresh "
          "processes, alternated with the bare app:")
    for figure, table in (("first paint (wall)", firsts), ("live: the app's own frame (wall)", walls),
                          ("CPU until live (user+sys, all threads)", cpus)):
        print(f" {figure}:")
        bare_median = statistics.median(table[BARE])
        for name, samples in table.items():
            extra = ""
            if name != BARE:
                extra = f"; {statistics.median(samples) / bare_median:.2f}x the bare app"
                if "wall" in figure:
                    extra += f" (goal <= {GOAL_SECONDS:.2f} s or <= {GOAL_RATIO}x)"
            if name != BARE and "first paint" in figure:
                shown = sum(first < live for first, live in zip(samples, walls[name]))
                extra += f"; shown in {shown} of {len(samples)} starts"
            print(_line(name if name == BARE else f"mailtriage --demo, {name}", samples, extra))
    print(f"Launch to the first key that acts (Enter typed at the first frame -> the reader shows the newest "
          f"thread), warm cache, median of {args.runs}, same alternation (goal <= {KEY_GOAL_SECONDS:.2f} s):")
    for name in key_firsts:
        acted = [a for a in key_acts[name] if a is not None]
        lost = len(key_acts[name]) - len(acted)
        print(_line(f"first paint ({name})", key_firsts[name]))
        if acted:
            print(_line(f"first key acts ({name})", acted, f"; lost in {lost} of {len(key_acts[name])} starts"))
            print(_line(f"CPU until it acted ({name})", [c for c in key_cpus[name] if c is not None],
                        " (user+sys, the app's process)"))
            print(_line(f"UI thread CPU until it acted ({name})", [c for c in key_uis[name] if c is not None],
                        " (its main thread, /proc schedstat)"))
        else:
            print(f"  first key acts ({name}): lost in every start ({lost})")
    print(f"Import time (fresh python -c 'import …', wall), median of {args.runs}:")
    for label, samples in imports.items():
        print(_line(label, samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
