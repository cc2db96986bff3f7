"""The controller node's safety decisions, without ROS (core/supervisor.py).

Each test drives a :class:`Supervisor` on the Gen3 model as the node does: ``step`` per state,
then ``command_computed`` or ``controller_failed`` when the decision was to compute, ``silence``
from a timer. Expected safe commands come from a :class:`SafeBrake` run alongside, not from the
supervisor.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.braking import FIRST_HOLD_PERIODS, SafeBrake
from torque_ctrl_ros.core.errors import SolverError
from torque_ctrl_ros.core.resume import RESUME_TOLERANCE, ResumeKind
from torque_ctrl_ros.core.safety import (
    CONFLICT_JUMPS,
    DEFAULT_DAMPING,
    Action,
    RejectReason,
    WatchdogConfig,
    WatchdogState,
)
from torque_ctrl_ros.core.supervisor import Decision, Notice, Supervisor, Transition, failure_message

KD = np.array(DEFAULT_DAMPING)
Q0 = np.array([0.1, 0.6, -0.2, 1.2, 0.1, -0.4, 0.3])
V0 = np.array([0.3, -0.2, 0.4, 0.5, 0.6, -0.5, 0.5])
NAN = np.full(7, np.nan)
T0 = 1000.0
DT = 1e-3


def _supervisor(robot: RobotModel, **config: object) -> Supervisor:
    return Supervisor(robot, WatchdogConfig.create(**config), KD)


def _good(
    sup: Supervisor, t: float, q: np.ndarray = Q0, v: np.ndarray = V0, now: float | None = None
) -> Decision:
    """A good state stamped ``t`` (received at ``now``, default ``t``), the controller answering it."""
    decision = sup.step(q, v, t, t if now is None else now)
    if decision.action is Action.COMPUTE:
        sup.command_computed()
    return decision


def _run(sup: Supervisor, steps: int, start: float = T0) -> float:
    """``steps`` good states 1 ms apart from ``start``; returns the last stamp."""
    for k in range(steps):
        _good(sup, start + k * DT)
    return start + (steps - 1) * DT


def _clip(robot: RobotModel, tau: np.ndarray) -> np.ndarray:
    return np.clip(tau, -robot.effort_limit, robot.effort_limit)


def _first_brake(robot: RobotModel, q: np.ndarray, v: np.ndarray, hold: int) -> np.ndarray:
    """The brake's first command from ``(q, v)``, made safe to be held ``hold`` periods."""
    return _clip(robot, robot.gravity(q) - KD * min(1.0, 2.0 / hold) * v)


# ---------------------------------------------------------------- good states
def test_the_first_good_state_is_computed_on_with_a_fresh_controller(robot: RobotModel) -> None:
    sup = _supervisor(robot)
    decision = sup.step(Q0, V0, T0, T0)
    assert decision.action is Action.COMPUTE and decision.state is not None
    np.testing.assert_array_equal(decision.state.q, Q0)
    np.testing.assert_array_equal(decision.state.v, V0)
    assert decision.state.stamp == decision.effective_stamp == decision.stamp == T0
    assert decision.reset_controller  # nothing carried from a step before
    assert decision.resume.kind is ResumeKind.KEEP and decision.command is None
    assert decision.transition == Transition(WatchdogState.WAITING, WatchdogState.OK, "")
    assert decision.transition.urgent  # out of WAITING: said at once
    sup.command_computed()
    following = _good(sup, T0 + DT)
    assert following.action is Action.COMPUTE and not following.reset_controller
    assert following.transition is None and following.notice is Notice.NONE


def test_a_stamp_ahead_of_the_clock_counts_as_at_most_max_age_ahead(robot: RobotModel) -> None:
    """Neither a silence up to it nor a reference sampled that far ahead."""
    sup = _supervisor(robot, max_age=0.02)
    now = _run(sup, 5)  # the clock at the last state's stamp: a gap of max_age, no silence
    decision = sup.step(Q0, V0, now + 0.6, now)
    assert decision.action is Action.COMPUTE and decision.silence is None
    assert decision.effective_stamp == pytest.approx(now + 0.02)
    assert decision.state is not None and decision.state.stamp == decision.effective_stamp


