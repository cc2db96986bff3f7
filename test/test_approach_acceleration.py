"""The package's own approaches and stops held to the acceleration bound a user's trajectory is held
to (:func:`~torque_ctrl_ros.core.trajectory.acceleration_limits`), at any accepted gains, and timed as
before at the default ones (no rclpy)."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from torque_ctrl_ros.core import FrameNotFoundError, RobotModel, TargetError
from torque_ctrl_ros.core.approach import (
    PATH_DAMPING,
    PATH_SAMPLES,
    QUINTIC_PEAK_ACCELERATION,
    SPEED_SHARE,
    JointApproachPlanner,
    PoseApproach,
    PoseApproachPlanner,
)
from torque_ctrl_ros.core.controllers.cartesian import PoseReference
from torque_ctrl_ros.core.robot import check_pd_gains
from torque_ctrl_ros.core.trajectory import JointTrajectory, acceleration_limits, check_motion
from torque_ctrl_ros.core.validation import FloatArray

HOME_Q = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
TOOL = "end_effector_link"
#: kp 1e4 and 1e5 (critically damped) pass the gain check at 1 kHz; the approaches' own bounds
#: (kp·|Δq| and kd·|q̇|) then let them ask several times the acceleration bound.
HIGH_GAINS = (1e4, 1e5)


def _planner(robot: RobotModel, kp: float) -> JointApproachPlanner:
    kd = 2.0 * math.sqrt(kp)
    check_pd_gains("kp", np.full(7, kp), np.full(7, kd), robot.joint_names)
    return JointApproachPlanner(robot, np.full(7, kp), np.full(7, kd))


def _peak(trajectory: JointTrajectory, bound: np.ndarray, samples: int = 4001) -> float:
    """The largest sampled ``|q̈ᵢ|/boundᵢ`` over the trajectory."""
    times = np.linspace(0.0, trajectory.duration, samples)
    return max(float(np.max(np.abs(trajectory.sample(t)[2]) / bound)) for t in times)


def _joint_1(value: float) -> np.ndarray:
    out = np.zeros(7)
    out[0] = value
    return out


def test_a_stop_from_speed_alone_decelerates_at_most_one_and_a_half_speed_over_its_time(
    robot: RobotModel,
) -> None:
    """The stop quintic from ``q̇`` to rest at ``q + q̇·T_s/2``: ``q̈ = q̇/T_s·(6s² − 6s)``,
    peaking at ``1.5·|q̇|/T_s`` at ``s = ½`` (sampled)."""
    planner = _planner(robot, 100.0)
    v = np.array([1.125, -0.5, 0.3, 0.0, 0.8, -1.0, 0.2])
    stop = planner.stop((HOME_Q, v, None))
    assert stop.duration == pytest.approx(planner.stop_time, abs=0.0)
    times = np.linspace(0.0, stop.duration, 4001)
    acc = np.array([stop.sample(t)[2] for t in times])
    assert np.abs(acc).max(axis=0) == pytest.approx(1.5 * np.abs(v) / planner.stop_time, rel=1e-6)
    assert np.allclose(np.abs(acc[2000]), 1.5 * np.abs(v) / planner.stop_time, rtol=1e-9)


@pytest.mark.parametrize("kp", HIGH_GAINS)
def test_a_stop_at_high_gains_is_lengthened_to_the_acceleration_bound(robot: RobotModel, kp: float) -> None:
    """From 1 rad/s on joint_1 the stop time (0.024 s at kp 1e4, 7.6 ms at 1e5) had decelerated at
    62 (197) rad/s², a user trajectory's bound being 25.9: it now lasts ``1.5·1/25.9`` = 0.058 s,
    at the bound, and still ends at rest ``q̇·T_s/2`` on."""
    planner = _planner(robot, kp)
    bound = acceleration_limits(robot)
    assert 1.5 / planner.stop_time > 2.0 * bound[0]
    stop = planner.stop((HOME_Q, _joint_1(1.0), None))
    assert stop.duration == pytest.approx(1.5 / bound[0], rel=1e-4)
    assert _peak(stop, bound) == pytest.approx(1.0, abs=1e-4)
    assert _peak(stop, bound) <= 1.0 + 1e-9
    check_motion(robot, stop, acceleration_limit=bound)
    assert stop.positions[-1][0] == pytest.approx(HOME_Q[0] + 0.5 * stop.duration, rel=1e-12)


@pytest.mark.parametrize("kp", HIGH_GAINS)
def test_an_approach_at_high_gains_is_lengthened_to_the_acceleration_bound(
    robot: RobotModel, kp: float
) -> None:
    """0.01 rad on joint_1 from rest: the speed share timed it at 0.027 s (at kp 1e4 and 1e5), 80
    rad/s²; it now takes ``√(5.77·0.01/25.9)`` = 0.047 s. From 1 rad/s, a target behind (a stop
    first) and one ahead (one quintic) stay within the bound too."""
    planner = _planner(robot, kp)
    bound = acceleration_limits(robot)
    goal = HOME_Q + _joint_1(0.01)
    approach = planner.plan((HOME_Q, None, None), goal)
    assert approach.duration == pytest.approx(math.sqrt(QUINTIC_PEAK_ACCELERATION * 0.01 / bound[0]))
    assert _peak(approach, bound) == pytest.approx(1.0, abs=1e-4)
    check_motion(robot, approach, acceleration_limit=bound)
    moving = (HOME_Q, _joint_1(1.0), None)
    for target in (HOME_Q - _joint_1(0.3), HOME_Q + _joint_1(0.2), HOME_Q + _joint_1(0.02)):
        approach = planner.plan(moving, target)
        assert _peak(approach, bound) <= 1.0 + 1e-9
        check_motion(robot, approach, acceleration_limit=bound)
        assert np.allclose(approach.positions[-1], target, atol=1e-12)


def test_a_start_accelerating_past_the_bound_is_held_to_its_own_acceleration(robot: RobotModel) -> None:
    """Every quintic from a start begins at its acceleration: from one at 1.5 times joint_1's bound,
    a stop and an approach are held to that instead (held to the bound alone, no duration would
    pass: the search ran to 1e4 times the stop time, and that stop ran away at 7 000 rad/s)."""
    planner = _planner(robot, 100.0)
    a0 = _joint_1(1.5 * planner.acceleration_limit[0])
    bound = np.maximum(planner.acceleration_limit, np.abs(a0))
    stop = planner.stop((HOME_Q, None, a0))
    assert stop.duration == pytest.approx(planner.stop_time, abs=0.0)
    assert _peak(stop, bound) <= 1.0 + 1e-9
    approach = planner.plan((HOME_Q, None, a0), HOME_Q + _joint_1(0.3))
    assert approach.duration < 2.0
    assert _peak(approach, bound) <= 1.0 + 1e-9


@pytest.mark.parametrize("kp", HIGH_GAINS)
def test_random_approaches_and_stops_stay_within_the_acceleration_bound(robot: RobotModel, kp: float) -> None:
    """Starts at rest or moving (accelerations up to 10 rad/s² or half the bound), targets 3 mrad to 1 rad
    away, with and without a motion under way that comes to rest soon: every plan and stop within
    the bound (exactly: :func:`check_motion`; and sampled)."""
    planner = _planner(robot, kp)
    bound = acceleration_limits(robot)
    rng = np.random.default_rng(11)
    checked = 0
    for k in range(60):
        scale = (0.003, 0.01, 0.05, 0.3, 1.0)[k % 5]
        goal = np.clip(HOME_Q + scale * rng.standard_normal(7), robot.position_lower, robot.position_upper)
        v = np.clip(0.5 * rng.standard_normal(7), -0.9 * robot.velocity_limit, 0.9 * robot.velocity_limit)
        a = np.minimum(0.5 * bound, 10.0) * rng.uniform(-1.0, 1.0, 7) if k % 2 else None
        start = (HOME_Q, None, None) if k % 4 == 0 else (HOME_Q, v, a)
        under_way = None
        if k % 3 == 0:  # a motion under way that rests 5 ms on
            rest = HOME_Q + 0.0025 * v
            under_way = (JointTrajectory([0.005], rest[None], np.zeros((1, 7)), None, start=(HOME_Q, v)), 0.0)
        for trajectory in (planner.plan(start, goal, under_way), planner.stop(start, under_way)):
            check_motion(robot, trajectory, acceleration_limit=bound)
            allowed = bound if start[2] is None else np.maximum(bound, np.abs(start[2]))
            assert _peak(trajectory, allowed, 801) <= 1.0 + 1e-9
            checked += 1
    assert checked == 120


@pytest.mark.parametrize("kp", (25.0, 100.0, 400.0))
def test_at_moderate_gains_the_bound_changes_no_timing(robot: RobotModel, kp: float) -> None:
    """Up to kp 400 (the default 100 among them) every approach and stop is timed exactly as by the
    same planner without the bound: within it already."""
    planner = _planner(robot, kp)
    unbounded = _planner(robot, kp)
    unbounded.acceleration_limit = np.full(7, np.inf)
    rng = np.random.default_rng(3)
    for k in range(40):
        scale = (0.003, 0.01, 0.05, 0.3, 1.0)[k % 5]
        goal = np.clip(HOME_Q + scale * rng.standard_normal(7), robot.position_lower, robot.position_upper)
        v = np.clip(0.5 * rng.standard_normal(7), -0.9 * robot.velocity_limit, 0.9 * robot.velocity_limit)
        start = (HOME_Q, None, None) if k % 4 == 0 else (HOME_Q, v, 2.0 * rng.standard_normal(7))
        assert np.array_equal(planner.plan(start, goal).times, unbounded.plan(start, goal).times)
        if k % 4:
            assert np.array_equal(planner.stop(start).times, unbounded.stop(start).times)


def _follow(robot: RobotModel, approach: PoseApproach, q: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Joint angles (rad, samples × 7) that put the tool on ``approach`` at ``times`` (Newton steps
    on the pose error from the solution before, the first from ``q``)."""
    path = []
    for t in times:
        ref = approach.sample(float(t))
        for _ in range(4):
            placement = robot.frame_placement(q, TOOL)
            error = np.concatenate(
                (ref.position - placement.translation, pin.log3(ref.rotation @ placement.rotation.T))
            )
            jacobian = robot.frame_jacobian(q, TOOL)
            q = q + jacobian.T @ np.linalg.solve(jacobian @ jacobian.T + 1e-12 * np.eye(6), error)
        path.append(q)
    return np.array(path)


