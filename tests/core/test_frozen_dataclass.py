"""core.lean_dataclass.frozen_dataclass behaves as ``@dataclass(frozen=True)`` for every class made with it.

Each class of the product decorated with ``frozen_dataclass`` (found in the source) is compared
with its twin: the same body and fields handed to the stock ``@dataclass(frozen=True)``. Both
are built from the same sample values and must agree on the binding and its errors, the repr,
equality and hashing (field by field), ordering, immutability, ``replace()``, pickling and the
dataclass metadata (``fields``, ``__match_args__``, ``__dataclass_params__``, the docstring).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pickle
import re
from dataclasses import FrozenInstanceError, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import ClassVar  # noqa: F401  (the made-up classes' string annotations name it)

import pytest

from mailtriage.core.lean_dataclass import frozen_dataclass
from tests.core.package_layout import ROOT, packages
from tests.core.parsed import parse

GENERATED = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__", "__le__",
             "__gt__", "__ge__", "__dataclass_fields__", "__dataclass_params__", "__match_args__", "__dict__",
             "__weakref__")


#: A class decorated with ``frozen_dataclass`` (maybe among other decorators), by its source text.
_DECORATED_CLASS = re.compile(r"^[ \t]*@frozen_dataclass\b[^\n]*\n(?:[ \t]*@[^\n]*\n)*[ \t]*class[ \t]+(\w+)", re.M)


def _module_paths():
    for package in packages():
        for path in sorted((ROOT / package).rglob("*.py")):
            module = "mailtriage." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
            yield module.removesuffix(".__init__"), path


def _decorated() -> list[tuple[str, str]]:
    """(module, class name) of every class of the product made by ``frozen_dataclass``, from the
    source text: this runs at collection in every worker, where parsing the whole product (what
    :func:`_decorated_by_syntax` does, once, in a test) cost each worker ~1.3 CPU-s (issue 36 §7)."""
    found = []
    for module, path in _module_paths():
        text = path.read_text(encoding="utf-8")
        if "frozen_dataclass" in text:
            found += [(module, name) for name in _DECORATED_CLASS.findall(text)]
    return found


def _decorated_by_syntax() -> list[tuple[str, str]]:
    """The same list from the syntax trees: every decorator, wherever the class is."""
    found = []
    for module, path in _module_paths():
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.ClassDef) and any(
                    (isinstance(d, ast.Name) and d.id == "frozen_dataclass")
                    or (isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "frozen_dataclass")
                    for d in node.decorator_list):
                found.append((module, node.name))
    return found


DECORATED = _decorated()


def _twin(cls: type) -> type:
    """The same class body and fields, made by the stock ``@dataclass(frozen=True)``."""
    body = {name: value for name, value in cls.__dict__.items() if name not in GENERATED}
    for f in dataclasses.fields(cls):
        body[f.name] = field(default=f.default, default_factory=f.default_factory, init=f.init, repr=f.repr,
                             hash=f.hash, compare=f.compare, metadata=f.metadata, kw_only=f.kw_only)
    if cls.__doc__ and cls.__doc__.startswith(cls.__name__ + "("):
        body["__doc__"] = None  # the stock decorator writes its own: compared below
    twin = type(cls.__name__, cls.__bases__, body)
    twin.__qualname__ = cls.__qualname__
    return dataclass(frozen=True, order=cls.__dataclass_params__.order)(twin)


class Opaque:
    """A value of a type the samples do not know, ordered and hashed by its number."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Opaque) and other.n == self.n

    def __lt__(self, other: "Opaque") -> bool:
        return self.n < other.n

    def __hash__(self) -> int:
        return hash(self.n)

    def __repr__(self) -> str:
        return f"Opaque({self.n})"


#: Field values a class's ``__post_init__`` needs beside the plainest samples.
VALID: dict[str, dict] = {"MailQuery": {"folder": "INBOX"}, "Compose": {"kind": "new"}}


def _top_level(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == "[") - (char == "]")
        if char == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