# ---------------------------------------------------------------- refused states: the safe brake
@pytest.mark.parametrize(
    ("reason", "bad"),
    [
        (RejectReason.STALE, lambda t: (Q0, V0, t, t + 0.05)),  # received 50 ms after its stamp
        (RejectReason.NON_FINITE, lambda t: (NAN, NAN, t, t)),
        (RejectReason.OUT_OF_RANGE, lambda t: (Q0 + np.eye(7)[1], V0, t, t)),  # 1 rad in 1 ms: a jump
    ],
    ids=["stale", "nan", "jump"],
)
def test_refused_states_get_the_brakes_prediction_from_the_last_good_state(
    robot: RobotModel,
    reason: RejectReason,
    bad: Callable[[float], tuple[np.ndarray, np.ndarray, float, float]],
) -> None:
    sup = _supervisor(robot, max_age=0.02)
    last = _run(sup, 3)
    expected = SafeBrake(robot, KD, horizon=0.5)
    for k in range(1, CONFLICT_JUMPS):  # (as many jumps would stop on two sources)
        t = last + k * DT
        q, v, stamp, now = bad(t)
        decision = sup.step(q, v, stamp, now)
        assert decision.action is Action.FALLBACK and decision.withheld is None
        assert sup.watchdog.last_reason is reason
        if k == 1:
            expected.start(Q0, V0, now)
            assert decision.transition is not None and decision.transition.state is WatchdogState.FALLBACK
            assert decision.notice is Notice.NONE
            # The first answers a refused state: made safe to be held FIRST_HOLD_PERIODS.
            assert decision.command is not None
            np.testing.assert_allclose(
                decision.command.tau, _first_brake(robot, Q0, V0, FIRST_HOLD_PERIODS), atol=1e-9
            )
        else:
            assert decision.transition is None and decision.notice is Notice.REFUSED
        assert decision.command is not None
        np.testing.assert_allclose(decision.command.tau, _clip(robot, expected.torque(now)), atol=1e-9)
    assert expected.k == CONFLICT_JUMPS - 2  # the prediction ran on, not restarted at each state


def test_an_unreadable_state_is_refused_as_inconsistent(robot: RobotModel) -> None:
    sup = _supervisor(robot)
    last = _run(sup, 2)
    decision = sup.step(None, None, last, last + DT, "unreadable joint state message (3 bytes)")
    assert decision.action is Action.FALLBACK and decision.command is not None
    assert sup.watchdog.last_reason is RejectReason.INCONSISTENT
    assert sup.watchdog.last_message == "unreadable joint state message (3 bytes)"


def test_jumps_between_two_sources_stop_without_a_safe_command(robot: RobotModel) -> None:
    sup = _supervisor(robot)
    last = _run(sup, 3)
    other = np.zeros(7)  # a second publisher at the zero pose
    actions = [
        sup.step(other, np.zeros(7), last + k * DT, last + k * DT).action
        for k in range(1, 1 + CONFLICT_JUMPS)
    ]
    assert actions[:-1] == [Action.FALLBACK] * (CONFLICT_JUMPS - 1) and actions[-1] is Action.NONE
    assert sup.watchdog.state is WatchdogState.STOPPED and sup.watchdog.conflict
    decision = sup.step(Q0, V0, last + 10 * DT, last + 10 * DT)  # the driver's again: refused too
    assert decision.action is Action.NONE and decision.command is None
    assert decision.notice is Notice.REFUSED


def test_a_safe_torque_gone_non_finite_is_withheld(robot: RobotModel) -> None:
    sup = _supervisor(robot)
    last = _run(sup, 2)
    sup.brake.torque = lambda now: np.full(7, np.nan)  # type: ignore[method-assign]
    decision = sup.step(NAN, NAN, last + DT, last + DT)
    assert decision.action is Action.FALLBACK and decision.command is None
    assert decision.withheld is not None and np.isnan(decision.withheld.tau).all()


# ---------------------------------------------------------------- the fallback window
def test_the_window_ends_after_fallback_duration_and_a_good_state_resumes(robot: RobotModel) -> None:
    sup = _supervisor(robot, fallback_duration=0.0505)  # (not on a whole period: no rounding)
    last = _run(sup, 3)
    actions = []
    for k in range(1, 61):
        decision = sup.step(NAN, NAN, last + k * DT, last + k * DT)
        actions.append(decision.action)
        if decision.transition is not None and decision.transition.state is WatchdogState.STOPPED:
            assert decision.transition.urgent and decision.command is None
    assert actions.count(Action.FALLBACK) == 51  # 0 to 50 ms after the window opened
    assert set(actions[51:]) == {Action.NONE} and sup.watchdog.state is WatchdogState.STOPPED
    decision = _good(sup, last + 61 * DT)
    assert decision.action is Action.COMPUTE and decision.reset_controller
    assert decision.transition == Transition(
        WatchdogState.STOPPED, WatchdogState.OK, sup.watchdog.last_message
    )
    assert decision.resume.kind is ResumeKind.DROP  # states were refused: the target is not taken up


def test_a_clock_standing_still_ends_the_window_by_the_stamps(robot: RobotModel) -> None:
    """use_sim_time without /clock: ``now`` never moves, the states' stamps do."""
    sup = _supervisor(robot, fallback_duration=0.0505)
    last = _run(sup, 3)
    now = last + DT
    actions = [sup.step(NAN, NAN, last + k * DT, now).action for k in range(1, 60)]
    assert actions[:51] == [Action.FALLBACK] * 51 and set(actions[51:]) == {Action.NONE}
    assert sup.watchdog.state is WatchdogState.STOPPED


