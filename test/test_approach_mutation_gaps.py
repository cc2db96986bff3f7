"""Behaviours of the approaches and trajectories that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
:mod:`torque_ctrl_ros.core.approach` (how a new target is reached from a moving reference) and
:mod:`torque_ctrl_ros.core.trajectory` (the interpolation and its limit check). Pure core: no ROS.
"""

from __future__ import annotations

import itertools

import numpy as np
import pinocchio as pin
import pytest
from test_approach_acceleration import HOME_Q, TOOL, _follow, _joint_1, _peak, _planner

from torque_ctrl_ros.core import RobotModel, TargetError
from torque_ctrl_ros.core.approach import (
    COURSE_MARGIN,
    COURSE_TOLERANCE,
    DIRECT_SPEED_SHARE,
    START_RCOND,
    PoseApproach,
    PoseApproachPlanner,
)
from torque_ctrl_ros.core.controllers.cartesian import PoseReference
from torque_ctrl_ros.core.trajectory import JointTrajectory, check_motion


def _joint_2(value: float) -> np.ndarray:
    """Seven joint values, ``value`` on joint_2 and 0 elsewhere (as ``_joint_1`` for joint_1)."""
    out = np.zeros(7)
    out[1] = value
    return out


def _sampled(trajectory: JointTrajectory, samples: int = 4001) -> tuple[np.ndarray, np.ndarray]:
    """Positions and velocities (samples × n) over the whole trajectory."""
    states = [trajectory.sample(t) for t in np.linspace(0.0, trajectory.duration, samples)]
    return np.array([q for q, _, _ in states]), np.array([v for _, v, _ in states])


def test_a_pose_start_at_rest_but_accelerating_stops_first() -> None:
    """A pose start with no twist but an acceleration is moving: given a stop time, the approach
    first comes to rest (at the start pose, half a zero speed on) over it, then moves on, so its
    whole duration is the stop time plus the move's. (Mutant: ``PoseApproach`` places the stop only
    for a twist, ``if stop_time > 0.0 and begin[1].any()``: the approach is one quintic of the
    move's duration, the one the planner had found leaving its course.)"""
    start = PoseReference(
        np.array([0.4, 0.1, 0.5]), np.eye(3), None, np.array([0.0, 0.0, 2.0, 0.0, 0.5, 0.0])
    )
    goal = PoseReference(np.array([0.3, 0.1, 0.5]), pin.exp3(np.array([0.0, 0.0, 0.2])))
    approach = PoseApproach(start, goal, 1.0, stop_time=0.3)
    assert approach.stop is not None
    assert approach.stop[0] == 0.3
    assert np.array_equal(approach.stop[1].position, start.position)
    assert approach.duration == pytest.approx(1.3)
    rest = approach.sample(0.3)
    assert np.allclose(rest.position, start.position, atol=1e-12)
    assert rest.twist is not None and np.allclose(rest.twist, 0.0, atol=1e-12)


