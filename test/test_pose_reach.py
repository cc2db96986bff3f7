"""Pose targets the frame cannot reach, refused by the approach planner (a review of 2026-12-07).

The node checks a target's position (the frame's reach bound, the stretch margin, the floor); what
the wrist can turn to there was left to the planner's shortfall check, which allows the predicted
path to end 20 % of the move short. A pose 0.87 m above the shoulder with the tool as at home ended
160 mm short (18.9 %) and was taken: achd_rnea strained toward it at 2.09 times joint_5's velocity
limit (MuJoCo and an exact plant alike). Pure core: no ROS.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.approach import PoseApproachPlanner
from torque_ctrl_ros.core.controllers.cartesian import PoseReference
from torque_ctrl_ros.core.errors import TargetError
from torque_ctrl_ros.core.robot import sample_configurations

TOOL = "end_effector_link"
HOME = np.array([0.0, 0.26179939, 3.14159265, -2.26892803, 0.0, 0.95993109, 1.57079633])
GAINS = (np.full(6, 100.0), np.full(6, 20.0))


def _unreachable(robot: RobotModel) -> list[PoseReference]:
    """The review's two poses: 0.87 m above the shoulder with the tool as at home, and 0.85 m out
    with the tool pointing back at the base. Both positions are within the frame's reach."""
    home = robot.frame_placement(HOME, TOOL)
    return [
        PoseReference(np.array([0.0, 0.0, 0.285 + 0.87]), home.rotation),
        PoseReference(np.array([0.85, 0.0, 0.3]), pin.exp3(np.array([0.0, -np.pi / 2, 0.0]))),
    ]


def test_a_pose_the_wrist_cannot_take_there_is_refused(robot: RobotModel) -> None:
    """achd_rnea's planner (shortfalls refused) refuses both poses, naming how far off the nearest
    pose found stays (the first 147 mm; the review's closed loop ended 147 mm off it). Mutant:
    the reach not checked (both planned, 54 and 73 s long)."""
    planner = PoseApproachPlanner(robot, TOOL, np.arange(6), *GAINS)
    start = PoseReference.from_se3(robot.frame_placement(HOME, TOOL))
    for goal in _unreachable(robot):
        with pytest.raises(TargetError, match="cannot reach the target within the joint limits"):
            planner.plan(HOME, start, goal)
    with pytest.raises(TargetError, match=r"nearest pose found is 1[0-9]{2} mm"):
        planner.plan(HOME, start, _unreachable(robot)[0])


def test_only_the_planners_axes_are_judged(robot: RobotModel) -> None:
    """On ``x, y, z`` alone the first pose's position is reachable (the tool turned up): taken. The
    QP controllers' planners (shortfalls not refused: their barriers hold the arm) take both.
    Mutant: the rotation judged on every planner."""
    start = PoseReference.from_se3(robot.frame_placement(HOME, TOOL))
    position_only = PoseApproachPlanner(robot, TOOL, np.arange(3), GAINS[0][:3], GAINS[1][:3])
    assert position_only.plan(HOME, start, _unreachable(robot)[0]).duration > 0.0
    qp = PoseApproachPlanner(robot, TOOL, np.arange(6), *GAINS, refuse_shortfall=False)
    for goal in _unreachable(robot):
        assert qp.plan(HOME, start, goal).duration > 0.0


def test_reachable_poses_are_taken(robot: RobotModel) -> None:
    """Forty poses the frame takes at seeded configurations within the limits, each from another
    such configuration a third of the way toward it: none is refused as out of reach (another
    refusal, a singularity on the straight line, may come)."""
    planner = PoseApproachPlanner(robot, TOOL, np.arange(6), *GAINS)
    configurations = sample_configurations(robot, 80)
    unreached = []
    for q0, q1 in zip(configurations[:40], configurations[40:], strict=True):
        goal = PoseReference.from_se3(robot.frame_placement(q0 + (q1 - q0) / 3.0, TOOL))
        start = PoseReference.from_se3(robot.frame_placement(q0, TOOL))
        try:
            planner.plan(q0, start, goal)
        except TargetError as exc:
            if "cannot reach" in str(exc):
                unreached.append(str(exc))
    assert not unreached, unreached
