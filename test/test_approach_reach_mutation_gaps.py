"""Behaviours of the approaches that a second mutation review of :mod:`torque_ctrl_ros.core.approach`
and :mod:`torque_ctrl_ros.core.reach` found unpinned (the first: ``test_approach_mutation_gaps``).

Each test names the behaviour it pins and the source change (mutant) it was written to catch. Pure
core: no ROS.
"""

from __future__ import annotations

import numpy as np
from test_approach_acceleration import HOME_Q, TOOL, _joint_1, _planner
from test_approach_mutation_gaps import _sampled

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.approach import COURSE_MARGIN, COURSE_TOLERANCE, PoseApproachPlanner
from torque_ctrl_ros.core.controllers.cartesian import PoseReference

#: A quintic from ``(0, v, 0)`` to rest at 0 over ``T``: ``q(s) = v·T·(s − 6s³ + 8s⁴ − 3s⁵)``,
#: whose speed ``v·(1 − s)²·(1 + 2s − 15s²)`` vanishes at ``s = 1/3``, where it peaks at
#: ``16/81·v·T`` (worked by hand).
OVERSHOOT_PER_SPEED_TIME = 16.0 / 81.0


def test_a_joint_creeping_past_its_goal_within_the_course_margin_keeps_the_direct_quintic(
    robot: RobotModel,
) -> None:
    """joint_1 at 0.1 rad/s toward a goal 1 rad ahead, joint_2 creeping at 1e-4 rad/s with its goal
    where it stands (no move: no tolerance, only :data:`COURSE_MARGIN`): one quintic carries
    joint_2 ``16/81·v·T`` = 5.3e-5 rad past its goal, within the margin, so the target is taken
    at once, no stop first (a stream's residual creep does not stop the reference). (Mutant:
    ``slack`` without ``+ COURSE_MARGIN`` in ``JointApproachPlanner._keeps_course``: it stops
    first.)"""
    creep = 1e-4
    start_velocity = _joint_1(0.1)
    start_velocity[1] = creep
    approach = _planner(robot, 100.0).plan((HOME_Q, start_velocity, None), HOME_Q + _joint_1(1.0))
    assert len(approach.times) == 2  # the start and the goal: one quintic
    positions, _ = _sampled(approach)
    overshoot = positions[:, 1].max() - HOME_Q[1]
    expected = OVERSHOOT_PER_SPEED_TIME * creep * approach.duration
    assert abs(overshoot - expected) <= 1e-9
    assert 0.0 < overshoot <= COURSE_MARGIN


def test_a_pose_reference_backing_away_within_the_course_tolerance_keeps_the_direct_quintic(
    robot: RobotModel,
) -> None:
    """The tool at home moving at 0.01 m/s along −x, its target 0.2 m along +x: one quintic backs
    0.62 mm behind its start, more than :data:`COURSE_MARGIN` (0.1 mm) but within
    :data:`COURSE_TOLERANCE` of the move (2 mm + the margin), so the target is taken at once, no
    stop first. (Mutant: ``slack = COURSE_MARGIN`` in ``PoseApproachPlanner._keeps_course``: it
    stops first.)"""
    planner = PoseApproachPlanner(robot, TOOL, np.arange(6), np.full(6, 100.0), np.full(6, 20.0))
    home = robot.frame_placement(HOME_Q, TOOL)
    twist = np.array([-0.01, 0.0, 0.0, 0.0, 0.0, 0.0])
    start = PoseReference(home.translation.copy(), home.rotation.copy(), twist)
    move = 0.2
    goal = PoseReference(home.translation + np.array([move, 0.0, 0.0]), home.rotation.copy())
    approach = planner.plan(HOME_Q, start, goal)
    assert approach.stop is None
    x = [approach.sample(t).position[0] for t in np.linspace(0.0, approach.duration, 4001)]
    backed = home.translation[0] - min(x)
    assert COURSE_MARGIN < backed <= COURSE_TOLERANCE * move + COURSE_MARGIN