def test_a_direct_approach_from_an_accelerating_start_is_lengthened_to_the_bound(robot: RobotModel) -> None:
    """At ``kp`` 1e4, joint_1 accelerating at 15 rad/s² away from a goal 0.025 rad behind it (one
    quintic keeps the course): over the rest-to-rest duration (0.075 s) the quintic would ask 1.14
    times joint_1's acceleration bound; it is lengthened (0.081 s) to within it. (Mutant: ``plan``
    times the direct quintic by ``self._duration(q0, goal)`` alone, without ``_within_bounds``.)"""
    planner = _planner(robot, 1e4)
    approach = planner.plan((HOME_Q, None, _joint_1(15.0)), HOME_Q + _joint_1(-0.025))
    assert len(approach.times) == 2  # one quintic, no stop
    assert approach.duration > planner._duration(HOME_Q, HOME_Q + _joint_1(-0.025)) * 1.05
    assert _peak(approach, planner.acceleration_limit) <= 1.0 + 1e-6


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["upper", "lower"])
def test_a_direct_quintic_past_a_position_limit_stops_first_instead_of_being_refused(
    robot: RobotModel, sign: float
) -> None:
    """joint_2 at 1.07 rad/s toward a goal 0.3 rad on, 0.5 mrad inside its position limit: one
    quintic there passes the goal by 1.8 mrad, within the course slack (1 % of the move), but past
    the limit. The course check is held to the limits, so the reference stops first (at the limit)
    and the approach stays inside; not held to them, the quintic is taken and ``check_motion``
    refuses the target. (Mutants: ``_keeps_course`` without the ``np.maximum(…,
    robot.position_lower)`` or the ``np.minimum(…, robot.position_upper)``.)"""
    planner = _planner(robot, 100.0)
    limit = robot.position_upper[1] if sign > 0 else robot.position_lower[1]
    q0 = HOME_Q.copy()
    q0[1] = limit - sign * (0.0005 + 0.3)
    approach = planner.plan((q0, _joint_2(sign * 1.07), None), q0 + _joint_2(sign * 0.3))
    assert len(approach.times) == 3  # a stop, then the move
    positions, _ = _sampled(approach)
    assert np.all(sign * (positions[:, 1] - limit) <= 1e-9)


def test_a_direct_quintic_faster_than_the_direct_share_stops_first(robot: RobotModel) -> None:
    """joint_1 at 0.85 rad/s (0.61 of its limit), accelerating at 2 rad/s² toward a goal 0.3 rad
    ahead: one quintic there peaks at 0.654 of the limit, past :data:`DIRECT_SPEED_SHARE` (0.625)
    and the start's own speed, so the reference stops first and no sample moves faster than
    either. (Mutant: ``_keeps_course`` with ``np.inf`` for ``self._direct_speed``: the direct
    quintic is taken.)"""
    planner = _planner(robot, 100.0)
    approach = planner.plan((HOME_Q, _joint_1(0.85), _joint_1(2.0)), HOME_Q + _joint_1(0.3))
    assert len(approach.times) == 3
    _, velocities = _sampled(approach)
    limit = robot.velocity_limit[0]
    assert np.abs(velocities[:, 0]).max() <= max(DIRECT_SPEED_SHARE * limit, 0.85) + 1e-9


def test_a_direct_quintic_backing_away_past_the_course_tolerance_stops_first(robot: RobotModel) -> None:
    """joint_1 at 0.1 rad/s toward a goal 1 rad ahead but decelerating at 2 rad/s²: one quintic
    there backs 0.046 rad (4.6 % of the move) behind its start, past :data:`COURSE_TOLERANCE`
    (1 %), so the reference stops first (ahead) and never goes back behind its start by more than
    the tolerance. (Mutant: ``slack = 0.1 * np.abs(goal - q0) + COURSE_MARGIN`` in
    ``_keeps_course``.)"""
    planner = _planner(robot, 100.0)
    approach = planner.plan((HOME_Q, _joint_1(0.1), _joint_1(-2.0)), HOME_Q + _joint_1(1.0))
    assert len(approach.times) == 3
    positions, _ = _sampled(approach)
    assert positions[:, 0].min() >= HOME_Q[0] - (COURSE_TOLERANCE * 1.0 + COURSE_MARGIN)


def test_a_stop_runs_past_a_waypoint_the_motion_only_passes_through(robot: RobotModel) -> None:
    """A trajectory passing its waypoint at 0.1 s at 0.5 rad/s, its end at rest 1 s on: a stop
    0.02 s in does not end at that waypoint (the motion does not rest there) but half its speed
    times the stop time on, over the law's whole stop time. (Mutant: ``_next_rest`` with
    ``still = True``: the stop ends on the moving waypoint, 0.08 s away.)"""
    planner = _planner(robot, 100.0)
    rest = np.zeros(7)
    waypoints = [HOME_Q, HOME_Q + _joint_1(0.05), HOME_Q + _joint_1(0.3)]
    under_way = JointTrajectory([0.0, 0.1, 1.0], waypoints, [rest, _joint_1(0.5), rest], [rest] * 3)
    q, v, a = under_way.sample(0.02)
    stop = planner.stop((q, v, a), (under_way, 0.02))
    assert stop.duration == pytest.approx(planner.stop_time)
    assert stop.positions[-1][0] == pytest.approx(q[0] + 0.5 * v[0] * planner.stop_time)
    assert stop.positions[-1][0] < waypoints[1][0] - 0.01


