"""Behaviours of the trajectories and the trackers that a third mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
:mod:`torque_ctrl_ros.core.trajectory` (which segment is sampled at a waypoint, the limit check's
bounds and its screen over long trajectories) and :mod:`torque_ctrl_ros.core.target_tracking`
(how a trajectory, a stop or a pause changes the reference sampled each step). Reference values
are worked out here, by hand or with numpy polynomials built from the waypoints, never read back
from the code under test. Pure core: no ROS.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ros_helpers import shipped_parameters
from test_target_tracking import HOME_Q, _at_rest, _joint_tracker, _points

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers import ComputedTorque, ComputedTorqueConfig, create_controller
from torque_ctrl_ros.core.target_tracking import (
    START_TOLERANCE,
    JointMode,
    JointTargetTracker,
    PendingTrajectory,
    TaskTargetTracker,
    TrajectoryPoints,
)
from torque_ctrl_ros.core.trajectory import LIMIT_TOLERANCE, JointTrajectory
from torque_ctrl_ros.nodes.params import controller_node_config

JOINT_1 = np.eye(7)[0]  # a unit move on joint_1 (rad)

#: ``[1, s, s², s³]`` coefficients of the cubic Hermite basis (``q(s)`` from ``p₀, m₀, p₁, m₁``,
#: ``m = T·q̇``), written out here so that the expected motions do not come from the module.
_HERMITE = {
    "p0": np.array([1.0, 0.0, -3.0, 2.0]),
    "m0": np.array([0.0, 1.0, -2.0, 1.0]),
    "p1": np.array([0.0, 0.0, 3.0, -2.0]),
    "m1": np.array([0.0, 0.0, -1.0, 1.0]),
}


def _cubic(p0: float, m0: float, p1: float, m1: float) -> np.polynomial.Polynomial:
    """The cubic Hermite ``q(s)`` on ``s ∈ [0, 1]`` with ``q(0) = p0``, ``q'(0) = m0``, ``q(1) = p1``,
    ``q'(1) = m1``."""
    coef = p0 * _HERMITE["p0"] + m0 * _HERMITE["m0"] + p1 * _HERMITE["p1"] + m1 * _HERMITE["m1"]
    return np.polynomial.Polynomial(coef)


# ------------------------------------------------------------------ sampling at a waypoint
def test_at_a_waypoint_the_segment_that_starts_there_is_sampled() -> None:
    """At ``t == t_k`` the reference is the segment from ``t_k`` on, not the one ending there: a
    cubic's acceleration jumps at its waypoints, and a move arriving at rest at 1 s, held after,
    has q̈ = 0 at 1 s (the hold), not the −6 rad/s² its arrival ends with. Reference: the Hermite
    cubic ``3s² − 2s³`` of 0 → 1 rad over 1 s, whose q̈ at ``s = 1`` is −6. (Mutant: ``sample``
    picks the segment with ``bisect_left``, the left one at a waypoint.)"""
    traj = JointTrajectory([0.0, 1.0, 2.0], [[0.0], [1.0], [1.0]], [[0.0], [0.0], [0.0]])
    arrival = _cubic(0.0, 0.0, 1.0, 0.0)
    assert arrival.deriv(2)(1.0) == pytest.approx(-6.0, abs=1e-12)
    q, v, a = traj.sample(1.0)
    assert (q[0], v[0], a[0]) == pytest.approx((1.0, 0.0, 0.0), abs=1e-12)
    q, v, a = traj.sample(1.0 - 1e-9)  # just before: the arrival's end
    assert a[0] == pytest.approx(arrival.deriv(2)(1.0 - 1e-9), abs=1e-6)


