"""What a target does when control resumes after a fallback or a stop (core/resume.py, no ROS).

The watchdog is driven as the controller node drives it: ``check`` then ``accept`` / ``reject``
per state, ``silence`` from its timer; the tracker is told of each computed state and each safe
command in the same order as the node tells it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from torque_ctrl_ros.core.resume import RESUME_TOLERANCE, ResumeKind, ResumeTracker, StreamPeriod
from torque_ctrl_ros.core.safety import Action, RejectReason, Watchdog, WatchdogConfig, WatchdogState

N = 3
CONFIG = WatchdogConfig.create(max_age=0.02, fallback_duration=0.5)
DT = 0.001


def _plain_difference(q_to: np.ndarray, q_from: np.ndarray) -> np.ndarray:
    return q_to - q_from


class Loop:
    """A watchdog and a tracker fed states stamped on the node's clock (``now == stamp``)."""

    def __init__(
        self,
        difference: Callable[[np.ndarray, np.ndarray], np.ndarray] = _plain_difference,
        config: WatchdogConfig = CONFIG,
    ) -> None:
        self.wd = Watchdog(N, config)
        self.tracker = ResumeTracker(N, config, difference)
        self.decisions: list = []

    def good(self, stamp: float, q: np.ndarray | None = None, now: float | None = None) -> None:
        """A good state: computed on, the controller answering it."""
        q = np.zeros(N) if q is None else q
        now = stamp if now is None else now
        previous = self.wd.state
        assert self.wd.check(q, np.zeros(N), stamp, now) is None
        if self.wd.accept(q, np.zeros(N), stamp, now) is Action.COMPUTE:
            self.decisions.append(self.tracker.decide_resume(previous, self.wd, stamp))
            self.tracker.torque_computed()

    def bad(self, stamp: float, now: float | None = None) -> Action:
        """A refused state, answered by a safe command while the window is open."""
        now = stamp if now is None else now
        action = self.wd.reject(RejectReason.NON_FINITE, "nan", now)
        if action is Action.FALLBACK and self.tracker.note_fallback(stamp, now):
            self.wd.end_window()
            action = Action.NONE
        if action is Action.FALLBACK:
            self.tracker.safe_command(stamp)
        return action

    def run(self, start: float, steps: int, q: np.ndarray | None = None) -> float:
        for k in range(steps):
            self.good(start + k * DT, q)
        return start + (steps - 1) * DT


def test_a_stream_without_fallback_keeps_the_target_and_learns_its_period() -> None:
    loop = Loop()
    t = loop.run(1.0, 20)
    assert {d.kind for d in loop.decisions} == {ResumeKind.KEEP}
    assert loop.tracker.stream.period == pytest.approx(DT)
    assert loop.tracker.silence_after() == pytest.approx(CONFIG.max_age)  # 1.5 ms is shorter
    # 30 ms of refused states between two computed ones are no step of the stream's.
    for k in range(1, 31):
        loop.bad(t + k * DT)
    loop.run(t + 0.031, 2)
    assert loop.tracker.stream.period == pytest.approx(DT)


def test_after_refused_states_the_target_is_paused_from_the_first_safe_command() -> None:
    """The last computed torque was applied until the first refused state: the target's time
    stands still from that state's stamp to the resuming one's, not from the last computed."""
    loop = Loop()
    t = loop.run(1.0, 10)
    for k in range(1, 6):
        assert loop.bad(t + k * DT) is Action.FALLBACK
    loop.good(t + 6 * DT)
    resume = loop.decisions[-1]
    assert resume.kind is ResumeKind.PAUSE
    assert resume.since == pytest.approx(t + DT) and resume.until == pytest.approx(t + 6 * DT)
    loop.good(t + 7 * DT)
    assert loop.decisions[-1].kind is ResumeKind.KEEP  # back to OK: the next one keeps


