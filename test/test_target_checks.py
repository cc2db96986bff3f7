"""The checks on joint targets and trajectory waypoints (core/target_checks.py), called directly on
arrays: no messages, no rclpy. The node's refusals of the same inputs are in test_target_guards.py
and test_target_fuzz.py."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.errors import TargetError
from torque_ctrl_ros.core.safety import MAX_ANGLE
from torque_ctrl_ros.core.target_checks import (
    END_VELOCITY_TOLERANCE,
    MAX_TARGET_ACCELERATION,
    MAX_TARGET_VELOCITY,
    base_frame,
    check_joint_limits,
    check_joint_target,
    check_trajectory_points,
    checked_joint_reference,
    limit_masks,
)
from torque_ctrl_ros.core.target_tracking import TrajectoryPoints

HOME = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])


def _refusal(check: Callable[..., object], *args: object) -> str:
    """The text of the :class:`TargetError` that ``check(*args)`` raises."""
    with pytest.raises(TargetError) as info:
        check(*args)
    return str(info.value)


def _points(
    positions: np.ndarray, velocities: np.ndarray | None = None, accelerations: np.ndarray | None = None
) -> TrajectoryPoints:
    return TrajectoryPoints(np.arange(1.0, len(positions) + 1.0), positions, velocities, accelerations)


def test_base_frame_is_the_root_body(robot: RobotModel) -> None:
    assert base_frame(robot) == "base_link"


def test_limit_masks_mark_positions_outside_and_speeds_above_the_limits(robot: RobotModel) -> None:
    q = HOME.copy()
    q[1] = robot.position_upper[1] + 1e-6
    q[3] = robot.position_lower[3]  # on the limit: inside
    q[0] = MAX_ANGLE * 1.01  # a continuous joint still has MAX_ANGLE
    q[2] = MAX_ANGLE  # on it: inside
    v = np.zeros(robot.n)
    v[4] = robot.velocity_limit[4]  # on the limit: inside
    v[5] = -robot.velocity_limit[5] - 1e-6
    outside, fast = limit_masks(robot, q, v)
    assert fast is not None
    np.testing.assert_array_equal(np.flatnonzero(outside), [0, 1])
    np.testing.assert_array_equal(np.flatnonzero(fast), [5])
    assert limit_masks(robot, q)[1] is None
    # One row per waypoint: the same masks row by row.
    rows_out, rows_fast = limit_masks(robot, np.stack([HOME, q]), np.stack([np.zeros(robot.n), v]))
    assert rows_fast is not None
    np.testing.assert_array_equal(rows_out, [np.zeros(robot.n, bool), outside])
    np.testing.assert_array_equal(rows_fast, [np.zeros(robot.n, bool), fast])


def test_check_joint_limits_names_positions_first_then_speeds(robot: RobotModel) -> None:
    check_joint_limits(robot, HOME, "target", np.zeros(robot.n))
    q, v = HOME.copy(), np.zeros(robot.n)
    q[3] = robot.position_lower[3] - 0.01
    v[6] = 2.0 * robot.velocity_limit[6]
    assert _refusal(check_joint_limits, robot, q, "target", v) == (
        "target: outside the position limits at ['joint_4']"
    )
    assert _refusal(check_joint_limits, robot, HOME, "target", v) == (
        "target: velocity above the joint velocity limits at ['joint_7']"
    )


def test_a_joint_target_is_finite_within_limits_and_at_rest(robot: RobotModel) -> None:
    check_joint_target(robot, HOME, None, "joint target")
    check_joint_target(robot, HOME, np.zeros(robot.n), "joint target")
    q = HOME.copy()
    q[2] = np.nan
    q[1] = 10.0  # past a limit too: the non-finite value is named first
    assert _refusal(check_joint_target, robot, q, None, "joint target") == (
        "joint target: non-finite position at ['joint_3']"
    )
    v = np.zeros(robot.n)
    v[[0, 5]] = np.inf, 0.1
    assert _refusal(check_joint_target, robot, HOME, v, "joint target") == (
        "joint target: non-finite velocity at ['joint_1']"
    )
    v[0] = 0.1
    message = _refusal(check_joint_target, robot, HOME, v, "joint target")
    assert message.startswith("joint target: non-zero velocity at ['joint_1', 'joint_6']; a held target is")
    v[5] = 5.0  # above its limit: the limit is named first
    assert _refusal(check_joint_target, robot, HOME, v, "joint target") == (
        "joint target: velocity above the joint velocity limits at ['joint_6']"
    )


def test_trajectory_points_with_accelerations_need_velocities(robot: RobotModel) -> None:
    q = np.stack([HOME, HOME + 0.1])
    assert _refusal(check_trajectory_points, robot, _points(q, None, np.zeros_like(q))) == (
        "trajectory: accelerations without velocities; give both, or positions only"
    )
    check_trajectory_points(robot, _points(q, np.zeros_like(q), np.zeros_like(q)))


def test_a_non_finite_waypoint_names_the_first_such_point_and_its_joints(robot: RobotModel) -> None:
    q = np.stack([HOME, HOME, HOME])
    v = np.zeros_like(q)
    a = np.zeros_like(q)
    a[2, 4] = np.nan
    assert _refusal(check_trajectory_points, robot, _points(q, v, a)) == (
        "trajectory point 2: non-finite accelerations at ['joint_5']"
    )
    q[1, [1, 6]] = np.inf
    assert _refusal(check_trajectory_points, robot, _points(q, v, a)) == (
        "trajectory point 1: non-finite positions at ['joint_2', 'joint_7']"
    )


def test_the_first_waypoint_past_a_limit_is_refused_as_the_single_target_check_would(
    robot: RobotModel,
) -> None:
    """Waypoints and single targets share one limit test: each refusal reads as
    :func:`check_joint_limits` on that point's row."""
    rng = np.random.default_rng(7)
    upper = np.where(np.isfinite(robot.position_upper), robot.position_upper, MAX_ANGLE)
    refused = 0
    for _ in range(200):
        m = int(rng.integers(1, 6))
        q = HOME + rng.uniform(-0.2, 0.2, (m, robot.n))
        v = rng.uniform(-1.0, 1.0, (m, robot.n)) * robot.velocity_limit
        v[-1] = 0.0
        for _ in range(int(rng.integers(3))):  # none, one or two points past a limit
            k, j = int(rng.integers(m)), int(rng.integers(robot.n))
            if rng.integers(2):
                q[k, j] = upper[j] + 0.01
            elif k < m - 1:  # the last point's speed has its own refusal
                v[k, j] = 1.5 * robot.velocity_limit[j]
        bad = [k for k in range(m) if (q[k] > upper).any() or (np.abs(v[k]) > robot.velocity_limit).any()]
        if not bad:
            check_trajectory_points(robot, _points(q, v))
            continue
        refused += 1
        k = bad[0]
        assert _refusal(check_trajectory_points, robot, _points(q, v)) == _refusal(
            check_joint_limits, robot, q[k], f"trajectory point {k}", v[k]
        )
    assert refused > 50