def test_a_stop_keeps_a_last_waypoint_at_rest_whatever_its_acceleration(robot: RobotModel) -> None:
    """A quintic ending 0.15 s on at zero velocity but a given acceleration (−1 rad/s²): held at
    rest after its last point, it comes to rest there, so a stop keeps that point and its time.
    (Mutant: ``_next_rest`` without ``last or``: the end's acceleration hides it and the stop runs
    on half the speed times the stop time, 0.24 s, to another point.)"""
    planner = _planner(robot, 100.0)
    rest = np.zeros(7)
    end = HOME_Q + _joint_1(0.05)
    under_way = JointTrajectory([0.0, 0.2], [HOME_Q, end], [rest, rest], [rest, _joint_1(-1.0)])
    q, v, a = under_way.sample(0.05)
    stop = planner.stop((q, v, a), (under_way, 0.05))
    assert stop.duration == pytest.approx(0.15)
    assert np.array_equal(stop.positions[-1], end)


def test_a_pose_stop_keeps_the_goal_of_a_move_already_past_its_own_stop(robot: RobotModel) -> None:
    """At ``kp`` = ``kd`` = 4 (stop time 1.2 s), a 0.3 m move along y turned back home mid-way, then,
    1 s before it gets home (past its own stop, 0.11 m/s toward home), turned out again: the
    reference must stop first, and the motion under way rests at home within the stop time, so
    the new stop is home, 1 s on. (Mutant: ``_rest_within`` taking the approach's stop whether
    or not it is still ahead, ``approach.stop is not None else None``: the stop already passed
    hides the goal and a new default stop is placed; and ``_stopping_first`` timing the move after
    the kept rest from the start, ``self._duration(arm, start, goal)``.)"""
    planner = PoseApproachPlanner(robot, TOOL, np.arange(6), np.full(6, 4.0), np.full(6, 4.0))
    home = robot.frame_placement(HOME_Q, TOOL)
    rest = PoseReference(home.translation.copy(), home.rotation.copy())
    out = PoseReference(home.translation + np.array([0.0, 0.3, 0.0]), home.rotation)
    first = planner.plan(HOME_Q, rest, out)
    middle = 0.5 * first.duration
    q_middle = _follow(robot, first, HOME_Q, np.linspace(0.0, middle, 201))[-1]
    turned = planner.plan(q_middle, first.sample(middle), rest, (first, middle))
    assert turned.stop is not None
    t = turned.duration - 1.0
    assert t > turned.stop[0]
    q = _follow(robot, turned, q_middle, np.linspace(0.0, t, 401))[-1]
    again = planner.plan(q, turned.sample(t), out, (turned, t))
    assert again.stop is not None
    assert again.stop[0] == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(again.stop[1].position, home.translation, atol=1e-12)
    # The move after it is timed from home, not from where the reference stands now.
    assert again.duration - again.stop[0] == pytest.approx(planner.plan(q, rest, out).duration, rel=1e-12)


