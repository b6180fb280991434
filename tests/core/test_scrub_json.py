"""scrub_json: a secret the session holds never leaves in a JSON document, wherever it sits
(a value, a key, inside a longer string, in a list of rows), and a document without one is
passed on as it is (it is not walked string by string: ``queue --json`` over 10,000 rows)."""

from __future__ import annotations

import io
import json
import sys
import uuid

import pytest

from mailtriage.core.secrets import MASK, forget_remembered_secrets, remember_secret, scrub_json


@pytest.fixture
def secret():
    value = f"pä\"ss\\wörd\u2028-{uuid.uuid4().hex[:10]}"  # JSON escapes quote and backslash; U+2028 is kept raw
    remember_secret(value)
    yield value
    forget_remembered_secrets()


def test_a_secret_anywhere_in_the_document_is_masked(secret):
    doc = {"command": "queue", "rows": [{"subject": "fine"}, {"subject": f"error: {secret} !", secret: [1]}],
           "warnings": [f"x{secret}"], "n": 3, "none": None}
    got = scrub_json(doc)
    text = json.dumps(got, ensure_ascii=False)
    assert secret not in text and json.dumps(secret, ensure_ascii=False)[1:-1] not in text
    assert got["rows"][1] == {"subject": f"error: {MASK} !", MASK: [1]} and got["warnings"] == [f"x{MASK}"]
    assert got["rows"][0] == {"subject": "fine"} and got["n"] == 3 and got["none"] is None
    assert doc["rows"][1]["subject"] == f"error: {secret} !"  # the caller's document is untouched


def test_a_document_without_a_secret_is_passed_on_as_it_is(secret):
    doc = {"rows": [{"subject": f"row {n}", "owner": None} for n in range(1000)], "when": object()}
    assert scrub_json(doc) is doc


def test_the_queue_json_lines_are_scrubbed_too(secret):
    from mailtriage.cli.output import emit

    old, sys.stdout = sys.stdout, io.StringIO()
    try:
        emit({"command": "queue", "rows": [{"subject": f"a {secret}"}, {"subject": "b"}]}, lines=True)
        out = sys.stdout.getvalue()
    finally:
        sys.stdout = old
    assert secret not in out and json.loads(out)["rows"] == [{"subject": f"a {MASK}"}, {"subject": "b"}]


@pytest.mark.parametrize("value", ["päss-word1", 'pa"ss\\w0rd', "tab\tsecret-1"])
def test_every_form_of_a_secret_is_masked_as_a_walk_would(value):
    # The fast path asked the JSON text for each form as written, but JSON doubles a form's
    # backslashes (repr, bytes repr, ASCII JSON), so "LOGIN failed: b'p\xc3\xa4ss-word1'" left
    # unmasked (a fresh-eyes review of the queue branch).
    from mailtriage.core.secrets import _scrub_walk, _variants

    remember_secret(value)
    try:
        for form in _variants(value):
            doc = {"warnings": [f"LOGIN failed: {form} !"], f"k {form}": 1}
            assert scrub_json(doc) == _scrub_walk(doc), form
            assert form not in json.dumps(scrub_json(doc), ensure_ascii=False), form
    finally:
        forget_remembered_secrets()
