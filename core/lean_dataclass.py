"""``@dataclass(eq=False)`` without generating code at import: for classes defined by the dozen.

The dataclass machinery builds the source of an ``__init__`` and a ``__repr__`` for every
class and ``exec``s it: about 0.1–0.2 ms per class, some 8 ms for the 41 messages of
``tui/messages.py``, all on the app's start path (python -X importtime). A class made by
:func:`lean_dataclass` is still a dataclass (``fields``, ``replace``, ``is_dataclass``,
``__match_args__``) with the same equality (identity, as ``eq=False``) and hashing; its
``__init__`` and ``__repr__`` are shared closures that bind the same arguments (positional
or keyword, defaults, default factories), raise ``TypeError`` where the generated
``__init__`` would, call ``__post_init__`` as it does, and print the same text.

For mutable records built a few at a time (messages between threads and panes). A class
built in a hot loop, or frozen, or compared by value, keeps ``@dataclass``: its generated
methods are faster per call.
"""

from __future__ import annotations

import threading
from dataclasses import MISSING, dataclass, fields
from typing import TypeVar, dataclass_transform

__all__ = ["lean_dataclass"]

_C = TypeVar("_C", bound=type)

#: (object id, thread) pairs whose repr is being built: a record that holds itself shows "...".
_IN_REPR: set[tuple[int, int]] = set()


@dataclass_transform(eq_default=False)  # type checkers see the fields and the __init__
def lean_dataclass(cls: _C) -> _C:
    """``@dataclass(eq=False)`` for ``cls``, with an ``__init__`` and a ``__repr__`` not generated."""
    cls = dataclass(init=False, repr=False, eq=False)(cls)
    own = fields(cls)
    if any(f.kw_only or not f.init for f in own):
        raise TypeError(f"{cls.__qualname__}: lean_dataclass takes no kw_only or init=False fields; use @dataclass")
    params = tuple((f.name, f.default, f.default_factory) for f in own)
    position = {name: i for i, (name, _, _) in enumerate(params)}
    shown = tuple(f.name for f in own if f.repr)
    qualname = cls.__qualname__
    post_init = hasattr(cls, "__post_init__")
    least = sum(default is MISSING and factory is MISSING for _, default, factory in params) + 1
    takes = f"{len(params) + 1}" if least == len(params) + 1 else f"from {least} to {len(params) + 1}"
    defaulted = False
    for name, default, factory in params:  # the check @dataclass makes at definition
        if default is not MISSING or factory is not MISSING:
            defaulted = True
        elif defaulted:
            raise TypeError(f"non-default argument {name!r} follows default argument")

    def __init__(self, *args: object, **kwargs: object) -> None:
        if len(args) > len(params):
            raise TypeError(f"{qualname}.__init__() takes {takes} positional argument{'' if takes == '1' else 's'} "
                            f"but {len(args) + 1} were given")
        for key in kwargs:
            if key not in position:
                raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument '{key}'")
            if position[key] < len(args):
                raise TypeError(f"{qualname}.__init__() got multiple values for argument '{key}'")
        missing = [name for i, (name, default, factory) in enumerate(params)
                   if i >= len(args) and name not in kwargs and default is MISSING and factory is MISSING]
        if missing:
            quoted = [f"'{m}'" for m in missing]
            listed = quoted[0] if len(quoted) == 1 else (
                f"{quoted[0]} and {quoted[1]}" if len(quoted) == 2 else ", ".join(quoted[:-1]) + f", and {quoted[-1]}")
            plural = "s" if len(missing) > 1 else ""
            raise TypeError(f"{qualname}.__init__() missing {len(missing)} required positional argument{plural}: "
                            f"{listed}")
        for i, (name, default, factory) in enumerate(params):
            if i < len(args):
                value = args[i]
            elif name in kwargs:
                value = kwargs[name]
            else:
                value = default if factory is MISSING else factory()
            setattr(self, name, value)
        if post_init:
            self.__post_init__()

    def __repr__(self) -> str:
        key = (id(self), threading.get_ident())
        if key in _IN_REPR:
            return "..."
        _IN_REPR.add(key)
        try:
            shown_fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
            return f"{type(self).__qualname__}({shown_fields})"
        finally:
            _IN_REPR.discard(key)

    __init__.__qualname__ = f"{qualname}.__init__"
    __repr__.__qualname__ = f"{qualname}.__repr__"
    cls.__init__ = __init__
    cls.__repr__ = __repr__
    return cls