def _peak_share(robot: RobotModel, approach: PoseApproach, q: np.ndarray, end: float) -> float:
    """The largest ``|q̈ᵢ|/a_maxᵢ`` of joints following ``approach`` over ``[0, end]`` s (second
    differences over 800 steps)."""
    times = np.linspace(0.0, end, 801)
    acc = np.abs(np.diff(_follow(robot, approach, q, times), 2, axis=0)) / (times[1] - times[0]) ** 2
    return float((acc / acceleration_limits(robot)).max())


@pytest.mark.parametrize("kp", HIGH_GAINS)
def test_a_short_pose_approach_at_high_gains_keeps_the_joints_within_the_bound(
    robot: RobotModel, kp: float
) -> None:
    """2 mm along x from home: the shortest time (0.024 s at kp 1e4, 0.015 at 1e5) had driven
    joint_2 at 1.4 (3.4) times its bound. The joints, following the pose exactly, stay within 1 %
    of it (the timing is first order)."""
    planner = PoseApproachPlanner(robot, TOOL, np.arange(6), np.full(6, kp), np.full(6, 2.0 * math.sqrt(kp)))
    home = robot.frame_placement(HOME_Q, TOOL)
    rest = PoseReference(home.translation.copy(), home.rotation.copy())
    nudge = planner.plan(
        HOME_Q, rest, PoseReference(home.translation + np.array([0.002, 0.0, 0.0]), home.rotation)
    )
    assert _peak_share(robot, nudge, HOME_Q, nudge.duration) <= 1.01