@pytest.mark.parametrize("spin", [0.5, -0.5])
def test_a_position_planner_judges_the_course_on_its_own_axes_only(robot: RobotModel, spin: float) -> None:
    """A planner on x, y, z only, its reference moving 0.05 m/s toward a goal 0.1 m ahead along x
    and turning at ±0.5 rad/s about z (an axis it does not track): one quintic keeps the course
    on x, y, z, and the turn back on the rotation is not its to judge, so the target is taken at
    once, without a stop. (Mutants: ``self._tracked[:] = True``, or ``lower``/``upper`` without
    ``np.where(self._tracked, …)`` in ``PoseApproachPlanner._keeps_course``: it stops first.)"""
    planner = PoseApproachPlanner(robot, TOOL, np.arange(3), np.full(3, 100.0), np.full(3, 20.0))
    home = robot.frame_placement(HOME_Q, TOOL)
    twist = np.array([0.05, 0.0, 0.0, 0.0, 0.0, spin])
    start = PoseReference(home.translation.copy(), home.rotation.copy(), twist)
    goal = PoseReference(home.translation + np.array([0.1, 0.0, 0.0]), home.rotation.copy())
    assert planner.plan(HOME_Q, start, goal).stop is None


def test_a_pose_move_after_a_stop_is_timed_from_where_the_stop_turns_the_tool(robot: RobotModel) -> None:
    """At ``kp`` = ``kd`` = 4, the tool at home turning at 0.6 rad/s about the base's z, its target
    turned back by as much: it stops first (1.2 s, turning on by 0.36 rad), and the move after
    the stop takes as long as a move from rest at that stop pose (6.8 s). (Mutant:
    ``_half_speed_stop`` turning the start rotation by ``ω·T_s/2`` in its own axes, without
    ``start.rotation.T @``: the move is timed from another rotation, 4.6 s.)"""
    planner = PoseApproachPlanner(robot, TOOL, np.arange(6), np.full(6, 4.0), np.full(6, 4.0))
    home = robot.frame_placement(HOME_Q, TOOL)
    spin = np.array([0.0, 0.0, 0.6])
    start = PoseReference(home.translation.copy(), home.rotation.copy(), np.r_[0.0, 0.0, 0.0, spin])
    goal = PoseReference(home.translation.copy(), pin.exp3(-spin) @ home.rotation)
    approach = planner.plan(HOME_Q, start, goal)
    assert approach.stop is not None
    stop_time, stop = approach.stop
    from_rest = planner.plan(HOME_Q, PoseReference(stop.position, stop.rotation), goal)
    assert approach.duration - stop_time == pytest.approx(from_rest.duration, rel=1e-9)


def test_a_small_move_its_start_jacobian_misses_by_more_than_a_percent_is_timed_on_its_path(
    robot: RobotModel,
) -> None:
    """Near the wrist singularity (joint_6 at 0.057 rad) a 5.6e-2 rad turn about z asks at most
    0.03 rad of first-order joint motion, but ``J·J⁺·ξ`` misses the move by 16 % (the pseudo-inverse
    leaves out the lost direction; under the 20 % refused): not a linear move, it is timed on its
    predicted path, 10.6 s. (Mutant: ``_linear``'s fit test at ``1.0 * size`` instead of ``0.01``:
    timed on its start alone, 0.24 s, the law's shortest.)"""
    q = np.array([-0.494, 0.447, 2.886, 0.017, -1.546, 0.057, 2.529])
    move = np.array([-0.0014, -0.001, -0.0086, 0.0001, -0.0016, 0.0555])
    planner = PoseApproachPlanner(robot, TOOL, np.arange(6), np.full(6, 100.0), np.full(6, 20.0))
    jacobian = robot.frame_jacobian(q, TOOL)
    at_start = np.linalg.pinv(jacobian, rcond=START_RCOND) @ move
    assert np.abs(at_start).max() < 0.05
    assert 0.1 < np.linalg.norm(jacobian @ at_start - move) / np.linalg.norm(move) < 0.2
    start = PoseReference.from_se3(robot.frame_placement(q, TOOL))
    goal = PoseReference(start.position + move[:3], pin.exp3(move[3:]) @ start.rotation)
    along_path = planner.joint_speed_time(q, move)[0]
    assert along_path > 10.0
    assert planner.plan(q, start, goal).duration == pytest.approx(along_path, rel=1e-6)


