"""A mutt/aerc user's habits, timed beside aerc in the same run (issue 35).

    .venv/bin/python benchmarks/bench_habits.py [--messages 2000] [--runs 3]

One real Dovecot INBOX of ``--messages`` messages (bench_launch.py's builder, warmed) plus one
newest message, addressed to the account (not the security list), with a unique subject and
body. Our app is configured with that INBOX as a personal account with ``access = "send"``
(the project's list source reads the same account); aerc 0.14 as in other_clients.py, with
its shipped binds.conf plus ``F = :flag<Enter>`` in ``[messages]`` (0.14 binds no flag key).
Both get ``EDITOR`` set to one tiny script (it prints the file it is given and waits), so an
editor both could start shows the draft the same way. Every client is a fresh process in a
detached tmux session of 160 x 50, the screen polled with ``capture-pane`` every ~5 ms
through one control-mode client (other_clients.py). Each figure is timed **from the key**
(just before ``send-keys``) to what it brings, not from the launch:

  open   Enter on the newest row of the folder -> its body on the screen (ours: the reading
         pane; aerc: its viewer with the text/plain filter);
  reply  the reply key on the open message -> the editable draft with the quoted text on the
         screen (ours: ``r``, the compose dialog's body; aerc: ``Rq``, its embedded editor
         running EDITOR, which prints the draft);
  flag   200 tagged messages (ours: ``v`` x200, until the status line says ``200 tagged``;
         aerc: ``v j`` x200, then ``:pwd`` and its answer on screen so the tagging is done)
         -> the flag key (ours ``f`` with ``confirm_flag_changes = false``, the setting for
         habit users; aerc ``F``) -> all 200 carry ``\\Flagged`` on the server, polled on a
         separate imapclient connection. A second row for ours: the default, ``f`` then
         ``Ctrl+s`` the moment the proposal dialog shows, timed from ``f``.

Our app reaches the folder by keys (``1``, Down, Enter on the account, Enter on INBOX) after
the project's listing has finished (its status line), so no figure overlaps the start-up
listing. Between flag runs every message is unflagged again (not timed).

Goals (issue 35): reply <= aerc's; flag <= aerc's; open <= 2x aerc's.

``--think SECONDS`` waits that long after the body shows before the reply key, in every client.
The reply figure is meant at 0 (a habit user's "Enter r in one breath"); 1 s shows what r costs
once the reply built ahead (a worker started when the reader shows the message) and its hidden
dialog are ready. 2026-12-03, quiet (load 1.9-3.3), 3139a8c beside c6bbf59, median of 5, seconds:
reply at --think 1: ours 0.047, before 0.056, aerc 0.024 (1.93x); the same hour at 0 (two runs):
ours 0.128 / 0.150, before 0.134 / 0.155, aerc 0.020 / 0.025. So ~0.08-0.10 s of r typed at once
is the wait for the build ahead and the dialog's first composition, not the dialog's paint.

What it measures, checked against what the user waits for: open stops when the body's text is
on the screen (neither client shows a body in its list, so it cannot come from a row); reply
stops when the quoted line is on the screen inside the compose dialog's text area, focused
and editable (aerc: inside its editor); flag stops when a separate connection sees 200
``\\Flagged`` on the server. Each starts at the key, typed the moment the previous step is
seen (a habit user types Enter r in one breath): what the app still does for the previous
key is counted in the next one, as the user waits for it. With confirmation, Ctrl+s is typed
the moment the dialog's confirm button shows; the person's reading time is not counted.
``--before CHECKOUT`` runs a second copy of our app from another checkout (a throwaway
worktree of the base commit), run by run beside this one, for before/after in one session.

Figures, 2026-12-02, the 2-core development machine shared with other helpers, 2,001
messages, median of 5 fresh processes, seconds from the key; "before" is f329a7b (the habits3
branch point), "after" this branch, run by run in the same session (--before):

  | task                                        | before | after | aerc  | before | after | aerc  | goal  |
  |                                             | 19:20 UTC, 968fcf0, load 3.6-4.1 | 19:31 UTC, 771812f, load 9.2-9.5 |  |
  |---------------------------------------------|--------|-------|-------|--------|-------|-------|-------|
  | Enter -> body on screen                     | 0.087  | 0.086 | 0.029 | 0.163  | 0.143 | 0.052 | <= 2x |
  | reply key -> editable quoted draft          | 0.251  | 0.142 | 0.024 | 0.574  | 0.339 | 0.042 | <= 1x |
  | flag 200 tagged -> server (no confirmation) | 0.090  | 0.116 | 0.204 | 0.193  | 0.129 | 0.408 | <= 1x |
  | flag 200 tagged, f -> Ctrl+s -> server      | 0.316  | 0.217 | 0.204 | 0.787  | 0.505 | 0.408 | <= 1x |

  Ratios to aerc, light / loaded: open 3.0x -> 3.0x / 3.1x -> 2.7x (goal 2x, not met);
  reply 10.6x -> 6.0x / 13.8x -> 8.1x (goal 1x, not met); flag with confirmation 1.55x ->
  1.06x / 1.93x -> 1.24x (goal 1x, not met); without confirmation under aerc's throughout.
  Single runs spread widely under load (open: ours 0.08-0.22 s, before 0.12-0.34 s).

  Where r's time went (a trace of one fresh process at load ~10, key to paint): ~80 ms
  waiting for the main footer's recompose that the Enter before it left (the focus moves into
  the reader, the footer's keys change; it was awaited in the screen's after-refresh
  callbacks, so the screen handled no key until ~20 keys were mounted: now on the footer's
  own queue), the first dialog's imports (~50 ms) and stylesheet (Textual re-parses every
  stylesheet and restyles every widget when a screen brings a CSS file: now loaded 0.3 s
  after the first list is shown, tui/dialogs/ahead.py), the reply's building (route, quoted
  draft: now built on a worker once the body is painted; r shows it in its own turn), and
  what is left: mounting and styling the dialog's ~25 widgets (~25-100 ms loaded, most in
  Textual's Stylesheet.apply) and its first full paint (~35-45 ms). Open: the body comes
  from the read-ahead (or waits ~10 ms for it when Enter follows the list's first paint);
  the rest is Textual's frame: the focus move restyles the panes and repaints every row of
  the list (its cursor row's style follows the focus), ~40-100 ms loaded.

Habits4 (2026-12-02, 20:05 UTC, load 2.9-4.1, median of 7, --before e6c96bc, same run): the
focus move no longer paints every row of the list (the cursor row only: 180 row paints -> 10
over 10 Enters in a headless profile; main-thread CPU of Enter + settle on a 60-message list,
4 paired runs: 120/126/153/166 ms against 160/162/174/151 ms before). On the screen the gain is
below this machine's spread: Enter -> body before 0.060 / after 0.080 / aerc 0.038 (2.1x);
two earlier runs the same session, load 2.5-2.9: 0.097 / 0.079 / 0.030 and 0.069 / 0.064 /
0.024 (2.6x). Reply 0.142 / 0.131 / 0.018; flag 0.068 / 0.105 / 0.221; flag with Ctrl+s
0.223 / 0.278 / 0.221. Single runs of one build spread 0.057-0.147 s (open): the goal of 2x
is not shown met. What is left between the key and the paint (profile): the footer's keys
recomposed for the reader (FooterKey mounts and styles, the largest part), the focus-within
restyle of both panes' subtrees (~15 %), and the compositor's full update after the footer's
relayout (Strip.divide, the reader's lines).

Habits5 (2026-12-03, 07:39-07:42 UTC, load 9.7-11.7, --before 6791523, two sessions of 3 and 5
runs, pooled median of 8 fresh processes each, seconds): the footer's keys made in its form
(styled once, not three times each), the reply built ahead by one exclusive worker, its compose
dialog composed and mounted ahead (hidden; r shows it), the dialogs' objects frozen (gc.freeze):

  | task                                        | before | after | aerc (median of 8) | goal  |
  |---------------------------------------------|--------|-------|--------------------|-------|
  | Enter -> body on screen                     | 0.113  | 0.103 | 0.029              | <= 2x |
  | reply key -> editable quoted draft          | 0.184  | 0.131 | 0.028              | <= 1x |
  | flag 200 tagged -> server (no confirmation) | 0.088  | 0.091 | 0.208              | <= 1x |
  | flag 200 tagged, f -> Ctrl+s -> server      | 0.287  | 0.344 | 0.208              | <= 1x |

  Sessions apart: open 0.087 -> 0.130 (3 runs) and 0.161 -> 0.065 (5 runs); reply 0.103 ->
  0.146 and 0.197 -> 0.119: single runs spread 0.04-0.30 s at this load, more than any change
  here. Headless (main-thread CPU, 6 x Enter then r at once, held Dovecot project, load ~10):
  r -> draft painted 147 -> 92 ms; Enter -> body painted 110 -> 85 ms (the footer alone).
  The flag with confirmation did not improve (0.287 -> 0.344 pooled, the 5-run session 0.303 ->
  0.380): not explained yet; none of the changes runs on that path but the footer's (cheaper).
  Open, next costs (cProfile of the same headless run): the compositor's updates after the
  focus move (_render_chops 37 % of the UI thread, of which Strip objects: each Strip makes
  7 caches, 134 k cache objects for 6 Enters, ~8 %) and the restyles of the focus move
  (Stylesheet.apply 26 %).

Open (2026-12-03, 10:04-10:09 UTC, load 10-14.8, --before 771e378, two sessions of 3 and 5 runs,
pooled median of 8 fresh processes, seconds): the reader's widgets kept and updated in place
(no remove + mount per Enter), and a focus change no longer repaints the whole screen
(MainScreen.focused, repaint=False: Textual's Screen.focused repainted every pane's lines on
each Enter and q). Enter -> body: before 0.169, after 0.094, aerc 0.043 (2.2x; the 5-run
session alone 0.166 / 0.100 / 0.049, 2.03x). Reply (Enter's left-over work counted in it) 0.299
-> 0.219 in the 5-run session. At this load single runs spread 0.05-0.19 s (ours) and 0.03-0.06
s (aerc): the 2x goal is at the edge, not shown met. Headless (bench_open_headless.py) the
UI thread's CPU from Enter to the body's frame is ~45-60 ms at load 5, mostly Textual's frame:
the layout and partial update (~20 ms), the focus's restyle of both panes' subtrees
(.pane:focus-within, ~5-8 ms), then the footer's new keys (~20 ms, after the body is shown).

Habits6 (2026-12-03, 10:00-10:15 UTC, load 11.4-20.2, --before 771e378, two sessions of 4 runs,
pooled median of 8 fresh processes each, seconds): the flag write is one round trip per batch
of 100 (the UID STORE's own FETCH answers are the check; no UID FETCH FLAGS after it), and the
proposal's Messages list (200 lines) is painted a chunk at a time as it shows (LongText), not
wrapped and rendered whole:

  | task                                        | before | after | aerc (median of 8) | goal  |
  |---------------------------------------------|--------|-------|--------------------|-------|
  | Enter -> body on screen                     | 0.165  | 0.148 | 0.046              | <= 2x |
  | reply key -> editable quoted draft          | 0.186  | 0.281 | 0.028              | <= 1x |
  | flag 200 tagged -> server (no confirmation) | 0.146  | 0.108 | 0.446              | <= 1x |
  | flag 200 tagged, f -> Ctrl+s -> server      | 0.486  | 0.470 | 0.446              | <= 1x |

  Sessions apart (before / after / aerc): with Ctrl+s 0.595 / 0.468 / 0.467 at load 11-14 and
  0.486 / 0.470 / 0.376 at load 19-20. Nothing here runs on r's path: its 0.186 -> 0.281 is
  this load's spread (single runs 0.12-0.45 s for both builds). Headless (Pilot, 231-message
  Dovecot INBOX, main-thread CPU by time.thread_time, load 12-18): f -> proposal settled
  ~100-300 ms per run for both builds (more spread than gain); Ctrl+s -> 200 flagged on the
  server ~100 ms wall from the key to the last STORE's OK (trace: NOOP, STORE x2; the
  read-back FETCHes are gone). cProfile (thread CPU) of f before: the Messages Static's wrap
  30 % (gone after), then Textual's own: the push's ScreenResume restyle of every node of the
  dialog (~10 % of f, ~20 % of r's show of the dialog mounted ahead), layout and first paint.
  Skipping that restyle when nothing changed since the mount (a handler before Screen's own
  setting ``refresh_styles = False``) kept every snapshot but made r slower headless (CPU
  87-94 -> 106-276 ms), not understood: not kept.

Quiet machine (2026-12-03, 10:46 UTC, load 1.3-1.7; the tables above ran at load 10-20), --runs 5 --before
771e378, median of 5 fresh processes, seconds:

  | task                                        | before | ours  | aerc  | ours/aerc | goal  |
  |---------------------------------------------|--------|-------|-------|-----------|-------|
  | Enter -> body on screen                     | 0.070  | 0.074 | 0.030 | 2.50x     | <= 2x |
  | reply key -> editable quoted draft          | 0.113  | 0.084 | 0.017 | 4.88x     | <= 1x |
  | flag 200 tagged -> server (no confirmation) | 0.084  | 0.074 | 0.174 | 0.42x     | <= 1x |
  | flag 200 tagged, f -> Ctrl+s -> server      | 0.267  | 0.234 | 0.174 | 1.34x     | <= 1x |

  Single opens spread 0.045-0.166 s (ours) and 0.045-0.155 (before): open's before/after is inside it.

open3 (2026-12-03, --runs 5 --before 612ee71, median of 5 fresh processes, seconds): the focused
pane marked by a class, the footer's keys changed in place, the view's focus restyling the view
alone (bench_open_headless: Enter -> body's frame 50 -> 37-40 ms of UI CPU). On the screen:

  | run (load)                         | before | ours  | aerc  | ours/aerc | goal  |
  |------------------------------------|--------|-------|-------|-----------|-------|
  | 12:53 UTC (3.7-4.6), 2 of 3 commits | 0.037  | 0.039 | 0.024 | 1.63x     | <= 2x |
  | 13:15 UTC (14.5-15.5), all three    | 0.161  | 0.177 | 0.059 | 3.00x     | <= 2x |

  Single opens at load 4: ours 0.018-0.042, before 0.027-0.056, aerc 0.021-0.028; at load 15
  0.07-0.35 for both builds: the CPU saved (~10 ms) is inside the spread of either.

Reply3 (2026-12-03, 13:10-13:18 UTC, load 16-19, --runs 5 --before 612ee71, median of 5 fresh
processes, seconds; ours = 0c1f135: Ctrl+s starts the write on the key with the GIL handed back
within 0.5 ms while it runs, and the compose dialog mounted ahead shown without the push's
restyle of every node):

  | task                                        | before | ours  | aerc  | ours/aerc | goal  |
  |---------------------------------------------|--------|-------|-------|-----------|-------|
  | Enter -> body on screen                     | 0.158  | 0.096 | 0.050 | 1.92x     | <= 2x |
  | reply key -> editable quoted draft          | 0.325  | 0.291 | 0.036 | 8.10x     | <= 1x |
  | flag 200 tagged -> server (no confirmation) | 0.125  | 0.113 | 0.444 | 0.26x     | <= 1x |
  | flag 200 tagged, f -> Ctrl+s -> server      | 0.668  | 0.397 | 0.444 | 0.89x     | <= 1x |

  Single runs, with Ctrl+s: ours 0.30-0.60, before 0.32-0.80, aerc 0.26-0.74; reply: ours
  0.13-0.39, before 0.09-0.41 (at this load the reply's before/after is inside the spread; open
  changed nothing on its path). Headless (bench_habits_headless.py, the UI thread's CPU, same
  builds, 301-message INBOX, load 15-18): r -> compose frame 37.0 ms vs 49.7 before; Ctrl+s ->
  the write returned (wall) 79.5 ms vs 325. Where the time goes (pyinstrument, UI thread):
  r on the dialog mounted ahead is Textual's first frame of a pushed screen, a full update of
  the whole screen (the main screen below, dimmed, and the dialog): its layout, the restyle (now
  skipped) and the render, of which the main screen's footer keys, recomposed by the Enter
  before, ~20-45 %; aerc redraws its editor's region only. Ctrl+s wrote after ~30 ms of the UI
  thread (the pop and the repaint of the main screen) and each round trip's answer waited up to
  5 ms for the GIL behind that repaint. The two UID STOREs are the adapter contract's 1-100 IDs
  per bulk call (each with the selected folder's NOOP): one STORE over 200 needs the contract
  changed, not done.

  Again at 13:32-13:34 UTC, load 12-16, ours = 7c3f586 (with the proposal's Messages list
  counted without wrapping it), same command: open 0.117 / 0.123 / 0.042 (before / ours / aerc);
  reply 0.303 / 0.237 / 0.032 (7.4x); flag without confirmation 0.147 / 0.115 / 0.324; flag with
  Ctrl+s 0.395 / 0.335 / 0.324 (1.03x; single runs ours 0.22-0.52, aerc 0.18-0.39).

Reply4 (2026-12-03, 15:40-16:34 UTC, --runs 5 --before c6bbf59, median of 5 fresh processes,
seconds; the machine at load 20-35 throughout, shared with six other helpers): the compose dialog
mounted ahead is also laid out and rendered while hidden (tui/textual_private.prepare_hidden,
once it has settled), so r composes cached lines; an r that waits for the reply being built
mounts no hidden dialog beside its own. Three tmux sessions (before / ours / aerc, reply):

  | session (load)                             | before | ours  | aerc  | ours/aerc |
  |--------------------------------------------|--------|-------|-------|-----------|
  | 15:58 (21-29), prepared at every change     | 0.469  | 0.633 | 0.048 | 13.2x     |
  | 16:12 (25-35), prepared once settled        | 0.330  | 0.526 | 0.054 | 9.7x      |
  | 16:19 (29-32), r waiting mounts no hidden   | 0.745  | 0.701 | 0.072 | 9.8x      |

  Single runs spread 0.17-0.84 s (ours) and 0.23-1.09 (before) at this load: the goal (<= aerc)
  is not met and these sessions cannot show the change on the screen either way; a quiet
  machine is needed (last session's quiet run: ours 0.075, aerc 0.017). Headless
  (bench_habits_headless.py, UI thread, 3 processes each, same builds, load 22-25): r -> the
  compose dialog's first frame 16.3 ms [13.7-17.8] vs 46.8 [39.0-56.2] before, wall 59.8 vs 186;
  r -> settled 48.9 vs 93.1; the dialog found laid out and rendered at r in every process
  ("ahead at r" 2). Lines rendered by the push (Pilot): the screen's background only, where the
  push rendered 145 lines of the dialog's widgets (footer keys, text area, fields) and laid out
  ~25 widgets. What is left of r on the UI thread: Textual's push (suspend, resume, focus) and
  one full frame composed from cached lines; in tmux the rest is waiting for the CPU.

open4 (2026-12-03, 16:15-16:20 UTC, load 28.6-34.3, --runs 5 --before c6bbf59, median of 5 fresh
processes, seconds; ours = c27ae02: the thread list and the reader's view no longer restyled by
the focus move (neither is styled by it), the collector's young collections held 0.1 s from a key):

  | task                                        | before | ours  | aerc  | ours/aerc | goal  |
  |---------------------------------------------|--------|-------|-------|-----------|-------|
  | Enter -> body on screen                     | 0.464  | 0.153 | 0.113 | 1.35x     | <= 2x |
  | reply key -> editable quoted draft          | 0.519  | 0.477 | 0.047 | 10.2x     | <= 1x |
  | flag 200 tagged -> server (no confirmation) | 0.259  | 0.255 | 1.053 | 0.24x     | <= 1x |
  | flag 200 tagged, f -> Ctrl+s -> server      | 0.721  | 0.735 | 1.053 | 0.70x     | <= 1x |

  Single opens: ours 0.147-0.379, before 0.096-0.643, aerc 0.055-0.149: at load 30 the spread of
  one build is wider than the change, so 1.35x is one sample of a loaded run, not the goal shown
  met on a quiet machine. Headless (bench_open_headless.py, same session, load 25-28): Enter ->
  the body's frame 38.0 -> 32.0 ms of the UI thread, both sides paced as run_app paces.

reply5 (2026-12-03, --runs 5 --before ee086a7, median of 5 fresh processes, seconds): an empty
compose dialog is mounted hidden once the dialogs' stylesheet is loaded (while the list is read);
the reply built ahead is loaded into it (no ~25 widgets composed, mounted and styled after Enter),
its fill moves no focus and changes no keys, its cursor does not blink while hidden. A timeline
of r typed as the body showed (before, load ~10): r was handled 150-200 ms after it was sent,
behind the mount of the dialog made ahead, and its push waited for the rest of that mount.

  | run (load)                            | before | ours  | aerc  | ours/aerc | goal  |
  |---------------------------------------|--------|-------|-------|-----------|-------|
  | 19:11 reply (18-25, 3 of 5 commits)   | 0.562  | 0.452 | 0.054 | 8.35x     | <= 1x |
  | 19:18 reply (12.9-19.5, all)          | 0.379  | 0.210 | 0.042 | 5.02x     | <= 1x |
  | 18:43 reply --think 1 (8-13)          | 0.166  | 0.086 | 0.056 | 1.54x     | <= 1x |
  | 19:18 open (12.9-19.5)                | 0.136  | 0.125 | 0.083 | 1.50x     | <= 2x |

  Single replies at 19:18: ours 0.14-0.35, before 0.24-0.82. Open, run by run at 19:11 (while
  tests ran): before 0.135, ours 0.280 (single runs: before 0.10-0.39, ours 0.12-0.64); at 19:18 0.136 / 0.125:
  inside this load's spread. Headless (bench_habits_headless.py --at-once, UI thread CPU from
  Enter to the compose dialog's first frame, load 9-23, 4 processes): 145 ms vs 276 before. What
  is left between the body and r handled (timeline): the main footer's keys recomposed for the
  reader, the worker's start (~40 ms at load 12), the fill (~8-20 ms) and the push's first frame.

footer7 (2026-12-03, 22:15-23:10 UTC; nothing kept in the app, figures for the next step). What
runs between Enter and an r typed at once (bench_habits_headless.py --steps: the keys sent as a
terminal's, every UI-thread step >= 0.3 ms; load 6-13): Enter's handling and focus move (~10-20
ms), the body's frame (screen_update 14-40 ms CPU); then the reply's fill (DraftBuiltAhead, 3-8
ms), the footer's keys changed in place (3-10 ms), and a second MainScreen frame (16-30 ms) with
the keys' layout and what Textual's Focus event does after the body's frame (the view's repaint,
the pane status, the resized keys); r is handled after that frame, often after one or two more
(the key passes App -> screen -> view -> MainScreen, a frame can run between the hops): in one
process at load 12, r sent 78 ms after Enter reached MainScreen.ReplyRequested at 257 ms.

Tried: the footer's keys changed as the bindings change (subscribed ``immediate``, in place from
data, no FooterKey made), so they ride in the body's frame. r improved and open got worse (same
run, load 7-10, --before a163c0b): open 0.093 -> 0.153 s, reply 0.192 -> 0.117 (aerc 0.055 /
0.030); bench_open_headless Enter -> body frame 29.9 -> 44.3 ms of UI CPU: the keys' mounts and
layout moved into the body's frame, and the frame after it stayed (the Focus event's part).
Reverted. The keys changed in place from data but after the frame (as before) showed no gain:
quiet (load 2-4.6), two tmux runs open 0.054 / 0.042 before vs 0.065 / 0.067, reply 0.076 / 0.064
vs 0.109 / 0.056 (aerc open 0.028, reply 0.028 / 0.022), --think 1 at load 6.6-10 reply 0.077
vs 0.066 (aerc 0.032), and headless settle 62.7 vs 68.1 ms;
an A/A run (base's footer in both trees, load 3-4) gave open 0.056 / 0.052 and reply 0.060 /
0.065, so the tree order has no bias. Reverted too. Same hour, the 100k folder (bench_read_newest
--phases open, load 2-7): ours 0.050 (0.032-0.081), base 0.039, aerc 0.050.

What would cut r typed at once: no second frame after the body's (the Focus event's repaint and
the keys' layout in the body's frame, at no cost to it: e.g. a footer drawn as one line, no
widget per key, so a change is a repaint of one line without layout), and r's hops not
interleaved with frames. Both are Textual-level; neither was done here.

reply8 (2026-12-04, 02:45-04:20 UTC, --before b67b714 in every run; the machine loaded by six
other helpers, load 15-26). Done: the footer is one widget, KeyLine, drawing every key as one
line from the bindings when it renders (a focus move repaints one line in the body's frame, no
key widget mounted or laid out); the reader's r/A/F/L/C are priority bindings run on the App's
own handling of the key, their request posted straight to the screen (no bubbling through the
view and the pane); the first thread fills a header/body pair mounted ahead (hidden), the hint
is hidden not removed, and a WrappedText's new size asks no second layout
(textual_private.SizedInPlace). bench_habits_headless --steps, 3 processes each, UI-thread CPU
(wall) ms, ours vs before, at load 16-25, code of 3fc93b9: Enter -> compose dialog 48.0 (209)
vs 91.3 (366); r -> dialog frame 17.7 (58.7) vs 48.9 (202); r -> settled 31.3 vs 58.8; f and
Ctrl+s unchanged within noise. The frame after the body's is still there (the Focus event's
repaint, ~11 ms CPU), and r is handled right after it rather than after two or three more.
This file, tmux, 5 processes, code of 884a15a (active bindings read once per change), load
10-11: reply 0.104 s vs before 0.167 (aerc 0.052: 2.0x, was 3.2x), open 0.089 vs 0.088 (aerc
0.049); at load 16-26 (3fc93b9) reply 0.236 vs 0.336 (aerc 0.039), open 0.165 vs 0.105 with
spreads 0.086-0.259 / 0.086-0.175 (noise at that load: the quieter run has them equal).
bench_open_headless --before, load 9, UI CPU ms: paint 28.6 vs 27.0, settle 64.3 vs 90.1, the
first open's paint 44.8 vs 77.4 and settle 70.7 vs 108.6 (the pair mounted ahead).
bench_read_newest --phases open on the 100k folder, 5 runs, load 13-17: ours 0.122, base 0.107,
aerc 0.084 (spreads 0.10-0.32 / 0.10-0.13 / 0.04-0.14: the goal of 50 ms is not measurable at
that load). Left: the frame after the body's (the Focus event's repaint and the DraftBuiltAhead
updates) still runs before r is taken; it is Textual's, in the App's own loop.

reply9 (2026-12-04, 07:33-07:57 UTC, --runs 5 --before /work/base (1d3761d) in each run, median
of 5 fresh processes, seconds). Where r's time went (bench_habits_headless --steps, which now
names each screen update and what it draws): the compose dialog's first frame waited a whole
period of Textual's update timer after the push (a Timer's clock starts at its first resume and
ticks one period later: 16.7 ms and more, the loop idle meanwhile); the push laid the dialog out
and rendered it again ("layout repaint 5 widgets") because the fill of the reply built ahead came
inside the 30 ms the hidden dialog waited before its prepare, and an r typed as the body showed
came inside them too; the frame after the body's laid the whole main screen out for the reading
pane's status line (the focus move rewrites it with its keys). Now: the timer is started while
the dialog is hidden (the push's frame is drawn in the turn the timer is resumed), a filled
dialog is prepared as soon as the fill is in, and the status line (one line) is repainted without
a layout. r -> the dialog's frame is then the push and one update ("repaint 0 widgets": the
screen's dimmed background and the cached lines, 4.7-6.5 ms of UI CPU against 12.3-13.8).

  | run (load)         | before | ours  | aerc  | before/aerc | ours/aerc | goal  |
  |--------------------|--------|-------|-------|-------------|-----------|-------|
  | 07:34 reply (12)   | 0.077  | 0.063 | 0.026 | 2.96x       | 2.41x     | <= 1x |
  | 07:42 reply (16-19)| 0.102  | 0.073 | 0.041 | 2.48x       | 1.78x     | <= 1x |
  | 07:34 open (12)    | 0.077  | 0.104 | 0.047 | 1.65x       | 2.22x     | <= 2x |
  | 07:42 open (16-19) | 0.121  | 0.091 | 0.062 | 1.95x       | 1.48x     | <= 2x |
  | 07:54 reply (19-22)| 0.082  | 0.112 | 0.031 | 2.61x       | 3.59x     | <= 1x |
  | 07:54 open (19-22) | 0.144  | 0.099 | 0.052 | 2.75x       | 1.90x     | <= 2x |
  | pooled 15, reply   | 0.088  | 0.073 | 0.029 | 3.0x        | 2.5x      | <= 1x |
  | pooled 15, open    | 0.094  | 0.099 | 0.052 | 1.8x        | 1.9x      | <= 2x |

  Single replies: ours 0.030-0.088 / 0.064-0.104 / 0.064-0.183, before 0.066-0.148 /
  0.078-0.146 / 0.072-0.155: at load 20 (the third run, niced tests of this branch running in
  its first two minutes) one build's spread is wider than the change, and that run has ours
  behind. The goal (<= aerc) is not met. Open is inside the noise both ways (single opens
  0.067-0.183 ours, 0.046-0.269 before); headless
  (bench_open_headless --before, load 12-14, UI CPU ms) paint 19.4 vs 20.0, settle 43.5 vs 46.5.
  Headless (bench_habits_headless --steps --before, 3 processes each, load 10-12, UI CPU (wall)
  ms): r -> the dialog's frame 21.4 (78.9) vs 28.7 (88.2), Enter -> the dialog 45.0 vs 57.9.
  Left, in order of size: when r comes right after the body, it still waits behind the frame
  after the body's (the Focus and Blur events repaint both panes whole, their borders follow the
  focus: ~10 ms of UI CPU, no layout now) and behind the fill's prepare (~8 ms: the dialog's
  layout and the changed widgets' lines); the build ahead starts after the body's frame (its
  worker took the UI thread's turns before it) and lands 10-40 ms later; the push's one update
  (~5 ms: the dimmed background over the whole screen, every line cut at the dialog's edges).

open10 (2026-12-04, --runs 7 --before /work/base (c34f710), median of 7 fresh processes, seconds).
At the start of the session, quiet (load 0.2-0.6): open 0.082 (0.051-0.110) against aerc 0.030,
2.7x. Where the time went, traced in tmux (a scratch sitecustomize in the app's process logging
every UI-thread step, frame and write, and the Service calls of every thread, on the clock the
benchmark's send-keys is read with; load 10-12): Enter is typed as the folder's first rows show,
and the read ahead of the newest message started only when the list's Highlighted reached the
screen, after that frame at times: in one run of two the read was asked 3-7 ms before the Enter
and answered 60-80 ms after it, the Enter's frame showed "loading" and the body came a frame
later. Now the turn that shows the folder's rows starts the read (Accounts.on_folder_listed);
and the frame after the body's (which an r typed at once waits behind) no longer repaints the
list and the view whole nor lays the screen out again (tui/focus_paint.py, bench_open_headless.py
open10). The machine stayed at load 20-24 for the rest of the session (other helpers' suites):

  | run (load)          | before | ours  | aerc  | before/aerc | ours/aerc | goal  |
  |---------------------|--------|-------|-------|-------------|-----------|-------|
  | 13:14 open (22-24)  | 0.203  | 0.167 | 0.047 | 4.30x       | 3.54x     | <= 2x |
  | 13:14 reply (22-24) | 0.103  | 0.131 | 0.039 | 2.60x       | 3.33x     | <= 1x |

  Single opens: ours 0.080-0.243, before 0.101-0.283, aerc 0.024-0.130. At this load the figure
  is the CPU the two cores give each process, not the path: the goal cannot be shown met or missed,
  and reply's before/after is inside its spread (ours 0.030-0.343, before 0.059-0.233). To judge
  it: the same command on a quiet machine. Headless (bench_habits_headless --rounds 2 --before,
  UI CPU ms, 2 processes each, load 21-27): Enter -> the compose dialog (r at the body's frame)
  58.9 vs 66.2, r -> its frame 8.8 vs 11.6, settled 17.1 vs 19.4; f -> the proposal 142 vs 67 in
  that run but 71.6 in a repeat (one process, load 24; the focus change alone turned off there:
  75.6): nothing on f's path changed but the list's blur, which now paints one row instead of all.
  Left on the open path (UI CPU, bench_open_headless):
  the body's frame (~10 ms: layout, the body's lines, the reading pane's border) and Enter's
  handling before it (~5-7 ms: show_thread, the focus move's restyle of the two panes' borders).

reply11 (2026-12-04, 14:37-15:45 UTC). Where r typed at once went, traced in tmux (a scratch
sitecustomize in the app's process, not kept: every UI-thread step with its CPU by
time.thread_time, the key's arrival on the input thread, each frame, the compose and dialog
steps, the collector, on the clock send-keys is read with; the same steps as this file, ours
only or --before /work/base alternated, 8-45 fresh processes a run). Fast mode (the empty dialog
filled and prepared before r): the key's handling and the push (~1.5 ms of UI CPU: no mount, no
restyle, no layout, no worker) and one full frame from cached lines (~5 ms), 6-8 ms in all. The
slow mode was not the build ahead: it was the first process's dialogs ahead still being made.
They started 0.3 s after the first list and took ~0.3 s (imports on a worker, the dialogs'
stylesheet ~20 ms of UI, the widgets' CSS, the empty dialog mounted, its first prepare ~15 ms);
a habit user reaches r 0.37-0.78 s after the first list, so r met them: at load 3-4, 7 of 9
base runs (r -> draft 38-142 ms; the worst: r waited for the build on a worker, the push parsed
the stylesheet, composed the dialog's ~25 widgets and laid them out: ~95 ms of UI CPU). Now they
start once the first list is painted (ready 200-340 ms before r in every run), and the empty
dialog's Inputs carry their -valid class from its mount (the fill restyled the Subject: fill
2.2-3.0 -> 1.2-1.6 ms of UI CPU). Same-run traces, load 3-8 (21 processes each): r -> draft
median 23 ms vs 51, UI CPU from r's arrival to the draft's frame 7.7 ms vs 20.5 (max 26 vs 75),
empty dialog prepared before r 21/21 vs 11/21.

Moving the dialogs ahead onto the start-up exposed a start-up hang: the row marks' worker
resolved its backend outside the backend lock (an IMAP source's first capabilities: LOGIN and
SELECT Drafts) while the sources check used the same connection; one thread read the other's
answer and the listing waited for ever ("asking the server ...", the protocol trace shows two
threads' commands on one connection). 10 of ~300 launches this session failed (9 waiting on
the listing, all this branch's; one reader left empty, '1 message' and no body, which the base
does too: 1 of 51 in a later run). After the fix in application/overview.py (resolved under the
lock), two harnesses at once (load 1-10): ours 0 of 93 (3 of 71 before the fix).

  | run (load)                        | before | ours  | aerc  | before/aerc | ours/aerc | goal  |
  |-----------------------------------|--------|-------|-------|-------------|-----------|-------|
  | 15:11 reply (2.9-3.3), bdad79e    | 0.070  | 0.027 | 0.021 | 3.29x       | 1.26x     | <= 1x |
  | 15:11 open (2.9-3.3)              | 0.046  | 0.043 | 0.027 | 1.68x       | 1.58x     | <= 2x |
  | 14:49 reply (13-16), 8a95439      | 0.032  | 0.049 | 0.028 | 1.14x       | 1.77x     | <= 1x |
  | 15:30 reply (9.9-10.5), b738cd4  | 0.057  | 0.030 | 0.032 | 1.80x       | 0.95x     | <= 1x |
  | 15:30 open (9.9-10.5)             | 0.055  | 0.062 | 0.037 | 1.50x       | 1.67x     | <= 2x |
  | 15:32 reply --think 1 (6.9-9.9)   | 0.017  | 0.022 | 0.030 | 0.57x       | 0.74x     | <= 1x |
  | 15:39 reply (2.6-4.5), 4 commits  | 0.068  | 0.022 | 0.018 | 3.74x       | 1.22x     | <= 1x |
  | 15:39 open (2.6-4.5)              | 0.057  | 0.046 | 0.032 | 1.80x       | 1.45x     | <= 2x |
  | 15:39 flag, f -> Ctrl+s (2.6-4.5) | 0.183  | 0.125 | 0.126 | 1.46x       | 1.00x     | <= 1x |

  Single replies at 15:39: ours 0.011-0.025, before 0.022-0.127 (aerc 0.016-0.032): the slow
  mode is gone; f's proposal, the process's first dialog too, finds it ready (0.183 -> 0.125,
  f -> Ctrl+s at load 3; equal at think 1, 0.159 / 0.158). At 15:11: ours 0.011-0.062, before
  0.016-0.098 (aerc 0.013-0.027); at 15:30
  ours 0.014-0.052, before 0.011-0.107 (aerc 0.017-0.114). With --think 1 both builds find the
  dialog ready: the same path, inside the noise (0.017 / 0.022). At load
  13-16 the base had its dialogs ready before r too (the bench's keys come later) and single
  runs spread 0.011-0.124 for both: the process waits for the CPU (r's UI CPU 6-15 ms, wall
  11-249 ms). Left: r -> its frame is the push and a full update of the whole screen (~5 ms of UI
  CPU, the dialog's widgets' cached lines and the escape codes); an r typed while the reply built
  ahead is filled and prepared (~6 ms) waits for it, and under load the build's worker lands
  10-30 ms after the body's frame (then r shows the dialog unprepared: a layout and repaint of 5
  widgets in the push's frame). The goal (<= aerc) is within 1.3x on the quiet run, not shown met.

open11 (2026-12-04, 14:39-16:03 UTC, --before /work/base (1c32774b) in each run, median of 7 fresh
processes, seconds). Where Enter's time went, traced in tmux (a scratch sitecustomize in the app's
process logging, on the benchmark's clock, the input thread's read of the key, every UI-thread
message, frame and after-refresh callback, the workers, the terminal writes and the writer
thread's flushes; load 4-16, ~60 opens): the key read 0.1-5 ms after send-keys; Enter's handling
(the key's hops, Opened, show_thread ~2 ms, the focus move) 4-8 ms; then the body's frame waited
1-20 ms for Textual's 60 Hz update tick with the UI thread idle; the frame (a layout, 7-12 ms of
UI CPU at load 10) wrote 19 kB: the reading pane and the thread pane's every row (its border
follows the focus, and Textual repaints a restyled widget whole); the writer thread flushed it
0.4-44 ms later. In between, in about one run in three: _after_shown (the reply built ahead, the
case's read; asked with call_after_refresh, which ran before the body's frame since the screen had
not heard of the reader's changes yet) with DraftBuiltAhead's handling and the hidden compose
dialog's fill, and the dialogs made ready ahead (their imports on a worker, the stylesheet's
restyle, the blank compose dialog's mount, ~10-12 ms each) landing on Enter. Now: the body's
frame is drawn as soon as the screen is idle with its layout (textual_private.FrameAtIdle); the
focused pane's border change repaints the two panes' edges (focus_paint.edges_repainted: 9-12 kB
written); _after_shown runs once the body's frame is drawn and written (focus_paint.PaintedText,
textual_private.output_pending); a step of the dialogs ahead and DraftBuiltAhead's fill that come
while Enter opens a thread wait until it is shown (Reading.after_open, 0.15 s at most).

  | run (load)            | before | ours  | aerc  | before/aerc | ours/aerc | goal  |
  |-----------------------|--------|-------|-------|-------------|-----------|-------|
  | 16:00 open (2.0-4.0)  | 0.038  | 0.028 | 0.025 | 1.57x       | 1.13x     | <= 2x |
  | 16:02 open (3.2-3.5)  | 0.053  | 0.032 | 0.029 | 1.87x       | 1.13x     | <= 2x |
  | pooled 14, open       | 0.050  | 0.032 | 0.027 | 1.89x       | 1.19x     | <= 2x |
  | 16:00 reply (2.0-4.0) | 0.027  | 0.033 | 0.023 | 1.18x       | 1.45x     | <= 1x |
  | 16:02 reply (3.2-3.5) | 0.050  | 0.071 | 0.018 | 2.81x       | 3.97x     | <= 1x |
  | pooled 14, reply      | 0.038  | 0.036 | 0.021 | 1.8x        | 1.7x      | <= 1x |

  Single opens (14): ours 0.022-0.111, three above 2x aerc (0.081, 0.087, 0.111); before
  0.030-0.093, seven above 0.053. Not every run is within 2x: the slow ones were not traced (with
  the trace on, ours 0.027-0.041 in the benchmark's own flow), a cause left to find. Reply is
  inside its noise (single replies 0.022-0.092 ours, 0.011-0.102 before). Earlier the same session
  (load 7-11, a build with the reply built ahead after the write, as now): open 0.041 vs 0.052
  (aerc 0.035), reply 0.053 vs 0.022 (aerc 0.030). Traced, the body's frame now waits 0.3 ms for
  its draw (was 1-20), writes 9-12 kB (19), and the writer flushes it within 0.4-11 ms (0.4-44).
  A build that started the reply built ahead in the turn after the frame, before its write (for r
  typed at once), had more slow opens at load 2-4 (0.036 with 3 of 7 at 0.086-0.112; at load ~2
  0.086, 4 of 7 slow vs before 0.045): not kept. Left: an import of the dialogs ahead already on
  its worker when Enter comes still takes the GIL from it (traced once: the key handled 21 ms
  after its read); a step of theirs asked between the key's read and Enter's handling is not
  held (holding them after any key for 0.1 s broke tests/tui/test_dialogs_ahead.py's timing: not
  done); bench_read_newest --phases open (the 100k folder) was not run.

reply12 (2026-12-04, 17:13-18:10 UTC). r's path traced in tmux (a scratch sitecustomize, not kept:
the key's read on the input thread, every UI-thread loop step with its CPU, each frame's kind and
bytes, the writer's flushes, on send-keys' clock; this flow only, ours and --before /work/base
alternated with aerc, 6-10 processes a run). Two paths. Fast (the reply built ahead filled and
the dialog prepared before r): the push (~1.5 ms of UI CPU) and one full update (~5 ms: every
widget's cached lines cut and joined, the screen's background rendered again as the push's
refresh drops it, escape codes; 23 kB). Slow: r comes before the fill is prepared, either
handled at once and waiting for the build's worker (~1 ms of work, 2-4 ms to start and hand
back at load 3, 10-30 ms under load) or queued behind its DraftBuiltAhead; the fill and the push
come in one step, and the push's update lays the dialog out, renders the changed widgets and
drew two full frames (the layout's, then the push's repaint of the same screen): ~8-10 ms of UI
CPU. The slow path is the benchmark's: 10 of 10 runs at load 3, 5 of 6 at load 4, 6-9 of 10
at load 5-15. Now (textual_private.FrameAhead): a filled dialog's push writes its full frame
rendered ahead, on a timer's step after the prepare (0.1 ms instead of ~5); a push that lays out
draws one full frame; the text area's blink starts on the show without repainting it.
Headless (bench_habits_headless --before, 3 processes each, UI CPU ms [wall]; the fast path):
--ahead r -> the dialog's frame 3.8 [13.9] vs 8.4 [33.1], settled 11.1 vs 15.9 (load 10-13);
--at-once 3.3 vs 8.2, settled 11.3 vs 16.0 (load 5-13); the final code (frame on a timer's step),
--ahead at load 1.4-1.7: 3.6 [3.5] vs 8.6 [8.6]. In tmux, UI CPU from r's read to the
end of the draft's frame: fast path 3.0-3.2 ms (runs that took it, load 5-10) vs 8.2-9.3 before;
median over all runs 14.3 vs 14.7 (load 3, all slow), 14.0 vs 16.0 (load 5), 14.4 vs 17.0 (load 10).

  | run (load)                     | before | ours  | aerc  | before/aerc | ours/aerc | goal  |
  |--------------------------------|--------|-------|-------|-------------|-----------|-------|
  | 17:13 reply (3.7-5.0), A/A      | 0.026  | 0.024 | 0.018 | 1.42x       | 1.34x     | <= 1x |
  | 17:40 reply (4.8-11.9)          | 0.064  | 0.047 | 0.033 | 1.92x       | 1.41x     | <= 1x |
  | 17:40 open (4.8-11.9)           | 0.081  | 0.045 | 0.043 | 1.88x       | 1.03x     | <= 2x |
  | 17:47 reply (17.6-19.0)         | 0.112  | 0.103 | 0.068 | 1.66x       | 1.52x     | <= 1x |
  | 18:02 reply (7.1-8.6)           | 0.035  | 0.056 | 0.026 | 1.36x       | 2.17x     | <= 1x |
  | 18:05 reply, traced (4.8-5.0)   | 0.027  | 0.027 | 0.026 | 1.04x       | 1.04x     | <= 1x |
  | 18:06 reply, traced (2.9-3.2)   | 0.022  | 0.022 | 0.017 | 1.32x       | 1.32x     | <= 1x |
  | 18:10 reply (2.2-2.6), final    | 0.026  | 0.024 | 0.016 | 1.55x       | 1.45x     | <= 1x |
  | 18:10 open (2.2-2.6)            | 0.028  | 0.027 | 0.029 | 0.96x       | 0.93x     | <= 2x |
  | 18:10 flag, f -> Ctrl+s         | 0.130  | 0.124 | 0.119 | 1.09x       | 1.04x     | <= 1x |

  The 17:13 run is before the change (both trees the base: the figure reproduced, 1.34x). The
  18:02 run had the frame rendered in the prepare's own step (r typed as the body showed waited
  for both: since rendered on a timer's step, the traced runs after it). Single replies spread
  0.006-0.066 (ours) and 0.024-0.104 (before) at 18:02: at these loads the spread of one build
  is wider than the ~5 ms of UI CPU saved, and the runs mostly took the slow path, where ours
  and the base do the same work less one full frame. The goal (<= aerc) is not met: ~1.3x at load 3.

  Left: the slow path. From r's read to the draft's frame at load 3: the build's hand-off (2-4
  ms), the fill and the push (~2 ms), the screen's messages (~1.5 ms), then the push's update
  (~8 ms: headless, the full update ~8 with the text area's lines ~2, the reflow ~2), the
  writer's flush (~1-4 ms) and tmux. Building the reply for the message under the cursor when
  its read ahead lands (before Enter), or on the UI thread when it needs no I/O, would let the
  fill, its prepare and its frame be ready before r; the fill's layout (five Layout requests
  for widgets whose size does not change) could be skipped. Neither done here.

reply13 (2026-12-04, 18:25-19:10 UTC). The first of those: r's reply is built for the account
message read ahead under the list's cursor, before Enter (Compose.build_row_ahead: on a worker,
only a reply that needs no other read), and the hidden compose dialog is filled, laid out and its
frame rendered then; the reader adopts it on show when it is for the thread object it shows (r
before the adoption finds it by the same identity; r in the list on that row too). So r typed as
the body shows meets the fast path: no hand-back, no fill, no layout on its turn. The first build
of a process imported the compose flows on its worker (~19 ms of CPU) about when Enter came: they
are imported with the dialogs ahead now. --before is 91fc90fa (/work/base) at 18:34, 52d6bb3b
(the base of this change, a detached worktree) after; medians of 7 fresh processes, seconds.

  | run (load start-end), commit   | before | ours  | aerc  | before/aerc | ours/aerc | goal  |
  |--------------------------------|--------|-------|-------|-------------|-----------|-------|
  | 18:34 reply (4.2-5.5), ba2d540 | 0.029  | 0.012 | 0.023 | 1.22x       | 0.51x     | <= 1x |
  | 18:34 open                     | 0.034  | 0.032 | 0.033 | 1.02x       | 0.97x     | <= 2x |
  | 18:37 reply (3.8-6.3), ba2d540*| 0.030  | 0.012 | 0.027 | 1.09x       | 0.43x     | <= 1x |
  | 18:37 open                     | 0.037  | 0.052 | 0.040 | 0.93x       | 1.33x     | <= 2x |
  | 18:39 reply (4.3-4.2), 87c6ba2 | 0.034  | 0.011 | 0.021 | 1.57x       | 0.52x     | <= 1x |
  | 18:39 open                     | 0.023  | 0.029 | 0.032 | 0.72x       | 0.91x     | <= 2x |
  | 18:42 reply (2.1-5.6), 5e02877 | 0.024  | 0.011 | 0.018 | 1.33x       | 0.61x     | <= 1x |
  | 18:42 open                     | 0.023  | 0.027 | 0.026 | 0.90x       | 1.04x     | <= 2x |
  | 18:44 reply (3.1-5.1), 5e02877 | 0.028  | 0.011 | 0.018 | 1.60x       | 0.64x     | <= 1x |
  | 18:44 open                     | 0.022  | 0.023 | 0.030 | 0.73x       | 0.77x     | <= 2x |
  | 18:53 reply (0.5-1.1), fe1d1e2 | 0.022  | 0.006 | 0.017 | 1.26x       | 0.35x     | <= 1x |
  | 18:53 open                     | 0.027  | 0.028 | 0.023 | 1.18x       | 1.22x     | <= 2x |
  | 18:53 flag, no confirm         | 0.036  | 0.051 | 0.119 | 0.30x       | 0.43x     | <= 1x |
  (*: 87c6ba2's change was made during that run: its later processes ran it.)
  Single replies (ours) 0.006-0.031 in all runs, before 0.005-0.118: the goal (<= aerc) is met in
  each run, at load 2-6. Open is within its goal; against 52d6bb3b it was slower before the
  import moved (0.052 vs 0.037, 0.029 vs 0.023), then 0.027 vs 0.023 and 0.023 vs 0.022: what
  is left may be noise or the row's build (~1-2 ms on a worker) and its fill and prepare (~6-10
  ms of UI CPU, reply12's figures), which run as the first row's read ahead lands, about when
  this benchmark types Enter. Not traced; a rest before the row's fill (READ_AHEAD_REST) would
  keep it off an Enter typed at once, at the cost of r typed at once then.
  Flag (no confirm) was 0.051 vs 0.036 in the quiet 18:53 run, equal within 0.01 in the others
  (0.040-0.071 vs 0.041-0.069): after the 200 v's the cursor rests, its row is read ahead and
  its reply built and filled, possibly while f's work runs. Not traced either.
  The fill's layout skip (reply12's second step) was not done.

reply14 (2026-12-04, 19:12-19:30 UTC). Why r typed as the body shows took the fast path in only
some starts, traced (a scratch sitecustomize, one fresh process per start, not kept; load 0.3-1.6).
Three tiers, decided by when the row's read ahead lands against Enter (typed as the rows show):
  - 25-35 ms before Enter: the reply built, filled, prepared and its frame rendered before Enter:
    0.006 (the fast path);
  - Enter first (Reading._ahead_open): no row build was started, the reply was built only after
    the body's paint (build_reply_ahead), r waited for its hand-back, then fill and push: 0.022.
    A row build still running at the paint was also dropped and built again;
  - a few ms before Enter: the build is done on its worker after Enter, its fill held by
    after_open until the body is painted; r comes 6-10 ms after the fill, before the dialog's
    prepare (on idle) and frame (a timer): the push lays it out, 0.011-0.017.
Now the second tier's reply is built as the awaited read lands (while the body is shown) and a
row build still running is adopted: those starts take the third tier. Medians of 7 (seconds):

  | run (load), --before            | before | ours  | aerc  | before/aerc | ours/aerc | goal  |
  |---------------------------------|--------|-------|-------|-------------|-----------|-------|
  | 19:17 reply (0.4-1.3), 91fc90fa | 0.022  | 0.016 | 0.016 | 1.35x       | 1.01x     | <= 1x |
  | 19:17 open                      | 0.022  | 0.025 | 0.027 | 0.81x       | 0.93x     | <= 2x |
  | 19:19 reply (1.2-1.6), 91fc90fa | 0.022  | 0.011 | 0.016 | 1.33x       | 0.66x     | <= 1x |
  | 19:19 open                      | 0.022  | 0.022 | 0.023 | 0.94x       | 0.94x     | <= 2x |
  | 19:20 reply (1.6), dd1827b2     | 0.016  | 0.016 | 0.017 | 0.97x       | 0.96x     | <= 1x |
  | 19:20 open                      | 0.025  | 0.028 | 0.027 | 0.91x       | 1.05x     | <= 2x |
  | 19:21 reply (1.5), dd1827b2     | 0.016  | 0.016 | -     |             |           | <= 1x |
  | 19:21 open                      | 0.027  | 0.028 | -     |             |           | <= 2x |
  Single replies, ours: 27 of 28 at 0.006-0.017 (one 0.028); dd1827b2 0.006-0.022 (2 of 14 at
  0.022). Against dd1827b2 the median is unchanged (its starts took the third tier in those
  runs too); open within 0.003 of it. Left: the third tier. Its fill, prepare and frame (~8-10
  ms of UI time after the paint) race r; done before the body's frame they would delay it. The
  read-ahead worker building the reply itself (no second worker to start: the row build's worker
  began 1-17 ms after it was asked, while Enter held the UI thread) would let more starts finish
  before Enter. Not done.

reply15 (2026-12-04, 19:47-20:30 UTC). The third tier, traced again (a scratch sitecustomize, one
fresh process per start, not kept: the r key's arrival -> the compose dialog's first frame written,
"app-side r"). What moved starts into it: the row's reply built on a worker of its own started as
the read landed (its start 1-17 ms late while Enter held the UI thread), so its fill, layout and
frame came after Enter, held until the body's paint, and r met them on its way (app-side 13-14
ms). Now (1) the reply is built on the read's own worker, right after the read is handed over
(Compose.row_reply; its DraftBuiltAhead comes after the read's message, in order); (2) the filled
dialog's layout and frame are one full render in one step (~6.5 ms, was ~5 + ~2 a timer apart);
(3) that step waits while a key is queued (Enter typed as the reply is filled goes first: one start
waited 10 ms for it) and while Enter opens a thread (ComposeDialog.hold: Reading.after_open); (4) no
message is read ahead while rows are tagged: the read of the row the cursor rested on after 200 v's
was on the account's connection when f came (in flight at f in 3 of 5 traced flag starts of this
change; the batch's key comes next, as for the reply's build, daf12f5). Tiers per start (r typed as
the body shows; "after paint": Enter before the read landed, all done after the paint but before r):

  | traces (load)           | before: fast / middle / after paint | ours: fast / middle / after paint |
  |-------------------------|-------------------------------------|-----------------------------------|
  | 19:59 (0.8-1.2), 14 each| 10 / 3 / 1                          | 11 / 0 / 3                        |
  | 20:11 (3.4-4.3), 16 each| 16 / 0 / 0                          | 13 / 0 / 3                        |
  | 20:16 (7.7-9.3), 14 each| 14 / 0 / 0                          | 14 / 0 / 0                        |
  App-side r, median (max), ms: 2.9 (13.2) vs 2.6 (7.2); 2.5 (7.8) vs 2.3 (8.2); 2.9 (13.0) vs 3.5
  (18.3, CPU-starved: the main screen's own layout took 32-38 ms then). Enter key -> the body's
  first frame, app-side medians: 13.3 vs 13.2, 14.1 vs 13.8, 20.5 vs 23.6 (the slow starts of
  ours at load 9 ran none of this work between the key and the frame). Medians of 7, seconds,
  --before /work/base (351cf9a4):

  | run (load), ours at           | before | ours  | aerc  | before/aerc | ours/aerc | goal  |
  |-------------------------------|--------|-------|-------|-------------|-----------|-------|
  | 20:02 reply (1.3-2.4) 39d06f6 | 0.012  | 0.007 | 0.018 | 0.70x       | 0.39x     | <= 1x |
  | 20:02 open                    | 0.031  | 0.025 | 0.023 | 1.36x       | 1.10x     | <= 2x |
  | 20:02 flag, no confirm        | 0.033  | 0.051 | 0.130 | 0.25x       | 0.39x     | <= 1x |
  | 20:05 reply (2.9-4.1) 4f2c3cd | 0.016  | 0.011 | 0.022 | 0.75x       | 0.49x     | <= 1x |
  | 20:05 open                    | 0.034  | 0.029 | 0.029 | 1.17x       | 0.99x     | <= 2x |
  | 20:06 reply (4.1-4.2) 4f2c3cd | 0.011  | 0.011 | 0.025 | 0.44x       | 0.43x     | <= 1x |
  | 20:06 open                    | 0.031  | 0.033 | 0.030 | 1.01x       | 1.08x     | <= 2x |
  | 20:09 reply (2.8-3.6) 8638358 | 0.012  | 0.012 | 0.019 | 0.61x       | 0.61x     | <= 1x |
  | 20:09 open                    | 0.034  | 0.033 | 0.029 | 1.18x       | 1.15x     | <= 2x |
  | 20:09 flag, no confirm        | 0.050  | 0.058 | 0.129 | 0.39x       | 0.45x     | <= 1x |
  | 20:11 reply (4.0-8.0) eaccb42 | 0.022  | 0.015 | 0.025 | 0.85x       | 0.60x     | <= 1x |
  | 20:11 open                    | 0.067  | 0.079 | 0.034 | 2.01x       | 2.35x     | <= 2x |
  | 20:13 reply (8.0-9.6) eaccb42 | 0.016  | 0.024 | 0.033 | 0.49x       | 0.71x     | <= 1x |
  | 20:13 open                    | 0.052  | 0.082 | 0.043 | 1.21x       | 1.90x     | <= 2x |
  | 20:27 reply (5.6-5.9) eaccb42 | 0.017  | 0.016 | 0.023 | 0.73x       | 0.70x     | <= 1x |
  | 20:27 open                    | 0.037  | 0.030 | 0.028 | 1.32x       | 1.05x     | <= 2x |
  | 20:27 flag, no confirm        | 0.043  | 0.053 | 0.136 | 0.32x       | 0.39x     | <= 1x |
  | 20:28 A/A reply (5.1-4.8) *   | 0.009  | 0.011 | 0.024 | 0.39x       | 0.47x     | <= 1x |
  | 20:28 A/A flag, no confirm    | 0.045  | 0.038 | 0.141 | 0.32x       | 0.27x     | <= 1x |
  (*: eaccb42 in both slots, --before /work/wt/reply15.)
  Single replies at load <= 4 (20:02-20:09): ours 0.006-0.028, before 0.006-0.057, 24 of 28 each
  <= 0.017 (the screen is polled every 5 ms: the app-side figures above are the finer measure).
  Flag without confirmation
  was above before's in 6 of 7 runs (medians 0.050-0.076 vs 0.033-0.066, single starts 0.029-0.216
  both), also after (4); a trace run of it gave 0.034-0.053 vs 0.029-0.069 (load 3.5) and nothing
  of this change between f and its write, and the A/A run (this code in both slots) 0.038 vs 0.045:
  not settled at this load. The 20:11/20:13 runs at load 8-10 are noise for open (0.017-0.181
  single starts, both sides); the lead re-measures quiet.
  Left: Enter before the read lands ("after paint") still fills, lays out and frames the dialog
  after the body's paint (~8 ms); an r typed sooner than that waits for the rest of it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import other_clients  # noqa: E402 (the benchmark folder is not a package on the path)
from bench_tui import PYTHON, ROOT, write_project  # noqa: E402

COLS, ROWS = 160, 50
TAGGED = 200
AGAIN_AFTER = 3.0  # seconds without progress before an untimed step's keys are typed again


def reopen(screen: str) -> list[str]:
    """Down lost while the Sources pane refreshes makes Enter open the backend console: leave
    it, focus the Sources pane, then go to the account row, one stage per retry (keys typed in
    one burst reached the pane before the focus did, under load)."""
    if "Backend console" in screen:
        return ["q"]
    if "Inspect backend" not in screen and "Inspect" not in screen:
        return ["1"]
    return ["Up", "Down", "Enter"]


REOPEN = {"folders": reopen}
WHOLE_SCREEN = re.compile(r"\d threads · via list_recent")  # our project listing is done
EDITOR_SCRIPT = "#!/bin/sh\n# bench_habits: show the draft, then wait (the benchmark ends the session)\n" \
                "cat \"$1\"\nexec sleep 100000\n"

# A step: (name, seen(screen) -> bool, keys typed the moment it is seen).
Step = tuple[str, Callable[[str], bool], list[str]]


def run_steps(tmux: other_clients.Tmux, argv: list[str], env: dict[str, str], steps: list[Step],
              cwd: Path, timeout: float = 120.0,
              again: dict[str, Callable[[str], list[str]]] | None = None,
              pauses: dict[str, float] | None = None) -> tuple[dict[str, float], dict[str, float]]:
    """Start ``argv`` in a new tmux session; walk ``steps`` in order: wait until a step's
    condition holds on a capture, then type its keys. Return (seen, sent): the seconds from
    launch at which each step was seen and at which its keys were sent. ``pauses``: seconds
    to wait, after a step is seen, before its keys are typed (a user who reads first)."""
    tmux.count += 1
    name = f"habit{tmux.count}"
    settings = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
    seen: dict[str, float] = {}
    sent: dict[str, float] = {}
    screen = ""
    started = time.perf_counter()
    again = again or {}

    def seen_any() -> float:
        return max(seen.values(), default=0.0)
    tmux.command("new-session", "-d", "-s", name, "-x", str(tmux.cols), "-y", str(tmux.rows), "-c", str(cwd),
                 *settings, *argv)
    try:
        index = 0
        while index < len(steps):
            step, condition, keys = steps[index]
            ok, text = tmux.command("capture-pane", "-p", "-t", name, check=False)
            if not ok:
                raise RuntimeError(f"{argv[0]} exited before {step!r}; last screen:\n{screen}")
            screen = text
            if condition(screen):
                seen[step] = time.perf_counter() - started
                if keys and pauses and step in pauses:
                    time.sleep(pauses[step])
                if keys:
                    sent[step] = time.perf_counter() - started
                    tmux.command("send-keys", "-t", name, *keys)
                index += 1
                continue
            if step in again and time.perf_counter() - started - seen_any() > AGAIN_AFTER:
                # Not a timed step: under load a key typed while a pane refreshes can be lost.
                tmux.command("send-keys", "-t", name, *again[step](screen))
                seen[f"{step} (again)"] = time.perf_counter() - started
            if time.perf_counter() - started > timeout:
                raise TimeoutError(f"{argv[0]}: {step!r} not seen in {timeout:.0f} s; last screen:\n{screen}")
            time.sleep(other_clients.POLL)
        return seen, sent
    finally:
        tmux._end(name)


def newest_message(token: str, address: str) -> tuple[bytes, str, str]:
    subject = f"Habit bench newest {token}"
    body = f"The newest report {token}."
    raw = (f"From: Newest Sender <newest@sender.example.net>\r\nTo: Bench <{address}>\r\nSubject: {subject}\r\n"
           f"Date: {time.strftime('%a, %d %b %Y %H:%M:%S +0000', time.gmtime())}\r\n"
           f"Message-ID: <habit.{token}@sender.example.net>\r\n"
           "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
           f"{body}\r\n").encode()
    return raw, subject, body


def aerc_with_flag_key(folder: Path, port: int, user: str, password: str) -> tuple[list[str], dict[str, str]]:
    argv, env = other_clients.aerc_command(folder, port, user, password, threaded=False)
    shipped = Path("/usr/share/aerc/binds.conf").read_text(encoding="utf-8")
    binds = shipped.replace("[messages]\n", "[messages]\nF = :flag<Enter>\n", 1)
    (Path(env["XDG_CONFIG_HOME"]) / "aerc" / "binds.conf").write_text(binds, encoding="utf-8")
    return argv, env


def flagged_count(server, user) -> Callable[[], int]:
    from imapclient import IMAPClient  # the benchmark's own connection (not our adapter)

    client = IMAPClient("127.0.0.1", server.port, ssl=False)
    client.login(user.name, user.password)
    client.select_folder("INBOX", readonly=True)

    def count() -> int:
        client.noop()
        return len(client.search(["FLAGGED"]))
    count.client = client  # type: ignore[attr-defined]
    return count


def unflag_all(server, user) -> None:
    with server.client(user) as client:
        client.select_folder("INBOX")
        uids = client.search(["FLAGGED"])
        if uids:
            client.remove_flags(uids, [b"\\Flagged"])


def sending_project(tmp: Path, server, user, address: str) -> tuple[Path, Path]:
    """The config and project of the account ``habit`` on ``server`` with send access (its SMTP
    port 9 is never reached: the tasks stop at the draft), its password in the benchmark's file
    keyring (exported through ``MAILTRIAGE_BENCH_KEYRING`` to the children)."""
    from file_keyring import FileKeyring

    keyring_file = tmp / "keyring.json"
    os.environ["MAILTRIAGE_BENCH_KEYRING"] = str(keyring_file)
    FileKeyring().set_password("mailtriage", "imap:bench-habit", user.password)
    config, project = write_project(tmp, "habit", server.port, user)
    settings = config / "config.toml"
    text = settings.read_text(encoding="utf-8").replace('access = "read"', textwrap.dedent(f'''\
        access = "send"
        address = "{address}"
        smtp_host = "127.0.0.1"
        smtp_port = 9
        smtp_security = "plain"'''))
    settings.write_text('name = "Bench"\n' + text, encoding="utf-8")
    return config, project


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-aerc", action="store_true")
    parser.add_argument("--before", type=Path, metavar="CHECKOUT",
                        help="also time our app from this checkout (a throwaway worktree of the base commit), "
                             "run by run beside this one: the before and after figures of one session")
    parser.add_argument("--think", type=float, default=0.0, metavar="SECONDS",
                        help="wait this long after the body shows before the reply key, in every client "
                             "(default 0: typed at once, as a habit user does)")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from bench_launch import hand_to_dovecot, write_maildir
    from tests.servers.dovecot import DovecotServer

    with_aerc = not args.no_aerc and other_clients.installed("aerc")
    if not with_aerc and not args.no_aerc:
        print(f"aerc is missing, skipped (to include: {other_clients.INSTALL})")
    print(f"load average at the start {', '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    figures: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="mailtriage-habits-") as name:
        tmp = Path(name)
        server = DovecotServer().start()
        tmux = None
        count = None
        try:
            user = server.add_user("benchhabit")
            server.mail_root.mkdir(exist_ok=True)
            write_maildir(user.home / "Maildir", args.messages, 600.0)
            hand_to_dovecot(server, user)
            address = f"{user.name}@example.org"
            raw, subject, body = newest_message(uuid.uuid4().hex[:8], address)
            server.append(user, "INBOX", raw)
            print(f"folder: {args.messages + 1:,} messages")

            config, project = sending_project(tmp, server, user, address)
            quick = tmp / "config-quick"
            shutil.copytree(config, quick)
            (quick / "config.toml").write_text("confirm_flag_changes = false\n"
                                               + (quick / "config.toml").read_text(encoding="utf-8"),
                                               encoding="utf-8")
            editor = tmp / "editor.sh"
            editor.write_text(EDITOR_SCRIPT, encoding="utf-8")
            editor.chmod(0o755)
            cache = tmp / "cache"
            base_env = {"MAILTRIAGE_CACHE_DIR": str(cache), "MAILTRIAGE_DATA_DIR": str(tmp / "data"),
                        "MAILTRIAGE_BENCH_KEYRING": os.environ["MAILTRIAGE_BENCH_KEYRING"],
                        "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring", "PYTHONPATH": str(ROOT / "benchmarks"),
                        "COLORTERM": "truecolor", "EDITOR": str(editor), "VISUAL": str(editor)}
            ours = [PYTHON, "-m", "mailtriage.cli.main", "--project", str(project)]
            tmux = other_clients.Tmux(tmp, COLS, ROWS)
            count = flagged_count(server, user)
            quoted = f"> {body}"
            all_flagged = (lambda screen: count() >= TAGGED)
            marker = tmp / "marker-dir"
            marker.mkdir()

            def into_inbox(then: list[str]) -> list[Step]:
                # The footer shows the focused pane's keys: Down and Enter go to the Sources pane.
                return [("listed", lambda s: bool(WHOLE_SCREEN.search(s)) and "✓ imap" in s, ["1"]),
                        ("sources", lambda s: "Inspect backend" in s or "Open account" in s.title(), ["Down", "Enter"]),
                        ("folders", lambda s: "INBOX" in s and "Folders" in s, ["Enter"]),
                        ("list", lambda s: subject in s and "INBOX" in s, then)]

            def record(label: str, task: str, value: float) -> None:
                figures.setdefault((label, task), []).append(value)

            codes = {"ours": {}}
            if args.before is not None:  # the package ``mailtriage`` of that checkout first on the path
                (tmp / "before").mkdir()
                (tmp / "before" / "mailtriage").symlink_to(args.before.resolve())
                codes["before"] = {"PYTHONPATH": f"{tmp / 'before'}:{base_env['PYTHONPATH']}"}

            def ours_read(label: str = "ours") -> None:
                env = {**base_env, "MAILTRIAGE_CONFIG_DIR": str(config), **codes[label]}
                steps = [*into_inbox(["Enter"]), ("body", lambda s: body in s, ["r"]),
                         ("draft", lambda s: quoted in s, [])]
                seen, sent = run_steps(tmux, ours, env, steps, tmp, again=REOPEN, pauses={"body": args.think})
                record(label, "open", seen["body"] - sent["list"])
                record(label, "reply", seen["draft"] - sent["body"])

            def ours_flag(quick_flag: bool, label: str = "ours") -> None:
                env = {**base_env, "MAILTRIAGE_CONFIG_DIR": str(quick if quick_flag else config), **codes[label]}
                # v typed faster than the next page of 100 arrives is applied when it does
                # (issue 35; it was lost before): all 200 in one go, until the status says so.
                steps = [*into_inbox(["v"] * TAGGED), ("tagged", lambda s: f" {TAGGED} tagged" in s, ["f"])]
                if not quick_flag:
                    # the dialog's confirm button (its footer, which says ^s too, comes a frame later)
                    steps.append(("dialog", lambda s: "Flag" in s and "(ctrl+s)" in s, ["C-s"]))
                steps.append(("server", all_flagged, []))
                unflag_all(server, user)
                seen, sent = run_steps(tmux, ours, env, steps, tmp, again=REOPEN)
                record(label if quick_flag else f"{label} (confirm)", "flag", seen["server"] - sent["tagged"])
                unflag_all(server, user)

            def aerc_read(run: int) -> None:
                home = tmp / "clients" / f"aerc-read-{run}"
                argv, env = aerc_with_flag_key(home, server.port, user.name, user.password)
                env.update(EDITOR=str(editor), VISUAL=str(editor))
                steps = [("list", lambda s: subject in s, ["Enter"]), ("body", lambda s: body in s, ["R", "q"]),
                         ("draft", lambda s: quoted in s, [])]
                try:
                    seen, sent = run_steps(tmux, argv, env, steps, tmp, pauses={"body": args.think})
                finally:
                    shutil.rmtree(home, ignore_errors=True)
                record("aerc", "open", seen["body"] - sent["list"])
                record("aerc", "reply", seen["draft"] - sent["body"])

            def aerc_flag(run: int) -> None:
                home = tmp / "clients" / f"aerc-flag-{run}"
                argv, env = aerc_with_flag_key(home, server.port, user.name, user.password)
                # ``v j`` x200 marks only the rows whose headers aerc has fetched (the 48 on the
                # screen: 48 of 200 flagged); its visual mark goes by UID: V, :next 199.
                tagging = ["V", f":next {TAGGED - 1}", "Enter", ":pwd", "Enter"]
                steps = [("list", lambda s: subject in s, tagging),
                         ("tagged", lambda s: str(marker) in s, [":flag", "Enter"]), ("server", all_flagged, [])]
                unflag_all(server, user)
                try:
                    seen, sent = run_steps(tmux, argv, env, steps, marker, timeout=60)
                except TimeoutError:
                    # aerc 0.14 says "Setting flag 'flagged' successful" but the server holds
                    # fewer than TAGGED flagged: counted, not timed.
                    print(f"  aerc flag: {count()} of {TAGGED} flagged on the server after 60 s", flush=True)
                    return
                finally:
                    shutil.rmtree(home, ignore_errors=True)
                record("aerc", "flag", seen["server"] - sent["tagged"])
                unflag_all(server, user)

            # Warm-up, not measured: our .pyc files and the caches; Dovecot's caches of aerc's fields.
            for label in codes:
                ours_read(label)
            figures.clear()
            for run in range(args.runs):
                for label in codes:
                    ours_read(label)
                    ours_flag(True, label)
                    ours_flag(False, label)
                if with_aerc:
                    aerc_read(run)
                    aerc_flag(run)
                print(f"run {run + 1}: load {os.getloadavg()[0]:.2f}", flush=True)
            report(figures, args, tmux, list(codes))
        finally:
            if count is not None:
                count.client.logout()  # type: ignore[attr-defined]
            if tmux is not None:
                tmux.close()
            server.stop()
    return 0


def report(figures, args, tmux, labels=("ours",)) -> None:
    def med(label: str, task: str) -> float:
        values = figures.get((label, task))
        return statistics.median(values) if values else float("nan")

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nKey -> result, {args.messages + 1:,}-message Dovecot INBOX, tmux {COLS}x{ROWS} (screen polled every "
          f"{tmux.resolution() * 1000:.0f} ms), median of {args.runs} fresh processes, seconds; load average at "
          f"the end {load}")
    before = "before" in labels
    print(f"  {'task':<44}" + (f"{'before':>8}{'/aerc':>8}" if before else "")
          + f"{'ours':>8}{'aerc':>8}{'ours/aerc':>11}  goal")
    rows = (("open", "", "Enter -> body on screen", "<= 2x"),
            ("reply", "", "reply key -> editable quoted draft", "<= 1x"),
            ("flag", "", f"flag {TAGGED} tagged, key -> server (no confirm)", "<= 1x"),
            ("flag", " (confirm)", f"flag {TAGGED} tagged, f -> Ctrl+s -> server", "<= 1x"))
    for task, variant, text, goal in rows:
        ours, aerc = med("ours" + variant, task), med("aerc", task)
        was = med("before" + variant, task)
        print(f"  {text:<44}" + (f"{was:8.3f}{was / aerc:7.2f}x" if before else "")
              + f"{ours:8.3f}{aerc:8.3f}{ours / aerc:10.2f}x  {goal}")
    for (label, task), values in sorted(figures.items()):
        print(f"    {label} {task}: " + ", ".join(f"{v:.3f}" for v in values))


if __name__ == "__main__":
    sys.exit(main())
