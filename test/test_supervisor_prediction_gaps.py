"""Behaviours of :class:`~torque_ctrl_ros.core.supervisor.Supervisor`'s delay prediction that a
mutation review found unpinned.

Five ms late (four commands in flight, the real Gen3's delay): which commands the predictor still
counts in flight after a gap in the stamps (up to the command timeout: the last one held over
them; longer: forgotten), after a command not known, after a stop (kept, the safe one held) and
after a clock reset (forgotten: another run's commands), and how long a safe command answering a
state stamped ahead of the clock held (from its stamp as counted, not as it came); and a silence of a
40 Hz stream under sim time read from the stamps. Each test names the behaviour it pins and the
source change (mutant) it was written to catch. Pure core: no ROS.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_prediction import Q0, V0, H, _by_hand, _supervisor, _torques
from test_supervisor import NAN, T0

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.resume import ResumeKind
from torque_ctrl_ros.core.safety import DEFAULT_DAMPING, Action, WatchdogConfig, WatchdogState
from torque_ctrl_ros.core.supervisor import Decision, Supervisor

IN_FLIGHT = 4  #: commands in flight at the 5 ms ``command_delay`` of the demos
PERIOD_40HZ = 0.025  #: a slow driver's period (s), longer than the default ``max_age`` (20 ms)


def _predicting(robot: RobotModel, **config: object) -> Supervisor:
    """A supervisor predicting a 5 ms delay, on the watchdog settings ``config``."""
    robot.set_command_delay(0.005)
    return Supervisor(robot, WatchdogConfig.create(**config), np.array(DEFAULT_DAMPING), predict_delay=True)


def _answered(sup: Supervisor, taus: list[np.ndarray], start: float = T0) -> float:
    """Good states 1 ms apart from ``start``, each answered by the next of ``taus``; the last stamp."""
    for k, tau in enumerate(taus):
        decision = sup.step(Q0, V0, start + k * H, start + k * H)
        assert decision.action is Action.COMPUTE
        sup.command_computed(tau)
    return start + (len(taus) - 1) * H


def _assert_forgotten(sup: Supervisor, decision: Decision) -> None:
    """``decision`` computes on the measured state carried over the four periods at constant
    velocity: no command known in flight."""
    assert decision.action is Action.COMPUTE and decision.state is not None
    assert sup.predictor._known == 0
    np.testing.assert_allclose(decision.state.q, Q0 + IN_FLIGHT * H * V0, atol=1e-15)
    np.testing.assert_array_equal(decision.state.v, V0)


@pytest.mark.parametrize(
    "dropped", [IN_FLIGHT, IN_FLIGHT + 1, 50, 51], ids=["m-plus-1", "m-plus-2", "timeout", "past-timeout"]
)
def test_a_gap_within_the_command_timeout_holds_the_last_command_over_it(
    robot: RobotModel, dropped: int
) -> None:
    """Four states dropped: the next comes m + 1 = 5 periods after the last one answered. The
    driver held that answer over the four periods dropped, which fill the four in flight: the
    prediction carries the last command four times (all four known), not constant velocity; so for
    five dropped and up to a gap of the 51 periods a command drives the simulator (its 50 ms
    timeout, FIRST_HOLD_PERIODS, + one step: five states dropped or skipped at 1 kHz had been
    forgotten, 3e-3 rad/s off; a review). Past it the driver's own timeout took over: forgotten,
    carried at constant velocity. (Mutant: ``periods > in_flight`` for ``periods > in_flight + 1`` in
    ``Supervisor._note_periods``, which forgets at m + 1 already.)"""
    sup = _predicting(robot)
    taus = _torques(robot, 5, seed=11)
    last = _answered(sup, taus)
    t = last + (dropped + 1) * H
    decision = sup.step(Q0, V0, t, t)
    assert decision.action is Action.COMPUTE and (decision.silence is None) is (dropped < 20)
    assert decision.state is not None and decision.state.stamp == pytest.approx(t + IN_FLIGHT * H)
    if dropped < 51:
        assert sup.predictor._known == IN_FLIGHT
        q_ref, v_ref = _by_hand(robot, Q0, V0, 0, [taus[-1]] * IN_FLIGHT)
        np.testing.assert_allclose(decision.state.q, q_ref, atol=1e-13)
        np.testing.assert_allclose(decision.state.v, v_ref, atol=1e-13)
        assert np.abs(v_ref - V0).max() > 1e-3  # the commands held do move it
    else:
        _assert_forgotten(sup, decision)


def test_a_100_hz_streams_driver_holds_each_command_over_its_period(robot: RobotModel) -> None:
    """States 10 ms apart, each answered: the driver holds each answer for the whole period, so
    at each state the prediction carries the last answer over the four periods in flight (all
    four known). The gap of 10 periods, more than the m + 1 of a 1 kHz stream, had forgotten them
    at every state: carried at constant velocity, 3e-3 rad/s off in closed loop (a review). A gap
    past the driver's command timeout (50 ms, or 1.5 periods of the stream) forgets them still."""
    sup = _predicting(robot, max_age=0.1)
    period = 0.01
    taus = _torques(robot, 6, seed=15)
    for k, tau in enumerate(taus):
        t = T0 + k * period
        decision = sup.step(Q0, V0, t, t)
        assert decision.action is Action.COMPUTE and decision.silence is None
        assert decision.state is not None
        if k >= 3:  # the period learnt from the steps before
            assert sup.predictor._known == IN_FLIGHT
            q_ref, v_ref = _by_hand(robot, Q0, V0, 0, [taus[k - 1]] * IN_FLIGHT)
            np.testing.assert_allclose(decision.state.q, q_ref, atol=1e-13)
            np.testing.assert_allclose(decision.state.v, v_ref, atol=1e-13)
        sup.command_computed(tau)
    t = T0 + (len(taus) - 1) * period + 6 * period  # five states dropped: 60 ms, past the timeout
    _assert_forgotten(sup, sup.step(Q0, V0, t, t))


