"""Behaviours of the QP tasks and the reach bound that a third mutation review found unpinned.

The modules are ``core/qp/tasks.py`` (what each task asks of the QP: its gains, weights and level,
its error and the targets it takes or refuses) and ``core/reach.py`` (which Cartesian targets are
refused as out of reach). Each test names the behaviour it pins and the source change (mutant) it
was written to catch. Pure core: no ROS.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from test_qp_terms import HOME, NO_BARRIERS, TOOL, _tool_over_posture

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers.qpid import QPID
from torque_ctrl_ros.core.errors import ConfigError, TargetError
from torque_ctrl_ros.core.qp.tasks import (
    CartesianTarget,
    FramePoseTask,
    JointPostureTask,
    KinematicsState,
    PositionTask,
)
from torque_ctrl_ros.core.reach import MAX_TARGET_DISTANCE, Reach, check_target_position
from torque_ctrl_ros.core.types import JointState


def _kinematics_at(robot: RobotModel, q: np.ndarray) -> KinematicsState:
    """A :class:`KinematicsState` updated at joint angles ``q`` (rad), at rest."""
    kin = KinematicsState(robot)
    kin.update(q, np.zeros(robot.n))
    return kin


# ------------------------------------------------------------------ task parameters
def test_a_negative_kd_is_refused_on_an_axis_without_stiffness(robot: RobotModel) -> None:
    """``kp = 0``, ``kd = −1`` 1/s: the axis' velocity error grows (``ė⁺ = ė + h·ė``), yet the
    closed-loop check alone passes it (its damping bound is one-sided, ``h·kd < bound``); the
    ``kd >= 0`` check refuses it, naming the parameter. (Mutant: ``as_vector(f"{name}.kd", ...)``
    without ``min_value=0.0`` in ``Task.__init__``: taken.)"""
    with pytest.raises(ConfigError, match=r"posture\.kd: expected every entry >= 0"):
        JointPostureTask("posture", robot, kp=0.0, kd=-1.0)


def test_a_negative_task_weight_is_refused(robot: RobotModel) -> None:
    """A weight of −1 on one axis of a position task turns that axis' share of the cost
    ``‖ẍᵈ − J·q̈ − J̇·q̇‖²_W`` concave (unbounded below: the worse that axis is tracked, the lower
    the cost): refused, naming the parameter, though the other axes have weights > 0. (Mutant:
    ``as_vector(f"{name}.weight", ...)`` without ``min_value=0.0`` in ``Task.__init__``: taken.)"""
    with pytest.raises(ConfigError, match=r"tool\.weight: expected every entry >= 0"):
        PositionTask("tool", robot, TOOL, weight=[1.0, -1.0, 1.0])


def test_a_task_level_must_be_an_integer_from_0_and_defaults_to_0(robot: RobotModel) -> None:
    """A task built without ``level`` is at level 0 (the highest priority); ``True`` (a bool, not a
    level) and ``−1`` are refused, naming the parameter. (Mutants in ``Task.__init__``: ``level:
    int = 1``; the check without ``isinstance(level, bool) or`` (``True`` taken as level 1); ``level
    < -1`` (``−1`` taken).)"""
    assert JointPostureTask("posture", robot).level == 0
    for level in (True, -1):
        with pytest.raises(ConfigError, match=r"posture\.level: expected an integer >= 0"):
            JointPostureTask("posture", robot, level=level)


# ------------------------------------------------------------------ task errors and targets
def test_error_norm_is_the_euclidean_norm_of_the_task_error(robot: RobotModel) -> None:
    """A position target 30 mm along x and 40 mm along z of the tool: ``error_norm()`` (the
    ``error.<task>`` diagnostic) is 0.05 m, not its square. (Mutant: ``return float(e @ e)`` in
    ``Task.error_norm``: 0.0025.)"""
    kin = _kinematics_at(robot, HOME)
    task = PositionTask("tool", robot, TOOL)
    task.set_target(task.hold_target(kin) + np.array([0.03, 0.0, 0.04]))
    task.update(kin)
    assert task.error_norm() == pytest.approx(0.05, abs=1e-12)


def test_a_refused_reference_passed_again_is_refused_again(robot: RobotModel) -> None:
    """A controller passes the same reference object every step, and a task skips the target it
    was given last. A target refused (its velocity NaN) must not count as given: the same
    reference passed on the next step is refused again, not run silently on the previous target.
    (Mutant: ``self._target_obj = target`` before ``self._set_target(target)`` in
    ``Task.set_target``: the second step computes a torque.)"""
    ctrl = QPID.from_params(robot, _tool_over_posture(0, **NO_BARRIERS))
    state = JointState(HOME, np.zeros(robot.n))
    held = ctrl.hold_reference(state)
    moved = pin.SE3(np.eye(3), held["tool"] + np.array([0.1, 0.0, 0.0]))
    bad = {**held, "tool": CartesianTarget(moved, velocity=np.full(6, np.nan))}
    for _ in range(2):
        with pytest.raises(TargetError, match="finite"):
            ctrl.compute(state, bad)


def test_a_position_target_with_a_non_finite_rotation_is_refused(robot: RobotModel) -> None:
    """A position task reads only the translation of an SE3 target, yet a NaN or inf in its
    rotation is refused as a sign of a broken sender (as one in an orientation target's unused
    translation is), and the previous target is kept. (Mutant: the ``elif not
    np.isfinite(pose.rotation).all()`` refusal dropped from ``FrameTask._as_pose``: taken.)"""
    kin = _kinematics_at(robot, HOME)
    task = PositionTask("tool", robot, TOOL)
    held = task.hold_target(kin)
    task.set_target(held)
    for bad in (np.nan, np.inf):
        rotation = np.eye(3)
        rotation[1, 2] = bad
        with pytest.raises(TargetError, match="tool: target pose has non-finite entries"):
            task.set_target(pin.SE3(rotation, held + np.array([0.1, 0.0, 0.0])))
    task.update(kin)
    assert task.error_norm() < 1e-12


def test_a_frame_task_keeps_its_own_copy_of_the_target_pose(robot: RobotModel) -> None:
    """After ``set_target(pose)``, the caller moving that ``pinocchio.SE3`` in place (a new
    translation) changes nothing the task tracks: it was checked and copied when given (a task
    skips the object passed last, so a change in place would also go unchecked). (Mutant:
    ``return pose`` for ``return pose.copy()`` in ``FrameTask._as_pose``: the task's error follows
    the caller's object, 0.1 m.)"""
    kin = _kinematics_at(robot, HOME)
    task = FramePoseTask("tool", robot, TOOL)
    target = task.hold_target(kin)
    task.set_target(target)
    target.translation = target.translation + np.array([0.1, 0.0, 0.0])
    task.update(kin)
    assert task.error_norm() < 1e-12


def test_a_held_position_stays_where_it_was_taken(robot: RobotModel) -> None:
    """``PositionTask.hold_target`` gives the tool's position when called, a copy: after the
    arm (and Pinocchio's data, shared by every user of the robot) moves on, the held target has
    not followed it. (Mutant: ``translation`` without ``.copy()`` in ``PositionTask.hold_target``:
    a view of ``data.oMf`` that moves with the next kinematics update, so a held tool would
    follow wherever the arm drifts.)"""
    kin = _kinematics_at(robot, HOME)
    task = PositionTask("tool", robot, TOOL)
    held = task.hold_target(kin)
    taken = held.copy()
    kin.update(HOME + 0.3, np.zeros(robot.n))
    assert np.linalg.norm(kin.data.oMf[task.frame_id].translation - taken) > 0.05  # the arm moved
    np.testing.assert_array_equal(held, taken)


# ------------------------------------------------------------------ the reach bound
def test_a_coordinate_at_the_target_distance_bound_is_taken() -> None:
    """``check_target_position`` refuses a coordinate *beyond* ±:data:`MAX_TARGET_DISTANCE` (10 m):
    one at exactly ±10 m is taken, one a micrometre past is refused. (Mutant: ``-limit <= x <
    limit`` in ``check_target_position``: +10 m refused.)"""
    limit = MAX_TARGET_DISTANCE
    check_target_position(np.array([limit, -limit, 0.0]), "tool target")
    for past in (limit + 1e-6, -limit - 1e-6):
        with pytest.raises(TargetError, match="beyond ±10 m"):
            check_target_position(np.array([0.0, past, 0.0]), "tool target")


def test_the_reach_of_an_arm_mounted_on_a_wall_turns_with_it(robot: RobotModel) -> None:
    """The Gen3 mounted on a wall (its first joint's placement turned 90° about y and raised
    0.5 m, so joint_1 turns about the base's −x): its tool's reach is the upright one's turned
    the same way, so the tool is at the same distance from the circle at every configuration,
    and a target the arm can reach stays within the bound. (Mutant: ``radial =
    math.hypot(v[0], v[1])`` in ``Reach.distance``, the distance from the base's z axis rather
    than from the first joint's: the same on the upright arm, up to 0.4 m off on the wall.)"""
    model = robot.model.copy()
    mount = pin.SE3(pin.rpy.rpyToMatrix(0.0, np.pi / 2, 0.0), np.array([0.0, 0.0, 0.5]))
    model.jointPlacements[1] = mount * model.jointPlacements[1]
    wall = RobotModel(model, source="gen3 on a wall")
    upright_reach, wall_reach = Reach.of(robot, TOOL), Reach.of(wall, TOOL)
    np.testing.assert_allclose(wall_reach.axis, [-1.0, 0.0, 0.0], atol=1e-12)
    rng = np.random.default_rng(3)
    for _ in range(10):
        q = rng.uniform(-2.0, 2.0, robot.n)
        upright = upright_reach.distance(robot.frame_placement(q, TOOL).translation)
        on_wall = wall.frame_placement(q, TOOL).translation
        assert wall_reach.distance(on_wall) == pytest.approx(upright, abs=1e-12)
        wall_reach.check(on_wall, "tool target")
