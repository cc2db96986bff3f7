"""Watchdog timing behaviours a mutation review of its own clock handling found unpinned.

Each test names the behaviour it pins and the source change (mutant) of ``Watchdog`` in
``torque_ctrl_ros/core/safety.py`` it was written to catch: the jump test's time between stamps
when a stamp runs ahead of the receiver's clock (within ``max_age`` or beyond it), the fallback
window on a clock stepped back by exactly ``max_age``, and the end of a silence's window on a
clock that stands still. Pure core: no ROS.
"""

from __future__ import annotations

import numpy as np
from test_core_safety_mutation_gaps import _bounded_watchdog
from test_watchdog_jumps import _feed

from torque_ctrl_ros.core.safety import Action, RejectReason, WatchdogState


def test_a_stamp_ahead_of_the_clock_within_max_age_measures_its_reach_from_the_stamp() -> None:
    """A state stamped 15 ms ahead of the clock that received it (within ``max_age``, 20 ms: a
    controller on the simulator's time reads each state a step ahead), 65 ms after the last good
    state by the stamps: its reach is 10 rad/s × 65 ms = 0.65 rad, so a step of 0.6 rad is taken,
    not refused as a jump. (Mutant: ``dt = min(stamp, now) − _order_stamp`` in ``Watchdog.check``,
    which measures the 50 ms to the clock instead and refuses it beyond a 0.5 rad reach.)"""
    wd = _bounded_watchdog(max_age=0.02)
    assert _feed(wd, np.zeros(3), 0.0, 0.0) == (Action.COMPUTE, None)
    assert _feed(wd, np.full(3, 0.6), 0.065, 0.05) == (Action.COMPUTE, None)


def test_a_stamp_far_ahead_of_the_clock_widens_the_reach_by_max_age_only() -> None:
    """A state stamped 0.45 s ahead of the clock that received it (beyond ``max_age``, within
    ``max_future``), 50 ms after the last good state on that clock: its stamp counts as at most
    ``max_age`` (20 ms) ahead, so its reach is 10 rad/s × 70 ms = 0.7 rad and a step of 0.8 rad is
    refused as a jump. (Mutant: ``min(stamp, now + 2·max_age)`` as the capped stamp in
    ``Watchdog.check``, whose 0.9 rad reach lets it through.)"""
    wd = _bounded_watchdog(max_age=0.02)
    assert _feed(wd, np.zeros(3), 0.0, 0.0) == (Action.COMPUTE, None)
    action, message = _feed(wd, np.full(3, 0.8), 0.5, 0.05)
    assert action is Action.FALLBACK and wd.last_reason is RejectReason.OUT_OF_RANGE
    assert message is not None and "jumped" in message


def test_after_a_state_stamped_far_ahead_the_reach_runs_from_its_capped_stamp() -> None:
    """The last good state stamped 0.5 s ahead of the clock that received it (at 10 s), then a
    state stamped and received at 10.2 s: the stamp ahead counts as ``now + max_age`` = 10.02 s,
    so the new state is 180 ms later with a reach of 1.8 rad, and a step of 1 rad is taken. (Mutant:
    ``dt`` from ``last_good.stamp`` in ``Watchdog.check``: 10.2 − 10.5 s, below the floor, gives a
    0.2 rad reach and refuses the stream's correct states after the one stamped ahead.)"""
    wd = _bounded_watchdog(max_age=0.02)
    assert _feed(wd, np.zeros(3), 10.5, 10.0) == (Action.COMPUTE, None)
    assert _feed(wd, np.ones(3), 10.2, 10.2) == (Action.COMPUTE, None)


def test_a_clock_stepped_back_exactly_max_age_keeps_the_fallback_window() -> None:
    """A fallback window opened at 1 s, then a tick on a clock stepped back exactly ``max_age``
    (2⁻⁴ s, exact in binary): a step of up to ``max_age`` (a system clock's adjustment) only
    lengthens the window, so the safe command goes on; a hair farther back is a clock reset and
    stops it. (Mutant: ``fallback_since − now >= max_age`` in ``Watchdog.tick``, which stops at the
    bound itself.)"""
    wd = _bounded_watchdog(max_age=0.0625, fallback_duration=0.5)
    assert _feed(wd, np.zeros(3), 1.0, 1.0) == (Action.COMPUTE, None)
    assert wd.reject(RejectReason.NON_FINITE, "nan", 1.0) is Action.FALLBACK
    assert wd.tick(0.9375) is Action.FALLBACK
    assert wd.state is WatchdogState.FALLBACK
    assert wd.tick(0.9374) is Action.NONE
    assert wd.state is WatchdogState.STOPPED


def test_a_silence_on_a_frozen_clock_keeps_the_window_up_to_exactly_fallback_duration() -> None:
    """A window opened by a silence ``max_age`` (2⁻⁵ s) after the last state, the caller's clock
    then standing still (``use_sim_time`` without ``/clock``) while the timer's steady count goes
    on: a silence of exactly ``max_age + fallback_duration`` (0.53125 s, exact in binary) leaves it
    open, as the window timed on ``now`` is open up to exactly ``fallback_duration``; a hair
    longer stops it. (Mutant: ``silent_for − max_age >= fallback_duration`` in
    ``Watchdog.silence``, which stops at the bound itself.)"""
    wd = _bounded_watchdog(max_age=0.03125, fallback_duration=0.5)
    assert _feed(wd, np.zeros(3), 1.0, 1.0) == (Action.COMPUTE, None)
    wd.silence(1.0625, 0.0625)
    assert wd.state is WatchdogState.FALLBACK and wd.fallback_since == 1.03125
    wd.silence(1.0625, 0.53125)
    assert wd.state is WatchdogState.FALLBACK
    wd.silence(1.0625, 0.53126)
    assert wd.state is WatchdogState.STOPPED