def test_a_stop_by_the_wall_clock_alone_keeps_the_commands_in_flight(robot: RobotModel) -> None:
    """A simulator paused under sim time: the node's timer stops the watchdog after a silence of
    1 s, the stamps then go on without a gap. The resume keeps the target and the controller
    (unbroken), and the arm is where the last commands leave it: they are still in flight (a
    review: forgotten, 7e-7 rad off the plant in closed loop). (A stop on refused states
    forgets them: test_a_good_state_after_a_short_stop_forgets_the_commands_in_flight.)"""
    sup = _predicting(robot)
    taus = _torques(robot, 5, seed=16)
    last = _answered(sup, taus)
    assert sup.silence(last + H, 1.0) is not None and sup.watchdog.state is WatchdogState.STOPPED
    decision = sup.step(Q0, V0, last + H, last + H)  # sim time: the clock stood still too
    assert decision.previous is WatchdogState.STOPPED and decision.resume.unbroken
    assert sup.predictor._known == IN_FLIGHT and decision.state is not None
    q_ref, v_ref = _by_hand(robot, Q0, V0, 0, taus[-IN_FLIGHT:])
    np.testing.assert_allclose(decision.state.q, q_ref, atol=1e-13)
    np.testing.assert_allclose(decision.state.v, v_ref, atol=1e-13)


def test_a_command_not_known_forgets_the_commands_in_flight_by_the_next_period(robot: RobotModel) -> None:
    """Three states answered with known commands, the fourth with one not known
    (``command_computed(None)``); the next state comes one period later. Nothing in flight can be
    told any more: the prediction carries it at constant velocity. (test_prediction's check has
    its next state eight periods on, where the gap forgets the commands anyway.) (Mutant: the
    ``predictor.reset()`` on ``tau is None`` in ``Supervisor.command_computed`` removed: three
    known commands and one held period.)"""
    sup = _predicting(robot)
    last = _answered(sup, _torques(robot, 3, seed=12))
    t = last + H
    assert sup.step(Q0, V0, t, t).action is Action.COMPUTE
    sup.command_computed(None)
    _assert_forgotten(sup, sup.step(Q0, V0, t + H, t + H))