SIMPLE = {"str": ["a", "b"], "int": [1, 2], "bool": [False, True], "bytes": [b"a", b"b"], "float": [1.0, 2.0],
          "datetime": [datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2026, 1, 2, tzinfo=timezone.utc)],
          "Path": [Path("a"), Path("b")]}


def _samples(annotation: str, module: object, depth: int = 0) -> list:
    """Two different values of the annotated type (the first the plainest)."""
    text = annotation.replace(" ", "")
    parts = _top_level(text, "|")
    if len(parts) > 1:
        first = _samples(next(p for p in parts if p != "None"), module, depth)
        return [None, first[0]] if "None" in parts else first
    head, _, inner = text.partition("[")
    inner = inner[:-1]
    if head in SIMPLE:
        return SIMPLE[head]
    if head in ("tuple", "Sequence", "frozenset", "list"):
        made = {"tuple": tuple, "Sequence": tuple, "frozenset": frozenset, "list": list}[head]
        item = _top_level(inner, ",")[0] if inner else "str"
        return [made(), made([_samples(item, module, depth + 1)[1]])]
    if head in ("dict", "Mapping"):
        key, value = _top_level(inner, ",") if inner else ("str", "str")
        return [{}, {_samples(key, module, depth + 1)[1]: _samples(value, module, depth + 1)[1]}]
    target = getattr(module, head, None)
    if isinstance(target, type) and dataclasses.is_dataclass(target) and depth < 3:
        return [_build(target, depth + 1, 0), _build(target, depth + 1, 1)]
    if isinstance(target, type) and hasattr(target, "__members__"):  # an enum
        members = list(target)
        return [members[0], members[-1]]
    return [Opaque(1), Opaque(2)]


def _build(cls: type, depth: int = 0, which: int = 0):
    module = importlib.import_module(cls.__module__)
    return cls(*(_samples(str(f.type), module, depth)[which] for f in dataclasses.fields(cls)
                 if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING))


def _outcome(call):
    try:
        return ("value", call())
    except Exception as exc:  # noqa: BLE001 - both classes must fail alike
        return ("error", type(exc).__name__, str(exc))


def _observed(obj) -> tuple:
    return repr(obj), dataclasses.astuple(obj)


def test_every_decorated_class_of_the_product_is_found():
    names = {name for _, name in DECORATED}
    assert {"ThreadId", "Message", "ThreadSummary", "MailQuery", "Compose", "SignatureStatus"} <= names
    assert sorted(DECORATED) == sorted(_decorated_by_syntax())  # the text scan misses none, invents none