# ------------------------------------------------------------------ the limit check
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["forward", "backward"])
def test_a_start_moving_past_the_velocity_limit_may_slow_down_from_there(sign: float) -> None:
    """A start state moving at 1.2 rad/s against a 1 rad/s limit (a reference a hair too fast, or a
    limit lowered) is let through on the first segment as long as it only slows down, either way
    round: the cubic from (0 rad, ±1.2 rad/s) to ±0.4 rad at rest over 1 s has the speed
    ``1.2·(1 − s)²``, never above its start. The next segment is held to the limit itself.
    (Mutants: the first segment's speed bound not widened to the start's speed,
    ``v_lim[0]`` for ``max(v_lim[0], |v₀|)``; widened by the signed velocity, which leaves a start
    moving backward refused.)"""
    traj = JointTrajectory([1.0], [[sign * 0.4]], start=(np.zeros(1), np.array([sign * 1.2])))
    first = _cubic(0.0, sign * 1.2, sign * 0.4, 0.0)
    speeds = np.abs(first.deriv()(np.linspace(0.0, 1.0, 101)))
    assert speeds[0] == pytest.approx(1.2) and np.all(np.diff(speeds) <= 1e-12)
    assert traj.limit_violation([-10.0], [10.0], [1.0]) is None
    # The same motion from a waypoint at 1 s, after a hold: held to the limit itself.
    later = JointTrajectory([0.0, 1.0, 2.0], [[0.0], [0.0], [sign * 0.4]], [[0.0], [sign * 1.2], [0.0]])
    found = later.limit_violation([-10.0], [10.0], [1.0])
    assert found is not None and found.quantity == "velocity" and found.time == pytest.approx(1.0)
    assert found.value == pytest.approx(sign * 1.2, abs=1e-12)


def _long_rest_then(last_position: float, last_velocity: float) -> JointTrajectory:
    """A one-joint cubic of 20 one-second segments, more than the 16 the limit check screens
    finely at once: at rest at 0 rad until 19 s, then to ``last_position`` (rad) at 20 s, arriving
    at ``last_velocity`` (rad/s), every velocity given."""
    positions = np.zeros((21, 1))
    velocities = np.zeros((21, 1))
    positions[-1], velocities[-1] = last_position, last_velocity
    return JointTrajectory(np.arange(21.0), positions, velocities)


def test_a_speed_peak_in_a_long_trajectory_is_found() -> None:
    """In a trajectory of 20 segments (screened first segment by segment from the waypoints), the
    last goes 1 rad from rest to rest in 1 s: ``3s² − 2s³``, 1.5 rad/s at 19.5 s, past a 1.4 rad/s
    limit. The screen's speed bound from the control points ``(0, 0, 1, 1)`` is 3·1/T = 3 rad/s,
    which does not clear it. (Mutant: the coarse screen's speed bound without the degree's factor,
    ``max|bᵢ₊₁ − bᵢ|/T`` = 1 rad/s, which clears the segment and lets 1.5 rad/s through.)"""
    traj = _long_rest_then(1.0, 0.0)
    move = _cubic(0.0, 0.0, 1.0, 0.0)
    found = traj.limit_violation([-10.0], [10.0], [1.4])
    assert found is not None and (found.quantity, found.joint, found.limit) == ("velocity", 0, 1.4)
    assert found.value == pytest.approx(move.deriv()(0.5), abs=1e-12)
    assert found.time == pytest.approx(19.5, abs=1e-9)
    assert not traj.within_limits([-10.0], [10.0], [1.4])


def test_an_overshoot_in_a_long_trajectory_is_found() -> None:
    """In a trajectory of 20 segments, the last rises from 0 at rest to 0.5 rad, arriving at
    −3 rad/s (coming back down): ``q = 4.5s² − 4s³`` peaks at 0.84375 rad at ``s = 0.75``, past a
    0.8 rad limit though both its waypoints are inside. The screen's control points
    ``(0, 0, p₁ − m₁/3, p₁)`` reach 1.5 rad, which does not clear it. (Mutant: the coarse screen's
    third control point ``p₁ + m₁/3`` = −0.5 rad, which clears the segment and lets the overshoot
    through.)"""
    traj = _long_rest_then(0.5, -3.0)
    move = _cubic(0.0, 0.0, 0.5, -3.0)
    peak = float(np.max(move.deriv().roots().real))  # q' = 9s − 12s²: roots 0 and 0.75
    assert peak == pytest.approx(0.75) and move(peak) == pytest.approx(0.84375)
    found = traj.limit_violation([-10.0], [0.8], [100.0])
    assert found is not None and (found.quantity, found.joint, found.limit) == ("position", 0, 0.8)
    assert found.value == pytest.approx(move(peak), abs=1e-12)
    assert found.time == pytest.approx(19.0 + peak, abs=1e-9)
    assert not traj.within_limits([-10.0], [0.8], [100.0])


