"""The target trackers of ``core/target_tracking.py``, driven directly with numpy targets (no ROS):
the moves in time, the joint tracker's state machine, pending trajectories, pose and QP task
targets approached, paused and reset. The message side (parsing, refusals of malformed input)
is in ``test_target_guards.py``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
import pytest
from ros_helpers import shipped_parameters

from torque_ctrl_ros.core import JointState, RobotModel, TargetError
from torque_ctrl_ros.core.controllers import (
    AchdRnea,
    ComputedTorque,
    ComputedTorqueConfig,
    PoseReference,
    create_controller,
)
from torque_ctrl_ros.core.controllers.cartesian import rotation_from_quaternion
from torque_ctrl_ros.core.target_tracking import (
    LATE_LEAD,
    SLOW_APPROACH,
    JointMode,
    JointMove,
    JointTargetTracker,
    PendingTrajectory,
    PoseTargetTracker,
    TaskTargetTracker,
    TimedMove,
    TrajectoryPoints,
    same_target,
    step_tolerances,
)
from torque_ctrl_ros.core.trajectory import JointTrajectory
from torque_ctrl_ros.nodes.params import controller_node_config

TOOL = "end_effector_link"
HOME_Q = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
SCENE = Path(__file__).resolve().parents[1] / "mjcf" / "scene.xml"


def _joint_tracker(
    robot: RobotModel, warnings: list[str] | None = None
) -> tuple[JointTargetTracker, list[str]]:
    """Computed torque with kp 100 (kd 20) and the refusals it reports (warnings into ``warnings``)."""
    errors: list[str] = []
    ctrl = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
    warn = (warnings if warnings is not None else []).append
    return JointTargetTracker(ctrl, refuse=errors.append, warn=warn), errors


def _pose_tracker(
    robot: RobotModel, shipped: bool = False, warnings: list[str] | None = None
) -> tuple[PoseTargetTracker, list[str]]:
    """achd_rnea (its defaults, or the shipped configuration) and the refusals it reports
    (warnings into ``warnings``)."""
    if shipped:
        params = controller_node_config(shipped_parameters("controller_node") | {"controller": "achd_rnea"})
        ctrl: Any = create_controller("achd_rnea", robot, params.controller_params)
    else:
        ctrl = AchdRnea(robot)
    errors: list[str] = []
    warn = (warnings if warnings is not None else []).append
    return PoseTargetTracker(ctrl, refuse=errors.append, warn=warn), errors


def _qp_tracker(
    robot: RobotModel, name: str = "qpid", warnings: list[str] | None = None
) -> tuple[TaskTargetTracker, list[str]]:
    """The shipped ``name`` controller's tracker and the refusals it reports (warnings into
    ``warnings``)."""
    params = shipped_parameters("controller_node") | {"controller": name}
    ctrl = create_controller(name, robot, controller_node_config(params).controller_params)
    errors: list[str] = []
    warn = (warnings if warnings is not None else []).append
    return TaskTargetTracker(ctrl, refuse=errors.append, warn=warn), errors  # type: ignore[arg-type]


def _points(points: list[tuple[float, Any]]) -> TrajectoryPoints:
    """Waypoints ``(time_from_start s, positions rad)``, positions only."""
    return TrajectoryPoints(
        np.array([t for t, _ in points], dtype=np.float64),
        np.array([q for _, q in points], dtype=np.float64),
        None,
        None,
    )


def _at_rest(q: np.ndarray, t: float) -> JointState:
    return JointState(q, np.zeros(q.size), t)


def _closed_loop_peak_speeds(
    plant: Any, ctrl: Any, source: Any, steps: int, start: float = 0.0
) -> np.ndarray:
    """Run ``ctrl`` on the references of ``source`` (a tracker or a node's target source) on the
    MuJoCo ``plant`` (1 ms steps from the state stamp ``start``, s; no torque saturated) and
    return each joint's largest speed (rad/s)."""
    peak = np.zeros(plant.n)
    for k in range(steps):
        state = JointState(plant.q.copy(), plant.v.copy(), start + k * 1e-3)
        out = ctrl.compute(state, source.reference(state))
        assert not out.saturated.any()
        plant.set_torque(out.tau)
        plant.step()
        peak = np.maximum(peak, np.abs(plant.v))
    return peak


# ------------------------------------------------------------------ the shared pieces
def test_a_timed_move_is_sampled_from_its_start_and_moved_on_by_a_pause() -> None:
    move = JointTrajectory([1.0], [[1.0]], start=(np.array([0.0]), None))
    timed: JointMove = TimedMove(move, 10.0)
    np.testing.assert_array_equal(timed.sample(10.5)[0], move.sample(0.5)[0])
    assert not timed.arrived(10.999) and timed.arrived(11.0)
    assert timed.under_way(10.25) == (move, 0.25)
    timed.shift(2.0)  # a 2 s pause: it takes up where it stood
    assert timed.t0 == 12.0 and not timed.arrived(11.0)
    np.testing.assert_array_equal(timed.sample(12.5)[0], move.sample(0.5)[0])


def test_the_same_target_is_the_same_bit_for_bit() -> None:
    q = np.array([0.1, 0.2])
    assert same_target(q, q.copy()) and not same_target(q, None)
    assert not same_target(q, np.nextafter(q, 1.0))
    pose = PoseReference(np.array([0.4, 0.0, 0.3]), np.eye(3))
    assert same_target(pose, PoseReference(pose.position.copy(), np.eye(3), np.ones(6)))  # twist aside
    turned = PoseReference(pose.position.copy(), pin.exp3(np.array([0.0, 0.0, 1e-9])))
    assert not same_target(pose, turned) and not same_target(pose, np.eye(3))
    assert not same_target(np.eye(3), pose)


def test_a_quaternion_becomes_a_rotation_or_is_refused() -> None:
    rotation = pin.rpy.rpyToMatrix(0.3, -0.2, 0.4)
    x, y, z, w = pin.Quaternion(rotation).coeffs()
    np.testing.assert_allclose(rotation_from_quaternion((x, y, z, w)), rotation, atol=1e-12)
    np.testing.assert_allclose(rotation_from_quaternion((1.05 * x, 1.05 * y, 1.05 * z, 1.05 * w)), rotation)
    for bad, match in (((0, 0, 0, 0), "expected unit norm"), ((math.nan, 0, 0, 1), "quaternion")):
        with pytest.raises(TargetError, match=match):
            rotation_from_quaternion(bad)


def test_step_tolerances_follow_the_gains() -> None:
    """A step of the reference's velocity or acceleration may change the law's command no more than
    the 0.01 rad position tolerance does: kp·0.01/kd and kp·0.01; unbounded without damping."""
    velocity, acceleration = step_tolerances(np.array([100.0, 100.0]), np.array([20.0, 0.0]))
    np.testing.assert_allclose(velocity, [0.05, np.inf])
    np.testing.assert_allclose(acceleration, [1.0, 1.0])


# ------------------------------------------------------------------ joint targets
def test_the_joint_tracker_states(robot: RobotModel) -> None:
    """From the first state's position held, through a joint target's approach (the same target
    sent again changes nothing), a smooth stop, a hold at once of a reference at rest, to a
    reset that holds where the arm is."""
    tracker, errors = _joint_tracker(robot)
    assert tracker.mode is JointMode.START and tracker.describe() == "hold"
    held = tracker.reference(_at_rest(HOME_Q, 1.0))
    np.testing.assert_array_equal(held.q, HOME_Q)
    assert tracker.mode is JointMode.HOLD and tracker.reference(_at_rest(HOME_Q + 0.1, 1.001)) is held

    goal = HOME_Q + np.eye(7)[0] * 0.6
    tracker.submit_target(goal)
    assert tracker.reference(_at_rest(HOME_Q, 1.002)).q[0] == pytest.approx(HOME_Q[0])
    assert tracker.mode is JointMode.JOINT_TARGET and tracker.describe() == "joint_target"
    assert tracker.goal is goal and tracker.active is not None and tracker.active.t0 == 1.002
    approach = tracker.active.move
    tracker.submit_target(goal.copy())  # sent again
    moving = tracker.reference(_at_rest(HOME_Q, 2.0))
    assert tracker.active.move is approach and moving.v is not None and moving.v[0] > 0.1

    tracker.submit_stop()
    stopping = tracker.reference(_at_rest(HOME_Q, 2.0))
    assert tracker.mode is JointMode.STOPPING and tracker.describe() == "hold" and tracker.goal is None
    np.testing.assert_allclose(stopping.v, moving.v, rtol=0, atol=1e-12)  # no step
    stop_time = tracker.planner.stop_time
    rest = tracker.reference(_at_rest(HOME_Q, 2.0 + stop_time))
    assert rest.q[0] == pytest.approx(moving.q[0] + 0.5 * stop_time * moving.v[0], abs=1e-12)
    tracker.submit_stop()  # at rest: held at once
    again = tracker.reference(_at_rest(HOME_Q, 3.0))
    assert tracker.mode is JointMode.HOLD and tracker.active is None and np.array_equal(again.q, rest.q)

    tracker.reset()
    assert tracker.mode is JointMode.START
    np.testing.assert_array_equal(tracker.reference(_at_rest(HOME_Q + 0.1, 3.001)).q, HOME_Q + 0.1)
    assert errors == []


def test_a_trajectory_waiting_for_its_stamp_outlives_the_target_under_way_sent_again(
    robot: RobotModel,
) -> None:
    """A device re-sending its joint target (the one under way) while a trajectory waits for its
    stamp: the repeat changes nothing and the trajectory starts at its stamp; another joint
    target or a stop replaces it, and says so. Mutant: every joint target replacing the waiting
    trajectory without a word (a review: it never ran, nothing logged)."""
    warnings: list[str] = []
    tracker, errors = _joint_tracker(robot, warnings)
    goal = HOME_Q + np.eye(7)[0] * 0.1
    tracker.submit_target(goal)
    tracker.reference(_at_rest(HOME_Q, 1.0))
    later = TrajectoryPoints(np.array([1.0]), (HOME_Q + np.eye(7)[0] * 0.3)[None], None, None)
    tracker.submit_trajectory(later, 3.0, 1.5)
    for k in range(1, 40):  # the target under way, again at 30 Hz
        tracker.submit_target(goal.copy())
        tracker.reference(_at_rest(HOME_Q, 1.0 + k / 30.0))
    assert isinstance(tracker.pending, PendingTrajectory) and tracker.mode is JointMode.JOINT_TARGET
    tracker.reference(_at_rest(HOME_Q, 3.0))
    assert tracker.mode is JointMode.TRAJECTORY and warnings == [] and errors == []
    for replace, by in (
        (lambda: tracker.submit_target(HOME_Q), "a joint target"),
        (tracker.submit_stop, "a stop"),
    ):
        tracker.submit_trajectory(later, 5.0, 4.0)
        replace()
        assert not isinstance(tracker.pending, PendingTrajectory)
        assert warnings.pop() == (
            f"joint trajectory stamped 5.000 s, pending, replaced by {by}"
            + (" (an empty trajectory)" if by == "a stop" else "")
            + " before it started"
        )


def test_stops_from_a_hold_keep_the_held_point_where_the_arm_sags(robot: RobotModel) -> None:
    """An arrived joint target, the arm 0.04 rad below it on joint_2 (a load the model lacks): a
    first stop and a second one both keep the reference where it stands, as a stop of a
    reference at rest does; moved to the arm, the second would lower the held point by 0.04."""
    tracker, errors = _joint_tracker(robot)
    goal = np.array([0.0, 0.5, 0.0, 1.0, 0.0, 0.5, 0.0])
    sagged = goal + np.eye(7)[1] * 0.04
    tracker.submit_target(goal)
    tracker.reference(_at_rest(goal.copy(), 0.0))
    np.testing.assert_array_equal(tracker.reference(_at_rest(sagged, 5.0)).q, goal)
    for k in (1, 2, 3):
        tracker.submit_stop()
        held = tracker.reference(_at_rest(sagged, 5.0 + 0.001 * k))
        assert tracker.mode is JointMode.HOLD
        np.testing.assert_array_equal(held.q, goal)
    # Before any reference, a stop holds the arm where it is.
    fresh, _ = _joint_tracker(robot)
    fresh.submit_stop()
    np.testing.assert_array_equal(fresh.reference(_at_rest(sagged, 0.0)).q, sagged)
    assert errors == []


@pytest.mark.parametrize(
    "offset", [[1.0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 1.0], [0.2, -0.1, 0.3, 0.2, -0.3, 0.2, 0.4]]
)
def test_a_joint_target_is_approached_within_the_velocity_limits(
    robot: RobotModel, offset: list[float]
) -> None:
    """Computed torque on the MuJoCo plant, from home to a joint target 1 rad away on joint_1 /
    joint_7 (and a mixed one): stepped into the law at once, such a target drives those joints at
    3.7 rad/s against their 1.4 / 1.2 rad/s limits (joint_7 at 1.47 for the mixed one), with no
    torque saturated to tell. Approached, every joint stays within about half its limit."""
    from torque_ctrl_ros.sim.plant import MujocoPlant

    plant = MujocoPlant(SCENE, robot.joint_names)
    plant.reset("home")
    ctrl = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
    errors: list[str] = []
    tracker = JointTargetTracker(ctrl, refuse=errors.append)
    goal = plant.q + np.array(offset)
    tracker.submit_target(goal)
    peak = _closed_loop_peak_speeds(plant, ctrl, tracker, 4000)
    assert np.all(peak <= 0.55 * robot.velocity_limit), (peak / robot.velocity_limit).round(3)
    assert np.abs(robot.difference(goal, plant.q)).max() < 1e-4
    assert tracker.describe() == "joint_target" and errors == []


def test_a_trajectory_is_refused_on_a_bad_stamp_or_motion(robot: RobotModel) -> None:
    tracker, _ = _joint_tracker(robot)
    goal = np.full(7, 0.1)
    with pytest.raises(TargetError, match="negative"):
        tracker.submit_trajectory(_points([(1.0, goal)]), -5.0, now=100.0)
    with pytest.raises(TargetError, match="another clock"):
        tracker.submit_trajectory(_points([(1.0, goal)]), 1.8e9, now=100.0)
    fast = np.eye(7)[1] * 1.2  # 1.8 rad/s at mid-way on joint_2 (limit 1.396)
    with pytest.raises(TargetError, match="velocity limit"):
        tracker.submit_trajectory(_points([(0.0, np.zeros(7)), (1.0, fast)]), 0.0, now=100.0)
    assert tracker.pending is None
    tracker.submit_trajectory(_points([(1.0, goal)]), 130.0, now=100.0)
    # mypy keeps `pending is None` from the assert above across submit_trajectory:
    assert tracker.pending == PendingTrajectory(130.0, tracker.pending.points)  # type: ignore[attr-defined]


@pytest.mark.parametrize("first", [0.5, 0.0])
@pytest.mark.parametrize("a0", [24.0, 40.0])
def test_a_first_waypoints_acceleration_is_held_to_the_bound_when_it_arrives(
    robot: RobotModel, a0: float, first: float
) -> None:
    """A quintic whose first point (at 0.5 s, or at 0) asks ``a0`` rad/s² of joint_1 (bound 25.85):
    above the bound refused on arrival, naming the point, as a later waypoint's would be; until a
    review it was "received" and refused only when it took effect (4 s later here), the first
    segment's bound widened to the first point's as if it were the start's. At time 0 the point's
    acceleration gives way to the reference's when it takes effect, but was refused only then
    (a later review, 2026-12-08)."""
    tracker, errors = _joint_tracker(robot)
    q0 = np.array([0.0, 0.5, 0.0, 1.0, 0.0, 0.5, 0.0])
    tracker.reference(_at_rest(q0, 1.0))
    positions = np.tile(q0, (2, 1))
    positions[1, 0] += 0.02
    accelerations = np.zeros((2, 7))
    accelerations[0, 0] = a0
    points = TrajectoryPoints(np.array([first, first + 0.3]), positions, np.zeros((2, 7)), accelerations)
    if a0 > tracker.acceleration_limit[0]:
        with pytest.raises(
            TargetError, match=r"point 0 accelerates joint_1 at 40\.00 rad/s², above its bound 25\.8"
        ):
            tracker.submit_trajectory(points, 5.0, 1.0)
    else:
        tracker.submit_trajectory(points, 5.0, 1.0)
        tracker.reference(_at_rest(q0, 5.0))
        assert errors == [] and tracker.describe() == "trajectory", errors


@pytest.mark.parametrize("late", [0.0, 0.0002, 0.0005, 0.0009, 0.00099, 0.001, 0.002, 0.005])
def test_a_trajectory_stamped_a_little_late_is_taken_whatever_the_fraction_of_a_ms(
    robot: RobotModel, late: float
) -> None:
    """A sender stamping ``header.stamp = now`` arrives a transport delay late. A 1 kHz-dense 0.1
    rad minimum-jerk trajectory on joint_1 stamped that late is taken with the first segment's
    acceleration bounded, not refused at 50 to 6927 rad/s² because the first point still ahead
    happens to come microseconds after the state (0.9, 0.99 ms late): points due within
    LATE_LEAD are dropped too. Stamped after the state before it (under 1 ms late), no state
    missed it: it starts whole at the next state, a fraction of a period after its stamp."""
    whole = late < 0.001
    tracker, errors = _joint_tracker(robot)
    q0 = np.array([0.0, 0.5, 0.0, 1.0, 0.0, 0.5, 0.0])
    t = 10.0
    tracker.reference(_at_rest(q0, t))
    times = np.arange(201, dtype=np.float64) * 0.001
    s = times / times[-1]
    positions = np.tile(q0, (times.size, 1))
    positions[:, 0] += 0.1 * s**3 * (10.0 + s * (6.0 * s - 15.0))
    tracker.submit_trajectory(TrajectoryPoints(times, positions, None, None), t + 0.001 - late, t)
    t2 = t + 0.001
    ref = tracker.reference(_at_rest(q0, t2))
    assert errors == [] and tracker.mode is JointMode.TRAJECTORY
    np.testing.assert_allclose(ref.q, q0, atol=1e-12)
    assert tracker.active is not None
    first = tracker.active.move.times[1]  # the first point kept (times[0]: the start)
    assert first >= LATE_LEAD if not whole else first == pytest.approx(0.001, abs=1e-12)
    # At most the trajectory's own peak, 10/√3·0.1/0.2² = 14.4 rad/s², what it asks on time;
    # over its first segment, from the reference, far less.
    peak = max(abs(tracker.active.sample(t2 + x)[2][0]) for x in np.linspace(0.0, 0.2, 2001))
    assert peak < 14.5, peak
    segment = max(abs(tracker.active.sample(t2 + x)[2][0]) for x in np.linspace(0.0, first, 101))
    assert segment < 10.0, segment
    end = tracker.reference(_at_rest(q0, t2 + 0.2 - (0.0 if whole else late)))
    np.testing.assert_allclose(end.q, positions[-1], atol=1e-12)


@pytest.mark.parametrize("late", [0.001, 0.005])
def test_a_late_trajectory_s_first_point_at_time_0_is_checked_before_it_is_dropped(
    robot: RobotModel, late: float
) -> None:
    """A first point at time 0 is where the sender's path starts. Stamped 1 or 5 ms late, its due
    points are dropped, but that one is checked first, as on time: 1 rad off the arm it is refused
    (it had been dropped unchecked, the reference running from where it stood straight to the next
    point, a path the sender never planned: a review). On the arm, with the room the reference
    moved meanwhile, it is taken."""
    for offset, taken in ((1.0, False), (0.005, True)):
        tracker, errors = _joint_tracker(robot)
        t = 10.0
        tracker.reference(_at_rest(HOME_Q, t))
        first = HOME_Q + np.eye(7)[0] * offset
        points = _points([(0.0, first), (3.0, HOME_Q + np.eye(7)[0] * 1.2)])
        tracker.submit_trajectory(points, t + 0.001 - late, t)
        tracker.reference(_at_rest(HOME_Q, t + 0.001))
        if taken:
            assert errors == [] and tracker.mode is JointMode.TRAJECTORY, errors
        else:
            assert tracker.mode is not JointMode.TRAJECTORY
            assert (
                len(errors) == 1 and "its first point, at time_from_start 0, is 1.000 rad from" in errors[0]
            )
            assert "from the reference at its header.stamp and from the arm" in errors[0], errors


@pytest.mark.parametrize("late", [0.06, 0.1])
def test_a_late_trajectory_s_first_point_is_checked_against_the_reference_at_its_stamp(
    robot: RobotModel, late: float
) -> None:
    """A 0.5 rad move on joint_1 over 0.6 s, ending at rest; a second trajectory stamped 60 or 100
    ms before the state it takes effect at, its first point (time 0) where the reference was at
    that stamp (14 / 37 mrad from where it stands now): taken, as on time. Checked against the
    reference now, with room for its speed now (0 at rest), it was refused (a review). A first
    point 0.1 rad ahead of the reference at the stamp, along the motion, is refused."""
    for ahead in (0.0, 0.1):
        tracker, errors = _joint_tracker(robot)
        t = 10.0
        tracker.reference(_at_rest(HOME_Q, t))
        tracker.submit_trajectory(_points([(0.0, HOME_Q), (0.6, HOME_Q + np.eye(7)[0] * 0.5)]), 0.0, t)
        tracker.reference(_at_rest(HOME_Q, t + 0.001))
        start = t + 0.001
        refs = {}
        for k in range(1, 600):
            stamp = round(start + k * 0.001, 9)
            refs[stamp] = tracker.reference(_at_rest(HOME_Q, stamp)).q.copy()
        now = round(start + 600 * 0.001, 9)
        stamp = round(now - late, 9)
        first = refs[stamp] + np.eye(7)[0] * ahead
        assert abs(first[0] - refs[max(refs)][0]) > 0.01  # the reference moved on since the stamp
        tracker.submit_trajectory(
            _points([(0.0, first), (1.0, first - np.eye(7)[0] * 0.2)]), stamp, now - 0.001
        )
        tracker.reference(_at_rest(refs[max(refs)], now))
        if ahead:
            assert len(errors) == 1 and "from the reference at its header.stamp" in errors[0], errors
        else:
            assert errors == [] and tracker.mode is JointMode.TRAJECTORY, errors


def test_a_late_trajectory_whose_points_all_come_within_the_lead_keeps_its_last(robot: RobotModel) -> None:
    """Its last point 5 ms ahead of the state, the others due: reached LATE_LEAD after the state
    (10 ms), not over 5 ms; one that ended before the state is still refused."""
    tracker, errors = _joint_tracker(robot)
    t = 10.0
    tracker.reference(_at_rest(HOME_Q, t))
    goal = HOME_Q + np.eye(7)[0] * 1e-4
    tracker.submit_trajectory(_points([(0.0, HOME_Q), (0.5, HOME_Q), (0.52, goal)]), t - 0.515, t)
    tracker.reference(_at_rest(HOME_Q, t))
    assert errors == [] and tracker.active is not None
    np.testing.assert_array_equal(tracker.active.move.times, [0.0, LATE_LEAD])
    np.testing.assert_allclose(tracker.reference(_at_rest(HOME_Q, t + LATE_LEAD)).q, goal, atol=1e-12)
    tracker.submit_trajectory(_points([(0.5, goal)]), t - 0.6, t)
    tracker.reference(_at_rest(HOME_Q, t + 0.02))
    assert len(errors) == 1 and "ended 0.120 s before" in errors[0], errors


@pytest.mark.parametrize("offset", [0.0, 1e-4, 5e-4, 9e-4])
def test_a_trajectory_that_waited_for_its_stamp_starts_whole_wherever_the_stamp_falls(
    robot: RobotModel, offset: float
) -> None:
    """Stamped ``offset`` s after a state of a 1 kHz stream, it takes effect at the next state,
    a fraction of a period after its stamp. Taken as late there, a lone point at time 0 was
    refused as "ended 0.001 s before the joint state", and a first point at time 0 far from the
    reference was dropped unchecked (the reference then ran to it); exactly on a state, both were
    handled as stamp 0. Now alike wherever the stamp falls."""
    q0 = np.array([0.0, 0.5, 0.0, 1.0, 0.0, 0.5, 0.0])
    near, far = q0 + np.eye(7)[0] * 0.005, q0 + np.eye(7)[0] * 1.5
    for points, refused in (([(0.0, near)], None), ([(0.0, far), (4.0, far)], "first point")):
        tracker, errors = _joint_tracker(robot)
        stamp = 10.1 + offset
        tracker.submit_trajectory(_points(points), stamp, now=10.0)
        for k in range(300):
            ref = tracker.reference(_at_rest(q0, 10.0 + k * 1e-3))
        if refused is None:
            assert errors == [] and tracker.describe() == "trajectory", errors
            np.testing.assert_allclose(ref.q, near, atol=1e-12)
        else:
            assert len(errors) == 1 and refused in errors[0] and tracker.describe() == "hold", errors
            np.testing.assert_allclose(ref.q, q0, atol=1e-12)


@pytest.mark.parametrize("offset", [1e-4, 5e-4, 9e-4])
def test_a_trajectory_stamped_between_the_last_state_and_the_next_starts_whole(
    robot: RobotModel, offset: float
) -> None:
    """As above, but submitted after the state before its stamp (a sender stamping "now" from its
    own clock): no state waited for it, yet none missed it either. Taken as late by the fraction
    of a period, a lone point at time 0 was refused as "ended" and a first point at time 0
    1.5 rad off was dropped unchecked, the reference running 1.5 rad from a start its sender did
    not plan (a review); stamped on that state, it is still late by the period that passed."""
    q0 = np.array([0.0, 0.5, 0.0, 1.0, 0.0, 0.5, 0.0])
    near, far = q0 + np.eye(7)[0] * 0.005, q0 + np.eye(7)[0] * 1.5
    for points, refused in (([(0.0, near)], None), ([(0.0, far), (4.0, far)], "first point")):
        tracker, errors = _joint_tracker(robot)
        tracker.reference(_at_rest(q0, 10.0))
        tracker.submit_trajectory(_points(points), 10.0 + offset, now=10.0)
        ref = tracker.reference(_at_rest(q0, 10.001))
        if refused is None:
            assert errors == [] and tracker.describe() == "trajectory", errors
            np.testing.assert_allclose(ref.q, near, atol=1e-12)
        else:
            assert len(errors) == 1 and refused in errors[0] and tracker.describe() == "hold", errors
    tracker, errors = _joint_tracker(robot)
    tracker.reference(_at_rest(q0, 10.0))
    tracker.submit_trajectory(_points([(0.0, near)]), 10.0, now=10.0)
    tracker.reference(_at_rest(q0, 10.001))
    assert len(errors) == 1 and "ended 0.001 s before" in errors[0], errors


@pytest.mark.parametrize("resume", [2.2, 2.8, 3.05])
def test_a_trajectory_kept_by_a_reset_runs_whole_when_the_states_resume_after_its_stamp(
    robot: RobotModel, resume: float
) -> None:
    """0.6 rad on joint_2 over 2 s stamped 1.5 s, the control stopped at 1.0 s (a watchdog
    fallback, then :meth:`reset`) and resumed at ``resume``. Taken as late, its points due
    meanwhile were dropped and the rest squeezed into the time left: peak 0.69 / 1.29 rad/s
    (limit 1.40) at 2.2 / 2.8 s, refused at 3.05 s, against 0.45 on time. It now starts whole
    at the resume state."""
    q0 = np.array([0.0, 0.5, 0.0, 1.0, 0.0, 0.5, 0.0])
    goal = q0 + np.eye(7)[1] * 0.6

    def peak_and_end(resume: float | None) -> tuple[float, float]:
        """The reference's peak speed on joint_2 (rad/s) and when it reached the goal (s), states
        every 1 ms from 0.9 s, none from 1.0 s to ``resume`` (reset there)."""
        tracker, errors = _joint_tracker(robot)
        tracker.submit_trajectory(_points([(2.0, goal)]), 1.5, now=0.9)
        peak, end = 0.0, math.nan
        for t in np.arange(900, 6000) * 1e-3:
            if resume is not None and 1.0 < t < resume:
                continue
            if resume is not None and t >= resume and math.isnan(end) and peak == 0.0:
                tracker.reset()  # once, at the first state after the stop (as the node does)
                resume = None
            ref = tracker.reference(_at_rest(q0, t))
            peak = max(peak, 0.0 if ref.v is None else abs(ref.v[1]))
            if math.isnan(end) and abs(ref.q[1] - goal[1]) < 1e-12:
                end = t
        assert errors == [], errors
        return peak, end

    on_time_peak, on_time_end = peak_and_end(None)
    peak, end = peak_and_end(resume)
    assert peak == pytest.approx(on_time_peak, rel=1e-6)
    assert end == pytest.approx(resume + 2.0, abs=2e-3) and on_time_end == pytest.approx(3.5, abs=2e-3)


def test_a_pending_trajectory_is_dropped_by_a_reset_and_shifted_by_a_pause(robot: RobotModel) -> None:
    """Kept through a simulator restart, a trajectory stamped for later would start in the new run
    at the old run's stamp; dropped by a stop on the same clock, one sent while the arm was
    stopped would be lost without a word; activated after a fallback that its stamp fell in, it
    would be compressed into the time left (1 s asked, 0.6 s run); one stamped after a fallback
    must not be moved up to its end."""
    goal = np.zeros(7)
    goal[0] = 0.5
    at_rest = np.zeros(7)

    def state(t: float) -> JointState:
        return JointState(at_rest, at_rest, t)

    tracker, errors = _joint_tracker(robot)
    tracker.reference(state(100.0))
    tracker.submit_trajectory(_points([(1.0, goal)]), 101.5, now=100.0)
    tracker.reference(state(100.001))
    tracker.reset()  # a stop on the same clock: it still starts at its stamp
    assert tracker.reference(state(101.4)).q[0] == 0.0 and tracker.describe() == "hold"
    tracker.reference(state(101.6))
    assert tracker.describe() == "trajectory" and tracker.reference(state(102.0)).q[0] > 0.1
    tracker.submit_trajectory(_points([(1.0, goal)]), 102.8, now=100.0)
    tracker.reset(clock_reset=True)  # the clock went back: dropped, and said so
    assert tracker.reference(state(102.9)).q[0] == 0.0 and tracker.describe() == "hold"
    assert len(errors) == 1 and "clock went back" in errors[-1]
    # Stamped on the restarted simulator's clock, before the last state of the old run: the same.
    tracker.submit_trajectory(_points([(1.0, goal)]), 3.0, now=102.9)
    tracker.reset(clock_reset=True)
    assert len(errors) == 2 and "trajectory stamped 3.000 s dropped: the clock went back" in errors[-1]

    tracker.submit_trajectory(_points([(1.0, goal)]), 100.5, now=100.0)
    tracker.reference(state(100.2))
    assert tracker.pause(100.2, 100.9)  # a fallback from 100.2 to 100.9, over the stamp: held up
    assert tracker.reference(state(100.9)).q[0] == pytest.approx(0.0)
    assert tracker.reference(state(101.5)).q[0] < 0.45  # 0.6 s into its 1 s
    assert tracker.reference(state(101.9)).q[0] == pytest.approx(0.5)
    # A fallback that ended before a trajectory's stamp leaves the stamp as it was.
    tracker.submit_trajectory(_points([(1.0, at_rest)]), 103.0, now=102.0)
    tracker.reference(state(102.0))
    assert not tracker.pause(102.0, 102.5)
    tracker.reference(state(102.6))
    assert tracker.reference(state(102.9)).q[0] == pytest.approx(0.5)
    assert tracker.reference(state(103.0)).q[0] == pytest.approx(0.5)
    assert tracker.reference(state(103.5)).q[0] == pytest.approx(0.25)  # half way, on time


def test_a_reset_drops_the_pending_joint_targets_due_at_the_next_state(robot: RobotModel) -> None:
    """After a stop the target is dropped and the arm held where control resumes: a joint target,
    a stop or a trajectory submitted but not yet taken belongs to the motion the stop ended, and
    taken at the resuming state it would set the arm moving toward it; each is dropped with a
    warning (a stop without: the arm holds anyway). Only a trajectory stamped
    after the last state seen waits for its stamp through the reset (tested above)."""
    goal = HOME_Q + np.eye(7)[0] * 0.5
    moved = HOME_Q + 0.05
    submissions = {
        "joint target": lambda t: t.submit_target(goal),
        "stop": lambda t: t.submit_stop(),
        "trajectory at the next state": lambda t: t.submit_trajectory(_points([(1.0, goal)]), 0.0, now=1.0),
        "trajectory stamped in the past": lambda t: t.submit_trajectory(
            _points([(0.5, goal), (1.0, goal)]), 0.9, now=1.0
        ),
    }
    for what, submit in submissions.items():
        warnings: list[str] = []
        tracker, errors = _joint_tracker(robot, warnings)
        tracker.reference(_at_rest(HOME_Q, 1.0))
        submit(tracker)
        tracker.reset()
        assert tracker.pending is None, what
        # Said, not dropped without a word (a stop needs no word: the arm holds anyway).
        assert len(warnings) == (what != "stop"), what
        assert all("received while the arm was not controlled dropped" in w for w in warnings)
        held = tracker.reference(_at_rest(moved, 1.2))
        np.testing.assert_array_equal(held.q, moved, err_msg=what)
        assert tracker.active is None and tracker.describe() == "hold", what
        assert tracker.reference(_at_rest(moved, 2.5)) is held and errors == [], what


# ------------------------------------------------------------------ pose targets
@pytest.mark.parametrize("move", [[0.0, 0.3, 0.0], [-0.2, 0.2, 0.1]])
def test_a_pose_target_is_approached_within_the_velocity_limits(robot: RobotModel, move: list[float]) -> None:
    """achd_rnea on the MuJoCo plant, from home to a pose 0.3 m away (turned by ~0.5 rad too):
    stepped into the law at once, a position target alone drives joint_5 at 3.9 (4.2) times its
    velocity limit. Approached, no joint passes 0.7 of its limit and the tool ends on the target."""
    from torque_ctrl_ros.sim.plant import MujocoPlant

    plant = MujocoPlant(SCENE, robot.joint_names)
    plant.reset("home")
    tracker, errors = _pose_tracker(robot, shipped=True)
    ctrl = tracker.controller
    tool = robot.frame_placement(plant.q, TOOL)
    rotation = pin.rpy.rpyToMatrix(0.3, -0.2, 0.4) @ tool.rotation
    x, y, z, w = pin.Quaternion(rotation).coeffs()
    tracker.submit(PoseReference(tool.translation + np.array(move), rotation_from_quaternion((x, y, z, w))))
    peak = _closed_loop_peak_speeds(plant, ctrl, tracker, 4000)
    assert np.all(peak <= 0.7 * robot.velocity_limit), (peak / robot.velocity_limit).round(3)
    end = robot.frame_placement(plant.q, TOOL)
    assert np.linalg.norm(end.translation - (tool.translation + move)) < 1e-4
    assert np.linalg.norm(pin.log3(end.rotation.T @ rotation)) < 1e-4
    assert tracker.describe() == "target_pose" and tracker.active is None  # arrived, held
    assert tracker.held is not None and errors == []


def test_the_pose_tracker_holds_a_goal_reached_and_keeps_one_sent_again(robot: RobotModel) -> None:
    tracker, errors = _pose_tracker(robot)
    start = tracker.reference(_at_rest(HOME_Q, 1.0))
    assert tracker.describe() == "hold" and tracker.reference(_at_rest(HOME_Q, 1.001)) is start
    goal = PoseReference(start.position + np.array([0.0, 0.1, 0.0]), start.rotation)
    tracker.submit(goal)
    tracker.reference(_at_rest(HOME_Q, 1.0))
    assert tracker.active is not None
    approach = tracker.active.move
    tracker.submit(PoseReference(goal.position.copy(), goal.rotation.copy()))  # sent again
    tracker.reference(_at_rest(HOME_Q, 1.3))
    assert tracker.active.move is approach
    tracker.pause(1.3, 11.3)  # 10 s of fallback: taken up where it stood
    assert tracker.active.t0 == pytest.approx(11.0)
    end = tracker.reference(_at_rest(HOME_Q, tracker.active.t0 + approach.duration + 1e-3))
    assert tracker.active is None and tracker.held is end
    np.testing.assert_allclose(end.position, goal.position, atol=1e-12)
    assert tracker.reference(_at_rest(HOME_Q, 100.0)) is end and errors == []


def test_a_new_pose_target_mid_approach_starts_where_the_reference_stands(robot: RobotModel) -> None:
    tracker, errors = _pose_tracker(robot)
    start = tracker.controller.hold_reference(_at_rest(HOME_Q, 1.0))
    tracker.submit(PoseReference(start.position + np.array([0.0, 0.2, 0.0]), np.eye(3)))
    tracker.reference(_at_rest(HOME_Q, 1.0))
    before = tracker.reference(_at_rest(HOME_Q, 1.3)).position
    tracker.submit(PoseReference(start.position + np.array([0.0, 0.0, 0.15]), np.eye(3)))
    after = tracker.reference(_at_rest(HOME_Q, 1.301)).position
    assert np.linalg.norm(after - before) < 1e-3  # one period of motion, not a jump to the old goal
    assert errors == []


def test_a_reset_mid_approach_holds_where_the_arm_is(robot: RobotModel) -> None:
    tracker, _ = _pose_tracker(robot)
    start = tracker.controller.hold_reference(_at_rest(HOME_Q, 1.0))
    tracker.submit(PoseReference(start.position + np.array([0.0, 0.2, 0.0]), np.eye(3)))
    tracker.reference(_at_rest(HOME_Q, 1.0))
    tracker.reference(_at_rest(HOME_Q, 1.3))
    tracker.reset()
    state = _at_rest(HOME_Q, 1.301)
    assert tracker.describe() == "hold"
    assert (
        np.linalg.norm(tracker.reference(state).position - tracker.controller.hold_reference(state).position)
        < 1e-9
    )


def test_a_reset_drops_a_pending_pose_target(robot: RobotModel) -> None:
    """A target submitted before a stop is not taken at the resuming state, and that is said: the
    arm holds there."""
    warnings: list[str] = []
    tracker, errors = _pose_tracker(robot, warnings=warnings)
    start = tracker.reference(_at_rest(HOME_Q, 1.0))
    tracker.submit(PoseReference(start.position + np.array([0.0, 0.1, 0.0]), start.rotation))
    tracker.reset()
    moved = HOME_Q + 0.05
    state = _at_rest(moved, 1.2)
    held = tracker.reference(state)
    assert tracker.active is None and tracker.goal is None and tracker.describe() == "hold"
    np.testing.assert_allclose(held.position, tracker.controller.hold_reference(state).position, atol=1e-12)
    assert errors == [] and len(warnings) == 1 and warnings[0].startswith("target pose received while")


# ------------------------------------------------------------------ QP task targets
def test_qp_task_targets_are_approached_from_where_their_references_stand(robot: RobotModel) -> None:
    """A tool target and a joint target to qpid: neither steps the reference (each starts where
    the task's reference stands, at rest), both end on their targets at rest; a new tool target
    mid-move starts where the moving reference stands; a pause shifts the moves; a reset holds
    where the arm is."""
    tracker, errors = _qp_tracker(robot, "qpid")
    state = JointState(HOME_Q, np.zeros(7), 1.0)
    held = tracker.reference(state)
    start = held["tool"]
    goal_q = HOME_Q + np.array([0.3, 0.0, -0.2, 0.0, 0.0, 0.0, 0.0])
    tracker.submit("tool", PoseReference(start.translation + np.array([0.0, 0.2, 0.0]), np.eye(3)))
    tracker.submit_posture(goal_q)
    first = tracker.reference(state)
    assert np.allclose(first["tool"].pose.translation, start.translation, atol=1e-12)
    assert np.allclose(first["tool"].pose.rotation, start.rotation, atol=1e-12)  # pose task: kept
    assert not np.any(first["tool"].velocity) and np.allclose(first["posture"].q, HOME_Q, atol=1e-12)
    pose_move = tracker.pose_moves["tool"].move
    joint_move = tracker.joint_moves["posture"].move
    # The posture task's kp (10) sets its shortest approach: √(5.77/10) s.
    assert joint_move.duration >= math.sqrt(10.0 / math.sqrt(3.0) / 10.0) - 1e-12
    early = tracker.reference(JointState(HOME_Q, np.zeros(7), 1.0 + joint_move.duration / 2))
    assert np.abs(early["posture"].v).max() > 0.01
    middle = tracker.reference(JointState(HOME_Q, np.zeros(7), 1.0 + pose_move.duration / 2))
    assert np.linalg.norm(middle["tool"].velocity[:3]) > 0.01
    tracker.submit("tool", PoseReference(start.translation + np.array([0.0, 0.0, 0.1]), np.eye(3)))
    after = tracker.reference(JointState(HOME_Q, np.zeros(7), 1.001 + pose_move.duration / 2))
    assert np.linalg.norm(after["tool"].pose.translation - middle["tool"].pose.translation) < 1e-3
    tracker.pause(2.0, 12.0)  # 10 s of fallback: the moves take up where they stood
    paused = tracker.reference(JointState(HOME_Q, np.zeros(7), 11.001 + pose_move.duration / 2))
    assert np.linalg.norm(paused["tool"].pose.translation - after["tool"].pose.translation) < 1e-6
    end = tracker.reference(JointState(HOME_Q, np.zeros(7), 100.0))
    assert np.allclose(
        end["tool"].pose.translation, start.translation + np.array([0.0, 0.0, 0.1]), atol=1e-12
    )
    assert end["tool"].velocity is None and np.allclose(end["posture"], goal_q, atol=1e-12)
    assert tracker.reference(JointState(HOME_Q, np.zeros(7), 100.001)) is end  # held: not rebuilt
    assert tracker.describe() == "tool,posture" and errors == []
    tracker.reset()
    moved = HOME_Q + 0.1
    now = tracker.reference(JointState(moved, np.zeros(7), 100.002))
    assert np.allclose(now["tool"].translation, robot.frame_placement(moved, TOOL).translation)
    assert tracker.describe() == "hold"


def test_a_reset_drops_pending_task_targets(robot: RobotModel) -> None:
    """Task targets submitted before a stop are not taken at the resuming state, each said: every
    task holds where the arm is there."""
    warnings: list[str] = []
    tracker, errors = _qp_tracker(robot, "qpid", warnings)
    start = tracker.reference(JointState(HOME_Q, np.zeros(7), 1.0))["tool"]
    tracker.submit("tool", PoseReference(start.translation + np.array([0.0, 0.1, 0.0]), np.eye(3)))
    tracker.submit_posture(HOME_Q + 0.2)
    tracker.reset()
    moved = HOME_Q + 0.05
    held = tracker.reference(JointState(moved, np.zeros(7), 1.2))
    assert not tracker.pose_moves and not tracker.joint_moves and tracker.describe() == "hold"
    assert np.allclose(held["tool"].translation, robot.frame_placement(moved, TOOL).translation)
    np.testing.assert_allclose(held["posture"], moved)
    assert errors == [] and len(warnings) == 2 and warnings[0].startswith("tool target received while")


def test_a_target_approached_over_minutes_is_taken_with_a_warning(robot: RobotModel) -> None:
    """From home, (0.1, 0, 0.3) m lies near the base's axis: the approach, keeping every joint
    within half its velocity limit along the predicted path, takes over a minute, and the arm
    seems not to answer. Taken, with a warning saying why; a 0.1 m move is taken without one.
    (achd_rnea refuses that target, its straight line passing a singularity; its warning is
    tested near the stretched pose in test_target_guards.)"""
    params = shipped_parameters("controller_node") | {"controller": "qpid"}
    qp = create_controller("qpid", robot, controller_node_config(params).controller_params)
    errors: list[str] = []
    warnings: list[str] = []
    tracker = TaskTargetTracker(qp, refuse=errors.append, warn=warnings.append)  # type: ignore[arg-type]
    state = JointState(HOME_Q, np.zeros(7), 1.0)
    start = tracker.reference(state)["tool"]
    tracker.submit("tool", PoseReference(start.translation + np.array([0.0, 0.1, 0.0]), start.rotation))
    tracker.reference(state)
    assert tracker.pose_moves["tool"].move.duration < SLOW_APPROACH and not warnings
    tracker.reset()
    tracker.reference(state)
    tracker.submit("tool", PoseReference(np.array([0.1, 0.0, 0.3]), start.rotation))
    tracker.reference(state)
    assert tracker.pose_moves["tool"].move.duration > 60.0 and not errors
    assert len(warnings) == 1 and warnings[0].startswith("tool target: taken, approached over")


def test_a_target_for_no_frame_task_is_refused_naming_the_tasks(robot: RobotModel) -> None:
    tracker, _ = _qp_tracker(robot)
    with pytest.raises(TargetError, match=r"no frame task 'elbow'; the frame tasks are \['tool'\]"):
        tracker.submit("elbow", np.zeros(3))
    assert not tracker.pending


def test_a_qp_task_that_tracks_no_axis_takes_its_target_at_once(robot: RobotModel) -> None:
    """A posture task with kp 0 everywhere has no planner: its target is stepped into the
    mapping as given (its gains ask nothing of it)."""
    params = {
        "tasks": ["tool", "posture"],
        "tool": {"type": "pose", "frame": TOOL, "kp": 100.0},
        "posture": {"type": "posture", "kp": 0.0, "kd": 1.0, "weight": 1e-3},
    }
    errors: list[str] = []
    tracker = TaskTargetTracker(create_controller("qpid", robot, params), refuse=errors.append)  # type: ignore[arg-type]
    tracker.reference(_at_rest(HOME_Q, 0.0))
    goal = HOME_Q + 0.2
    tracker.submit_posture(goal)
    assert tracker.reference(_at_rest(HOME_Q, 0.001))["posture"] is goal and not tracker.joint_moves
    assert tracker.describe() == "posture" and errors == []