@pytest.mark.parametrize("frozen", ["clock", "stamps"])
def test_the_brake_runs_on_when_the_clock_or_the_stamps_stand_still(robot: RobotModel, frozen: str) -> None:
    """Refused states 1 ms apart while ``now`` stands still (use_sim_time without /clock), or
    while the stamps do (a driver repeating one): the brake's prediction runs on by whichever
    moves, as a brake on the running clock does; one command repeated (the prediction frozen)
    spun the simulated wrist to 17 times its velocity limit."""
    sup = _supervisor(robot)
    last = _run(sup, 3)
    expected = SafeBrake(robot, KD, horizon=0.5)
    for k in range(1, 40):
        t = last + k * DT
        stamp, now = (t, last + DT) if frozen == "clock" else (last + DT, t)
        decision = sup.step(Q0, NAN, stamp, now)
        assert decision.action is Action.FALLBACK and decision.command is not None
        if k == 1:
            expected.start(Q0, V0, t)
        np.testing.assert_allclose(decision.command.tau, _clip(robot, expected.torque(t)), atol=1e-9)
    assert expected.k == 38


def test_the_brake_keeps_time_with_states_delivered_unevenly(robot: RobotModel) -> None:
    """States 1 ms apart received 0.3–0.8 ms after their stamps (DDS jitter): the brake's time is
    the larger of the clock's and the stamps' elapsed time, not a sum of the larger steps, which
    ran its prediction 15 ms ahead in 0.2 s and froze it at its horizon before the window ended."""
    sup = _supervisor(robot, fallback_duration=0.5)
    last = _run(sup, 3)
    jitter = np.random.default_rng(3).uniform(0.0, 0.5e-3, 200)
    expected = SafeBrake(robot, KD, horizon=0.5)
    start = math.nan
    for k in range(1, 200):
        stamp = last + k * DT
        now = stamp + 0.3e-3 + jitter[k]
        decision = sup.step(Q0, NAN, stamp, now)
        assert decision.command is not None
        if k == 1:
            expected.start(Q0, V0, now)
            start = now
        elapsed = max(now - start, (k - 1) * DT)
        np.testing.assert_allclose(
            decision.command.tau, _clip(robot, expected.torque(start + elapsed)), atol=1e-9
        )
    assert expected.k <= 199  # never ahead of the states


def test_a_good_state_ignored_while_stopped_for_good_is_said_so(robot: RobotModel) -> None:
    sup = _supervisor(robot, fallback_duration=0.01, auto_recover=False)
    last = _run(sup, 3)
    for k in range(1, 20):
        sup.step(NAN, NAN, last + k * DT, last + k * DT)
    assert sup.watchdog.state is WatchdogState.STOPPED
    decision = sup.step(Q0, V0, last + 20 * DT, last + 20 * DT)
    assert decision.action is Action.NONE and decision.notice is Notice.IGNORED


def test_a_superseded_state_while_stopped_is_not_called_ignored_with_auto_recover(robot: RobotModel) -> None:
    """Stopped by a controller failing on every state, then a state stamped before the last: let
    pass without a word. "Ignored" would tell the operator to restart the node, which
    auto_recover makes needless (the next good state resumes)."""
    sup = _supervisor(robot, fallback_duration=0.01)
    last = _run(sup, 3)
    t = last
    while sup.watchdog.state is not WatchdogState.STOPPED:
        t += DT
        decision = sup.step(Q0, V0, t, t)
        if decision.action is Action.COMPUTE:
            sup.controller_failed(decision, SolverError("non-finite torque"), t)
    decision = sup.step(Q0, V0, t - 0.5 * DT, t)
    assert decision.action is Action.NONE and decision.notice is Notice.NONE
    assert _good(sup, t + DT).action is Action.COMPUTE


# ---------------------------------------------------------------- silences
def test_a_gap_in_the_stamps_is_a_silence_and_the_target_pauses_for_it(robot: RobotModel) -> None:
    sup = _supervisor(robot, max_age=0.02)
    last = _run(sup, 5)
    t = last + 0.1  # 100 ms without a state: a silence however the timer ticked
    decision = _good(sup, t)
    assert decision.silence == Transition(
        WatchdogState.OK, WatchdogState.FALLBACK, "no joint state for 100 ms"
    )
    assert decision.previous is WatchdogState.FALLBACK
    assert decision.action is Action.COMPUTE and decision.reset_controller
    assert decision.resume.kind is ResumeKind.PAUSE
    assert decision.resume.since == last and decision.resume.until == t


