"""core.gc_pause: the collector is paused inside the block and restored after it."""

from __future__ import annotations

import gc

import pytest

from mailtriage.core.gc_pause import collector_paused


def test_the_collector_is_paused_inside_and_enabled_after():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_it_is_enabled_again_after_an_exception():
    with pytest.raises(ImportError):
        with collector_paused():
            raise ImportError("no such module")
    assert gc.isenabled()


def test_a_collector_switched_off_before_stays_off():
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