def test_an_acceleration_bound_on_some_joints_only_is_checked() -> None:
    """An acceleration bound of 5 rad/s² on the second joint and none (``inf``) on the first, as
    :func:`acceleration_limits` gives for a joint without an effort limit: the second joint's
    rest-to-rest quintic peaking at 5.77 rad/s² is found. (Mutant: ``_screen`` checks
    accelerations only where every joint has a bound, ``np.isfinite(a_lim[0]).all()``.)"""
    rest = np.zeros((2, 2))
    trajectory = JointTrajectory([0.0, 1.0], [[0.0, 0.0], [0.0, 1.0]], rest, rest)
    found = trajectory.limit_violation(
        [-5.0, -5.0], [5.0, 5.0], [10.0, 10.0], acceleration_limit=[np.inf, 5.0]
    )
    assert found is not None
    assert (found.quantity, found.joint, found.limit) == ("acceleration", 1, 5.0)
    assert found.value == pytest.approx(10.0 / np.sqrt(3.0))


def test_a_position_and_a_speed_passed_at_the_same_point_report_the_position() -> None:
    """A cubic from rest at 0 to 2 rad arriving at 3 rad/s (limits 1.5 rad, 2 rad/s): its first
    checked points past the position and the speed limit are both its end, at 1 s; on that tie
    the position is reported, as documented. (Mutant: ``<=`` for ``<`` in
    ``_earliest_violation``: the later-listed velocity wins the tie.)"""
    trajectory = JointTrajectory([0.0, 1.0], [[0.0], [2.0]], [[0.0], [3.0]])
    found = trajectory.limit_violation([-1.0], [1.5], [2.0])
    assert found is not None
    assert (found.quantity, found.time, found.value, found.limit) == ("position", 1.0, 2.0, 1.5)


def test_a_motion_ending_exactly_on_a_limit_is_within_it_for_the_course_check() -> None:
    """A rest-to-rest quintic to exactly its upper position limit, its acceleration bound (5.8
    rad/s²) just above its peak (5.77) so that the screen cannot clear it and its samples are
    taken: ``within_limits`` says yes, as ``limit_violation`` does (a sample is past only beyond
    ``LIMIT_TOLERANCE`` and the margin). (Mutant: ``_sampled_past`` with the margin's sign
    flipped, ``q > q_hi - margin``: the end on the limit counts as past, and a joint approach
    to a target on a limit stops first.)"""
    rest = np.zeros((2, 1))
    trajectory = JointTrajectory([0.0, 1.0], [[0.0], [1.0]], rest, rest)
    assert trajectory.limit_violation([-1.0], [1.0], [10.0], acceleration_limit=[5.8]) is None
    assert trajectory.within_limits([-1.0], [1.0], [10.0], [5.8])


def test_limit_violation_checks_only_the_segments_asked_for() -> None:
    """Three cubic segments, only the last passing the upper limit: over segments 0 to 1
    (``last=2``, as a trajectory taking effect re-checks its first two) nothing is found, over all
    the last segment is. (Mutant: ``_screen`` ignoring ``last``, ``stop = segments``.)"""
    trajectory = JointTrajectory([0.0, 1.0, 2.0, 3.0], [[0.0], [0.1], [0.2], [2.0]])
    assert trajectory.limit_violation([-1.0], [1.0], [10.0], last=2) is None
    found = trajectory.limit_violation([-1.0], [1.0], [10.0])
    assert found is not None and found.quantity == "position" and found.time > 2.0


def test_check_motion_reports_the_time_with_its_offset(robot: RobotModel) -> None:
    """A trajectory taking effect late is checked with ``offset`` = its lateness (s), so that the
    refusal's time reads as its ``time_from_start``: joint_2 ending past its limit 10 s into the
    motion, 0.25 s late, is reported at 10.2500 s. (Mutant: ``check_motion`` without ``+ offset``.)"""
    q0 = HOME_Q.copy()
    past = q0 + _joint_2(robot.position_upper[1] + 0.1 - q0[1])
    trajectory = JointTrajectory([0.0, 10.0], [q0, past])
    with pytest.raises(TargetError, match=r"joint_2 to 2\.3400 rad at 10\.2500 s"):
        check_motion(robot, trajectory, offset=0.25)