def test_within_limits_lets_through_what_the_limit_check_does_within_its_tolerance() -> None:
    """``within_limits`` gives :meth:`limit_violation`'s answer: the cubic ``4.5s² − 4s³`` of the
    test above, alone, peaks at 0.84375 rad at ``s = 0.75`` (one of the course check's samples,
    ``k/16``); against an upper limit 5e-10 rad below the peak, within ``LIMIT_TOLERANCE``
    (1e-9 rad), neither refuses it. (Mutant: the course check's margin 0, so a sample past the
    limit by less than the tolerance counts as surely past and the planner refuses a motion the
    exact check accepts.)"""
    traj = JointTrajectory([0.0, 1.0], [[0.0], [0.5]], [[0.0], [-3.0]])
    peak = _cubic(0.0, 0.0, 0.5, -3.0)(0.75)
    upper = [peak - 5e-10]
    assert peak == 0.84375 and 0.0 < peak - upper[0] < LIMIT_TOLERANCE
    assert traj.limit_violation([-10.0], upper, [100.0]) is None
    assert traj.within_limits([-10.0], upper, [100.0])
    assert not traj.within_limits([-10.0], [peak - 2 * LIMIT_TOLERANCE], [100.0])


# ------------------------------------------------------------------ the joint tracker
def test_a_pause_ending_at_a_trajectory_stamp_does_not_hold_it_up(robot: RobotModel) -> None:
    """A trajectory stamped 2.5 s and a fallback from 2.0 to 2.5 s: it starts at its stamp, the
    first state after the pause, as asked, so ``pause`` leaves its stamp and returns ``False``
    (the node would otherwise log "a trajectory due meanwhile starts as much later" and count a
    pause that held nothing up). (Mutant: ``pause`` holds up pending trajectories with
    ``pending.stamp <= until``.)"""
    tracker, errors = _joint_tracker(robot)
    tracker.reference(_at_rest(HOME_Q, 2.0))
    points = _points([(1.0, HOME_Q + 0.2 * JOINT_1)])
    tracker.submit_trajectory(points, 2.5, 2.0)
    assert not tracker.pause(2.0, 2.5)
    assert tracker.pending == PendingTrajectory(2.5, points)
    tracker.reference(_at_rest(HOME_Q, 2.5))
    assert errors == [] and tracker.active is not None and tracker.active.t0 == 2.5


def test_a_stop_of_a_slow_but_accelerating_reference_is_run_smoothly(robot: RobotModel) -> None:
    """5 ms into a trajectory setting off on joint_1, the reference moves slower than the velocity
    step tolerance (0.05 rad/s) but accelerates far above the acceleration one (1 rad/s²): a stop
    there is run smoothly (``STOPPING``), its acceleration carried on from the reference's, not
    held at once, which would step the feedforward by ``M·q̈``. Reference: the trajectory itself,
    sampled at that state before the stop replaced it. (Mutant: ``_activate_stop`` counts a
    reference as slow by its velocity alone, the acceleration check dropped.)"""
    tracker, errors = _joint_tracker(robot)
    tracker.reference(_at_rest(HOME_Q, 1.0))
    tracker.submit_trajectory(_points([(0.3, HOME_Q + 0.1 * JOINT_1)]), 0.0, 1.0)
    tracker.reference(_at_rest(HOME_Q, 1.001))
    assert tracker.active is not None
    _, v_before, a_before = tracker.active.sample(1.005)
    assert abs(v_before[0]) < tracker.velocity_step_tolerance[0]
    assert abs(a_before[0]) > 5.0 * tracker.acceleration_step_tolerance[0]
    tracker.submit_stop()
    after = tracker.reference(_at_rest(HOME_Q, 1.005))
    assert errors == [] and tracker.mode is JointMode.STOPPING
    assert after.v is not None and after.a is not None
    np.testing.assert_allclose(after.a, a_before, rtol=0.0, atol=1e-9)
    np.testing.assert_allclose(after.v, v_before, rtol=0.0, atol=1e-12)


