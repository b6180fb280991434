"""core.lean_dataclass behaves as ``@dataclass(eq=False)``: same binding, errors, repr, equality."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from mailtriage.core.lean_dataclass import lean_dataclass


class Base:
    def __post_init__(self) -> None:
        self.posted = True


def _record(body, decorate) -> type:
    namespace = {"__doc__": "A record.", **body()}
    return decorate(type("Record", (Base,), namespace))


def _pair(body) -> tuple[type, type]:
    """The same class body made by @dataclass(eq=False) and by lean_dataclass."""
    return _record(body, dataclass(eq=False)), _record(body, lean_dataclass)


def BODY() -> dict:
    return {"__annotations__": {"a": "int", "b": "str", "c": "list[int]", "d": "bytes"},
            "b": "x", "c": field(default_factory=list), "d": field(default=b"", repr=False)}

CALLS = [((1,), {}), ((1, "y"), {}), ((1,), {"c": [2]}), ((), {"a": 3, "d": b"z"}), ((1, "y", [3], b"q"), {}),
         ((), {}), ((1, 2, 3, 4, 5), {}), ((1,), {"a": 2}), ((1,), {"e": 2}), ((), {"b": "y"})]


@pytest.mark.parametrize("args,kwargs", CALLS)
def test_binding_repr_and_errors_match_the_generated_dataclass(args, kwargs):
    generated, lean = _pair(BODY)
    results = []
    for cls in (generated, lean):
        try:
            obj = cls(*args, **kwargs)
        except TypeError as exc:
            results.append(("error", str(exc)))
        else:
            results.append((repr(obj), dataclasses.astuple(obj), obj.posted, obj == cls(*args, **kwargs)))
    assert results[0] == results[1]


@pytest.mark.parametrize("args", [(), (1,)])
def test_a_record_without_fields_matches_too(args):
    results = []
    for cls in _pair(lambda: {}):
        try:
            results.append(repr(cls(*args)))
        except TypeError as exc:
            results.append(str(exc))
    assert results[0] == results[1]


def test_it_stays_a_dataclass_with_identity_equality_and_fresh_defaults():
    generated, lean = _pair(BODY)
    one, two = lean(1), lean(1)
    assert dataclasses.is_dataclass(lean) and [f.name for f in dataclasses.fields(lean)] == ["a", "b", "c", "d"]
    assert one != two and one == one and hash(one) != hash(two)
    assert one.c is not two.c
    assert lean.__match_args__ == generated.__match_args__
    assert dataclasses.replace(one, b="q").b == "q"


def test_a_record_that_holds_itself_repr_like_the_generated_one():
    generated, lean = _pair(lambda: {"__annotations__": {"a": "object"}})
    texts = []
    for cls in (generated, lean):
        obj = cls(None)
        obj.a = [obj]
        texts.append(repr(obj))
    assert texts[0] == texts[1] == "Record(a=[...])"


def test_a_required_field_after_a_default_is_refused_at_definition():
    def body() -> dict:
        return {"__annotations__": {"a": "int", "b": "int"}, "a": 1}

    for decorate in (dataclass(eq=False), lean_dataclass):
        with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
            _record(body, decorate)
