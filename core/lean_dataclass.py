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
built in a hot loop keeps a generated ``__init__``: :func:`frozen_dataclass` below.

:func:`frozen_dataclass` is ``@dataclass(frozen=True)`` (``order=True`` if asked) for value
classes, some built by the thousand (the contract's messages and summaries): the stock
decorator ``exec``s six functions a class (``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, ``__setattr__``, ``__delattr__``; four more with ``order``), ~0.6-0.9 ms a class,
paid by every command-line child and the app's import. Here only the ``__init__`` is
generated (the same code as the stock one: it is the method a hot loop calls), compiled once
per field layout; the others are shared closures over a C ``attrgetter`` of the compared
fields, which compare, hash and order exactly as the generated tuples do. Equality, hashing,
immutability (``FrozenInstanceError``), ``replace()``, ``fields()``, ``__match_args__``,
``__dataclass_params__`` and the repr's text are the stock decorator's
(tests/core/test_frozen_dataclass.py checks every class made with it against one made by
``@dataclass`` from the same fields). A class it does not cover (a dataclass base, ``slots``,
``kw_only``, ``init=False`` fields, ``InitVar``/``ClassVar`` pseudo-fields, its own
``__eq__``/``__hash__``/``__repr__``/``__setattr__``/``__delattr__``/``__init__``) is handed
to ``@dataclass`` unchanged.
"""

from __future__ import annotations

import inspect
import threading
from dataclasses import MISSING, Field, FrozenInstanceError, dataclass, field, fields
from typing import Any, Callable, TypeVar, dataclass_transform, overload

__all__ = ["frozen_dataclass", "lean_dataclass"]

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


#: Compiled method sources, by source text: classes of one field layout share the code.
_CODE: dict[str, Any] = {}
#: What the stock decorator leaves to the class when the body defines it (or refuses: frozen).
_OWN_METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__",
                "__lt__", "__le__", "__gt__", "__ge__", "__slots__")


class _HasDefaultFactory:  # the generated __init__'s marker for "call the factory"
    def __repr__(self) -> str:
        return "<factory>"


_HAS_DEFAULT_FACTORY = _HasDefaultFactory()


def _generated(cls: type, own: tuple[Field, ...], post_init: bool, compared: tuple[str, ...],
               hashed: tuple[str, ...], order: bool) -> dict[str, Callable[..., Any]]:
    """The ``__init__``, ``__eq__``, ``__hash__`` (and with ``order`` the four comparisons)
    ``@dataclass(frozen=True)`` generates for these fields, as the same code, from one source
    compiled once a layout (the stock decorator compiles each function apart)."""
    params, body = [], []
    for f in own:
        name = f.name
        if f.default_factory is not MISSING:
            params.append(f"{name}=_HAS_DEFAULT_FACTORY")
            body.append(f" _setattr(self,{name!r},_dflt_{name}() if {name} is _HAS_DEFAULT_FACTORY else {name})")
        else:
            params.append(name if f.default is MISSING else f"{name}=_dflt_{name}")
            body.append(f" _setattr(self,{name!r},{name})")
    if post_init:
        body.append(" self.__post_init__()")
    mine = "(" + "".join(f"self.{name}," for name in compared) + ")"
    theirs = "(" + "".join(f"other.{name}," for name in compared) + ")"
    lines = [f"def __init__(self,{','.join(params)}):", *(body or [" pass"]),
             "def __hash__(self):", " return hash((" + "".join(f"self.{name}," for name in hashed) + "))"]
    for name, op in (("__eq__", "=="), *((("__lt__", "<"), ("__le__", "<="), ("__gt__", ">"), ("__ge__", ">="))
                                         if order else ())):
        lines += [f"def {name}(self,other):", " if other.__class__ is self.__class__:",
                  f"  return {mine}{op}{theirs}", " return NotImplemented"]
    source = "\n".join(lines) + "\n"
    code = _CODE.get(source)
    if code is None:
        code = _CODE[source] = compile(source, "<frozen_dataclass>", "exec")
    namespace: dict[str, Any] = {"_setattr": object.__setattr__, "_HAS_DEFAULT_FACTORY": _HAS_DEFAULT_FACTORY}
    for f in own:
        if f.default_factory is not MISSING:
            namespace[f"_dflt_{f.name}"] = f.default_factory
        elif f.default is not MISSING:
            namespace[f"_dflt_{f.name}"] = f.default
    exec(code, namespace)  # runs the defs only: the compiling was done above, once
    made: dict[str, Callable[..., Any]] = {
        name: namespace[name] for name in ("__init__", "__hash__", "__eq__", "__lt__", "__le__", "__gt__", "__ge__")
        if name in namespace}
    made["__init__"].__annotations__ = {**{f.name: f.type for f in own}, "return": None}
    return made


def _covered(cls: type) -> bool:
    """Whether :func:`frozen_dataclass` builds ``cls`` itself (else ``@dataclass`` does)."""
    body = cls.__dict__
    if any(name in body for name in _OWN_METHODS) or any(
            hasattr(base, "__dataclass_fields__") for base in cls.__mro__[1:]):
        return False
    for name, annotation in body.get("__annotations__", {}).items():
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if ("ClassVar" in text or "InitVar" in text or "KW_ONLY" in text or name == "self"
                or name.startswith("_dflt_") or name in ("_setattr", "_HAS_DEFAULT_FACTORY")):
            return False
        value = body.get(name)
        if isinstance(value, Field) and (not value.init or value.kw_only is True):
            return False
    return True


def _build_frozen(cls: type, order: bool) -> type:
    if not _covered(cls):
        return dataclass(frozen=True, order=order)(cls)
    documented = bool(cls.__doc__)
    if not documented:
        cls.__doc__ = "(the stock decorator's text, set below)"  # saves its signature of object.__init__
    cls = dataclass(init=False, repr=False, eq=False)(cls)
    own = fields(cls)
    defaulted = False
    for f in own:  # the check @dataclass makes at definition
        if f.default is not MISSING or f.default_factory is not MISSING:
            defaulted = True
        elif defaulted:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    qualname = cls.__qualname__
    names = tuple(f.name for f in own)
    compared = tuple(f.name for f in own if f.compare)
    hashed = tuple(f.name for f in own if (f.compare if f.hash is None else f.hash))
    shown = tuple(f.name for f in own if f.repr)

    def __repr__(self: Any) -> str:
        marker = (id(self), threading.get_ident())
        if marker in _IN_REPR:
            return "..."
        _IN_REPR.add(marker)
        try:
            shown_fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
            return f"{self.__class__.__qualname__}({shown_fields})"
        finally:
            _IN_REPR.discard(marker)

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    methods = _generated(cls, own, hasattr(cls, "__post_init__"), compared, hashed, order)
    methods.update(__repr__=__repr__, __setattr__=__setattr__, __delattr__=__delattr__)
    for name, method in methods.items():
        method.__qualname__ = f"{qualname}.{name}"
        setattr(cls, name, method)
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    params.init = params.repr = params.eq = params.frozen = True
    params.order = order
    if not documented:  # what @dataclass writes into a class without a docstring
        try:
            cls.__doc__ = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            cls.__doc__ = cls.__name__
    return cls


def _frozen(cls: _C, order: bool) -> _C:
    return _build_frozen(cls, order)  # type: ignore[return-value]


@overload
def frozen_dataclass(cls: _C, /) -> _C: ...
@overload
def frozen_dataclass(*, order: bool = False) -> Callable[[_C], _C]: ...


@dataclass_transform(eq_default=True, frozen_default=True, field_specifiers=(field, Field))
def frozen_dataclass(cls: Any = None, /, *, order: bool = False) -> Any:
    """``@dataclass(frozen=True)`` (``@frozen_dataclass(order=True)``: ``order=True`` too), one
    generated function a class instead of six (ten with ``order``)."""
    if cls is None:
        return lambda cls: _frozen(cls, order)
    return _frozen(cls, order)