def _turned_back_at_high_gains(
    robot: RobotModel,
) -> tuple[PoseApproachPlanner, pin.SE3, FloatArray, PoseApproach]:
    """At kp 1e5, a 0.3 m move along y from home, its target turned back to home mid-way (0.14
    m/s): the planner, home's pose, the joints there and the plan turned back."""
    kp = 1e5
    planner = PoseApproachPlanner(robot, TOOL, np.arange(6), np.full(6, kp), np.full(6, 2.0 * math.sqrt(kp)))
    home = robot.frame_placement(HOME_Q, TOOL)
    rest = PoseReference(home.translation.copy(), home.rotation.copy())
    first = planner.plan(
        HOME_Q, rest, PoseReference(home.translation + np.array([0.0, 0.3, 0.0]), home.rotation)
    )
    middle = 0.5 * first.duration
    q_middle = _follow(robot, first, HOME_Q, np.linspace(0.0, middle, 201))[-1]
    return planner, home, q_middle, planner.plan(q_middle, first.sample(middle), rest, (first, middle))


def test_a_pose_stop_at_high_gains_keeps_the_joints_within_the_bound(robot: RobotModel) -> None:
    """A 0.3 m move along y at mid-way (0.14 m/s), its target turned back to home: at kp 1e5 the
    stop time (7.6 ms) had driven joint_1 at 2.5 times its bound. Lengthened, the joints following
    the stop stay within 1 % of it."""
    planner, _, q_middle, turned = _turned_back_at_high_gains(robot)
    assert turned.stop is not None and turned.stop[0] > planner.stop_time
    assert _peak_share(robot, turned, q_middle, turned.stop[0]) <= 1.01


