"""Behaviours of the trajectories and the joint tracker that a second mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
:mod:`torque_ctrl_ros.core.trajectory` (the interpolation: what is sampled at and around the
waypoints, which inputs it reads) and :mod:`torque_ctrl_ros.core.target_tracking` (how a submitted
trajectory, a stop or a reset changes the reference sampled each step). Reference values are
worked out here, by hand or with numpy, never read back from the code under test. Pure core: no ROS.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_target_tracking import HOME_Q, _at_rest, _joint_tracker, _points

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.errors import TargetError
from torque_ctrl_ros.core.target_tracking import START_TOLERANCE, JointMode, TrajectoryPoints
from torque_ctrl_ros.core.trajectory import JointTrajectory

JOINT_1 = np.eye(7)[0]  # a unit move on joint_1 (rad), a continuous joint


# ------------------------------------------------------------------ sampling
def test_before_its_first_waypoint_a_trajectory_holds_that_point_at_rest() -> None:
    """No start state and a first waypoint at 1 s with a given velocity (2 rad/s) and acceleration
    (3 rad/s²): before 1 s the reference is the first position held at rest, zero velocity and
    acceleration (a reference standing still while its velocity reads 2 rad/s contradicts itself:
    the law's ``kd·(q̇_ref − q̇)`` would push the arm off the point it holds). (Mutant: ``sample``
    returns ``self.velocities[0]`` before the first waypoint, which positions-only trajectories,
    estimated at rest there, do not show.)"""
    traj = JointTrajectory([1.0, 2.0], [[0.5], [1.0]], [[2.0], [0.0]], [[3.0], [0.0]])
    for t in (0.0, 0.4, 0.999):
        q, v, a = traj.sample(t)
        assert (q[0], v[0], a[0]) == (0.5, 0.0, 0.0), t
    q, v, a = traj.sample(1.0)  # from the waypoint on, the given motion
    assert (q[0], v[0], a[0]) == pytest.approx((0.5, 2.0, 3.0), abs=1e-12)


# ------------------------------------------------------------------ what it reads
def test_accelerations_without_velocities_are_ignored() -> None:
    """Accelerations are used only with velocities: given alone, the trajectory is the
    positions-only cubic through the same waypoints (estimated velocities, its accelerations
    whatever the cubic's are), not a quintic pinned to accelerations that no given velocity goes
    with. Reference: the cubic through (0, 0), (1, 1), (2, 1.5) with the Fritsch–Carlson velocity
    0.75 rad/s in the middle (the mean of the secants 1 and 0.5), in closed form. (Mutant:
    ``JointTrajectory`` parses ``accelerations`` whatever ``velocities`` are.)"""
    times, positions = [0.0, 1.0, 2.0], [[0.0], [1.0], [1.5]]
    traj = JointTrajectory(times, positions, accelerations=[[5.0], [-5.0], [5.0]])
    assert traj.kind == "cubic" and traj.accelerations is None
    # First segment: q(0) = 0, q'(0) = 0, q(1) = 1, q'(1) = 0.75 → q = 2.25·t² − 1.25·t³.
    cubic = np.polynomial.Polynomial([0.0, 0.0, 2.25, -1.25])
    for t in (0.0, 0.25, 0.5, 0.75):
        q, v, a = traj.sample(t)
        assert (q[0], v[0], a[0]) == pytest.approx(
            (cubic(t), cubic.deriv()(t), cubic.deriv(2)(t)), abs=1e-12
        ), t


def test_accelerations_on_only_some_points_are_ignored_by_from_points() -> None:
    """``from_points`` uses accelerations only where every point has them, as it does velocities: one point
    without gives the cubic through the given velocities, not a refusal of the whole trajectory.
    (Mutant: ``has_a`` with ``any`` for ``all``, which hands a ``None`` row to the constructor.)"""
    pts = [(1.0, [0.0], [1.0], [4.0]), (2.0, [1.0], [0.0], None)]
    traj = JointTrajectory.from_points(pts, 1)
    assert traj.kind == "cubic" and traj.accelerations is None
    # q(0) = 0, q'(0) = 1 rad/s, q(1) = 1, q'(1) = 0: q = s + s² − s³, s the time (s) after 1 s.
    assert traj.sample(1.5)[0][0] == pytest.approx(0.5 + 0.25 - 0.125, abs=1e-12)


# ------------------------------------------------------------------ refusals
def test_a_trajectory_of_no_joints_is_refused() -> None:
    """Rows of zero positions (a message with empty position lists) are refused, naming the field,
    rather than built as a motion of no joint that a controller would index. (Mutant: the ``n == 0``
    check in ``_joint_count`` removed.)"""
    with pytest.raises(TargetError, match="trajectory positions: expected at least one joint"):
        JointTrajectory([1.0, 2.0], np.zeros((2, 0)))


# ------------------------------------------------------------------ the limit check
def test_a_violation_past_the_first_thousand_segments_to_evaluate_is_found() -> None:
    """1 100 one-second segments from 0 to 0 rad at 1 rad/s, ``q(s) = s − 3s² + 2s³``, peaking at
    ±0.096 rad: within ±0.12 rad, but the screen's control points reach 1/6 rad, so every segment
    is evaluated, in blocks of 1 024. The last one ends at 2 rad/s, ``q(s) = s − 4s² + 3s³``, down
    to −0.2347 rad at ``s = 0.7384`` (the roots of ``q'`` by numpy): past −0.12, in the second
    block. (Mutant: ``_blocks`` yields the first block only, so a long trajectory is checked over
    its first thousand flagged segments and a violation after them runs.)"""
    times = np.arange(1101.0)
    velocities = np.ones((1101, 1))
    velocities[-1] = 2.0
    traj = JointTrajectory(times, np.zeros((1101, 1)), velocities)
    last = np.polynomial.Polynomial([0.0, 1.0, -4.0, 3.0])
    s = float(np.max(last.deriv().roots().real))  # two real roots: 0.1505 and 0.7384
    assert traj.limit_violation([-0.3], [0.12], [10.0]) is None  # all evaluated, none past
    found = traj.limit_violation([-0.12], [0.12], [10.0])
    assert found is not None
    assert (found.quantity, found.joint, found.limit) == ("position", 0, -0.12)
    assert found.value == pytest.approx(last(s), rel=1e-9)
    assert found.time == pytest.approx(1099.0 + s, rel=1e-12)
    assert not traj.within_limits([-0.12], [0.12], [10.0])


# ------------------------------------------------------------------ the joint tracker
def test_a_submitted_segment_after_the_first_waypoint_is_checked_when_submitted(robot: RobotModel) -> None:
    """Positions only, first point at 1 s: the segments from the start and from the first point
    depend on the start and are checked when the trajectory takes effect; every later one only
    when it is submitted. Here the second, 2.0 → 2.5 s, goes 1 rad on joint_1 from rest to rest
    (the estimated velocities are 0 where the path levels off): the cubic ``3s² − 2s³`` peaks at
    ``1.5·Δq/T = 3`` rad/s at 2.25 s, past the 1.3963 rad/s limit, and is refused with those
    figures. (Mutant: ``submit_trajectory`` skips two segments, ``first = 2``, so this one is
    checked neither now nor when it takes effect, and the arm is asked twice its velocity limit.)"""
    tracker, _ = _joint_tracker(robot)
    tracker.reference(_at_rest(HOME_Q, 1.0))
    waypoints = [(1.0, HOME_Q), (2.0, HOME_Q), (2.5, HOME_Q + JOINT_1), (3.5, HOME_Q + JOINT_1)]
    peak = 1.5 * 1.0 / 0.5
    with pytest.raises(TargetError, match=rf"joint_1 at {peak:.4f} rad/s at 2\.2500 s .*velocity limit"):
        tracker.submit_trajectory(_points(waypoints), 0.0, 1.0)
    assert tracker.pending is None


def test_a_first_point_across_the_wrap_of_a_continuous_joint_is_near_the_reference(
    robot: RobotModel,
) -> None:
    """joint_1 turns without end: a first point at time 0 at −3.14 rad is 2π − 6.28 = 0.0032 rad
    from a reference at 3.14 rad the short way round, within START_TOLERANCE, and is taken though
    the arm lags 0.04 rad behind the reference (0.043 rad from the point). (Mutant:
    ``_check_first_position`` measures the distance to the reference as ``first − q_ref``, 6.28 rad,
    so only the lagging arm counts and the trajectory is refused.)"""
    reference = HOME_Q.copy()
    reference[0] = 3.14
    tracker, errors = _joint_tracker(robot)
    tracker.reference(_at_rest(reference, 1.0))
    point = reference - 6.28 * JOINT_1
    assert abs(-6.28 + 2.0 * math.pi) < START_TOLERANCE < abs(point[0] - (3.14 - 0.04) + 2.0 * math.pi)
    tracker.submit_trajectory(_points([(0.0, point)]), 0.0, 1.0)
    ref = tracker.reference(_at_rest(reference - 0.04 * JOINT_1, 1.001))
    assert errors == [] and tracker.mode is JointMode.TRAJECTORY
    np.testing.assert_array_equal(ref.q, point)


def test_a_first_point_at_time_zero_takes_over_the_acceleration_of_the_reference(robot: RobotModel) -> None:
    """50 ms into a 0.2 rad approach on joint_1 (accelerating at 2.9 rad/s²), a quintic whose first
    point at time 0 is where the reference was, with its velocity and a given acceleration of 0:
    at the state it takes effect the reference keeps the approach's acceleration there (the
    first segment blends into the given one), so the feedforward torque does not step. Reference:
    the approach itself, sampled at that state before the trajectory replaced it. (Mutant:
    ``_from_first_point`` starts the trajectory from ``JointMotion(first, v_ref, None)``: the
    acceleration steps to 0.)"""
    tracker, errors = _joint_tracker(robot)
    tracker.reference(_at_rest(HOME_Q, 1.0))
    tracker.submit_target(HOME_Q + 0.2 * JOINT_1)
    tracker.reference(_at_rest(HOME_Q, 1.0))
    approach = tracker.active
    assert approach is not None
    now = tracker.reference(_at_rest(HOME_Q, 1.05))
    rest = np.zeros(7)
    points = TrajectoryPoints(
        np.array([0.0, 1.0]),
        np.array([now.q, now.q + 0.1 * JOINT_1]),
        np.array([now.v, rest]),
        np.zeros((2, 7)),
    )
    tracker.submit_trajectory(points, 0.0, 1.05)
    _, v_before, a_before = approach.sample(1.051)
    after = tracker.reference(_at_rest(HOME_Q, 1.051))
    assert errors == [] and tracker.mode is JointMode.TRAJECTORY
    assert a_before[0] > 1.0
    assert after.a is not None and after.v is not None
    np.testing.assert_allclose(after.a, a_before, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(after.v, v_before, rtol=0.0, atol=1e-12)


def test_a_stop_near_the_end_of_an_approach_rests_on_its_goal(robot: RobotModel) -> None:
    """A stop 0.1 s before a 0.2 rad approach on joint_1 comes to rest, within the stop time
    (0.24 s): the reference stops where the approach would have, on its goal, over those 0.1 s;
    carried on by half its speed times the stop time (0.256 rad/s × 0.12 s = 0.031 rad, with
    0.0096 rad left), it would pass the goal and be held 0.02 rad beyond it. (Mutant:
    ``_activate_stop`` plans the stop without the move under way, ``under_way=None``.)"""
    warnings: list[str] = []
    tracker, errors = _joint_tracker(robot, warnings)
    goal = HOME_Q + 0.2 * JOINT_1
    tracker.reference(_at_rest(HOME_Q, 1.0))
    tracker.submit_target(goal)
    tracker.reference(_at_rest(HOME_Q, 1.0))
    assert tracker.active is not None
    t = 1.0 + tracker.active.move.duration - 0.1
    tracker.submit_stop()
    tracker.reference(_at_rest(HOME_Q, t))
    assert tracker.mode is JointMode.STOPPING
    held = tracker.reference(_at_rest(HOME_Q, t + 0.1))
    np.testing.assert_allclose(held.q, goal, rtol=0.0, atol=1e-12)
    assert errors == [] and warnings == []


def test_a_clock_reset_drops_a_trajectory_due_at_the_next_state_with_a_warning(robot: RobotModel) -> None:
    """A trajectory with stamp 0 (start at the next state) still pending at a simulator restart
    has no stamp on the old timeline: it is dropped as any target meant for the motion the reset
    ended, with a warning, and not refused as stamped on a clock that went back. (Mutant:
    ``reset`` treats a pending trajectory as stamped with ``pending.stamp >= 0.0``.)"""
    warnings: list[str] = []
    tracker, errors = _joint_tracker(robot, warnings)
    tracker.reference(_at_rest(HOME_Q, 3.0))
    tracker.submit_trajectory(_points([(1.0, HOME_Q + 0.1 * JOINT_1)]), 0.0, 3.0)
    tracker.reset(clock_reset=True)
    assert tracker.pending is None and errors == []
    assert len(warnings) == 1 and warnings[0].startswith(
        "trajectory received while the arm was not controlled"
    )