@pytest.mark.parametrize("period", [DT, 0.025], ids=["1kHz", "40Hz"])
@pytest.mark.parametrize(("silent", "state"), [(0.06, WatchdogState.FALLBACK), (0.7, WatchdogState.STOPPED)])
def test_a_silence_of_the_clock_alone_keeps_the_target_and_the_controllers_state(
    robot: RobotModel, silent: float, state: WatchdogState, period: float
) -> None:
    """Both processes stalled under sim time: the steady clock's silence put the watchdog in
    fallback (or stopped it) while the stamps stood; the next state is one period on. Nothing
    happened in the arm's time, so the target stands and the controller is not reset (a cold QP
    had put a lockstep run 1e-10 rad off the same run unstalled). At 40 Hz, a period longer than
    ``max_age``, alike after the fallback and the stop."""
    sup = _supervisor(robot, max_age=0.02, fallback_duration=0.5)
    last = T0
    for k in range(20):
        last = T0 + k * period
        _good(sup, last)
    sup.silence(last, silent)
    assert sup.watchdog.state is state
    decision = _good(sup, last + period)
    assert decision.action is Action.COMPUTE and decision.previous is state
    assert decision.resume.kind is ResumeKind.KEEP and decision.resume.unbroken
    assert not decision.reset_controller


def test_a_slow_stream_is_learnt_not_taken_for_silence(robot: RobotModel) -> None:
    """States 25 ms apart (40 Hz), more than max_age: no silence once the period is known."""
    sup = _supervisor(robot, max_age=0.02)
    decisions = [_good(sup, T0 + 0.025 * k) for k in range(10)]
    assert all(d.silence is None and d.action is Action.COMPUTE for d in decisions)
    assert sup.stream_period == pytest.approx(0.025)


def test_a_lone_silence_is_not_learnt_as_the_period_and_hides_no_later_one(robot: RobotModel) -> None:
    """A 1 kHz stream, a 0.45 s gap in its stamps (a silence: the target pauses), one state 1 ms on,
    then a 0.6 s gap with joint_2 0.3 rad on: the second gap is a silence past max_age +
    fallback_duration, so the arm stopped and the target is dropped. (Mutant: every silent step
    learnt: the period read 0.45 s, the 0.6 s gap was no silence (under 1.5 periods), the target
    kept and the controller not reset.) And past that stop rule a learnt period never reaches:
    two 0.45 s gaps in a row (a ~2 Hz stream, learnt) leave a 0.6 s one a stop."""
    sup = _supervisor(robot, max_age=0.02, fallback_duration=0.5)
    last = _run(sup, 20)
    first = _good(sup, last + 0.45)
    assert first.silence is not None and first.resume.kind is ResumeKind.PAUSE
    _good(sup, last + 0.451)
    assert sup.stream_period == pytest.approx(DT)
    moved = Q0.copy()
    moved[1] += 0.3
    second = _good(sup, last + 1.051, moved)
    assert second.silence is not None and second.previous is WatchdogState.STOPPED
    assert second.resume.kind is ResumeKind.DROP and second.reset_controller

    sup = _supervisor(robot, max_age=0.02, fallback_duration=0.5)
    last = _run(sup, 20)
    for k in (1, 2):
        _good(sup, last + 0.45 * k)
    assert sup.stream_period == pytest.approx(0.45)  # two silences in a row: a slow stream, learnt
    third = _good(sup, last + 0.9 + 0.6)
    assert third.silence is not None and third.previous is WatchdogState.STOPPED


def test_the_timer_takes_no_silence_between_two_states_of_a_slow_stream(robot: RobotModel) -> None:
    """A 10 Hz stream (its period learnt, max_age 20 ms): the timer noting 70 ms without a state
    is no silence (the stamps' rule allows 150 ms), 160 ms is one; before the period is known a
    timer silence over max_age is one, as the watchdog has it. (Mutant: the timer's silence judged
    against max_age alone: a fallback between every two states of the stream.)"""
    sup = _supervisor(robot, max_age=0.02, fallback_duration=0.5)
    for k in range(12):
        _good(sup, T0 + 0.1 * k)
    last = T0 + 1.1
    assert sup.silence(last + 0.07, 0.07) is None and sup.watchdog.state is WatchdogState.OK
    late = sup.silence(last + 0.16, 0.16)
    assert late is not None and late.state is WatchdogState.FALLBACK
    fresh = _supervisor(robot, max_age=0.02, fallback_duration=0.5)
    _good(fresh, T0)  # one state: no period yet
    early = fresh.silence(T0 + 0.03, 0.03)
    assert early is not None and early.state is WatchdogState.FALLBACK


def test_a_stream_slowing_to_40_hz_is_learnt_after_two_silences(robot: RobotModel) -> None:
    """1 kHz, then states 25 ms apart (over max_age 20 ms): the first two steps are silences (one
    could be a lone gap), the period then reads 25 ms and the next steps are none."""
    sup = _supervisor(robot, max_age=0.02)
    last = _run(sup, 20)
    decisions = [_good(sup, last + 0.025 * k) for k in range(1, 8)]
    assert [d.silence is not None for d in decisions] == [True, True] + [False] * 5
    assert sup.stream_period == pytest.approx(0.025)