def test_a_silence_before_the_refused_states_pauses_from_the_last_computed_state() -> None:
    """The stream fell silent first (the arm held its last command through it), then refused
    states came: the pause starts at the last computed state, not at the first refused one."""
    loop = Loop()
    t = loop.run(1.0, 10)
    loop.wd.silence(t + 0.05, 0.05)
    assert loop.wd.state is WatchdogState.FALLBACK
    loop.bad(t + 0.06)
    loop.good(t + 0.07)
    resume = loop.decisions[-1]
    assert resume.kind is ResumeKind.PAUSE
    assert resume.since == pytest.approx(t) and resume.until == pytest.approx(t + 0.07)


def test_an_arm_that_moved_more_than_the_tolerance_drops_the_target_and_says_which_joint() -> None:
    loop = Loop()
    t = loop.run(1.0, 10)
    loop.bad(t + DT)
    moved = np.array([0.0, 0.0, -(RESUME_TOLERANCE + 0.05)])
    loop.good(t + 2 * DT, moved)
    resume = loop.decisions[-1]
    assert resume.kind is ResumeKind.DROP
    assert resume.joint == 2 and resume.moved == pytest.approx(RESUME_TOLERANCE + 0.05)
    # Within the tolerance: taken up again.
    loop.bad(t + 3 * DT)
    loop.good(t + 4 * DT, moved + 0.5 * RESUME_TOLERANCE)
    assert loop.decisions[-1].kind is ResumeKind.PAUSE


def test_the_tolerance_is_measured_with_the_robots_difference() -> None:
    """A continuous joint wrapped from π to −π has not moved: the robot's difference says so."""

    def wrapped(q_to: np.ndarray, q_from: np.ndarray) -> np.ndarray:
        d = q_to - q_from
        return d - 2.0 * np.pi * np.rint(d / (2.0 * np.pi))

    loop = Loop(wrapped)
    t = loop.run(1.0, 5, np.array([0.0, 0.0, math.pi - 0.01]))
    loop.bad(t + DT)
    loop.good(t + 2 * DT, np.array([0.0, 0.0, -math.pi + 0.01]))
    assert loop.decisions[-1].kind is ResumeKind.PAUSE


def test_a_fallback_before_any_computed_state_drops_without_a_joint() -> None:
    """A controller that failed on the very first state: nothing computed before, no motion to
    name (the node then says nothing and holds)."""
    loop = Loop()
    loop.wd.accept(np.zeros(N), np.zeros(N), 1.0, 1.0)
    loop.wd.controller_failed("boom", 1.0)
    assert loop.wd.state is WatchdogState.FALLBACK
    loop.tracker.safe_command(1.0)
    loop.good(1.001)
    resume = loop.decisions[-1]
    assert resume.kind is ResumeKind.DROP and resume.joint == -1


@pytest.mark.parametrize(("gap", "kind"), [(DT, ResumeKind.KEEP), (0.06, ResumeKind.PAUSE)])
def test_after_a_fallback_from_silence_alone_continuous_stamps_keep_the_target(
    gap: float, kind: ResumeKind
) -> None:
    """Both processes stalled 60 ms under sim time (lockstep): the node's silence check put the
    watchdog in fallback, no state was refused, and the next state is one period on: the target
    stands (a pause of that period had put the DDS loop 2e-4 rad off the same loop in process).
    With the stamps 60 ms on (a real silence; the arm held its command) it pauses from the last
    computed state."""
    loop = Loop()
    t = loop.run(1.0, 10)
    loop.wd.silence(t, 0.06)  # on the steady clock; the node's (sim) clock stood with the stamps
    assert loop.wd.state is WatchdogState.FALLBACK
    loop.good(t + gap)
    resume = loop.decisions[-1]
    assert resume.kind is kind
    if kind is ResumeKind.PAUSE:
        assert resume.since == pytest.approx(t) and resume.until == pytest.approx(t + gap)