def test_a_start_state_is_not_prepended_to_a_first_waypoint_at_time_zero() -> None:
    """A start state with a first waypoint at 0 s: the waypoint is the start (the start state is
    prepended only before a later first waypoint), so the motion begins there. (Mutant:
    ``JointTrajectory`` prepending whenever a start is given, without ``t[0] > 0.0``: a segment of
    zero duration, refused as overflowing.)"""
    trajectory = JointTrajectory([0.0, 1.0], [[0.0], [1.0]], start=(np.array([0.5]), np.array([0.2])))
    assert trajectory.times.tolist() == [0.0, 1.0]
    assert trajectory.sample(0.0)[0].tolist() == [0.0]


def test_within_limits_finds_a_peak_between_its_samples() -> None:
    """A quintic leaving 0 at 1 rad/s and back to rest at 0 over 1 s peaks at 16/81 rad at
    ``s = 1/3``, between the course check's samples at ``k/16`` (all 7.8e-4 rad lower): an upper
    limit of 0.1975 rad, which no sample passes, is still found passed, as ``limit_violation``
    finds it. (Mutant: ``within_limits`` trusting the samples alone, without the exact
    ``_rows_violation``.)"""
    rest = np.zeros((2, 1))
    trajectory = JointTrajectory([0.0, 1.0], [[0.0], [0.0]], [[1.0], [0.0]], rest)
    found = trajectory.limit_violation([-1.0], [0.1975], [10.0])
    assert found is not None and found.value == pytest.approx(16.0 / 81.0, abs=1e-12)
    assert not trajectory.within_limits([-1.0], [0.1975], [10.0])


def test_a_joint_approach_from_rest_to_a_goal_past_a_limit_is_refused(robot: RobotModel) -> None:
    """From rest, a goal 0.05 rad past joint_2's upper limit: the planner refuses the approach
    itself (its motion passes the limit), whatever its callers checked before. (Mutant: ``plan``
    without ``check_motion`` on the approach from rest.)"""
    planner = _planner(robot, 100.0)
    goal = HOME_Q + _joint_2(robot.position_upper[1] + 0.05 - HOME_Q[1])
    with pytest.raises(
        TargetError, match="the approach from the current motion takes joint_2 .* past its position"
    ):
        planner.plan((HOME_Q, None, None), goal)


@pytest.mark.parametrize("kp", [100.0, 1e4])
def test_a_moving_approach_across_pi_on_a_continuous_joint_is_timed_the_short_way(
    robot: RobotModel, kp: float
) -> None:
    """joint_1 (continuous) at 3.1 rad moving on at 0.3 rad/s, accelerating at 10 rad/s², its goal
    at −3.1 rad: the short way round, +0.083 rad, one quintic timed as the same goal written as
    3.183 rad. (Mutant: ``plan`` bounding the direct quintic's acceleration on ``goal - q0``
    instead of ``robot.difference(goal, q0)``: the long way, −6.2 rad.)"""
    planner = _planner(robot, kp)
    q0 = HOME_Q + _joint_1(3.1 - HOME_Q[0])
    start = (q0, _joint_1(0.3), _joint_1(10.0))
    across = planner.plan(start, q0 + _joint_1(-6.2))
    unwrapped = planner.plan(start, q0 + _joint_1(2.0 * np.pi - 6.2))
    assert len(across.times) == 2
    assert across.duration == unwrapped.duration
    np.testing.assert_allclose(across.positions[-1], unwrapped.positions[-1], atol=1e-12)


