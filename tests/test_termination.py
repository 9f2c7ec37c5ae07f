"""termination.deferred: Ctrl-C and SIGTERM held for the length of a block, then acted on."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from precision_shell import termination


def _raise_now(signum: int) -> None:
    os.kill(os.getpid(), signum)  # delivered to this thread before os.kill returns


def test_ctrl_c_in_the_block_is_raised_after_it_ends():
    finished = []
    with pytest.raises(KeyboardInterrupt), termination.deferred():
        _raise_now(signal.SIGINT)
        finished.append("the rest of the block ran")
    assert finished == ["the rest of the block ran"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored


def test_sigterm_in_the_block_goes_to_the_handler_it_had(monkeypatch):
    seen: list[int] = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with termination.deferred():
            _raise_now(signal.SIGTERM)
            assert seen == []  # held
        assert seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, before)


def test_an_ignored_signal_stays_ignored_and_a_quiet_block_changes_nothing():
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with termination.deferred():
            _raise_now(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
    with termination.deferred():
        pass
    assert signal.getsignal(signal.SIGINT) is before


def test_off_the_main_thread_the_block_just_runs():
    errors: list[BaseException] = []

    def body() -> None:
        try:
            with termination.deferred():  # signal.signal would raise ValueError here
                pass
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert errors == []


def test_a_ctrl_c_python_could_only_print_is_raised_again_in_the_main_thread(monkeypatch):
    """QA (a flaky start-up test): a Ctrl-C landing in a weakref callback of the import
    machinery was printed as "Exception ignored in ... Traceback" and lost. The hook raises
    it again where the shell catches it; anything else goes to Python's own hook."""
    import time
    from types import SimpleNamespace

    seen = []
    monkeypatch.setattr(termination, "_default_unraisable", seen.append)
    other = SimpleNamespace(exc_value=ValueError("x"), object=None)
    termination._unraisable(other)
    assert seen == [other]
    with pytest.raises(KeyboardInterrupt) as caught:
        termination._unraisable(SimpleNamespace(exc_value=KeyboardInterrupt(), object=None))
        for _ in range(2000):  # delivered at the next check of the main thread
            time.sleep(0.001)
    assert not isinstance(caught.value, termination.Terminated)
    before = signal.signal(signal.SIGTERM, termination._on_sigterm)
    try:
        with pytest.raises(termination.Terminated):
            termination._unraisable(
                SimpleNamespace(exc_value=termination.Terminated(), object=None)
            )
            for _ in range(2000):
                time.sleep(0.001)
    finally:
        signal.signal(signal.SIGTERM, before)
        termination._received = False