def test_after_a_stop_from_silence_alone_with_continuous_stamps_the_target_stands() -> None:
    """A stalled simulator under sim time: the steady clock's silence stopped the arm while the
    node's clock stood with the stamps, which go on where they were."""
    loop = Loop()
    t = loop.run(1.0, 10)
    loop.wd.silence(t, 1.0)
    assert loop.wd.state is WatchdogState.STOPPED
    loop.good(t + DT)
    assert loop.decisions[-1].kind is ResumeKind.KEEP


@pytest.mark.parametrize(("silent", "state"), [(0.06, WatchdogState.FALLBACK), (1.0, WatchdogState.STOPPED)])
def test_a_slow_stream_resumes_alike_after_a_fallback_and_a_stop_from_silence_alone(
    silent: float, state: WatchdogState
) -> None:
    """A 40 Hz stream (25 ms apart, past ``max_age``) stalled with both processes under sim time:
    the next state is one period on, no further than a silence allows, so the target stands
    whether the steady clock's silence put the watchdog in fallback or stopped it."""
    loop = Loop()
    t = 1.0
    for k in range(10):
        t = 1.0 + 0.025 * k
        loop.good(t)
    assert loop.tracker.stream.period == pytest.approx(0.025)
    loop.wd.silence(t, silent)
    assert loop.wd.state is state
    loop.good(t + 0.025)
    resume = loop.decisions[-1]
    assert resume.kind is ResumeKind.KEEP and resume.unbroken


@pytest.mark.parametrize("case", ["refused", "gap"])
def test_after_other_stops_the_target_is_dropped(case: str) -> None:
    """Stopped on refused states (the arm braked), or resumed with the stamps past a silence
    after the last computed one (time went on without control): hold where the arm is."""
    loop = Loop()
    t = loop.run(1.0, 10)
    if case == "refused":
        loop.bad(t + DT)
        loop.bad(t + 0.6)
        assert loop.wd.state is WatchdogState.STOPPED
        loop.good(t + 0.7)
    else:
        loop.wd.silence(t + 1.0, 1.0)
        loop.good(t + 1.0)
    assert loop.wd.state is WatchdogState.OK
    assert loop.decisions[-1].kind is ResumeKind.DROP and loop.decisions[-1].joint == -1


def test_the_window_ends_by_the_stamps_only_while_the_clock_stands_still() -> None:
    loop = Loop()
    t = loop.run(1.0, 10)
    frozen = t + DT
    stamps = [t + DT + k * 0.1 for k in range(7)]
    actions = [loop.bad(s, now=frozen) for s in stamps]
    # 0.6 s of stamps past the first safe command's, the clock at one value: over after 0.5 s.
    assert actions[:6] == [Action.FALLBACK] * 6 and actions[6] is Action.NONE
    assert loop.wd.state is WatchdogState.STOPPED

    running = Loop()
    t = running.run(1.0, 10)
    # A running clock ends the window itself; one wild stamp far ahead does not.
    assert running.bad(t + DT) is Action.FALLBACK
    assert running.bad(t + 5.0, now=t + 2 * DT) is Action.FALLBACK


@pytest.mark.parametrize("repeat", ["one-stamp", "stamps-going-back", "ahead-then-one-stamp"])
def test_states_repeating_one_stamp_on_a_frozen_clock_end_the_window(repeat: str) -> None:
    """Sim time without /clock and refused states that all carry one stamp (or older ones): each
    counts one period of the stream, so the window ends after fallback_duration's worth of them
    (it had answered every one with the same safe command for ever)."""
    loop = Loop()
    t = loop.run(1.0, 10)
    frozen = t + DT
    expected = round(CONFIG.fallback_duration / DT) + 1
    if repeat == "one-stamp":
        stamps = [t + DT] * (expected + 50)
    elif repeat == "stamps-going-back":  # by 2 ms each: more than the period each counts
        stamps = [t + DT - k * 2e-3 for k in range(expected + 50)]
    else:  # the first refused state stamped 10 s ahead, then the stream's own stamp again
        stamps = [t + 10.0] + [t + DT] * (expected + 49)
    actions = [loop.bad(s, now=frozen) for s in stamps]
    assert actions[:expected] == [Action.FALLBACK] * expected
    assert actions[expected] is Action.NONE and loop.wd.state is WatchdogState.STOPPED
    # On a running clock, the clock alone ends the window: repeated stamps change nothing.
    running = Loop()
    t = running.run(1.0, 10)
    assert all(running.bad(t + DT, now=t + DT + k * 1e-4) is Action.FALLBACK for k in range(expected + 50))