def test_a_pose_stop_lengthened_at_high_gains_keeps_the_stop_under_way(robot: RobotModel) -> None:
    """At kp 1e5 the pose stop is lengthened past the law's stop time (7.6 ms) for the joints'
    acceleration bounds. A quarter into such a stop, a target turned back again: the stop under
    way rests 0.75 of its time ahead, more than 7.6 ms but within the lengthened stop time. It is
    kept, as in joint space; compared with 7.6 ms alone, a new default stop ran on past it, on
    the wrong way."""
    planner, home, q_middle, turned = _turned_back_at_high_gains(robot)
    assert turned.stop is not None
    stop_time, stop = turned.stop
    quarter = 0.25 * stop_time
    assert 0.75 * stop_time > planner.stop_time
    q_quarter = _follow(robot, turned, q_middle, np.linspace(0.0, quarter, 51))[-1]
    behind = PoseReference(home.translation - np.array([0.0, 0.1, 0.0]), home.rotation)
    again = planner.plan(q_quarter, turned.sample(quarter), behind, (turned, quarter))
    assert again.stop is not None
    assert again.stop[0] == pytest.approx(0.75 * stop_time, rel=1e-12)
    np.testing.assert_allclose(again.stop[1].position, stop.position, atol=1e-12)
    y = [again.sample(t).position[1] for t in np.linspace(0.0, again.duration, 2001)]
    assert max(y) <= stop.position[1] + 1e-9


