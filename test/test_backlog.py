"""After the controller process was away (stopped, descheduled): :class:`CatchUp` (core/backlog.py)
says when to take the newest queued state, and the :class:`Supervisor` judges its gap on the raw
stamps while the clock lags (under sim time ``/clock`` comes in the same backlog). Nothing is
taken in normal running, and a simulator slower than real time always has its newest state
handled."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.backlog import LONGEST, CatchUp, queued_behind
from torque_ctrl_ros.core.resume import ResumeKind
from torque_ctrl_ros.core.safety import DEFAULT_DAMPING, Action, RejectReason, WatchdogConfig, WatchdogState
from torque_ctrl_ros.core.supervisor import Decision, Supervisor

MAX_AGE = 0.02
DT = 1e-3
T0 = 1000.0
DEPTH = 10  # the subscription's keep-last history (qos_depth)
Q0 = np.array([0.1, 0.6, -0.2, 1.2, 0.1, -0.4, 0.3])
V0 = np.zeros(7)


def _supervisor(robot: RobotModel) -> Supervisor:
    return Supervisor(robot, WatchdogConfig.create(max_age=MAX_AGE), np.array(DEFAULT_DAMPING))


def _computed(sup: Supervisor, stamp: float, now: float, clock_lag: float = 0.0) -> Decision:
    decision = sup.step(Q0, V0, stamp, now, "", clock_lag)
    if decision.action is Action.COMPUTE:
        sup.command_computed()
    return decision


# ---------------------------------------------------------------- CatchUp alone
@pytest.mark.parametrize("period", [DT, 0.025])
def test_nothing_is_taken_in_normal_running(period: float) -> None:
    """States 1 ms apart (up to 15 ms late), or a 40 Hz driver's 25 ms apart once its period is
    known: no catch-up, no take."""
    catch_up = CatchUp(MAX_AGE)
    arrival = 0.0
    for k in range(200):
        arrival += period + (0.015 if k % 50 == 7 and period == DT else 0.0)
        assert not catch_up.begin(arrival, period)
    assert catch_up.skipped == 0 and not catch_up.active


def test_states_queue_up_behind_a_handling_that_outlasted_the_period() -> None:
    """Falling behind: a state's handling longer than the stream's period left the states arriving
    meanwhile queued; one of 0.3 ms of a 1 ms period, or as long as the period, did not (the queue
    empties by itself), nor is anything queued before the first state or while the period is not
    known."""
    started = 10.0
    assert queued_behind(started, started + 1.5 * DT, DT)
    assert queued_behind(started, started + 1.01 * DT, DT)
    assert not queued_behind(started, started + 0.99 * DT, DT)
    assert not queued_behind(started, started + 0.3 * DT, DT)
    assert not queued_behind(started, started + 0.1, 0.0)  # period not known yet
    assert not queued_behind(-np.inf, -np.inf, DT)  # no state handled yet


def test_a_step_over_skipped_states_is_not_learnt_as_the_streams_period(robot: RobotModel) -> None:
    """States handled 1 ms apart teach a 1 ms period; steps of 3 ms over states skipped for the
    newest (the caller fell behind) do not move it, where the same steps handled in turn would
    (the stream slowed to 333 Hz)."""
    for skipped, period in ((True, DT), (False, 3 * DT)):
        sup = _supervisor(robot)
        for k in range(20):
            _computed(sup, T0 + k * DT, T0 + k * DT)
        assert sup.stream_period == pytest.approx(DT)
        for k in range(1, 12):
            stamp = T0 + 19 * DT + 3 * k * DT
            decision = sup.step(Q0, V0, stamp, stamp, "", 0.0, skipped)
            assert decision.action is Action.COMPUTE
            sup.command_computed()
        assert sup.stream_period == pytest.approx(period)


def test_the_first_state_starts_no_catch_up() -> None:
    assert not CatchUp(MAX_AGE).begin(123.0)


def test_a_catch_up_lasts_over_the_bursts_until_the_stamps_follow_on() -> None:
    """As measured after a 0.3 s SIGSTOP: the backlog came in three bursts (9, 6 and 9 states
    taken behind the one handed over), ~10 ms in all; between two of them the next state queued
    can follow the one handled without a gap. The catch-up lasts as long as this process was
    away, then ends at the first state that follows on."""
    catch_up = CatchUp(MAX_AGE)
    catch_up.begin(0.0, DT)
    began = 0.3016
    assert catch_up.begin(began, DT)  # away 0.3 s
    assert catch_up.away == pytest.approx(began)
    catch_up.taken(9)
    assert not catch_up.handled(0.755, DT)  # the first: nothing to compare its stamp with
    assert catch_up.begin(began + 0.0004, DT)  # the next one queued, before the next burst
    catch_up.taken(0)
    assert not catch_up.handled(0.756, DT)  # follows on, but the backlog is not over
    for arrival, taken, stamp in ((0.3030, 6, 0.856), (0.3099, 9, 0.910)):
        assert catch_up.begin(arrival, DT)  # still catching up: taken again
        catch_up.taken(taken)
        assert not catch_up.handled(stamp, DT)  # the stamps jumped: a burst
    stamp = 0.910
    for k in range(10, 300):  # then states 1 ms apart, nothing queued behind them
        stamp += DT
        assert catch_up.begin(began + k * DT, DT)
        catch_up.taken(0)
        assert not catch_up.handled(stamp, DT)
    assert catch_up.begin(began + 0.303, DT)
    catch_up.taken(0)
    assert catch_up.handled(stamp + DT, DT)  # back as long as it was away, and following on
    assert catch_up.skipped == 24 and not catch_up.active
    assert not catch_up.begin(began + 0.304, DT)  # back to normal running: no take


def test_a_catch_up_ends_after_at_most_longest_back() -> None:
    """Away 5 s (a debugger, a paused VM): the catch-up still ends once this process has been back
    for :data:`LONGEST` (1 s), at the first state that follows on."""
    catch_up = CatchUp(MAX_AGE)
    catch_up.begin(0.0, DT)
    assert catch_up.begin(5.0, DT)
    catch_up.taken(9)
    ended = [
        k for k in range(1, 1100) if catch_up.begin(5.0 + k * DT, DT) and catch_up.handled(T0 + k * DT, DT)
    ]
    assert ended == [round(LONGEST / DT)] and not catch_up.active


def test_a_silence_of_the_sender_alone_costs_empty_takes_for_as_long() -> None:
    """The simulator stalled 0.3 s, not this process: its next stamps follow its last (sim time
    stood still), nothing is queued; the catch-up costs one empty take per state for 0.3 s."""
    catch_up = CatchUp(MAX_AGE)
    catch_up.begin(0.0, DT)
    assert catch_up.begin(0.3, DT)
    catch_up.taken(0)
    assert not catch_up.handled(T0 + DT, DT)
    ended = []
    for k in range(1, 400):
        if catch_up.begin(0.3 + k * DT, DT):
            catch_up.taken(0)
            if catch_up.handled(T0 + (k + 1) * DT, DT):
                ended.append(k)
    assert ended == [300] and catch_up.skipped == 0


# ---------------------------------------------------------------- with the supervisor
def test_catching_up_the_gap_is_read_on_the_stamps_not_clamped_to_the_lagging_clock(
    robot: RobotModel,
) -> None:
    """Back from 0.3 s away, the newest queued state is stamped 0.3 s after the last one computed
    on while the node's clock (sim time, from the same backlog) still reads the moment it left:
    the whole gap is a silence and the target pauses for all of it (taking up where it stood, as
    on the wall clock). Clamped to ``now + max_age``, the pause would be 21 ms and the target run
    0.28 s ahead of the arm. Not catching up, the same state is one stamped well ahead of a
    running stream: it counts at most ``max_age`` ahead for the controller, and no silence at all
    (the stamps' gap counts it at most a period ahead of the clock: reviewed, a clamp at ``max_age``
    read every such state as a silence of ``max_age`` + 1 ms, a fallback and a paused target)."""
    sup = _supervisor(robot)
    for k in range(20):
        _computed(sup, T0 + k * DT, T0 + k * DT)
    last = T0 + 19 * DT
    newest, lagging_now = last + 0.3, last + DT
    decision = _computed(sup, newest, lagging_now, clock_lag=0.3)
    assert decision.action is Action.COMPUTE
    assert decision.silence is not None and decision.silence.state is WatchdogState.FALLBACK
    assert decision.effective_stamp == newest
    assert decision.resume.kind is ResumeKind.PAUSE
    assert (decision.resume.since, decision.resume.until) == (last, newest)

    clamped = _supervisor(robot)  # the same, not catching up: at most max_age ahead of the clock
    for k in range(20):
        _computed(clamped, T0 + k * DT, T0 + k * DT)
    decision = _computed(clamped, newest, lagging_now)
    assert decision.effective_stamp == pytest.approx(lagging_now + MAX_AGE)
    assert decision.silence is None and decision.resume.kind is ResumeKind.KEEP


def test_catching_up_a_stamp_past_max_future_is_still_refused(robot: RobotModel) -> None:
    """While catching up the clock may lag the states by up to the time away: a stamp more than
    ``max_future`` (1 s) ahead of the clock moved on by that lag (0.3 s) is refused; one within it
    is not the future (the newest state after a stall under sim time, its /clock still queued)."""
    sup = _supervisor(robot)
    for k in range(20):
        _computed(sup, T0 + k * DT, T0 + k * DT)
    decision = _computed(sup, T0 + 20 * DT + 1.35, T0 + 20 * DT, clock_lag=0.3)  # max_future: 1 s
    assert decision.action is not Action.COMPUTE
    assert sup.watchdog.last_reason is RejectReason.INCONSISTENT


def test_catching_up_a_stamp_further_ahead_than_the_time_away_is_still_clamped(robot: RobotModel) -> None:
    """Back from 0.3 s away, the clock may lag the states by 0.3 s, no more: a state stamped 0.8 s
    ahead of it (within ``max_future``, 1 s) counts as ``now + max_age + 0.3``, so it can pause
    the target for no longer than the time away and cannot sample it further ahead."""
    sup = _supervisor(robot)
    for k in range(20):
        _computed(sup, T0 + k * DT, T0 + k * DT)
    now = T0 + 20 * DT
    decision = _computed(sup, now + 0.8, now, clock_lag=0.3)
    assert decision.action is Action.COMPUTE
    assert decision.effective_stamp == pytest.approx(now + MAX_AGE + 0.3)


class Receiver:
    """A controller process: a keep-last subscription history of :data:`DEPTH` states, handed
    over oldest first; the node's clock is sim time from ``/clock``, which lags with the
    backlog (it reads the stamp of the state handed over). What the controller node does per
    state: :meth:`CatchUp.begin`, the take loop, :meth:`Supervisor.step`, :meth:`CatchUp.handled`."""

    def __init__(self, robot: RobotModel) -> None:
        self.sup = _supervisor(robot)
        self.catch_up = CatchUp(MAX_AGE)
        self.queue: deque[float] = deque(maxlen=DEPTH)
        self.handled: list[tuple[float, Decision]] = []
        self.skipped = 0  # states taken and not handled, since start

    def callback(self, arrival: float) -> None:
        """The executor hands over the oldest queued state at ``arrival`` (steady s)."""
        stamp = now = self.queue.popleft()
        catching_up = self.catch_up.begin(arrival, self.sup.stream_period)
        if catching_up:
            taken = len(self.queue)
            if taken:
                stamp = self.queue[-1]
                self.queue.clear()
            self.catch_up.taken(taken)
            self.skipped += taken
        lag = self.catch_up.away if catching_up else 0.0
        self.handled.append((stamp, _computed(self.sup, stamp, now, lag)))
        if catching_up:
            self.catch_up.handled(stamp, self.sup.stream_period)


@pytest.mark.parametrize("pace", [1.0, 0.5, 0.1, 0.04])
def test_a_simulator_slower_than_real_time_always_has_its_newest_state_handled(
    robot: RobotModel, pace: float
) -> None:
    """A simulator at ``pace`` times real time (stamps 1 ms apart, published every 1/pace ms of
    steady time); the controller away 0.3 s of steady time. On its return it handles the newest
    state queued, pausing the target for the whole gap in the stamps (a silence: longer than
    ``max_age``); from the next state on it
    handles every state the simulator publishes, each at once (none skipped, none refused). At
    0.04 (25 ms of steady time between states) each state starts a catch-up: one empty take each.
    """
    rx = Receiver(robot)
    step = DT / pace  # steady time between two states
    stamp, arrival = T0, 0.0
    for _ in range(30):  # normal running: each state handled as it comes
        rx.queue.append(stamp)
        rx.callback(arrival)
        stamp, arrival = stamp + DT, arrival + step
    last_handled = rx.handled[-1][0]
    away_until = arrival + 0.3
    while arrival < away_until:  # away: the history keeps the last DEPTH states
        rx.queue.append(stamp)
        stamp, arrival = stamp + DT, arrival + step
    newest = rx.queue[-1]
    rx.callback(arrival)  # back: handed the oldest queued, takes the rest
    handled, decision = rx.handled[-1]
    assert handled == newest and not rx.queue
    assert rx.skipped == DEPTH - 1
    assert decision.action is Action.COMPUTE
    if newest - last_handled > MAX_AGE:  # (at 0.04 the simulator's time ran 12 ms: no silence)
        assert decision.resume.kind is ResumeKind.PAUSE
        assert (decision.resume.since, decision.resume.until) == (last_handled, newest)
    else:
        assert decision.resume.kind is ResumeKind.KEEP and decision.silence is None
    before = len(rx.handled)
    for _ in range(50):  # the simulator goes on at its pace: every state handled
        rx.queue.append(stamp)
        arrival += step
        rx.callback(arrival)
        assert rx.handled[-1][0] == stamp
        assert rx.handled[-1][1].action is Action.COMPUTE
        stamp += DT
    assert len(rx.handled) - before == 50
    assert rx.skipped == DEPTH - 1
