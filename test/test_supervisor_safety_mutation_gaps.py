"""Behaviours of the supervisor and the watchdog that a second, deeper mutation review found unpinned.

What reaches the arm when joint states are refused, stamped ahead of a clock that stands still
(``use_sim_time`` without ``/clock``) or carry a stamp that is not a number; how the safe brake is
timed and damped on those paths; the watchdog's refusals and its fallback window. Each test names
the behaviour it pins and the source change (mutant) it was written to catch. Pure core: no ROS.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_core_safety_mutation_gaps import _bounded_watchdog, _feed, _stopped_on_two_sources
from test_supervisor import DT, KD, NAN, Q0, V0, _clip, _good, _run, _supervisor

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.braking import FIRST_HOLD_PERIODS, SafeBrake
from torque_ctrl_ros.core.errors import ConfigError, SolverError
from torque_ctrl_ros.core.safety import (
    MAX_ANGLE,
    Action,
    JointNameMap,
    RejectReason,
    Watchdog,
    WatchdogConfig,
    WatchdogState,
)
from torque_ctrl_ros.core.supervisor import Supervisor, Transition


def _brake_from_q0(robot: RobotModel, now: float, horizon: float = 0.5) -> SafeBrake:
    """The safe brake the supervisor starts at ``now`` from the last good state ``(Q0, V0)`` on a
    refused state, predicting up to ``horizon`` (s, its ``fallback_duration``)."""
    brake = SafeBrake(robot, KD, horizon=horizon)
    brake.start(Q0, V0, now, hold=FIRST_HOLD_PERIODS)
    return brake


def _safe_tau(sup: Supervisor, stamp: float, now: float) -> np.ndarray:
    """The safe command answering a refused state (``Q0``, velocities not finite)."""
    decision = sup.step(Q0, NAN, stamp, now)
    assert decision.action is Action.FALLBACK and decision.command is not None
    return decision.command.tau


def _stopped_at_far() -> tuple[Watchdog, float]:
    """A watchdog on three joints stopped on two sources, its last jump to the pose 0.9 rad (from
    the driver's at 0), and the time of that jump (s)."""
    wd = _bounded_watchdog()
    return wd, _stopped_on_two_sources(wd, np.zeros(3), np.full(3, 0.9), 10.0)


# ---------------------------------------------------------------- supervisor
def test_a_state_stamped_beyond_max_future_is_refused_not_computed_on(robot: RobotModel) -> None:
    """A state stamped 1.5 s ahead of the clock (``max_future`` 1 s) is refused as inconsistent and
    answered by the brake: its stamp is judged as it came, not as the ``effective_stamp`` that
    counts it at most ``max_age`` ahead. (Mutant: ``Supervisor.step`` passes ``effective_stamp``
    to ``Watchdog.check``, which then never sees a stamp past ``max_future``.)"""
    sup = _supervisor(robot, max_future=1.0)
    now = _run(sup, 3) + DT
    decision = sup.step(Q0, V0, now + 1.5, now)
    assert decision.action is Action.FALLBACK and decision.command is not None
    assert sup.watchdog.last_reason is RejectReason.INCONSISTENT
    assert "in the future" in sup.watchdog.last_message


def test_a_frozen_clock_window_ends_by_how_far_the_stamps_ran_ahead_of_it(robot: RobotModel) -> None:
    """``use_sim_time`` without ``/clock``: refused states 10 ms apart in their stamps (states lost
    on the way) while ``now`` stands still, soon far ahead of it. The window ends once the stamps
    as they came ran ``fallback_duration`` from its first, after 51 states, not after hundreds
    counted as repeats of a stamp capped at ``now + max_age``. (Mutant: ``Supervisor._answer`` passes
    ``effective_stamp`` to ``ResumeTracker.note_fallback``.)"""
    sup = _supervisor(robot, max_age=0.02, fallback_duration=0.505)
    last = _run(sup, 5)
    now = last + DT
    actions = [sup.step(NAN, NAN, last + k * 0.01, now).action for k in range(1, 60)]
    assert actions[:51] == [Action.FALLBACK] * 51 and set(actions[51:]) == {Action.NONE}
    assert sup.watchdog.state is WatchdogState.STOPPED


def test_a_controller_failure_on_a_frozen_clock_opens_its_window_at_the_stamp_as_it_came(
    robot: RobotModel,
) -> None:
    """A frozen clock, the stamps 0.6 s ahead of it: the controller fails on a state, then a refused
    state 1 ms later by the stamps still gets the brake. The failure's decision keeps the stamp
    as it came, so the window has run 1 ms by the stamps, not the 0.58 s from the stamp capped at
    ``now + max_age``. (Mutant: ``Supervisor.controller_failed`` builds its decision with
    ``effective_stamp`` as its ``stamp``.)"""
    sup = _supervisor(robot, max_age=0.02, fallback_duration=0.5)
    now = _run(sup, 5) + DT
    computing = sup.step(Q0, V0, now + 0.6, now)
    assert computing.action is Action.COMPUTE
    failed = sup.controller_failed(computing, SolverError("no solution"), now)
    assert failed.action is Action.FALLBACK and failed.stamp == now + 0.6
    after = sup.step(NAN, NAN, now + 0.601, now)
    assert after.action is Action.FALLBACK and after.command is not None


def test_on_a_frozen_clock_the_brake_runs_by_the_stamps_steps_though_they_are_ahead_of_it(
    robot: RobotModel,
) -> None:
    """A frozen clock whose good states' stamps ran 40 ms ahead of it, then refused states 1 ms
    apart: the brake's prediction runs 1 ms a state, from the first refused stamp as it came,
    not 20 ms at once from that stamp capped at ``now + max_age``. (Mutant:
    ``Supervisor._safe_command`` starts ``_last_brake_stamp`` at ``effective_stamp``.)"""
    sup = _supervisor(robot, max_age=0.02)
    last = _run(sup, 3)
    now = last + DT
    for k in range(1, 41):  # good states stamped ahead of the frozen clock: computed on
        assert _good(sup, last + k * DT, now=now).action is Action.COMPUTE
    expected = _brake_from_q0(robot, now)
    for k in range(5):
        tau = _safe_tau(sup, last + (41 + k) * DT, now)
        np.testing.assert_allclose(tau, _clip(robot, expected.torque(now + k * DT)), atol=1e-9)


def test_a_window_opened_by_a_nan_stamp_runs_the_brake_by_the_stamps_after_it(robot: RobotModel) -> None:
    """On a frozen clock the first refused state has a stamp that is not a number: the brake
    starts, and the finite stamps after it run its prediction on (from the first of them), so the
    command changes as the arm would brake rather than repeating one command, which spins the
    wrist up. (Mutant: ``stamp > _last_brake_stamp`` in ``Supervisor._safe_command``, which
    never replaces a NaN.)"""
    sup = _supervisor(robot)
    last = _run(sup, 3)
    now = last + DT
    first = sup.step(Q0, V0, math.nan, now)
    assert first.action is Action.FALLBACK and sup.watchdog.last_reason is RejectReason.INCONSISTENT
    expected = _brake_from_q0(robot, now)
    for k in range(2, 8):
        tau = _safe_tau(sup, last + k * DT, now)
        np.testing.assert_allclose(tau, _clip(robot, expected.torque(now + (k - 2) * DT)), atol=1e-9)


def test_the_brake_predicts_no_further_than_the_fallback_window(robot: RobotModel) -> None:
    """Refused states stamped 20 ms apart but received 1 ms apart (a burst): the brake's time runs
    by the stamps, 80 ms after five of them, but its prediction stops at ``fallback_duration``
    (50 ms), the horizon the window allows. (Mutant: the ``SafeBrake`` of ``Supervisor`` gets
    ``fallback_duration + max_age`` as its horizon.)"""
    sup = _supervisor(robot, max_age=0.02, fallback_duration=0.05)
    last = _run(sup, 3)
    taus = [_safe_tau(sup, last + k * 0.02, last + k * DT) for k in range(1, 6)]
    expected = _brake_from_q0(robot, last + DT, horizon=0.05)
    for k, tau in enumerate(taus[1:], start=1):  # 20 ms a state by the stamps
        np.testing.assert_allclose(tau, _clip(robot, expected.torque(last + DT + k * 0.02)), atol=1e-9)
    assert expected.k == 50


def test_a_transition_out_of_stopped_is_urgent() -> None:
    """Leaving STOPPED is said at once, as entering it is: the arm got no torque until then and
    no line about it may wait behind others. Leaving FALLBACK for OK may wait. (Mutant:
    ``Transition.urgent`` tests only ``state is STOPPED``, not ``previous``.)"""
    assert Transition(WatchdogState.STOPPED, WatchdogState.OK, "").urgent
    assert not Transition(WatchdogState.FALLBACK, WatchdogState.OK, "").urgent


# ---------------------------------------------------------------- watchdog
def test_a_name_map_with_no_joints_is_refused() -> None:
    """A controller with no joints is a configuration error, said as such, not a map that takes
    any message. (Mutant: the empty-names check in ``JointNameMap.__init__`` removed.)"""
    with pytest.raises(ConfigError, match="at least one joint name"):
        JointNameMap([])


def test_the_config_takes_a_margin_of_pi_and_a_velocity_factor_of_one() -> None:
    """The documented bounds are inclusive: ``position_margin`` of exactly π rad and
    ``velocity_factor`` of exactly 1 are taken. (Mutants: ``margin >= math.pi`` and
    ``1.0 < factor`` in ``WatchdogConfig.create``.)"""
    config = WatchdogConfig.create(position_margin=math.pi, velocity_factor=1.0)
    assert (config.position_margin, config.velocity_factor) == (math.pi, 1.0)


def test_a_joint_with_limits_beyond_max_angle_is_still_refused_past_it() -> None:
    """A bounded joint whose limits lie beyond :data:`MAX_ANGLE` (±1e9 rad in a description) still
    refuses a position past ``MAX_ANGLE``: such a reading has lost its fractional radians.
    (Mutant: ``position_min = lower − margin`` without the ``MAX_ANGLE`` clamp.)"""
    wd = Watchdog(1, WatchdogConfig.create(), (np.array([-1e9]), np.array([1e9])), np.ones(1))
    refused = wd.check(np.array([-2.0 * MAX_ANGLE]), np.zeros(1), 0.0, 0.0)
    assert refused is not None and refused[0] is RejectReason.OUT_OF_RANGE
    assert wd.check(np.array([-0.5 * MAX_ANGLE]), np.zeros(1), 0.0, 0.0) is None


def test_a_clock_gone_back_by_less_than_max_age_still_starts_the_stream_over() -> None:
    """A state stamped before the last accepted one, received on a clock that went back 1 ms
    (less than ``max_age``), is a new run of the stream (counted in ``clock_resets``), not a
    superseded state dropped. (Mutant: ``now < _accepted_at − max_age`` as the clock's going
    back in ``Watchdog.check``.)"""
    wd = _bounded_watchdog()
    z = np.zeros(3)
    assert _feed(wd, z, 10.0) is None
    assert wd.check(z, z, 9.995, 9.999) is None
    assert wd.accept(z, z, 9.995, 9.999) is Action.COMPUTE
    assert wd.clock_resets == 1


def test_a_stamp_exactly_max_future_ahead_is_taken() -> None:
    """A stamp exactly ``max_future`` (1 s) ahead of the clock is taken; only beyond it is a
    state inconsistent. (Mutant: ``-age >= max_future`` in ``Watchdog.check``.)"""
    wd = Watchdog(3)
    z = np.zeros(3)
    assert wd.check(z, z, 1.0, 0.0) is None
    refused = wd.check(z, z, 1.0 + 1e-9, 0.0)
    assert refused is not None and refused[0] is RejectReason.INCONSISTENT


def test_four_jumps_exactly_one_conflict_window_apart_stop_on_two_sources() -> None:
    """The fourth jump exactly :data:`CONFLICT_WINDOW` (1 s) after the first still stops the
    watchdog on two sources: the window includes its end. (Mutant: ``now − times[0] <
    CONFLICT_WINDOW`` in ``Watchdog._jumped``.)"""
    wd = _bounded_watchdog()
    z, far = np.zeros(3), np.full(3, 0.9)
    for t in (10.0, 10.25, 10.5):
        assert _feed(wd, z, t - 0.001) is None
        assert _feed(wd, far, t) is RejectReason.OUT_OF_RANGE
    assert _feed(wd, z, 10.999) is None
    assert _feed(wd, far, 11.0) is RejectReason.INCONSISTENT
    assert wd.conflict


def test_a_clock_stepping_back_less_than_max_age_keeps_the_jumps_counted() -> None:
    """A jump received on a clock that stepped back 0.5 ms (an adjustment, less than ``max_age``)
    still counts with the jumps before it: the fourth in 3 ms stops the watchdog on two sources.
    (Mutant: ``now < times[-1]`` as the clock's going back in ``Watchdog._jumped``, which forgets
    the jumps at any step back.)"""
    wd = _bounded_watchdog()
    z, far = np.zeros(3), np.full(3, 0.9)
    assert _feed(wd, z, 10.0) is None
    assert _feed(wd, far, 10.001) is RejectReason.OUT_OF_RANGE
    assert _feed(wd, z, 10.002) is None
    assert _feed(wd, far, 10.003) is RejectReason.OUT_OF_RANGE
    assert _feed(wd, far, 10.0025) is RejectReason.OUT_OF_RANGE  # the clock stepped back
    assert _feed(wd, far, 10.004) is RejectReason.INCONSISTENT
    assert wd.conflict


def test_a_clock_stepping_back_less_than_max_age_does_not_shorten_a_stop_on_two_sources() -> None:
    """Stopped on two sources, a state (no jump) received on a clock stepped back 5 ms: the stop
    still lasts :data:`CONFLICT_WINDOW` from the last jump, so a state 0.999 s after it is still
    refused. (Mutant: ``now < last_jump`` as the clock's going back in ``Watchdog._conflicted``,
    which restarts the window 5 ms early.)"""
    wd, stop = _stopped_at_far()
    far = np.full(3, 0.9)
    assert _feed(wd, far, stop - 0.005) is RejectReason.INCONSISTENT
    assert _feed(wd, far, stop + 0.999) is RejectReason.INCONSISTENT
    assert wd.conflict


def test_during_a_stop_on_two_sources_a_step_within_reach_over_arrivals_plus_max_age_is_no_jump() -> None:
    """Stopped on two sources, a state 0.3 rad from the last one received 20 ms later: the reach
    between them is ``speed_max · (Δarrival + max_age)`` = 10 rad/s × 40 ms = 0.4 rad, so it is no
    jump and the stop ends :data:`CONFLICT_WINDOW` after the jump that began it. (Mutant: the
    ``+ jump_floor`` dropped from the span in ``Watchdog._conflicted``: a reach of 0.2 rad takes it
    for a jump and holds the stop on.)"""
    wd, stop = _stopped_at_far()
    near = np.full(3, 0.6)
    assert _feed(wd, near, stop + 0.02) is RejectReason.INCONSISTENT
    assert _feed(wd, near, stop + 1.001) is None
    assert not wd.conflict


def test_a_clock_gone_back_by_more_than_max_age_within_the_window_stops_it() -> None:
    """A fallback window opened at 10 s, then a refused state on a clock gone back 0.1 s (more than
    ``max_age``, less than ``fallback_duration``): the safe command was timed on the old clock,
    so the watchdog stops rather than send it. (Mutant: ``fallback_since − now >
    fallback_duration`` as the clock's going back in ``Watchdog.tick``.)"""
    wd = _bounded_watchdog(max_age=0.02, fallback_duration=0.5)
    assert _feed(wd, np.zeros(3), 10.0) is None
    assert wd.reject(RejectReason.NON_FINITE, "nan", 10.0) is Action.FALLBACK
    assert wd.reject(RejectReason.NON_FINITE, "nan", 9.9) is Action.NONE
    assert wd.state is WatchdogState.STOPPED


def test_a_silence_keeps_the_window_open_up_to_exactly_fallback_duration() -> None:
    """A fallback window opened by a silence at 1.03125 s (``max_age`` 2⁻⁵ s after the last
    state): the timer's tick exactly ``fallback_duration`` (0.5 s) later leaves it open; only
    after that does the watchdog stop. (Mutant: ``now − fallback_since >= fallback_duration`` in
    ``Watchdog.silence``.)"""
    wd = _bounded_watchdog(max_age=0.03125, fallback_duration=0.5)
    assert _feed(wd, np.zeros(3), 1.0) is None
    wd.silence(1.0625, 0.0625)
    assert wd.state is WatchdogState.FALLBACK and wd.fallback_since == 1.03125
    wd.silence(1.53125, 0.1)  # the steady timer's own count, well within the window
    assert wd.state is WatchdogState.FALLBACK
    wd.silence(1.53126, 0.1)
    assert wd.state is WatchdogState.STOPPED


def test_a_partly_non_finite_state_during_a_stop_on_two_sources_hides_no_jump() -> None:
    """Stopped on two sources, a state with only some joints NaN between two poses is not taken
    as the pose the next state is compared with: the jump after it on those joints still counts
    and holds the stop :data:`CONFLICT_WINDOW` from it. (Mutant: ``np.isfinite(q).any()`` in
    ``Watchdog._conflicted``, so the NaN joints hide the next jump.)"""
    wd, stop = _stopped_at_far()
    back, hidden = np.zeros(3), np.array([np.nan, np.nan, 0.0])
    other = np.array([0.9, 0.9, 0.0])  # jumps from `back` on the joints `hidden` leaves NaN
    states = ((back, 0.001), (hidden, 0.002), (other, 0.003), (other, 1.002))
    # The last 0.999 s after the jump to `other`: the stop goes on.
    assert [_feed(wd, q, stop + dt) for q, dt in states] == [RejectReason.INCONSISTENT] * 4
    assert wd.conflict
