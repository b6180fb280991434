"""Key presets for mutt and aerc users: ``[keys] preset = "mutt" | "aerc"`` in the user settings.

A preset is a key map like the user's own ``[keys]`` table (binding id → keys): it maps
the defaults of mutt's index and pager (mutt's manual, "Default key bindings") or of aerc's
``binds.conf`` ([messages] and [view]) onto the actions mailtriage has. An action whose key
the preset takes for another moves to a key the other client leaves free, so every action
keeps a key. The user's own ``[keys]`` entries win over the preset's.

What neither client can do here (mutt's undelete, aerc's embedded terminal and tabs) has no
key in the preset: pressed, such a habit key says what to use instead (:data:`HABITS`).
docs/tui.md ("Presets") shows ours, mutt's and aerc's side by side.
"""

from __future__ import annotations

import re

from mailtriage.core.errors import ConfigError
from mailtriage.tui import bindings

MUTT: dict[str, str] = {
    # index: t tag-entry, F flag-message, f forward, m mail, s save-message (a move here),
    # g group-reply, N toggle-new, v view-attachments, = / * first / last entry.
    "threads.tag": "t",
    "threads.toggle_flag": "F",
    "threads.forward": "f",
    "threads.compose": "m",
    "threads.move": "s",
    "threads.reply_all": "g",
    "threads.toggle_read": "N",
    "threads.first": "equals_sign,home",
    "threads.last": "asterisk,G,end",
    # the other lists too (= and * are mutt's generic first-entry / last-entry); g and G stay
    **{f"{pane}.first": "equals_sign,g,home" for pane in ("sources", "folders", "tracker", "queue")},
    **{f"{pane}.last": "asterisk,G,end" for pane in ("sources", "folders", "tracker", "queue")},
    # displaced by the above: previous search match (mutt's N), tracker issue (s), tracker pane (t)
    "threads.previous_match": "p",
    "threads.issue": "I",
    "reader.issue": "I",
    "app.tracker": "Y",
    # pager: i exit (back to the index), f forward, g group-reply, v attachments, ^ top;
    # import, displaced by i, moves to + (no default of mutt's pager)
    "reader.back": "q,escape,i",
    "reader.import": "plus",
    "reader.forward": "f",
    "reader.reply_all": "g",
    "reader.compose": "m",
    "reader.attachments": "v",
    "reader.top": "circumflex_accent,home",
}

AERC: dict[str, str] = {
    # [messages]: A archive, T toggle-threads, d / D delete, : the command line
    "threads.archive": "A",
    "threads.tree_toggle": "T",
    "threads.trash": "d,D",
    # [view]: f forward, H toggle-headers, J / K next / previous message (K displaces the
    # key import to I)
    "reader.forward": "f",
    "reader.headers": "H",
    "reader.next_message": "n,J",
    "reader.previous_message": "p,K",
    "reader.import_key": "I",
    "threads.forward": "f",
    # aerc's rr is reply-all (two-key sequences are not bound here: r replies, Ctrl+r to all)
    "threads.reply_all": "ctrl+r",
    "reader.reply_all": "ctrl+r",
    # displaced: flag (f), tag all (T), tree all (Z stays)
    "threads.toggle_flag": "F",
    "threads.tag_all": "ctrl+a",
    # global: Ctrl+n next tab → the next pane (Ctrl+p stays the command palette, which
    # : opens too: its list is what aerc's command line offers; Ctrl+d / Ctrl+u half pages
    # are ours too)
    "app.focus_next": "tab,ctrl+n",
    "app.poll_now": "ctrl+g",
}

PRESETS: dict[str, dict[str, str]] = {"mutt": MUTT, "aerc": AERC}

