"""What happens to a target when control resumes after a fallback or a stop (pure: no ROS here).

Between two states a controller computed on, the :class:`~.safety.Watchdog` may have refused
states (the safe brake answered them) or the stream may have fallen silent. When a torque is
computed again, the target the controller tracks either

* stands as it was (``KEEP``): nothing was refused, or the stream only paused with its stamps;
* takes up where it stood (``PAUSE``): a trajectory's time is shifted by the span the safe
  command held the arm, so the reference does not jump ahead of it;
* is dropped (``DROP``): the arm moved more than :data:`RESUME_TOLERANCE` meanwhile, or stopped;
  the caller holds where the arm is.

:class:`ResumeTracker` keeps the bookkeeping this needs (the last computed state, the first safe
command's stamp, the stream's period: :class:`StreamPeriod`) and decides; its caller
(:class:`~.supervisor.Supervisor`) hands the decision to the controller node, which applies it to
its target source and logs it. It also ends a fallback window by the states' own stamps when the
caller's clock stands still (:meth:`ResumeTracker.note_fallback`).

All times are in seconds: ``stamp`` on the states' clock, ``now`` on the caller's clock.
"""

from __future__ import annotations

import enum
import math
import statistics
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .robot import CONTROL_PERIOD
from .safety import Watchdog, WatchdogConfig, WatchdogState
from .validation import FloatArray

RESUME_TOLERANCE = 0.1
"""Farthest (rad, any joint) the arm may have moved from the last state the controller computed
on for its target to take up again after a fallback or a silence: beyond, the reference that
stood still meanwhile is as far, and the law would step into it at its torque and velocity
limits; the target is then dropped and the arm held where it is, as after a stop. 0.1 rad asks
10 rad/s² of computed torque at its ``kp`` of 100."""


def silence_gap(max_age: float, period: float) -> float:
    """Farthest apart (s) two states of a stream of ``period`` s may be, in their stamps or on a
    clock, without a silence between them::

        max(max_age, 1.5·period)

    1.5 periods so that a stream slower than ``max_age`` allows (a 40 Hz driver's states, 25 ms
    apart, at a ``max_age`` of 20 ms) is no silence at each state; ``period`` 0 (not known yet):
    ``max_age``. ``max_age`` is the watchdog's (:class:`~.safety.WatchdogConfig`)."""
    return max(max_age, 1.5 * period)