@pytest.mark.parametrize(("off", "taken"), [(START_TOLERANCE, True), (1.01 * START_TOLERANCE, False)])
def test_a_first_point_at_time_zero_may_be_the_start_tolerance_away(
    robot: RobotModel, off: float, taken: bool
) -> None:
    """The start tolerance is a bound the point may reach: a first point at time 0 exactly 0.01 rad
    from the reference (and the arm) on joint_5, held at 0 rad, is taken (the refusal says "at most
    0.01 rad"); 1 % farther, it is refused naming joint_5. (Mutant: ``_check_first_position``
    refuses ``off >= START_TOLERANCE``.)"""
    tracker, errors = _joint_tracker(robot)
    tracker.reference(_at_rest(HOME_Q, 1.0))
    point = HOME_Q + off * np.eye(7)[4]
    assert HOME_Q[4] == 0.0 and point[4] == off  # the distance is exactly ``off``
    tracker.submit_trajectory(_points([(0.0, point)]), 0.0, 1.0)
    ref = tracker.reference(_at_rest(HOME_Q, 1.001))
    if taken:
        assert errors == [] and tracker.mode is JointMode.TRAJECTORY
        np.testing.assert_array_equal(ref.q, point)
    else:
        assert len(errors) == 1 and "rad from the current reference and from the arm on joint_5" in errors[0]
        np.testing.assert_array_equal(ref.q, HOME_Q)


def test_a_first_point_is_refused_on_the_joint_past_its_own_velocity_step_tolerance(
    robot: RobotModel,
) -> None:
    """With kp 400 on joint_1 and 100 elsewhere (kd = 2√kp), a first point at time 0 may set
    joint_1's velocity 0.01·400/40 = 0.1 rad/s from the reference's, the others' 0.05 rad/s. From
    rest, one at 0.08 rad/s on joint_1 (within its own) and 0.06 on joint_2 (past its own) is
    refused naming joint_2, though joint_1's step is the larger. (Mutant: ``_check_step`` picks the
    joint with the largest step, ``argmax |given − ref|``, and finds joint_1 within its tolerance:
    the trajectory is taken, stepping joint_2's reference velocity past its tolerance.)"""
    kp = np.array([400.0, 100.0, 100.0, 100.0, 100.0, 100.0, 100.0])
    errors: list[str] = []
    controller = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, kp))
    tracker = JointTargetTracker(controller, refuse=errors.append)
    np.testing.assert_allclose(tracker.velocity_step_tolerance, 0.005 * np.sqrt(kp), rtol=1e-12)
    tracker.reference(_at_rest(HOME_Q, 1.0))
    velocity = np.zeros(7)
    velocity[:2] = 0.08, 0.06
    points = TrajectoryPoints(
        np.array([0.0, 1.0]),
        np.array([HOME_Q, HOME_Q + 0.05 * velocity / 0.08]),
        np.array([velocity, np.zeros(7)]),
        None,
    )
    tracker.submit_trajectory(points, 0.0, 1.0)
    ref = tracker.reference(_at_rest(HOME_Q, 1.001))
    assert len(errors) == 1 and "has velocity 0.060 rad/s on joint_2" in errors[0], errors
    assert tracker.mode is JointMode.HOLD
    np.testing.assert_array_equal(ref.q, HOME_Q)


def test_posture_approaches_are_timed_by_the_slowest_posture_gain(robot: RobotModel) -> None:
    """qpid's posture task with kp 10 on joints 1–6 and 40 on joint_7: a 0.01 rad posture target on
    joint_1 is approached over the shortest approach of the smallest gain, ``√(10/√3 / 10)`` =
    0.760 s (its peak acceleration ``10/√3·Δq/T²`` no more than the ``kp·Δq`` a step would ask at
    once), not of the largest (0.380 s, four times the acceleration joint_1's gain allows).
    (Mutant: ``_posture_planner`` times the approaches with ``kp.max()`` and ``kd.max()``.)"""
    kp = [10.0] * 6 + [40.0]
    params = shipped_parameters("controller_node") | {"controller": "qpid", "qpid.posture.kp": kp}
    controller = create_controller("qpid", robot, controller_node_config(params).controller_params)
    errors: list[str] = []
    tracker = TaskTargetTracker(controller, refuse=errors.append)  # type: ignore[arg-type]
    tracker.reference(_at_rest(HOME_Q, 1.0))
    tracker.submit_posture(HOME_Q + 0.01 * JOINT_1)
    tracker.reference(_at_rest(HOME_Q, 1.0))
    assert errors == []
    duration = tracker.joint_moves["posture"].move.duration
    assert duration == pytest.approx(math.sqrt(10.0 / math.sqrt(3.0) / 10.0), rel=1e-12)