def test_a_good_state_soon_after_a_short_stop_keeps_the_commands_in_flight(robot: RobotModel) -> None:
    """A fallback window of 2 ms: a refused state gets a safe command (FALLBACK, noted as sent),
    the next, 3 ms later on the clock, none (STOPPED: nothing published since). The good state
    after comes two periods after that safe command: the driver still holds it, so the prediction
    carries the commands sent, the safe one held over the period between (forgotten at the stop,
    a review measured the first state after a stop 20–40 ms on 4e-2–7e-2 rad/s off). (Mutant: a
    stop handed to ``_note_periods`` as ``unknown`` again.)"""
    sup = _predicting(robot, fallback_duration=0.002)
    taus = _torques(robot, 3, seed=13)
    last = _answered(sup, taus)
    safe_at = last + H
    fallback = sup.step(NAN, V0, safe_at, safe_at)
    assert fallback.action is Action.FALLBACK and fallback.command is not None
    stopped = sup.step(NAN, V0, safe_at + H, safe_at + 3 * H)
    assert stopped.action is Action.NONE and sup.watchdog.state is WatchdogState.STOPPED
    decision = sup.step(Q0, V0, safe_at + 2 * H, safe_at + 4 * H)
    assert decision.previous is WatchdogState.STOPPED and not decision.clock_reset
    assert decision.action is Action.COMPUTE and decision.state is not None
    assert sup.predictor._known == IN_FLIGHT
    safe = fallback.command.tau
    q_ref, v_ref = _by_hand(robot, Q0, V0, 0, [taus[-2], taus[-1], safe, safe])
    np.testing.assert_allclose(decision.state.q, q_ref, atol=1e-13)
    np.testing.assert_allclose(decision.state.v, v_ref, atol=1e-13)


def test_safe_commands_answering_unreadable_states_are_noted_at_the_clock(robot: RobotModel) -> None:
    """Sixty unreadable states, each carrying the last good stamp as the node passes them, each
    answered by a safe command; then a good state. The commands in flight are the last safe ones,
    noted at the clock they went out on: kept. Noted at the last good stamp, the gap to the good
    state read 61 periods and forgot them (a review: 2e-2 rad/s off, 4e-2–7e-2 after a stop)."""
    sup = _predicting(robot)
    last = _answered(sup, _torques(robot, 3, seed=17))
    safe = []
    for k in range(1, 61):
        t = last + k * H
        decision = sup.step(None, None, last, t, "unreadable")
        assert decision.action is Action.FALLBACK and decision.command is not None
        safe.append(decision.command.tau)
    t = last + 61 * H
    decision = sup.step(Q0, V0, t, t)
    assert decision.action is Action.COMPUTE and decision.state is not None
    assert sup.predictor._known == IN_FLIGHT
    q_ref, v_ref = _by_hand(robot, Q0, V0, 0, safe[-IN_FLIGHT:])
    np.testing.assert_allclose(decision.state.q, q_ref, atol=1e-13)
    np.testing.assert_allclose(decision.state.v, v_ref, atol=1e-13)


def test_a_clock_reset_forgets_the_commands_in_flight(robot: RobotModel) -> None:
    """A restarted simulator: stamps and clock gone back from 1000 s to 5 s. The commands sent
    before belong to the old run: the first state of the new one is carried at constant velocity.
    (Mutant: the ``unknown`` case of ``Supervisor._note_periods`` calls ``predictor.held(0)``
    instead of ``reset()``: the four commands of the old run kept.)"""
    sup = _predicting(robot)
    _answered(sup, _torques(robot, 5, seed=14))
    decision = sup.step(Q0, V0, 5.0, 5.0)
    assert decision.clock_reset and decision.previous is WatchdogState.OK
    _assert_forgotten(sup, decision)


