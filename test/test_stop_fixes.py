"""Stops of a moving joint reference that a review found wrong (pure core: no rclpy).

* A joint near its velocity limit and still speeding up carried its acceleration on into the
  law's whole stop time and passed the limit (1.4322 rad/s against joint_1's 1.3963): the stop was
  refused and the tracker held the reference at once, a velocity step of 1.36 rad/s. The stop is
  now shortened until it keeps inside, within the acceleration bounds; where none does, the one
  passing the limit least runs, with a warning.
* A stop was held to the next point the motion under way rests at however far off it was, even
  where the motion passes that point on its way out and comes back to it seconds later: 0.064 s at
  21.6 rad/s² instead of 0.24 s at 4.9. It is now held no farther than the motion goes before it
  rests there.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_approach_acceleration import HOME_Q, _joint_1, _planner

from torque_ctrl_ros.core import JointState, RobotModel, TargetError
from torque_ctrl_ros.core.approach import STOP_WORDING
from torque_ctrl_ros.core.controllers import ComputedTorque, ComputedTorqueConfig
from torque_ctrl_ros.core.target_tracking import JointMode, JointTargetTracker, TimedMove, TrajectoryPoints
from torque_ctrl_ros.core.trajectory import JointTrajectory, check_motion


def _moving(
    robot: RobotModel, share: float, acceleration: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """HOME_Q with joint_1 at ``share`` of its velocity limit, speeding up at ``acceleration``
    rad/s²."""
    return HOME_Q.copy(), _joint_1(share * robot.velocity_limit[0]), _joint_1(acceleration)


def _sampled(trajectory: JointTrajectory, samples: int = 4001) -> np.ndarray:
    """``[q | q̇ | q̈]`` (samples × 3n) over the whole trajectory."""
    times = np.linspace(0.0, trajectory.duration, samples)
    return np.array([np.concatenate(trajectory.sample(float(t))) for t in times])


# ------------------------------------------------------------------ near the velocity limit
@pytest.mark.parametrize(
    ("share", "acceleration"),
    [(0.93, 10.0), (0.975, 10.0), (0.98, 10.0), (0.81, 20.0), (0.9, 20.0), (0.99, 5.0)],
)
def test_a_stop_speeding_up_near_the_velocity_limit_is_shortened_to_keep_inside(
    robot: RobotModel, share: float, acceleration: float
) -> None:
    """Over the law's stop time (0.24 s at kp 100) these stops passed joint_1's velocity limit and
    were refused (from 0.922 of it at 10 rad/s², 0.809 at 20); a shorter one keeps inside both the
    velocity limit and the acceleration bound (0.105 s at 22.5 of 25.9 rad/s² from 0.975 at 10)."""
    planner = _planner(robot, 100.0)
    stop = planner.stop(_moving(robot, share, acceleration))
    check_motion(robot, stop, acceleration_limit=planner.acceleration_limit)  # speed and acceleration
    assert stop.duration < planner.stop_time
    assert np.all(stop.velocities[-1] == 0.0) and stop.positions[-1][0] > 0.0


def test_the_shortened_stop_is_the_longest_that_keeps_inside(robot: RobotModel) -> None:
    """From 0.975 of joint_1's limit at 10 rad/s²: 0.105 s, within 5 % (one step of the search) of
    the longest stop to ``q₀ + q̇₀·T/2`` that keeps within the limit."""
    planner = _planner(robot, 100.0)
    start = _moving(robot, 0.975, 10.0)
    stop = planner.stop(start)
    assert stop.duration == pytest.approx(0.1048, abs=5e-4)
    longer = 1.05 * stop.duration
    past = JointTrajectory(
        [longer], [start[0] + 0.5 * longer * start[1]], [np.zeros(7)], [np.zeros(7)], start=start
    )
    with pytest.raises(TargetError, match="above its velocity limit"):
        check_motion(robot, past)


def test_a_stop_from_speed_alone_keeps_the_law_s_stop_time(robot: RobotModel) -> None:
    """No acceleration: the stop slows every joint from its start on, at the limit itself too; it
    keeps its 0.24 s and its point ``q₀ + q̇₀·T_s/2``."""
    planner = _planner(robot, 100.0)
    q0, v0, _ = _moving(robot, 1.0, 0.0)
    stop = planner.stop((q0, v0, None))
    assert stop.duration == pytest.approx(planner.stop_time)
    assert stop.positions[-1][0] == pytest.approx(0.5 * planner.stop_time * v0[0])


@pytest.mark.parametrize(("acceleration", "most"), [(10.0, 1.021), (25.0, 1.105)])
def test_a_stop_at_the_velocity_limit_still_speeding_up_passes_it_least_instead_of_being_refused(
    robot: RobotModel, acceleration: float, most: float
) -> None:
    """At the limit and speeding up, no stop within the acceleration bound keeps inside: the one
    passing the limit least runs (1.020 of it for 12 ms at 10 rad/s², 1.104 for 27 ms at 25),
    within the acceleration bound, where a refusal held the reference at once (its speed stepping
    by 1.40 rad/s). The general check still reports the velocity it passes."""
    planner = _planner(robot, 100.0)
    stop = planner.stop(_moving(robot, 1.0, acceleration))
    states = _sampled(stop)
    assert np.abs(states[:, 7]).max() / robot.velocity_limit[0] < most
    assert np.all(np.abs(states[:, 14:]) <= planner.acceleration_limit + 1e-6)
    with pytest.raises(TargetError, match=r"^the stop from the current motion moves joint_1 at 1\.[45]"):
        check_motion(robot, stop, wording=STOP_WORDING)


def test_a_target_behind_a_reference_speeding_up_near_its_limit_stops_first_within_it(
    robot: RobotModel,
) -> None:
    """The stop a target behind the reference begins with is shortened the same way: from 0.975 of
    joint_1's limit at 10 rad/s² the approach to a target 1 rad behind was refused (its stop passed
    the velocity limit); now it is taken, within the limits."""
    planner = _planner(robot, 100.0)
    start = _moving(robot, 0.975, 10.0)
    approach = planner.plan(start, HOME_Q - _joint_1(1.0))
    check_motion(robot, approach, acceleration_limit=planner.acceleration_limit)
    assert approach.times[1] < planner.stop_time
    assert approach.positions[-1][0] == pytest.approx(-1.0)


def test_check_motion_can_leave_the_speeds_unchecked(robot: RobotModel) -> None:
    """``velocity_limit=inf`` checks the positions alone (what a stop is refused for)."""
    q0, v0, a0 = _moving(robot, 1.0, 25.0)
    fast = JointTrajectory([0.24], [q0 + 0.12 * v0], [np.zeros(7)], [np.zeros(7)], start=(q0, v0, a0))
    with pytest.raises(TargetError, match="above its velocity limit"):
        check_motion(robot, fast)
    check_motion(robot, fast, velocity_limit=np.inf)


# ------------------------------------------------------------------ the tracker
def _tracker(robot: RobotModel) -> tuple[JointTargetTracker, list[str], list[str]]:
    errors: list[str] = []
    warnings: list[str] = []
    ctrl = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
    return JointTargetTracker(ctrl, refuse=errors.append, warn=warnings.append), errors, warnings


def test_a_stop_sent_while_a_trajectory_speeds_up_near_the_limit_does_not_step_the_reference(
    robot: RobotModel,
) -> None:
    """A time-parameterised trajectory speeding joint_1 up at 10 rad/s² to 0.995 of its limit
    (dense points with velocities and accelerations), stopped at 0.97 of it: the stop was refused
    and the reference held at once, its speed stepping by 1.36 rad/s in one period (27 rad/s² of
    command at kd 20). It now stops smoothly: no warning, no step above 0.02 rad/s a period."""
    tracker, errors, warnings = _tracker(robot)
    limit = robot.velocity_limit[0]
    acc, cruise_speed = 10.0, 0.995 * limit
    ramp = cruise_speed / acc
    duration = 2.0 * ramp + 1.0

    def state(t: float) -> tuple[float, float, float]:
        if t < ramp:
            return 0.5 * acc * t * t, acc * t, acc
        if t < ramp + 1.0:
            return 0.5 * acc * ramp**2 + cruise_speed * (t - ramp), cruise_speed, 0.0
        late = t - ramp - 1.0
        q = 0.5 * acc * ramp**2 + cruise_speed * (1.0 + late) - 0.5 * acc * late * late
        return q, cruise_speed - acc * late, -acc

    times = np.linspace(0.0, duration, 61)
    positions, velocities, accelerations = np.tile(HOME_Q, (61, 1)), np.zeros((61, 7)), np.zeros((61, 7))
    for k, t in enumerate(times[:-1]):
        positions[k, 0], velocities[k, 0], accelerations[k, 0] = state(float(t))
    positions[-1, 0] = state(duration - 1e-12)[0]
    tracker.submit_trajectory(TrajectoryPoints(times, positions, velocities, accelerations), 0.0, 0.0)
    period, previous, largest, sent = 1e-3, 0.0, 0.0, None
    for i in range(int(0.5 / period)):
        ref = tracker.reference(JointState(HOME_Q, np.zeros(7), i * period))
        speed = 0.0 if ref.v is None else float(ref.v[0])
        if sent is None and speed > 0.97 * limit:
            tracker.submit_stop()
            sent = i
        largest = max(largest, abs(speed - previous)) if i > 0 else 0.0
        previous = speed
    assert sent is not None and not errors and not warnings, (errors, warnings)
    assert largest < 0.02


def test_a_stop_at_the_limit_still_speeding_up_runs_smoothly_with_a_warning(robot: RobotModel) -> None:
    """The reference at joint_1's velocity limit, speeding up at 10 rad/s²: the stop passing the
    limit least runs (the tracker stopping, not holding), and a warning says it passes the limit."""
    tracker, errors, warnings = _tracker(robot)
    q0, v0, a0 = _moving(robot, 1.0, 10.0)
    # Sampled at its start only.
    moving = JointTrajectory([1.0], [q0 + v0], [v0], [np.zeros(7)], start=(q0, v0, a0))
    tracker.active, tracker.mode = TimedMove(moving, 5.0), JointMode.TRAJECTORY
    tracker.submit_stop()
    tracker.reference(JointState(q0, v0, 5.0))
    assert tracker.mode is JointMode.STOPPING and not errors
    assert len(warnings) == 1 and re.fullmatch(
        r"stop: smooth, though it passes a velocity limit briefly \(the stop from the current motion moves "
        r"joint_1 at 1\.4[0-9]{3} rad/s at 0\.0[0-9]{3} s into it, above its velocity limit 1\.3963 rad/s\)",
        warnings[0],
    ), warnings


# ------------------------------------------------------------------ a rest point far off
def _out_and_back(robot: RobotModel) -> tuple[JointTrajectory, float]:
    """A user's trajectory (positions only) taking joint_1 from −0.6 out to 1.0 (3 s) and back to
    0.02 (6 s), joint_2 from 0 to 0.6, at rest only at its end; and when joint_1 passes 0 on its way
    out (1.248 s, at 0.777 rad/s): 0.02 rad short of its end point, reached 4.75 s later."""
    positions = np.tile(HOME_Q, (3, 1))
    positions[:, 0], positions[:, 1] = [-0.6, 1.0, 0.02], [0.0, 0.3, 0.6]
    user = JointTrajectory([0.0, 3.0, 6.0], positions)
    times = np.linspace(0.0, 3.0, 30001)
    return user, float(next(t for t in times if user.sample(float(t))[0][0] >= 0.0))


def test_a_stop_is_not_held_to_an_end_point_the_motion_passes_on_its_way_out(robot: RobotModel) -> None:
    """Stopped as joint_1 passes 0, 0.02 rad short of the point the trajectory ends at 4.75 s later
    (after going out to 1.0): held to that point, the stop lasted 0.064 s at 21.6 rad/s² (of a 25.9
    bound). Now it is the law's stop, 0.24 s to ``q₀ + q̇₀·T_s/2`` at 4.9 rad/s², as without the
    motion under way."""
    planner = _planner(robot, 100.0)
    user, t = _out_and_back(robot)
    start = user.sample(t)
    stop = planner.stop(start, (user, t))
    assert stop.duration == pytest.approx(planner.stop_time)
    assert np.allclose(stop.positions[-1], planner.stop(start).positions[-1])
    assert stop.positions[-1][0] == pytest.approx(start[0][0] + 0.5 * planner.stop_time * start[1][0])
    assert np.abs(_sampled(stop)[:, 14]).max() < 5.0


def test_a_stop_is_held_no_farther_than_the_motion_goes_past_its_rest_point(robot: RobotModel) -> None:
    """A cubic from joint_1 at 1.2 rad/s to rest 0.08 rad on, 0.3 s later (beyond the 0.24 s stop
    time), runs 0.0064 rad past that point and back; the stop, 0.144 rad on by default, ends where
    the cubic turns (0.0864 rad on), not at its rest point (0.08), over a time short enough not to
    pass it."""
    planner = _planner(robot, 100.0)
    under_way = JointTrajectory(
        [0.3], [HOME_Q + _joint_1(0.08)], [np.zeros(7)], start=(HOME_Q, _joint_1(1.2))
    )
    stop = planner.stop((HOME_Q, _joint_1(1.2), None), (under_way, 0.0))
    assert stop.positions[-1][0] == pytest.approx(0.0864)
    assert _sampled(stop)[:, 0].max() <= 0.0864 + 1e-9


def test_a_stop_is_still_held_to_a_rest_point_the_motion_approaches_without_passing(
    robot: RobotModel,
) -> None:
    """A rest-to-rest quintic of 0.1 rad over 1 s, 0.28 s from its end (beyond the 0.24 s stop
    time): half its speed times the stop time on would pass its goal; the stop ends on it, over the
    whole stop time (0.014 rad at 0.12 rad/s is not short enough to shorten it), and never passes
    it. The quintic's other joints move by rounding (1e-15 rad/s): their ``q₀ + q̇₀·T/2 − q₀``,
    rounded short of ``q̇₀·T/2``, read as held short and shortened the stop to 0.21 s, its point
    0.099 rad."""
    planner = _planner(robot, 100.0)
    rest = np.zeros(7)
    under_way = JointTrajectory([0.0, 1.0], [HOME_Q, HOME_Q + _joint_1(0.1)], [rest, rest], [rest, rest])
    start = under_way.sample(0.72)
    assert (start[0] + 0.5 * planner.stop_time * start[1])[0] > 0.1  # the default point: past it
    stop = planner.stop(start, (under_way, 0.72))
    assert stop.duration == pytest.approx(planner.stop_time)
    assert stop.positions[-1][0] == pytest.approx(0.1)
    assert _sampled(stop)[:, 0].max() <= 0.1 + 1e-9


@pytest.mark.parametrize("accelerations", [False, True])
def test_the_position_range_of_a_trajectory_is_exact(accelerations: bool) -> None:
    """:meth:`JointTrajectory.position_range` against 20 001 samples: the lowest and highest
    positions, to the sampling's resolution and never inside it."""
    rng = np.random.default_rng(7)
    times = np.array([0.0, 0.4, 1.1, 1.5])
    positions = rng.uniform(-1.0, 1.0, (4, 3))
    velocities = rng.uniform(-2.0, 2.0, (4, 3))
    acc = rng.uniform(-5.0, 5.0, (4, 3)) if accelerations else None
    trajectory = JointTrajectory(times, positions, velocities, acc)
    lowest, highest = trajectory.position_range()
    sampled = np.array([trajectory.sample(float(t))[0] for t in np.linspace(0.0, 1.5, 20001)])
    assert np.all(lowest <= sampled.min(axis=0) + 1e-12) and np.all(highest >= sampled.max(axis=0) - 1e-12)
    assert np.allclose(lowest, sampled.min(axis=0), atol=1e-6)
    assert np.allclose(highest, sampled.max(axis=0), atol=1e-6)


def test_a_stop_passing_a_velocity_limit_by_more_than_the_cap_is_refused(robot: RobotModel) -> None:
    """joint_7 at 0.9 of its velocity limit speeding up at 2 000 rad/s² (within its acceleration
    bound, ~8 000: a user's trajectory may ask that): the stop passing its limit least still goes
    several times past it, so it is refused (the tracker holds the reference at once, as for a
    stop into a position limit) instead of run with a warning (a review: up to 48 times the limit)."""
    planner = _planner(robot, 100.0)
    assert planner.acceleration_limit[6] > 2000.0
    v0, a0 = np.zeros(7), np.zeros(7)
    v0[6], a0[6] = 0.9 * robot.velocity_limit[6], 2000.0
    with pytest.raises(TargetError, match=r"joint_7 at .* above its velocity limit"):
        planner.stop((HOME_Q.copy(), v0, a0))