def test_the_stream_s_usual_step_is_unknown_until_a_window_of_steps_was_learnt(robot: RobotModel) -> None:
    """The period is the longest recent step, the usual step their median, ``nan`` until ten steps
    were learnt: one slower step (30 ms among 25 ms ones) moves the period, not the usual step."""
    sup = _supervisor(robot, max_age=0.02)
    stamps = T0 + 0.025 * np.arange(10)
    stamps[5:] += 0.005
    for stamp in stamps:
        _good(sup, stamp)
    assert math.isnan(sup.typical_stream_step)  # nine steps
    _good(sup, stamps[-1] + 0.025)
    assert sup.stream_period == pytest.approx(0.030)
    assert sup.typical_stream_step == pytest.approx(0.025)


def test_the_resume_tolerance_is_the_one_the_target_is_dropped_beyond(robot: RobotModel) -> None:
    """Moved a hair more than :attr:`Supervisor.resume_tolerance` during a fallback: the target is
    dropped; the tolerance the node names in its log line is the one decided on."""
    sup = _supervisor(robot)
    last = _run(sup, 3)
    sup.step(NAN, V0, last + DT, last + DT)  # refused: the safe brake answers
    moved = Q0.copy()
    moved[4] += sup.resume_tolerance + 1e-3
    decision = _good(sup, last + 2 * DT, moved)
    assert decision.resume.kind is ResumeKind.DROP and decision.resume.joint == 4
    assert decision.resume.moved > sup.resume_tolerance == RESUME_TOLERANCE


def test_the_timer_notes_a_silence_and_its_transitions(robot: RobotModel) -> None:
    sup = _supervisor(robot, max_age=0.02, fallback_duration=0.5)
    last = _run(sup, 3)
    assert sup.silence(last + 0.01, 0.01) is None  # within max_age
    fallback = sup.silence(last + 0.1, 0.1)
    assert fallback is not None and fallback.state is WatchdogState.FALLBACK and not fallback.urgent
    stopped = sup.silence(last + 0.6, 0.6)
    assert stopped == Transition(WatchdogState.FALLBACK, WatchdogState.STOPPED, "no joint state for 600 ms")
    assert stopped.urgent


def test_a_move_while_silent_drops_the_target(robot: RobotModel) -> None:
    sup = _supervisor(robot, max_age=0.02)
    last = _run(sup, 5)
    moved = Q0 + np.array([0.0, 0.0, 0.0, 0.3, 0.0, 0.0, 0.0])
    decision = _good(sup, last + 0.1, moved)
    assert decision.resume.kind is ResumeKind.DROP
    assert decision.resume.joint == 3 and decision.resume.moved == pytest.approx(0.3)


def test_a_clock_gone_back_starts_over(robot: RobotModel) -> None:
    """A restarted simulator: the state is accepted, and the caller told to drop its target."""
    sup = _supervisor(robot)
    _run(sup, 3)
    decision = _good(sup, 5.0)
    assert decision.clock_reset and decision.action is Action.COMPUTE
    assert sup.watchdog.clock_resets == 1
    assert not _good(sup, 5.0 + DT).clock_reset


# ---------------------------------------------------------------- a controller that fails
def test_the_failure_message_names_the_error_and_whether_it_was_expected() -> None:
    assert failure_message(SolverError("no solution")) == "SolverError: no solution"
    assert failure_message(RuntimeError("a bug")) == "unexpected RuntimeError: a bug"


@pytest.mark.parametrize(
    "error", [SolverError("no solution"), ZeroDivisionError("a bug")], ids=["solver-error", "unexpected"]
)
def test_a_controller_failure_gets_the_brake_in_full_from_the_state_it_failed_on(
    robot: RobotModel, error: Exception
) -> None:
    """The stream is alive: the first command is made safe to be held for the stream's period
    (one at 1 kHz: K_d in full), and restarted from each state the controller fails on."""
    sup = _supervisor(robot)
    last = _run(sup, 5)
    for k, q in enumerate((Q0 + 0.01, Q0 + 0.02), start=1):
        t = last + k * DT
        computing = sup.step(q, V0, t, t)
        assert computing.action is Action.COMPUTE
        decision = sup.controller_failed(computing, error, t)
        assert decision.action is Action.FALLBACK and decision.command is not None
        assert sup.watchdog.last_reason is RejectReason.CONTROLLER_ERROR
        assert sup.watchdog.last_message == failure_message(error)
        assert sup.first_hold() == 1
        np.testing.assert_allclose(decision.command.tau, _first_brake(robot, q, V0, 1), atol=1e-9)
        if k == 1:
            assert decision.transition == Transition(
                WatchdogState.OK, WatchdogState.FALLBACK, failure_message(error)
            )
        else:
            # Said as a failure on a good state, not as a refused one.
            assert decision.transition is None and decision.notice is Notice.FAILED
        assert decision.silence is None and not decision.clock_reset  # said with the step's decision
    recovered = _good(sup, last + 3 * DT)
    assert recovered.action is Action.COMPUTE and recovered.reset_controller


