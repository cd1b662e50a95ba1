"""The collector pause around analysis and compilation: reentrant, restored after an error, and
a collector the program turned off stays off."""
import gc

import pytest

from relsim.runtime.gc_pause import collector_paused


def test_paused_inside_restored_after_even_on_error():
    assert gc.isenabled()
    with pytest.raises(ValueError):
        with collector_paused():
            assert not gc.isenabled()
            with collector_paused():
                assert not gc.isenabled()
            assert not gc.isenabled()  # the inner pause does not end the outer one
            raise ValueError
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