def test_a_computed_torque_opens_a_new_window() -> None:
    """After the controller answered, the next fallback times its window from its own first safe
    command (else a second fallback on a frozen clock would end at once)."""
    loop = Loop()
    t = loop.run(1.0, 10)
    frozen = t + DT
    loop.bad(t + DT, now=frozen)
    loop.good(t + 0.2, now=frozen)
    assert loop.bad(t + 0.55, now=frozen) is Action.FALLBACK  # 0.35 s into the new window
    assert loop.bad(t + 0.75, now=frozen) is Action.FALLBACK


def test_the_stream_period_is_the_longest_recent_step_between_states_computed_in_a_row() -> None:
    """Learnt from stamps: a jittery 25 ± 5 ms stream reads 30 ms, not its last short step; a step
    across a refused state or of 1 s or more is none; silence starts past 1.5 periods (or
    max_age), and before any period only past max_age + fallback_duration."""
    config = WatchdogConfig.create(max_age=0.02, fallback_duration=0.5)
    stream = StreamPeriod(window=10)
    assert stream.period == 0.0 and stream.silence_after(config) == pytest.approx(0.52)
    t = 1.0
    for step in (0.025, 0.030, 0.020, 0.025, 0.020):
        t += step
        stream.computed(t, none_refused_since=True)
    assert stream.period == pytest.approx(0.030) and stream.last_stamp == t
    assert stream.silence_after(config) == pytest.approx(0.045)
    stream.computed(t + 0.2, none_refused_since=False)  # across a refused state: not a step
    stream.computed(t + 5.0, none_refused_since=True)  # a paused stream: not a step
    assert stream.period == pytest.approx(0.030)
    fast = StreamPeriod(window=3)
    for k in range(1, 8):  # 40 Hz, then 1 kHz: the window forgets the slow steps
        fast.computed(k * 0.025 if k < 4 else 0.075 + (k - 3) * 0.001, none_refused_since=True)
    assert fast.period == pytest.approx(0.001)
    assert fast.silence_after(config) == pytest.approx(0.02)  # max_age is longer than 1.5 ms


def test_the_typical_step_is_the_median_of_the_recent_ones() -> None:
    """0.0 before any step; the median, not the longest (the period): one slow step does not move
    it, a stream that changed rate moves it once the window holds more new steps than old."""
    stream = StreamPeriod(window=5)
    assert stream.typical == 0.0
    stream.computed(1.0, none_refused_since=True)
    assert stream.typical == 0.0  # one stamp: no step yet
    t = 1.0
    for step in (0.025, 0.025, 0.060):
        t += step
        stream.computed(t, none_refused_since=True)
    assert stream.typical == pytest.approx(0.025) and stream.period == pytest.approx(0.060)
    t += 0.020
    stream.computed(t, none_refused_since=True)  # 20, 25, 25, 60: the middle two's mean
    assert stream.typical == pytest.approx(0.025) and not stream.full  # 4 steps of 5
    for _ in range(3):  # 1 kHz from here: 3 of 5 steps are 1 ms
        t += 0.001
        stream.computed(t, none_refused_since=True)
    assert stream.typical == pytest.approx(0.001) and stream.period == pytest.approx(0.060) and stream.full
    stream.computed(t + 2.0, none_refused_since=True)  # a pause: not a step
    stream.computed(t + 2.5, none_refused_since=False)  # across a refused state: not a step
    assert stream.typical == pytest.approx(0.001)