def test_a_controller_failure_before_the_stream_period_is_known_brakes_as_if_held_long(
    robot: RobotModel,
) -> None:
    """On the first state no step of the stream is known: it may be a slow one, whose first
    command is held for long, so the brake damps as after a refused state (K_d·2/50), not in full."""
    sup = _supervisor(robot)
    computing = sup.step(Q0, V0, T0, T0)
    assert computing.action is Action.COMPUTE and sup.stream_period == 0.0
    decision = sup.controller_failed(computing, SolverError("no solution"), T0)
    assert decision.action is Action.FALLBACK and decision.command is not None
    assert sup.first_hold() == FIRST_HOLD_PERIODS
    np.testing.assert_allclose(
        decision.command.tau, _first_brake(robot, Q0, V0, FIRST_HOLD_PERIODS), atol=1e-9
    )


@pytest.mark.parametrize(("period", "held"), [(0.025, 25), (0.0027, 3)], ids=["40 Hz", "2.7 ms"])
def test_a_controller_failure_on_a_slow_stream_brakes_as_held_for_its_period(
    robot: RobotModel, period: float, held: int
) -> None:
    """A 40 Hz stream: the first command will be held 25 brake periods, so it damps with K_d·2/25
    (in full, restarted every 25 ms, the energy would grow ~100-fold: core/braking.py). The
    period is rounded to whole brake periods: 2.7 ms is 3, ``K_d·2/3``, not 2 with ``K_d`` in
    full (held 3 periods, that damps a mode by ``1 − 3λ``, unstable once ``3λ ≥ 2``). (Mutant:
    ``int(...)`` for ``round(...)`` in ``Supervisor.first_hold``.)"""
    sup = _supervisor(robot)
    for k in range(6):
        _good(sup, T0 + k * period)
    t = T0 + 6 * period
    computing = sup.step(Q0 + 0.01, V0, t, t)
    assert computing.action is Action.COMPUTE
    decision = sup.controller_failed(computing, SolverError("no solution"), t)
    assert decision.command is not None and sup.first_hold() == held
    np.testing.assert_allclose(decision.command.tau, _first_brake(robot, Q0 + 0.01, V0, held), atol=1e-9)


def test_a_stamp_far_ahead_runs_the_brake_on_by_max_age_at_most(robot: RobotModel) -> None:
    """During a fallback a refused state stamped 0.3 s after the last one, received 1 ms later:
    the brake's prediction runs on by ``max_age`` (20 ms), not by the stamp's jump."""
    sup = _supervisor(robot, max_age=0.02)
    t = _run(sup, 3) + DT
    assert sup.step(Q0, NAN, t, t).action is Action.FALLBACK
    decision = sup.step(Q0, NAN, t + 0.3, t + DT)
    assert decision.action is Action.FALLBACK and decision.command is not None
    expected = SafeBrake(robot, KD, horizon=0.5)
    expected.start(Q0, V0, t)
    np.testing.assert_allclose(decision.command.tau, _clip(robot, expected.torque(t + 0.02)), atol=1e-9)


@pytest.mark.parametrize("gap_ms", [45, 200], ids=["within the timeout", "past it"])
def test_a_gap_in_a_fallback_past_the_command_timeout_stops(robot: RobotModel, gap_ms: int) -> None:
    """Refused states on a moving arm, a gap of ``gap_ms`` after the first safe command, refused
    states again. The driver applies a command for 50 ms at most (FIRST_HOLD_PERIODS, the
    simulator's timeout): within it the brake predicts on and commands; past it the window ends
    with the reason, where predicting 200 ms under the first command (damped for 50) had run the
    prediction to 3.8 times a velocity limit and every later command damped with K_d/200."""
    sup = _supervisor(robot)
    t = _run(sup, 50) + DT
    first = sup.step(NAN, V0, t, t)
    assert first.action is Action.FALLBACK and first.command is not None
    t += gap_ms * 1e-3
    decision = sup.step(NAN, V0, t, t)
    if gap_ms < FIRST_HOLD_PERIODS:
        assert decision.action is Action.FALLBACK and decision.command is not None
        assert sup.watchdog.state is WatchdogState.FALLBACK
        assert np.all(np.abs(sup.brake.v) < robot.velocity_limit)
        return
    assert decision.action is Action.NONE and decision.command is None and decision.withheld is None
    assert sup.watchdog.state is WatchdogState.STOPPED
    assert decision.transition is not None and decision.transition.state is WatchdogState.STOPPED
    assert "no safe command for 200 ms" in decision.transition.message
    assert "longer than the 50 ms" in decision.transition.message
    assert sup.step(NAN, V0, t + DT, t + DT).action is Action.NONE