def _path_time_by_its_formula(
    robot: RobotModel, rows: np.ndarray, q: np.ndarray, move: np.ndarray
) -> tuple[float, np.ndarray]:
    """:meth:`PoseApproachPlanner.joint_speed_time` written out step by step: ``q'(σ) = Jᵀ·(J·Jᵀ +
    λ²·I)⁻¹·ξ`` on each of the 40 steps of ``τ``, its speed ``q'·σ'(τ)`` (``σ' = 30·(τ·(1 − τ))²``
    at the step's middle) judged against half the velocity limits there, ``q`` moved on by ``Δσ·q'``."""
    tau = np.linspace(0.0, 1.0, PATH_SAMPLES + 1)
    sigma = tau**3 * (10.0 + tau * (6.0 * tau - 15.0))
    q = q.copy()
    longest = 0.0
    for k in range(PATH_SAMPLES):
        jacobian = robot.frame_jacobian(q, TOOL)[rows]
        rate = jacobian.T @ np.linalg.solve(jacobian @ jacobian.T + PATH_DAMPING**2 * np.eye(rows.size), move)
        middle = 0.5 * (tau[k] + tau[k + 1])
        speed = rate * 30.0 * (middle * (1.0 - middle)) ** 2
        longest = max(longest, float(np.max(np.abs(speed) / (SPEED_SHARE * robot.velocity_limit))))
        q += (sigma[k + 1] - sigma[k]) * rate
    return longest, q


@pytest.mark.parametrize("rows", [np.arange(6), np.arange(3), np.array([0, 1, 3, 4, 5])])
def test_the_predicted_pose_path_is_timed_as_its_formula_says(robot: RobotModel, rows: np.ndarray) -> None:
    """The planner judges the path's speeds once the path is done, all steps at once: the same
    numbers, bit for bit, as judging each step on the way (random moves from random poses, near
    the stretched pose too)."""
    planner = PoseApproachPlanner(robot, TOOL, rows, np.full(rows.size, 100.0), np.full(rows.size, 20.0))
    rng = np.random.default_rng(7)
    for k in range(12):
        q = HOME_Q + rng.normal(0.0, 0.5, 7) if k % 3 else rng.normal(0.0, 0.02, 7)
        move = np.r_[rng.normal(0.0, 0.1, 3), rng.normal(0.0, 0.3, 3)][rows]
        longest, q_end = planner.joint_speed_time(q, move)
        expected_longest, expected_end = _path_time_by_its_formula(robot, rows, q, move)
        assert longest == expected_longest and np.array_equal(q_end, expected_end)


def test_a_small_move_asking_more_than_a_linear_move_at_its_start_is_timed_on_its_path(
    robot: RobotModel,
) -> None:
    """An 8 mm move from a pose near a singularity asks 0.22 rad of joint motion at its start (more
    than LINEAR_MOVE), 0.1 at its end: judged on its predicted path, which ends 38 % short (refused
    for achd_rnea) and is timed at 2.4 s for the QP controllers; on its start alone it was taken,
    over 0.57 s, where the path runs a joint at twice its share of the velocity limit."""
    q = np.array([-1.711, 0.927, -1.769, 0.038, 0.494, -1.412, 1.208])
    move = np.array([-0.0065, 0.0044, -0.0029, -0.0008, -0.0001, 0.0003])
    start = PoseReference.from_se3(robot.frame_placement(q, TOOL))
    goal = PoseReference(start.position + move[:3], pin.exp3(move[3:]) @ start.rotation)
    gains = np.full(6, 100.0), np.full(6, 20.0)
    with pytest.raises(TargetError, match="ends 38% of the move short"):
        PoseApproachPlanner(robot, TOOL, np.arange(6), *gains).plan(q, start, goal)
    planner = PoseApproachPlanner(robot, TOOL, np.arange(6), *gains, refuse_shortfall=False)
    along_path = planner.joint_speed_time(q, move)[0]
    assert along_path > 2.0
    assert planner.plan(q, start, goal).duration >= along_path


def test_a_pose_planner_on_an_unknown_frame_is_refused_when_built(robot: RobotModel) -> None:
    """The frame is looked up once, when the planner is built (not on every Jacobian of a plan):
    an unknown one is refused there, with the valid names."""
    with pytest.raises(FrameNotFoundError, match="valid frames are .*end_effector_link"):
        PoseApproachPlanner(robot, "no_such_frame", np.arange(6), np.full(6, 100.0), np.full(6, 20.0))
