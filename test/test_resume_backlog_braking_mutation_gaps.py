"""Behaviours of core/resume.py and core/backlog.py that a mutation review of resume, backlog and
braking found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch: how
the target is taken up again after a fallback (where its pause starts, what a drop reports), what
the stream's usual step is, when a fallback window on a frozen clock ends by the stamps (also
where the clock stopped after it opened), and how long a catch-up says this process was away.
Pure core: no ROS.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_backlog import MAX_AGE, _computed
from test_resume import CONFIG, DT, Loop
from test_supervisor import NAN, T0, V0, _run, _supervisor

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.backlog import LONGEST, CatchUp
from torque_ctrl_ros.core.resume import RESUME_TOLERANCE, ResumeKind, StreamPeriod, silence_gap
from torque_ctrl_ros.core.safety import Action, WatchdogState


def _fallbacks_before_the_window_ends(
    robot: RobotModel, stamps: list[float], stops_after: float = 0.0
) -> int:
    """Refused states stamped ``stamps`` (s) after three good ones, on a window of 50 ms, the first
    received ``stops_after`` s before the caller's clock stops, the others at its last reading
    (use_sim_time without /clock): how many got a safe command before the window ended by the
    stamps (the arm stopped); ``len(stamps)`` when it never did."""
    sup = _supervisor(robot, fallback_duration=0.05)
    opened = _run(sup, 3) + DT
    for count, stamp in enumerate(stamps):
        now = opened if count == 0 else opened + stops_after
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


def test_a_clock_that_stops_after_the_window_opened_still_lets_the_stamps_end_it(robot: RobotModel) -> None:
    """The caller's clock moves 10 ms after the window's first safe command, then stops (``/clock``
    dying between two refused states): the stamps end the window as they do on a clock frozen from
    its start, sooner by what the clock ran (10 of its 50 ms), rather than the arm being sent the
    same safe command for ever (the watchdog times the window on that stopped clock too). (Bug
    fixed in ``ResumeTracker.note_fallback``, which counted the stamps only while the clock read
    what it read at the window's first answer.)"""
    frozen_from_the_start = _fallbacks_before_the_window_ends(robot, [1000.0] * 100)
    stopped_later = _fallbacks_before_the_window_ends(robot, [1000.0] * 100, stops_after=0.01)
    assert frozen_from_the_start < 100
    assert stopped_later < frozen_from_the_start - 5


def test_a_first_safe_command_exactly_one_silence_gap_on_starts_the_pause() -> None:
    """The first refused state stamped exactly ``silence_gap`` after the last computed one came
    within what the stream allows (no silence before it): the target's time stands still from
    that first safe command, not from the last computed state. (Mutant: ``last < since <
    min(stamp, silent_after)`` in ``ResumeTracker._decide``.)"""
    loop = Loop()
    loop.run(1.0, 10)
    stream = loop.tracker.stream
    first_safe = stream.last_stamp + silence_gap(CONFIG.max_age, stream.period)
    assert loop.bad(first_safe) is Action.FALLBACK
    loop.good(first_safe + DT)
    resume = loop.decisions[-1]
    assert resume.kind is ResumeKind.PAUSE
    assert resume.since == first_safe and resume.until == first_safe + DT


def test_before_the_period_is_known_a_stamp_gap_over_max_age_after_a_silence_is_a_pause() -> None:
    """One state computed on (the period not known yet), a silence on the clock, then a state
    stamped 50 ms later: more than ``max_age`` in the stamps, so the stream was silent in its own
    time too and the target pauses over it; it is no stall of both clocks (``UNBROKEN``). The
    resume decision reads an unknown period as 0 (``silence_gap(max_age, 0) = max_age``), not as
    the ``max_age + fallback_duration`` the supervisor's silence test takes then. (Mutant:
    ``silent_after = last + self.stream.silence_after(self.config)`` in ``_decide``.)"""
    loop = Loop()
    loop.good(1.0)
    loop.wd.silence(1.05, 0.05)
    assert loop.wd.state is WatchdogState.FALLBACK and loop.tracker.stream.period == 0.0
    loop.good(1.05)
    resume = loop.decisions[-1]
    assert resume.kind is ResumeKind.PAUSE and not resume.unbroken
    assert resume.since == 1.0 and resume.until == 1.05


def test_a_drop_reports_the_largest_joint_motion_not_the_sum() -> None:
    """Two joints moved past the tolerance: the drop names the joint that moved most and reports
    its motion (rad), which the node logs with that joint's name. (Mutant: ``moved=float(moved.sum())``
    in ``ResumeTracker._decide``.)"""
    loop = Loop()
    t = loop.run(1.0, 10)
    loop.bad(t + DT)
    loop.good(t + 2 * DT, np.array([RESUME_TOLERANCE + 0.05, 0.0, -(RESUME_TOLERANCE + 0.1)]))
    resume = loop.decisions[-1]
    assert resume.kind is ResumeKind.DROP and resume.joint == 2
    assert resume.moved == pytest.approx(RESUME_TOLERANCE + 0.1)


def test_a_clock_gone_back_in_a_window_does_not_end_it_by_a_stamp_far_ahead() -> None:
    """A fallback window opened at one clock reading, then a refused state stamped 1 s ahead
    received on a clock that stepped back 1 ms: the clock is running (only a clock that stood
    still since the window opened leaves its end to the stamps), so one wild stamp does not stop
    the arm. (Mutant: ``if now > self._window_now`` in ``ResumeTracker.note_fallback``.)"""
    loop = Loop()
    t = loop.run(1.0, 10)
    assert loop.bad(t + DT, now=t + DT) is Action.FALLBACK
    assert loop.bad(t + 1.0, now=t) is Action.FALLBACK
    assert loop.wd.state is WatchdogState.FALLBACK


def test_the_typical_step_of_an_even_number_of_steps_is_the_mean_of_the_middle_two() -> None:
    """The stream's usual step over a full window (10 steps, an even number) is the mean of the
    middle two, as documented, not the lower of them: steps of 1 and 3 ms give 2 ms. (Mutant:
    ``statistics.median_low`` in ``StreamPeriod.typical``.)"""
    stream = StreamPeriod(window=2)
    for stamp in (0.0, 0.001, 0.004):
        stream.computed(stamp, none_refused_since=True)
    assert stream.full
    assert stream.typical == pytest.approx(0.002)


def test_a_catch_up_after_a_stall_longer_than_longest_says_the_whole_time_away(robot: RobotModel) -> None:
    """Back from 3 s away (longer than ``LONGEST``): ``away`` is the whole 3 s, which the node
    passes as the clock's lag while it catches up. With a ``max_future`` and a window that allow
    it, the newest queued state, 3 s after the last one computed on, then counts at its stamp and
    the target pauses over the whole gap; with ``away`` cut at ``LONGEST`` the stamp would be
    clamped to ``now + max_age + 1 s`` and the target run 2 s ahead of the arm. (Mutant:
    ``self.away = min(away, LONGEST)`` in ``CatchUp.begin``.)"""
    catch_up = CatchUp(MAX_AGE)
    catch_up.begin(0.0, DT)
    assert catch_up.begin(3.0, DT)
    assert catch_up.away == 3.0 > LONGEST
    sup = _supervisor(robot, max_age=MAX_AGE, max_future=5.0, fallback_duration=5.0)
    for k in range(20):
        _computed(sup, T0 + k * DT, T0 + k * DT)
    last = T0 + 19 * DT
    newest, lagging_now = last + 3.0, last + DT
    decision = _computed(sup, newest, lagging_now, clock_lag=catch_up.away)
    assert decision.effective_stamp == newest
    assert decision.resume.kind is ResumeKind.PAUSE
    assert (decision.resume.since, decision.resume.until) == (last, newest)