def test_a_dropped_state_of_a_40_hz_stream_under_sim_time_is_a_silence(robot: RobotModel) -> None:
    """A 40 Hz stream under sim time: each state comes a stream step before its ``/clock``
    (stamped 25 ms ahead of the clock, counted 20 ms ahead: ``max_age``). One state dropped: 50 ms
    between the stamps, past 1.5 periods (37.5 ms), a silence: the watchdog falls back and the
    target pauses from the last state computed on to this one (on the predicted stamps). The gap
    counts each stamp at most a stream period ahead of the clock; at most 1 ms, the clock's lag
    hides 19 ms of it (31 ms: kept). (Mutant: ``ahead = CONTROL_PERIOD`` in ``Supervisor.step``.)"""
    sup = _supervisor(robot, True)
    lead = IN_FLIGHT * H
    decisions: list[Decision] = []
    for k in (0, 1, 2, 3, 4, 5, 7):  # state 6 dropped
        stamp = T0 + k * PERIOD_40HZ
        decisions.append(sup.step(Q0, V0, stamp, stamp - PERIOD_40HZ))
        assert decisions[-1].action is Action.COMPUTE
        sup.command_computed(robot.gravity(Q0))
    assert all(d.silence is None for d in decisions[:-1])  # 25 ms apart: no silence
    assert sup.stream_period == pytest.approx(PERIOD_40HZ)
    resumed = decisions[-1]
    assert resumed.silence is not None and resumed.silence.state is WatchdogState.FALLBACK
    assert resumed.previous is WatchdogState.FALLBACK
    assert resumed.resume.kind is ResumeKind.PAUSE
    assert resumed.resume.since == pytest.approx(decisions[-2].effective_stamp + lead)
    assert resumed.resume.until == pytest.approx(resumed.effective_stamp + lead)


def test_a_safe_command_on_a_state_stamped_ahead_counts_from_its_effective_stamp(robot: RobotModel) -> None:
    """A refused state (NaN velocities) stamped 30 ms ahead of the clock (past ``max_age``, 20 ms,
    within ``max_future``): its safe command, noted as sent, counts from its stamp as the watchdog
    counts it, ``now + max_age``. A good state 2 ms after that: the safe command acted two
    periods, held over one: in flight the last two commands sent before it and the safe command
    twice. Counted from the stamp as it came, 8 ms later, no period held. (Mutant:
    ``_noted_stamp = decision.stamp`` for ``decision.effective_stamp`` in ``Supervisor._answer``.)"""
    sup = _predicting(robot)
    taus = _torques(robot, 5, seed=15)
    last = _answered(sup, taus)
    now = last + H
    refused = sup.step(Q0, NAN, now + 0.03, now)
    assert refused.action is Action.FALLBACK and refused.command is not None
    assert refused.effective_stamp == pytest.approx(now + 0.02)
    safe = refused.command.tau
    t = refused.effective_stamp + 2 * H
    decision = sup.step(Q0, V0, t, now + 3 * H)
    assert decision.action is Action.COMPUTE and decision.state is not None and decision.silence is None
    assert decision.effective_stamp == t
    q_ref, v_ref = _by_hand(robot, Q0, V0, 0, [taus[3], taus[4], safe, safe])
    np.testing.assert_allclose(decision.state.q, q_ref, atol=1e-13)
    np.testing.assert_allclose(decision.state.v, v_ref, atol=1e-13)
    _, v_unheld = _by_hand(robot, Q0, V0, 0, [taus[2], taus[3], taus[4], safe])
    assert np.abs(v_unheld - v_ref).max() > 1e-6  # the period held shows


@pytest.mark.parametrize("away", [0.025, 0.05], ids=["25ms", "50ms"])
def test_the_newest_state_after_a_stall_under_sim_time_is_not_refused_as_future(
    robot: RobotModel, away: float
) -> None:
    """Under sim time a controller catching up after a stall takes the newest queued state while
    its ``/clock`` is still queued behind: the state is stamped the stall ahead of the node's
    clock, which ``clock_lag`` says. The hardware file's 20 ms ``max_future`` (``make sim
    PARAMS=config/gen3_hardware.yaml``, a rehearsal of the arm's settings) refused it as stamped
    in the future after any stall over ~19 ms (a review); it is computed on, as under the shipped
    1 s. A state that far ahead without the lag is still refused."""
    for lag, action in ((away, Action.COMPUTE), (0.0, Action.FALLBACK)):
        sup = Supervisor(
            robot, WatchdogConfig.create(max_future=0.02, max_age=0.02), np.array(DEFAULT_DAMPING)
        )
        for k in range(200):  # sim time: each state a step ahead of its /clock
            if sup.step(Q0, V0, T0 + (k + 1) * H, T0 + k * H).action is Action.COMPUTE:
                sup.command_computed(np.zeros(7))
        newest = T0 + 200 * H + away
        decision = sup.step(Q0, V0, newest, T0 + 199 * H, clock_lag=lag, skipped=round(away / H) - 1)
        assert decision.action is action, (lag, sup.watchdog.last_message)