@pytest.mark.parametrize("module,name", DECORATED, ids=[f"{m.rsplit('.', 1)[-1]}.{n}" for m, n in DECORATED])
def test_a_product_class_behaves_as_its_stock_frozen_dataclass_twin(module, name):
    ours = getattr(importlib.import_module(module), name)
    assert ours.__init__.__code__.co_filename == "<frozen_dataclass>", "the class fell back to @dataclass"
    twin = _twin(ours)
    mod = importlib.import_module(module)

    def attrs(f):
        return (f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.hash, f.compare, f.kw_only)

    assert [attrs(f) for f in dataclasses.fields(ours)] == [attrs(f) for f in dataclasses.fields(twin)]
    assert ours.__match_args__ == twin.__match_args__
    assert repr(ours.__dataclass_params__) == repr(twin.__dataclass_params__)
    assert ours.__doc__ == twin.__doc__
    assert str(inspect.signature(ours)) == str(inspect.signature(twin))

    own = dataclasses.fields(ours)
    values = [_samples(str(f.type), mod) for f in own]
    required = [i for i, f in enumerate(own) if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING]
    base_args = [values[i][0] for i in required]
    extra = VALID.get(name, {})  # a value its __post_init__ accepts, where the plainest is refused

    # Binding: positional, keywords, defaults, and the errors of a wrong call.
    for args, kwargs in [(base_args, {}), ([], {own[i].name: values[i][0] for i in required}),
                         (base_args + [None] * (len(own) + 1 - len(base_args)), {}),
                         (base_args[:-1], {}), (base_args, {"no_such_field": 1}),
                         (base_args, {own[0].name: values[0][0]} if own else {})]:
        theirs = _outcome(lambda: _observed(twin(*args, **kwargs)))
        mine = _outcome(lambda: _observed(ours(*args, **kwargs)))
        assert mine == theirs, (args, kwargs)
    plain = {**{own[i].name: values[i][0] for i in required}, **extra}
    base, base_twin = ours(**plain), twin(**plain)
    assert _observed(base) == _observed(base_twin)
    assert base == ours(**plain)
    # hashed alike, or refused alike (a dict or list field: the same TypeError)
    assert _outcome(lambda: hash(base)) == _outcome(lambda: hash(ours(**plain))) == _outcome(lambda: hash(base_twin))
    assert (base == base_twin) is False and base != object()

    # Each field changed alone: equality, hashing and order as the twin's, replace() alike.
    for i, f in enumerate(own):
        for value in values[i]:
            changed = _outcome(lambda: dataclasses.replace(base, **{f.name: value}))
            changed_twin = _outcome(lambda: dataclasses.replace(base_twin, **{f.name: value}))
            assert changed[0] == changed_twin[0], f.name
            if changed[0] == "error":
                assert changed == changed_twin
                continue
            one, two = changed[1], changed_twin[1]
            assert _observed(one) == _observed(two), f.name
            assert (one == base) == (two == base_twin), f.name
            assert _outcome(lambda: hash(one)) == _outcome(lambda: hash(two)), f.name  # an unhashable field: the same error
            if ours.__dataclass_params__.order:
                for op in ("__lt__", "__le__", "__gt__", "__ge__"):
                    assert _outcome(lambda: getattr(one, op)(base)) == _outcome(lambda: getattr(two, op)(base_twin))

    # Immutability: the same error and message for a field, for another name, for a delete.
    for target in ([f.name for f in own][:3] + ["not_a_field"]):
        assert _outcome(lambda: setattr(base, target, 1)) == _outcome(lambda: setattr(base_twin, target, 1))
        assert _outcome(lambda: delattr(base, target)) == _outcome(lambda: delattr(base_twin, target))
    with pytest.raises(FrozenInstanceError):
        setattr(base, own[0].name if own else "x", 1)
    if not any("Opaque" in repr(v) for v in dataclasses.astuple(base)):
        assert pickle.loads(pickle.dumps(base)) == base


# The cases the product's classes may not all exercise, on made-up classes.

def _pair(body, **options) -> tuple[type, type]:
    made = []
    for decorate in (dataclass(frozen=True, **options), frozen_dataclass(**options)):
        namespace = {"__module__": __name__, **body()}
        made.append(decorate(type("Value", (), namespace)))
    return made[0], made[1]


def BODY() -> dict:
    return {"__doc__": "A value.",
            "__annotations__": {"a": "int", "b": "str", "c": "list[int]", "d": "bytes", "e": "int"},
            "b": "x", "c": field(default_factory=list), "d": field(default=b"", repr=False, compare=False),
            "e": field(default=0, hash=False)}


CALLS = [((1,), {}), ((1, "y"), {}), ((1,), {"c": [2]}), ((), {"a": 3, "d": b"z"}), ((1, "y", [3], b"q", 4), {}),
         ((), {}), ((1, 2, 3, 4, 5, 6), {}), ((1,), {"a": 2}), ((1,), {"f": 2}), ((), {"b": "y"})]


@pytest.mark.parametrize("args,kwargs", CALLS)
def test_binding_repr_and_errors_match_the_stock_decorator(args, kwargs):
    stock, ours = _pair(BODY, order=True)
    results = []
    for cls in (stock, ours):
        outcome = _outcome(lambda: cls(*args, **kwargs))
        if outcome[0] == "value":
            obj = outcome[1]
            outcome = ("value", repr(obj), dataclasses.astuple(obj), obj == cls(*args, **kwargs))
        results.append(outcome)
    assert results[0] == results[1]