@pytest.mark.parametrize("late_ms", [0.0, 3.0], ids=["on time", "3 ms late"])
def test_a_slow_streams_period_and_a_half_is_the_command_timeout_of_its_fallback(
    robot: RobotModel, late_ms: float
) -> None:
    """On a 12.5 Hz stream (80 ms between states) a driver applies each command for a period:
    the fallback answers refused states 80 ms apart, also when they arrive a few ms late (the
    timeout is 1.5 periods, as a slow stream's silence is; at one period a state 1 ms late ended
    the window, a review), and a gap of two periods (160 ms) ends it."""
    sup = _supervisor(robot, max_age=0.1)
    period = 0.08
    for k in range(6):
        _good(sup, T0 + k * period)
    t = T0 + 6 * period
    for _ in range(3):
        decision = sup.step(NAN, V0, t, t + late_ms * 1e-3)
        assert decision.action is Action.FALLBACK and decision.command is not None
        t += period
    t += period
    decision = sup.step(NAN, V0, t, t)
    assert decision.action is Action.NONE and sup.watchdog.state is WatchdogState.STOPPED
    assert decision.transition is not None and "longer than the 120 ms" in decision.transition.message


def test_a_gap_in_the_stamps_a_lagging_clock_hides_ends_the_fallback_too(robot: RobotModel) -> None:
    """Under sim time, catching up a backlog, the caller's clock lags behind the states (by
    ``clock_lag``): a refused state stamped 200 ms after the last safe command's, the clock 2 ms
    on, ends the window as it does on a clock that ran those 200 ms (by the stamps' gap; the
    brake's own clock, each stamp's step counted at most max_age, read 20 ms, a review)."""
    sup = _supervisor(robot)
    t = _run(sup, 50) + DT
    assert sup.step(NAN, V0, t, t).command is not None
    decision = sup.step(NAN, V0, t + 0.2, t + 0.002, clock_lag=0.2)
    assert decision.action is Action.NONE and sup.watchdog.state is WatchdogState.STOPPED
    # 201: the stamp counts from a period behind the clock and its lag (t + 0.202) on.
    assert decision.transition is not None and "no safe command for 201 ms" in decision.transition.message
    # Without the lag told, one state stamped far ahead on a running clock counts a period at most.
    sup = _supervisor(robot)
    t = _run(sup, 50) + DT
    assert sup.step(NAN, V0, t, t).command is not None
    decision = sup.step(NAN, V0, t + 0.2, t + 0.002)
    assert decision.action is Action.FALLBACK and sup.watchdog.state is WatchdogState.FALLBACK


def test_a_controller_failing_on_every_state_stops_after_the_window(robot: RobotModel) -> None:
    """Each accepted state would restart the window: it runs from the last computed torque."""
    sup = _supervisor(robot, fallback_duration=0.0205)
    last = _run(sup, 3)
    actions = []
    for k in range(1, 40):
        t = last + k * DT
        decision = sup.step(Q0, V0, t, t)
        if decision.action is Action.COMPUTE:
            decision = sup.controller_failed(decision, SolverError("no solution"), t)
        actions.append(decision.action)
    assert actions[:21] == [Action.FALLBACK] * 21 and set(actions[21:]) == {Action.NONE}


def test_a_first_safe_command_after_a_silence_brakes_from_the_good_state(robot: RobotModel) -> None:
    """Timed from the first command sent, not from when the window opened 0.28 s before."""
    sup = _supervisor(robot, max_age=0.02)
    _good(sup, T0)
    assert sup.silence(T0 + 0.25, 0.25) is not None
    decision = sup.step(NAN, NAN, T0 + 0.3, T0 + 0.3)
    assert decision.action is Action.FALLBACK and decision.command is not None
    np.testing.assert_allclose(
        decision.command.tau, _first_brake(robot, Q0, V0, FIRST_HOLD_PERIODS), atol=1e-9
    )
    assert math.isclose(sup.brake.k, 0)