def test_the_last_waypoint_must_be_at_rest_within_rounding(robot: RobotModel) -> None:
    q = np.stack([HOME, HOME + 0.1])
    v = np.zeros_like(q)
    a = np.zeros_like(q)
    a[-1] = -0.5  # a planner's final deceleration is let through
    v[-1, 2] = END_VELOCITY_TOLERANCE
    check_trajectory_points(robot, _points(q, v, a))
    v[-1, 2] = -2.0 * END_VELOCITY_TOLERANCE
    assert re.fullmatch(
        r"trajectory: the last point has velocities \[.*\] rad/s; they must be 0 there "
        r"\(the reference stops at the last point\)",
        _refusal(check_trajectory_points, robot, _points(q, v)),
    )
    check_trajectory_points(robot, _points(q))  # positions only: the velocities are estimated


def test_a_joint_reference_takes_velocities_and_accelerations_up_to_their_bounds() -> None:
    """Beyond them a reference is no motion (1e308 rad/s² overflowed the QP's cost); at them it
    is returned as float64 copies."""
    at = [MAX_TARGET_VELOCITY] * 7, [-MAX_TARGET_ACCELERATION] * 7
    _, v, a = checked_joint_reference("reference", 7, HOME, *at)
    assert v is not None and a is not None and v.dtype == a.dtype == np.float64
    assert _refusal(checked_joint_reference, "reference", 7, HOME, [0, 0, 0, 0, 0, 0, 100.5]).startswith(
        "reference velocity: an entry above 100 rad/s or m/s in size, which no real target reaches: [0"
    )
    assert _refusal(checked_joint_reference, "reference", 7, HOME, None, [1e308] * 7).startswith(
        "reference acceleration: an entry above 10000 rad/s² or m/s² in size"
    )