#: Habit keys of a preset that have no action here, by pane ("threads", "reader"): pressed
#: with that preset in force, a toast says what to use instead (issue 35: not silence).
#: ``{binding id}`` shows that binding's key as the user's key map has it. Only keys no
#: binding of the pane, the main screen or the app takes (tests/tui/test_key_presets.py).
HABITS: dict[str, dict[str, dict[str, str]]] = {
    "mutt": {
        "threads": {
            "x": "x (exit without syncing): nothing waits to be synced here; {app.quit} quits",
            "l": "l (limit): {threads.search} searches here; Esc shows every thread again",
            "w": "w (set flag): {threads.toggle_flag} flags / unflags, {threads.toggle_read} marks read / unread",
            "W": "W (clear flag): {threads.toggle_flag} flags / unflags, {threads.toggle_read} marks read / unread",
            "dollar_sign": "$ (sync mailbox): each change is written when you confirm it; nothing to sync",
            "D": "D (delete pattern): {threads.search} searches, {threads.tag_all} tags all, "
                 "{threads.tag_prefix} {threads.trash} trashes them",
            "U": "U (undelete pattern): a trash here is a move; {threads.move} moves messages back",
        },
        "reader": {
            "x": "x (exit): {reader.back} goes back to the list",
            "w": "w (set flag): {reader.back} back to the list, {threads.toggle_flag} flags there",
            "W": "W (clear flag): {reader.back} back to the list, {threads.toggle_flag} unflags there",
            "dollar_sign": "$ (sync mailbox): each change is written when you confirm it; nothing to sync",
        },
    },
    "aerc": {
        "threads": {
            "J": "J (next folder): {main.change_folder} changes folder",
            "K": "K (previous folder): {main.change_folder} changes folder",
            "backslash": "\\ (filter): {threads.search} searches here; Esc clears it",
            "dollar_sign": "$ (terminal): no terminal here; {reader.pipe} in the reading pane pipes a message",
        },
        "reader": {
            "o": "o (open): {reader.attachments} lists the attachments; o there opens one",
            "O": "O (open): {reader.attachments} lists the attachments; o there opens one",
            "D": "D (delete): {reader.back} back to the list, {threads.trash} moves to trash there",
            "dollar_sign": "$ (terminal): no terminal here; {reader.pipe} pipes the message to a command",
        },
    },
}

#: The bindings that listen where each pane of :data:`HABITS` has the focus (its own last).
PANE_BINDINGS = {"threads": (bindings.APP, bindings.MAIN, bindings.THREAD_LIST),
                 "reader": (bindings.APP, bindings.MAIN, bindings.READER)}


def habit_hint(app, pane: str, key: str) -> str | None:
    """What to use instead of ``key``, a habit of the preset in force with no action here in
    ``pane`` (None: no preset, not a habit of it, or a key the user's key map bound)."""
    try:
        name = preset_name(app.settings)
    except (AttributeError, ConfigError):  # not mailtriage's app, or reported at start-up
        return None
    hint = HABITS.get(name or "", {}).get(pane, {}).get(key)
    if hint is None:
        return None
    keymap = bindings.keymap_of(app)
    if any(key in bindings.effective_keys(b, keymap) for group in PANE_BINDINGS[pane] for b in group):
        return None
    return re.sub(r"\{([a-z_.]+)\}", lambda m: bindings.key_label(app, m[1]), hint)

#: binding id → the binding whose keys it follows unless given its own: the proposal's Send
#: button (``proposal.send``) is Confirm (``proposal.confirm``) for a proposal that sends,
#: so a key map that moves Confirm moves Send with it.
FOLLOWS: dict[str, str] = {"proposal.send": "proposal.confirm"}


def preset_name(settings) -> str | None:
    """``[keys] preset`` of ``settings`` (None: no preset).

    Raises:
        ConfigError: the preset is not one of :data:`PRESETS`.
    """
    table = settings.data.get("keys", {})
    value = table.get("preset") if isinstance(table, dict) else None
    if value is None:
        return None
    if value not in PRESETS:
        raise ConfigError(settings.path, "keys.preset", f"unknown key preset {value!r}",
                          " or ".join(f'"{name}"' for name in PRESETS))
    return str(value)


def keymap(settings) -> dict[str, str]:
    """The key map to apply: the preset's entries, then the user's own ``[keys]`` over them.

    Raises:
        ConfigError: ``[keys]`` is not a table, or names an unknown preset (the app reports
            it at start-up and starts with its own keys).
    """
    own = {k: v for k, v in settings.bindings.items() if k != "preset"}
    name = preset_name(settings)
    preset = PRESETS[name] if name else {}
    merged = {**preset, **own}
    for follower, leader in FOLLOWS.items():
        # The follower's own entry wins where given at the same level or above its leader's.
        given_own = follower in own
        if leader in merged and not given_own and not (follower in preset and leader not in own):
            merged[follower] = merged[leader]
    return merged
