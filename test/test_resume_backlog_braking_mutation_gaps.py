"""Behaviours of core/resume.py and core/backlog.py that a mutation review of resume, backlog and
braking found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch: when
a fallback window on a frozen clock ends by the stamps. Pure core: no ROS.
"""

from __future__ import annotations

import math

import pytest
from test_resume import DT
from test_supervisor import NAN, V0, _run, _supervisor

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.safety import Action, WatchdogState


def _fallbacks_before_the_window_ends(robot: RobotModel, stamps: list[float]) -> int:
    """Refused states stamped ``stamps`` (s), all received at one ``now`` (use_sim_time without
    /clock) after three good ones, on a window of 50 ms: how many got a safe command before the
    window ended by the stamps (the arm stopped); ``len(stamps)`` when it never did."""
    sup = _supervisor(robot, fallback_duration=0.05)
    now = _run(sup, 3) + DT
    for count, stamp in enumerate(stamps):
        if sup.step(NAN, V0, stamp, now).action is not Action.FALLBACK:
            assert sup.watchdog.state is WatchdogState.STOPPED
            return count
    return len(stamps)


@pytest.mark.parametrize("stamp", [math.nan, math.inf, -math.inf])
def test_a_frozen_clock_window_of_stamps_that_are_not_finite_ends_like_one_repeating_a_stamp(
    robot: RobotModel, stamp: float
) -> None:
    """On a frozen clock, refused states whose stamps are not finite count one step of the stream
    each, as states repeating one stamp do, so the window ends and the arm is not sent the same
    safe command for ever (the brake's prediction stands still on a frozen clock without stamps,
    and a repeated command spins the wrist up). A window opened by such a stamp used to be
    reopened at each of them (NaN was also the "no window" mark) or its span was ``inf − inf``:
    it never ended. (Bug fixed in ``ResumeTracker.note_fallback``; mutant: its window kept open
    by ``math.isnan(self._window_stamp)`` and spanned by ``newest − first`` of any stamps.)"""
    repeating = _fallbacks_before_the_window_ends(robot, [1000.0] * 100)
    assert repeating < 100
    assert _fallbacks_before_the_window_ends(robot, [stamp] * 100) == repeating
    # Opened by a stamp that is not finite, the window's span runs from the first finite one.
    assert _fallbacks_before_the_window_ends(robot, [stamp] + [1000.0] * 99) == repeating