def test_after_a_silence_the_brake_starts_where_the_held_command_took_the_arm(robot: RobotModel) -> None:
    """Good states answered with a known command, then 30 ms without a state (the driver held that
    command), then a refused one: the brake starts from the last good state carried over the 30
    periods the command was held beyond its own, with the model, not from that state as if it were
    measured now (a review: 0.65–0.97 rad off, the arm at 3.2–5.2 times joint_6's velocity limit).
    After 60 ms, past the 50 ms a driver applies a command, no safe command: its own timeout took
    over; the window runs on, and a good state in it resumes. A state refused right after the last
    good one carries nothing."""
    from torque_ctrl_ros.core.prediction import forward_step

    held = robot.gravity(Q0) + np.array([4.0, -3.0, 2.0, 1.0, 0.5, -0.5, 0.3])
    expected_q, expected_v = Q0.copy(), V0.copy()
    data = robot.model.createData()
    for _ in range(30):
        forward_step(robot, data, expected_q, expected_v, held, DT)
    assert np.abs(expected_q - Q0).max() > 0.01  # the carry matters
    for silent_ms, expected in ((0, (Q0, V0)), (30, (expected_q, expected_v))):
        sup = _supervisor(robot, max_age=0.02)
        for k in range(5):
            assert sup.step(Q0, V0, T0 + k * DT, T0 + k * DT).action is Action.COMPUTE
            sup.command_computed(held)
        t = T0 + (5 + silent_ms) * DT
        decision = sup.step(NAN, NAN, t, t)
        assert decision.action is Action.FALLBACK and decision.command is not None, silent_ms
        np.testing.assert_allclose(
            decision.command.tau, _first_brake(robot, *expected, FIRST_HOLD_PERIODS), atol=1e-9
        )
    sup = _supervisor(robot, max_age=0.02)
    assert sup.step(Q0, V0, T0, T0).action is Action.COMPUTE
    sup.command_computed(held)
    decision = sup.step(NAN, NAN, T0 + 0.061, T0 + 0.061)
    assert decision.action is Action.NONE and decision.command is None
    assert sup.watchdog.state is WatchdogState.FALLBACK
    assert "no joint state for 61 ms before this one, longer than the 50 ms a driver applies" in (
        sup.watchdog.last_message
    )
    assert sup.step(NAN, NAN, T0 + 0.062, T0 + 0.062).command is None  # nor for the next
    assert sup.step(Q0, V0, T0 + 0.063, T0 + 0.063).action is Action.COMPUTE


def test_a_controller_failing_on_a_good_state_after_a_silence_brakes_from_that_state(
    robot: RobotModel,
) -> None:
    """A good state 30 ms after the last one, the controller failing on it: that state was measured
    now, nothing is carried (the brake starts from it, the stream alive: damped for the stream's
    step as learnt, here that gap)."""
    held = robot.gravity(Q0) + 3.0
    sup = _supervisor(robot, max_age=0.05)
    for k in range(5):
        assert sup.step(Q0, V0, T0 + k * DT, T0 + k * DT).action is Action.COMPUTE
        sup.command_computed(held)
    q1, v1 = Q0 + 0.05, 0.5 * V0
    t = T0 + 0.034
    decision = sup.step(q1, v1, t, t)
    assert decision.action is Action.COMPUTE
    failed = sup.controller_failed(decision, SolverError("injected"), t)
    assert failed.action is Action.FALLBACK and failed.command is not None
    hold = sup.first_hold()
    assert hold == 30
    np.testing.assert_allclose(failed.command.tau, _first_brake(robot, q1, v1, hold), atol=1e-9)


def test_the_first_hold_is_the_simulators_command_timeout() -> None:
    """:data:`FIRST_HOLD_PERIODS` is made for the simulator's command timeout (core/braking.py):
    the first safe command after a refused state may be held that long. The core cannot import
    the node's default, so this test ties the two: the default and the shipped YAML's value, in
    control periods. A timeout raised without the constant would let that first command, damped
    for 50 ms, be held longer."""
    import yaml

    from torque_ctrl_ros.core.robot import CONTROL_PERIOD
    from torque_ctrl_ros.nodes.params import sim_node_config
    from torque_ctrl_ros.paths import data_path

    shipped = yaml.safe_load(data_path("config", "gen3_controllers.yaml").read_text())
    for timeout in (
        sim_node_config({}).command_timeout,
        shipped["sim_node"]["ros__parameters"]["command_timeout"],
    ):
        assert round(timeout / CONTROL_PERIOD) == FIRST_HOLD_PERIODS


def test_a_silence_after_a_state_stamped_far_ahead_is_read_from_its_capped_stamp(robot: RobotModel) -> None:
    """A state stamped 0.5 s ahead counts as ``max_age`` (20 ms) ahead; 0.3 s without a state
    after it is a silence in the stamps. Measured from its raw stamp the gap had been −0.2 s,
    no silence: the controller resumed on the old target time as if the stream had never
    stopped, and only the steady clock's timer, if it ticked, could tell."""
    sup = _supervisor(robot, max_age=0.02)
    now = _run(sup, 5)
    ahead = sup.step(Q0, V0, now + 0.5, now)
    assert ahead.action is Action.COMPUTE and ahead.effective_stamp == pytest.approx(now + 0.02)
    sup.command_computed()
    t = now + 0.3
    decision = _good(sup, t)
    assert decision.silence is not None and decision.silence.state is WatchdogState.FALLBACK
    assert decision.resume.kind is ResumeKind.PAUSE