class StreamPeriod:
    """The period (s) of a stream of joint states, learnt from the stamps of the states a
    controller computed on; what counts as a silence in it.

    The period is the longest of the last ``window`` steps between two computed states with none
    refused between them. A step that was a silence counts once the step after it was one too,
    so that a stream slowing to 40 Hz is learnt after two silences rather than taken for one at
    every state; a lone silence is not learnt (learnt, a 0.45 s gap in a 1 kHz stream had made
    the next 0.6 s one no silence at all, the arm 0.3 rad on and the target kept). The longest,
    so that a jittery stream (25 ± 5 ms) is not after one short step (learnt from one step alone,
    the period could make the next, longer step a silence, its state answered with a fallback).
    Steps of 1 s or more are none (a paused stream, another clock).
    """

    def __init__(self, window: int = 10) -> None:
        self.period = 0.0  #: s; 0 until two states in a row were computed on
        self.last_stamp = math.inf  #: stamp (s) of the last state computed on
        self._steps: deque[float] = deque(maxlen=window)
        self._silent_step = math.nan  # the last step, when it was a silence not learnt (s)

    def computed(self, stamp: float, none_refused_since: bool, silent: bool = False) -> None:
        """A state stamped ``stamp`` (s) was computed on; ``none_refused_since``: no state was
        refused since the last one computed on (the step between them is then the stream's);
        ``silent``: the step was longer than :meth:`silence_after` allowed (learnt only after
        another such step, and then both are)."""
        step = stamp - self.last_stamp
        if 0.0 < step < 1.0 and none_refused_since:
            if not silent:
                self._steps.append(step)
            elif not math.isnan(self._silent_step):  # the second silent step in a row
                self._steps.extend((self._silent_step, step))
            self.period = max(self._steps) if self._steps else 0.0
            self._silent_step = step if silent and math.isnan(self._silent_step) else math.nan
        else:
            self._silent_step = math.nan
        self.last_stamp = stamp

    @property
    def typical(self) -> float:
        """The median (s) of the last ``window`` steps (:attr:`period` is their longest); 0.0
        while there are none (of an even number, the mean of the middle two). The stream's usual
        step, which one slow step does not move (25, 25, 60 ms: 25 ms, where the period is 60)."""
        return statistics.median(self._steps) if self._steps else 0.0

    @property
    def full(self) -> bool:
        """Whether ``window`` steps were learnt (then :attr:`typical` is a stream's, not one or
        two steps between states sent by hand)."""
        return len(self._steps) == self._steps.maxlen

    def silence_after(self, config: WatchdogConfig) -> float:
        """The gap (s) between two states' stamps beyond which the stream counts as having been
        silent: :meth:`gap_within` once its period is known; before, ``max_age +
        fallback_duration`` (only a gap that stops the arm)."""
        if self.period <= 0.0:
            return config.max_age + config.fallback_duration
        return self.gap_within(config)

    def gap_within(self, config: WatchdogConfig) -> float:
        """:func:`silence_gap` of the period (``max_age`` while it is not known), never beyond
        ``max_age + fallback_duration``: a gap that stops the arm, whatever the stream's period."""
        return min(silence_gap(config.max_age, self.period), config.max_age + config.fallback_duration)


class ResumeKind(enum.Enum):
    """What the target does at the first state computed on after a fallback or a stop."""

    KEEP = "keep"  # stands as it was
    PAUSE = "pause"  # its time stood still from ``Resume.since`` to the resuming state's stamp
    DROP = "drop"  # forgotten: hold where the arm is


@dataclass(frozen=True)
class Resume:
    """A decision of :meth:`ResumeTracker.decide_resume`.

    Attributes:
        kind: what the target does.
        since: ``PAUSE``: the stamp (s) from which the target stood still (nan otherwise).
        until: ``PAUSE``: the resuming state's stamp (s) (nan otherwise).
        moved: ``DROP`` because the arm moved: the largest joint motion (rad) since the last
            state computed on; 0 otherwise.
        joint: the index (controller order) of that joint; -1 when no move caused the drop.
        unbroken: ``KEEP`` after a fallback or a stop from a silence on the caller's clock alone
            (nothing refused, no safe command), the stamps going on without a gap: the arm is
            where the controller's last step left it (under sim time both processes stalled,
            the simulated arm with them), so what the controller carries from that step (warm
            starts, filters) still belongs to it.
    """

    kind: ResumeKind
    since: float = math.nan
    until: float = math.nan
    moved: float = 0.0
    joint: int = -1
    unbroken: bool = False


KEEP = Resume(ResumeKind.KEEP)
DROP = Resume(ResumeKind.DROP)
UNBROKEN = Resume(ResumeKind.KEEP, unbroken=True)


