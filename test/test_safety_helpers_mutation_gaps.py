"""Behaviours of the smaller safety helpers that a second, deeper mutation review found unpinned.

resume (taking a target up again after a stall), braking (the safe brake's command and
prediction), saturation (the torque limits and the scale toward the bias), backlog (the
catch-up after this process was away) and target_checks (the refusals of targets). Each test
names the behaviour it pins and the source change (mutant) it was written to catch. Pure core:
no ROS.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_resume import Loop
from test_saturation import LIMIT
from test_supervisor import KD, Q0, V0
from test_target_checks import HOME, _points, _refusal

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.backlog import CatchUp
from torque_ctrl_ros.core.braking import SafeBrake
from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.core.resume import StreamPeriod
from torque_ctrl_ros.core.safety import MAX_ANGLE, Action, WatchdogState
from torque_ctrl_ros.core.saturation import ROUNDING, TorqueLimiter
from torque_ctrl_ros.core.target_checks import check_trajectory_points, checked_joint_reference


def test_a_step_of_exactly_one_second_is_no_step_of_the_stream() -> None:
    """Steps of 1 s or more between computed states are a paused stream or another clock, not
    the stream's period: exactly 1 s is not learnt. (Mutant: ``step <= 1.0`` in
    ``StreamPeriod.computed``.)"""
    stream = StreamPeriod()
    stream.computed(1.0, none_refused_since=True)
    stream.computed(2.0, none_refused_since=True)
    assert stream.period == 0.0
    assert stream.typical == 0.0


def _frozen_window(loop: Loop, stamp: float, now: float, count: int) -> list[Action]:
    """``count`` refused states, all stamped ``stamp``, answered on a clock standing at ``now``."""
    return [loop.bad(stamp, now) for _ in range(count)]


def test_a_new_window_on_a_frozen_clock_counts_its_repeated_stamps_from_zero() -> None:
    """On a frozen clock, a second fallback window (after a computed state) counts only its own
    repeated stamps: 15 repeats at 25 ms each (0.35 s) keep it open, as they kept the first one.
    (Mutant: ``note_fallback`` no longer resets the repeat count when a window opens, so the
    second window inherits the first's 14 and stops the arm after half its time.)"""
    loop = Loop()
    for k in range(12):  # a 40 Hz stream: its typical step is 25 ms
        loop.good(1.0 + k * 0.025)
    now = 1.0 + 12 * 0.025
    assert _frozen_window(loop, now, now, 15) == [Action.FALLBACK] * 15
    loop.good(now + 0.001, now=now)
    assert loop.wd.state is WatchdogState.OK
    assert _frozen_window(loop, now + 0.001, now, 15) == [Action.FALLBACK] * 15
    assert loop.wd.state is WatchdogState.FALLBACK


def test_the_safe_brake_refuses_a_negative_damping(robot: RobotModel) -> None:
    """A negative ``K_d`` would push the arm along its motion: refused, naming the parameter.
    (Mutant: ``SafeBrake`` drops ``min_value=0.0`` from its damping check.)"""
    with pytest.raises(ConfigError, match="safe brake damping: expected every entry >= 0"):
        SafeBrake(robot, -KD, horizon=0.5)


def test_the_safe_brake_refuses_a_horizon_of_over_a_million_periods(robot: RobotModel) -> None:
    """A horizon of two million periods (one call could predict for seconds) is refused, naming
    it. (Mutant: the ``horizon / period > 1e6`` check removed.)"""
    with pytest.raises(ConfigError, match="over a million periods"):
        SafeBrake(robot, KD, horizon=2000.0)


def test_a_safe_brake_with_no_horizon_holds_its_first_command(robot: RobotModel) -> None:
    """A horizon of 0 (``fallback_duration`` 0 is allowed) is taken: nothing is predicted and
    the first command is sent again. (Mutant: ``allow_zero`` dropped from the horizon check.)"""
    brake = SafeBrake(robot, KD, horizon=0.0)
    brake.start(Q0, V0, 0.0, hold=1)
    first = brake.command.copy()
    np.testing.assert_array_equal(brake.torque(0.005), first)
    assert brake.k == 0


def test_a_new_start_of_the_brake_predicts_over_a_whole_horizon_again(robot: RobotModel) -> None:
    """Each :meth:`SafeBrake.start` opens a new horizon: after a first window that used all of
    it, the second still predicts. (Mutant: ``start`` no longer resets ``k``, so the second
    window's prediction never moves and its damping follows no motion.)"""
    brake = SafeBrake(robot, KD, horizon=0.003)
    brake.start(Q0, V0, 0.0)
    brake.torque(1.0)
    assert brake.k == 3
    brake.start(Q0, V0, 2.0)
    brake.torque(2.001)
    assert brake.k == 1
    assert not np.array_equal(brake.v, V0)


def test_each_brake_command_is_its_own_array(robot: RobotModel) -> None:
    """The command :meth:`SafeBrake.torque` returns is a copy: the next call, which writes the
    brake's command in place, does not rewrite the one already handed out (it is the
    ``tau_unsaturated`` of a decision). (Mutant: ``torque`` returns ``self.command`` itself.)"""
    brake = SafeBrake(robot, KD, horizon=0.5)
    brake.start(Q0, V0, 0.0)
    first = brake.torque(0.001)
    kept = first.copy()
    brake.torque(0.002)
    np.testing.assert_array_equal(first, kept)


def test_past_the_horizon_a_longer_gap_leaves_the_brake_command_as_it_was(robot: RobotModel) -> None:
    """Once the horizon is spent the command stays the last one, even after a longer gap than
    any before (which would otherwise lower its damping). (Mutant: ``if m >= 0`` in
    ``SafeBrake.torque``, so the command is rebuilt with the new longest gap.)"""
    brake = SafeBrake(robot, KD, horizon=0.002)
    brake.start(Q0, V0, 0.0, hold=1)
    brake.torque(0.001)
    last = brake.torque(0.002)
    assert brake.k == 2
    np.testing.assert_array_equal(brake.torque(0.010), last)


def test_the_brakes_damping_scale_takes_the_whole_gap_not_the_part_within_the_horizon(
    robot: RobotModel,
) -> None:
    """A gap of 10 periods under a horizon of 3: the command is damped for the gap the arm was
    held (``K_d·2/10``), not for the 3 periods predicted. (Mutant: the longest gap is taken
    from ``m``, cut at the horizon, instead of ``gap``.)"""
    brake = SafeBrake(robot, KD, horizon=0.003)
    brake.start(Q0, V0, 0.0, hold=1)
    command = brake.torque(0.010)
    assert brake.k == 3
    expected = robot.gravity(brake.q) - 0.2 * KD * brake.v
    np.testing.assert_allclose(command, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("limit", [0.0, -1.0])
def test_the_limiter_refuses_an_effort_limit_that_is_not_positive(limit: float) -> None:
    """An effort limit of 0 or below (no torque allowed, or the bounds crossed) is refused,
    naming the parameter. (Mutant: ``strictly_positive`` dropped from ``TorqueLimiter``.)"""
    with pytest.raises(ConfigError, match="effort_limit: expected every entry > 0"):
        TorqueLimiter(("a", "b"), np.array([LIMIT, limit]))


def test_a_command_exactly_rounding_past_its_limit_is_clipped_unreported() -> None:
    """A command exactly :data:`ROUNDING` past its limit is at the limit: clipped, not named
    saturated. (Mutant: ``np.abs(tau) >= self._beyond`` in ``TorqueLimiter.apply``.)"""
    out = TorqueLimiter(("a",), np.array([LIMIT])).apply(np.array([LIMIT + ROUNDING]))
    assert out.tau[0] == LIMIT
    assert out.saturated_joints == ()
    assert not out.saturated.any()


def test_a_joint_with_no_share_and_no_room_does_not_hide_the_others_scale() -> None:
    """Joint a's bias is at its lower limit and it is asked nothing more (0/0: no bound), while b
    needs ``s`` = 0.5: the command is scaled by 0.5, c's share with it. (Mutant: ``np.min`` for
    ``np.fmin.reduce``, whose NaN made ``s`` 1, c's torque left whole.)"""
    limiter = TorqueLimiter(("a", "b", "c"), np.full(3, LIMIT))
    out = limiter.apply(np.array([-LIMIT, 20.0, 4.0]), bias=np.array([-LIMIT, 0.0, 0.0]))
    assert out.torque_scale == pytest.approx(0.5)
    np.testing.assert_allclose(out.tau, [-LIMIT, LIMIT, 2.0], rtol=0, atol=1e-12)
    assert out.saturated_joints == ("b",)


def test_a_catch_up_on_a_slow_stream_ends_on_stamps_one_period_apart() -> None:
    """On a 40 Hz stream (25 ms, above a ``max_age`` of 20 ms) handled states one period apart
    follow on: the catch-up ends there. (Mutant: ``CatchUp.handled`` compares the stamps with
    ``max_age`` alone, ignoring the period, so it never ends on such a stream.)"""
    period = 0.025
    catch_up = CatchUp(0.02)
    catch_up.begin(0.0, period)
    assert catch_up.begin(0.3, period)  # away 0.3 s
    assert not catch_up.handled(5.0, period)
    for k in range(1, 14):  # states one period apart, until back longer than it was away
        assert catch_up.begin(0.3 + k * period, period)
    assert catch_up.handled(5.0 + period, period)
    assert not catch_up.active


def test_a_trajectory_with_several_non_finite_points_names_the_first(robot: RobotModel) -> None:
    """Positions non-finite at points 0 and 2: the refusal names point 0 and its joint.
    (Mutant: ``[-1]`` for ``[0]`` picking the point, which named point 2.)"""
    q = np.stack([HOME, HOME, HOME])
    q[0, 2] = np.nan
    q[2, 5] = np.inf
    assert _refusal(check_trajectory_points, robot, _points(q)) == (
        "trajectory point 0: non-finite positions at ['joint_3']"
    )


def test_a_joint_reference_at_exactly_max_angle_is_taken() -> None:
    """A reference's positions are taken up to ``|q| = MAX_ANGLE`` inclusive, as the joint
    limits take them (:func:`limit_masks`). (Mutant: ``< MAX_ANGLE`` in
    ``checked_joint_reference``.)"""
    q = np.full(7, MAX_ANGLE)
    q[3] = -MAX_ANGLE
    got, _, _ = checked_joint_reference("reference", 7, q)
    np.testing.assert_array_equal(got, q)