def test_a_trajectory_from_a_hair_below_the_lower_limit_back_inside_is_accepted() -> None:
    """A first point 0.1 mrad below the lower limit, the motion leading back inside: the first
    segment may stay as far below as its first point is, so nothing is found; a later segment
    going as far below is. (Mutant: ``_screen`` widening only the first segment's upper bound,
    ``q_lo[0]`` kept for ``np.minimum(q_lo[0], p0)``.)"""
    trajectory = JointTrajectory([0.0, 1.0], [[-1.0001], [0.0]])
    assert trajectory.limit_violation([-1.0], [1.0], [10.0]) is None
    back_out = JointTrajectory([0.0, 1.0, 2.0], [[-1.0001], [0.0], [-1.0001]])
    found = back_out.limit_violation([-1.0], [1.0], [10.0])
    assert found is not None and found.quantity == "position" and found.limit == -1.0 and found.time > 1.0


@pytest.mark.parametrize("short_of_pi", [1e-2, 1e-4, 0.0], ids=["pi-1e-2", "pi-1e-4", "pi"])
def test_a_half_turn_of_the_tool_is_not_refused_as_passing_a_singularity(
    robot: RobotModel, short_of_pi: float
) -> None:
    """achd_rnea's planner (``refuse_shortfall``) measures how far the predicted joint path ends
    from the goal: a turn about the tool axis of π, or within 1e-4 of it, whose predicted path
    ends a little past π had read as a turn the other way round (``log3`` is at most π), "200 % of
    the move short", and was refused; π − 1e-2 was accepted. Now all are, in the same time."""
    planner = PoseApproachPlanner(
        robot, TOOL, np.arange(6), np.full(6, 100.0), np.full(6, 20.0), refuse_shortfall=True
    )
    start = PoseReference.from_se3(robot.frame_placement(HOME_Q, TOOL))
    axis = start.rotation[:, 2]
    goal = PoseReference(start.position.copy(), pin.exp3((np.pi - short_of_pi) * axis) @ start.rotation)
    approach = planner.plan(HOME_Q, start, goal)
    assert 8.9 < approach.duration < 9.1, approach.duration
    end = approach.sample(approach.duration)
    assert np.linalg.norm(pin.log3(end.rotation @ goal.rotation.T)) < 1e-9


def test_a_pose_move_after_a_stop_turns_the_short_way_to_a_goal_near_a_half_turn(robot: RobotModel) -> None:
    """A new goal 3.12 rad about the tool axis from a reference turning at 0.65 rad/s: the
    reference first stops, then turns to the goal the short way from where it stopped (3.085 rad).
    The goal's rotation vector had been taken at most π from the start: past the stop that was
    the long way round, 3.199 rad the other way (a review). (Mutant: no ``_nearest_turn``.)"""
    planner = PoseApproachPlanner(robot, TOOL, np.arange(6), np.full(6, 100.0), np.full(6, 20.0))
    start = PoseReference.from_se3(robot.frame_placement(HOME_Q, TOOL))
    axis = start.rotation[:, 2]
    first = planner.plan(
        HOME_Q, start, PoseReference(start.position.copy(), pin.exp3(-1.2 * axis) @ start.rotation)
    )
    t = 0.5 * first.duration
    now = first.sample(t)
    goal = PoseReference(now.position.copy(), pin.exp3(3.12 * axis) @ now.rotation)
    second = planner.plan(HOME_Q, now, goal, (first, t))
    assert second.stop is not None
    stop_time, stop = second.stop
    times = np.linspace(stop_time, second.duration, 3000)
    rotations = [second.sample(s).rotation for s in times]
    turned = sum(np.linalg.norm(pin.log3(a.T @ b)) for a, b in itertools.pairwise(rotations))
    shortest = np.linalg.norm(pin.log3(stop.rotation.T @ goal.rotation))
    assert shortest < np.pi - 0.02
    assert turned == pytest.approx(shortest, abs=1e-6)
    assert np.linalg.norm(pin.log3(second.sample(second.duration - 1e-9).rotation.T @ goal.rotation)) < 1e-6
