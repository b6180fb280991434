"""Key presets for mutt and aerc users: ``[keys] preset = "mutt" | "aerc"`` in the user settings.

A preset is a key map like the user's own ``[keys]`` table (binding id → keys): it maps
the defaults of mutt's index and pager (mutt's manual, "Default key bindings") or of aerc's
``binds.conf`` ([messages] and [view]) onto the actions mailtriage has. An action whose key
the preset takes for another moves to a key the other client leaves free, so every action
keeps a key. The user's own ``[keys]`` entries win over the preset's.

What neither client can do here (mutt's undelete, aerc's embedded terminal and tabs) has no
key in the preset; docs/tui.md ("Presets") shows ours, mutt's and aerc's side by side.
"""

from __future__ import annotations

from mailtriage.core.errors import ConfigError

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
    # pager: f forward, g group-reply, v attachments, ^ top
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
    # [view]: f forward, H toggle-headers, A archive
    "reader.forward": "f",
    "reader.headers": "H",
    "threads.forward": "f",
    # aerc's rr is reply-all (two-key sequences are not bound here: r replies, Ctrl+r to all)
    "threads.reply_all": "ctrl+r",
    "reader.reply_all": "ctrl+r",
    # displaced: flag (f), tag all (T), tree all (Z stays)
    "threads.toggle_flag": "F",
    "threads.tag_all": "ctrl+a",
    # global: Ctrl+n next tab → the next pane (Ctrl+p stays the command palette, whose
    # list is what aerc's ':' command line offers)
    "app.focus_next": "tab,ctrl+n",
    "app.poll_now": "ctrl+g",
}

PRESETS: dict[str, dict[str, str]] = {"mutt": MUTT, "aerc": AERC}

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