class ResumeTracker:
    """Bookkeeping between the states a controller computed on and the safe commands between
    them; decides what the target does when control resumes (module docstring).

    Call, per state: :meth:`decide_resume` when the watchdog accepted it (before the controller runs),
    then :meth:`torque_computed` if the controller answered it; :meth:`note_fallback` for each
    state the watchdog answers with a fallback, and :meth:`safe_command` for each safe command
    sent. ``difference(q_to, q_from)`` is the robot's configuration difference (rad; the short way
    round on continuous joints).
    """

    def __init__(
        self,
        n: int,
        config: WatchdogConfig,
        difference: Callable[[FloatArray, FloatArray], FloatArray],
        tolerance: float = RESUME_TOLERANCE,
    ) -> None:
        self.config = config
        self.tolerance = tolerance
        self._difference = difference
        self.stream = StreamPeriod()  #: the states' period, from the stamps of those computed on
        self._computed_q = np.full(n, np.nan)  # positions (rad) of the last state computed on
        self._rejected_when_computed = 0  # Watchdog.rejected_total at that state
        self._safe_from_stamp = math.nan  # stamp (s) of the first state a safe command answered
        # Whether a fallback came since a torque was last computed (a controller failing again
        # does not restart the window), and the caller's clock (s) at the first. Counted since the
        # caller's clock last moved: the reading it stands at (s), the first finite stamp (s, as
        # it came) answered since and the newest (nan while none), and how many answers came with
        # no newer stamp than the newest, or with none that is finite.
        self._window_open = False
        self._window_opened_at = math.nan
        self._window_now = math.nan
        self._window_stamp = math.nan
        self._window_newest = math.nan
        self._window_repeats = 0

    def silence_after(self) -> float:
        """The gap (s) between two states' stamps beyond which the stream was silent
        (:meth:`StreamPeriod.silence_after`)."""
        return self.stream.silence_after(self.config)

    def decide_resume(
        self, previous: WatchdogState, watchdog: Watchdog, stamp: float, skipped: bool = False
    ) -> Resume:
        """The watchdog accepted a state stamped ``stamp`` (s) and a torque is about to be computed
        on it, the watchdog having been in ``previous`` before; returns what the target does.
        ``skipped``: the caller skipped queued states for this one (:mod:`.backlog`), so the step
        from the last state computed on is not the stream's (not learnt, as after a refused one).

        - After OK or WAITING: ``KEEP``.
        - The arm moved more than :attr:`tolerance` on any joint since the last state computed on
          (or none was): ``DROP``, with the motion when there was a previous state.
        - After FALLBACK or STOPPED from silence alone (no state refused since the last
          computed, so no safe command sent) with the stamps going on without a gap (within
          :func:`silence_gap` of the last computed, ``max(max_age, 1.5·period)``): ``KEEP``,
          :attr:`Resume.unbroken` (a stalled or paused simulator under sim time, its time
          standing still).
        - Otherwise, after STOPPED: ``DROP``.
        - Otherwise, after FALLBACK: ``PAUSE`` from the first state the safe command answered,
          until which the last computed torque was applied; or from the last state computed on
          when that first one came later than a silence allows (the stream fell silent first
          and the arm held its command through it), or is unknown. ``KEEP`` when no time passed.
        """
        last = self.stream.last_stamp
        resume = self._decide(previous, watchdog, stamp, last)
        rejected = watchdog.rejected_total
        unbroken = rejected == self._rejected_when_computed and not skipped
        silent = stamp - last > self.silence_after()
        self.stream.computed(stamp, none_refused_since=unbroken, silent=silent)
        np.copyto(self._computed_q, watchdog.last_good.q)
        self._rejected_when_computed = rejected
        self._safe_from_stamp = math.nan
        return resume

    def _decide(self, previous: WatchdogState, watchdog: Watchdog, stamp: float, last: float) -> Resume:
        if previous not in (WatchdogState.FALLBACK, WatchdogState.STOPPED):
            return KEEP
        moved = np.abs(self._difference(watchdog.last_good.q, self._computed_q))
        if not moved.max() <= self.tolerance:  # also NaN: nothing computed on yet
            if math.isnan(self._computed_q[0]):
                return DROP
            joint = int(np.argmax(moved))
            return Resume(ResumeKind.DROP, moved=float(moved[joint]), joint=joint)
        # Nothing refused also means no safe command: those answer refused states only.
        none_refused = watchdog.rejected_total == self._rejected_when_computed
        # An unknown period reads as 0 here (max_age), not as silence_after's stop rule: a gap of
        # more than max_age in the stamps is a silence of the stream's own time too.
        silent_after = last + self.stream.gap_within(self.config)
        if none_refused and stamp <= silent_after:
            # A silence on the caller's clock alone, the stamps going on without a gap: under sim
            # time both processes stalled together (the simulator's time stood still too). A
            # pause to this stamp would hold the reference one period behind the arm's time, a
            # drop would hold an arm that no safe command braked where it is.
            return UNBROKEN
        if previous is WatchdogState.STOPPED:
            return DROP
        since = self._safe_from_stamp
        if not last < since <= min(stamp, silent_after):  # also when nan
            since = last
        return Resume(ResumeKind.PAUSE, since=since, until=stamp) if stamp > since else KEEP

    def torque_computed(self) -> None:
        """The controller answered the state :meth:`decide_resume` was called for: no safe command
        since, and the next fallback opens a new window (:meth:`note_fallback`)."""
        self._window_open = False

    def safe_command(self, stamp: float) -> None:
        """A safe command answers the state stamped ``stamp`` (s)."""
        if math.isnan(self._safe_from_stamp):
            self._safe_from_stamp = stamp

    def note_fallback(self, stamp: float, now: float) -> bool:
        """The watchdog answered the state stamped ``stamp`` (s, as it came) with a fallback at
        ``now``: the first since a torque was computed opens a window. Returns whether that window
        is over by the states' stamps while the caller's clock stands still (``use_sim_time``
        without ``/clock``: that clock could never end it). Only then: on a running clock, the
        clock ends the window, and one wild stamp must not stop the arm and drop its trajectory.

        While the clock stands at one reading, the window has lasted ::

            (that reading − the clock at the window's first answer)
            + newest stamp − first stamp + repeats·typical period

        counted from the first answer at that reading, so that a clock stopping after the window
        opened (``/clock`` dying between two refused states) does not keep it open either. A state
        whose stamp is not newer than every stamp answered before it counts one step of the stream
        (:attr:`StreamPeriod.typical`; :data:`~.robot.CONTROL_PERIOD` while unknown), so that
        states repeating one stamp, or going back, on a frozen clock do not get the same safe
        command for ever. A stamp that is not finite (refused as inconsistent) is never newer: it
        counts one step too, and the span runs from the first finite stamp (0 while there is
        none), so a window opened by such stamps ends like one repeating a stamp."""
        if not self._window_open:
            self._window_open, self._window_opened_at = True, now
            self._count_stamps_from(stamp, now)
            return False
        if now != self._window_now:  # the clock moved: it times the window (Watchdog.tick)
            self._count_stamps_from(stamp, now)
            return False
        if math.isfinite(stamp) and math.isnan(self._window_stamp):
            # The first finite stamp: the span starts here; it counts the step from the state before.
            self._window_stamp = self._window_newest = stamp
        if math.isfinite(stamp) and stamp > self._window_newest:
            self._window_newest = stamp
        else:
            self._window_repeats += 1
        step = self.stream.typical or CONTROL_PERIOD
        # A clock that went back before it stopped has spent nothing of the window.
        clock_spent = max(0.0, now - self._window_opened_at)
        return clock_spent + self._window_span() + self._window_repeats * step > self.config.fallback_duration

    def _count_stamps_from(self, stamp: float, now: float) -> None:
        """Count the window by the stamps from the answer to the state stamped ``stamp`` (s) at
        ``now`` (s), the clock's reading it may stand still at from here."""
        self._window_now, self._window_repeats = now, 0
        self._window_stamp = self._window_newest = stamp if math.isfinite(stamp) else math.nan

    def _window_span(self) -> float:
        """Newest − first finite stamp (s) answered in the fallback window; 0 while there is none."""
        if math.isnan(self._window_stamp):
            return 0.0
        return self._window_newest - self._window_stamp


__all__ = [
    "DROP",
    "KEEP",
    "RESUME_TOLERANCE",
    "UNBROKEN",
    "Resume",
    "ResumeKind",
    "ResumeTracker",
    "StreamPeriod",
    "silence_gap",
]