def test_compare_hash_and_order_options_match_the_stock_decorator():
    stock, ours = _pair(BODY, order=True)
    pairs = [((1,), (1,)), ((1,), (2,)), ((1, "x", [1]), (1, "x", [2])), ((1, "x", [], b"a"), (1, "x", [], b"b")),
             ((1, "x", [], b"", 1), (1, "x", [], b"", 2)), ((2,), (1, "y"))]
    for left, right in pairs:
        for op in ("__eq__", "__lt__", "__le__", "__gt__", "__ge__"):
            assert getattr(ours(*left), op)(ours(*right)) == getattr(stock(*left), op)(stock(*right))
        assert ours(*left).__lt__(stock(*left)) is NotImplemented
    # hash=False leaves e out; c (a list) makes the default hash fail in both.
    body = lambda: {"__annotations__": {"a": "int", "e": "int"}, "e": field(default=0, hash=False)}  # noqa: E731
    stock_h, ours_h = _pair(body)
    assert hash(ours_h(1, 5)) == hash(stock_h(1, 5)) == hash(stock_h(1, 6)) == hash((1,))
    assert _outcome(lambda: hash(ours(1))) == _outcome(lambda: hash(stock(1)))


def test_no_fields_one_field_no_docstring_and_post_init_match_the_stock_decorator():
    for body in (lambda: {}, lambda: {"__annotations__": {"a": "float"}},
                 lambda: {"__annotations__": {"a": "int", "b": "int"}, "b": 2,
                          "__post_init__": lambda self: object.__setattr__(self, "b", self.a * 10)}):
        stock, ours = _pair(body)
        assert ours.__doc__ == stock.__doc__
        fields_ = body().get("__annotations__", {})
        args = () if not fields_ else (float("nan"),) if len(fields_) == 1 else (3,)
        one, two = ours(*args), stock(*args)
        assert repr(one) == repr(two) and hash(one) == hash(two)
        assert (one == ours(*args)) is (two == stock(*args))  # a NaN field: the tuples' identity rule in both
        assert dataclasses.replace(one) == one


def test_a_value_that_holds_itself_reprs_like_the_stock_one():
    texts = []
    for cls in _pair(lambda: {"__annotations__": {"a": "list"}}):
        obj = cls([])
        obj.a.append(obj)
        texts.append(repr(obj))
    assert texts[0] == texts[1] == "Value(a=[...])"


def test_a_subclass_is_frozen_and_compares_like_the_stock_one():
    stock, ours = _pair(lambda: {"__annotations__": {"a": "int"}})
    results = []
    for cls in (stock, ours):
        sub = type("Sub", (cls,), {})
        obj = sub(1)
        obj.extra = 2  # not a field, not the dataclass itself: allowed by the stock __setattr__
        results.append((_outcome(lambda: setattr(obj, "a", 3)), obj == sub(1), obj == cls(1), obj.extra))
    assert results[0] == results[1]
    stock_child = dataclass(frozen=True)(type("Child", (ours,), {"__annotations__": {"b": "int"}, "b": 0}))
    assert stock_child(1, 2) == stock_child(1, 2) and repr(stock_child(1)) == "Child(a=1, b=0)"


@pytest.mark.parametrize("body", [
    lambda: {"__annotations__": {"a": "ClassVar[int]", "b": "int"}, "a": 1},
    lambda: {"__annotations__": {"a": "int", "b": "int"}, "b": field(default=0, init=False)},
    lambda: {"__annotations__": {"a": "int"}, "__eq__": lambda self, other: True, "__hash__": lambda self: 1},
    lambda: {"__annotations__": {"self": "int"}},
], ids=["classvar", "init-false", "own-eq", "field-named-self"])
def test_classes_it_does_not_build_are_the_stock_decorators(body):
    stock, ours = _pair(body)
    assert ours.__init__.__code__.co_filename != "<frozen_dataclass>"
    one, two = ours(1), stock(1)
    assert repr(one) == repr(two) and (one == ours(1)) == (two == stock(1))
    assert [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(stock)]


def test_a_required_field_after_a_default_is_refused_at_definition():
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        _pair(lambda: {"__annotations__": {"a": "int", "b": "int"}, "a": 1})
