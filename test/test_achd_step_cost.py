"""ACHD → RNEA's per-step shortcuts (2026-12-07) leave its results as they were.

The benchmark's compute section tracks, a new reference at every state, and ACHD → RNEA read 46×
``rnea`` there (target ≤ 40×). The step now leaves out what it does not need: the Jᵀ·f of a wrench
that is 0 at every step (no task wrench, no damping on a free axis), the reference's SE(3) pose
where the error is ``decoupled``, and a second :class:`PoseReference` built from the checked
fields. Each test below pins what a shortcut must not change.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers.cartesian import AchdRnea, AchdRneaConfig, PoseReference
from torque_ctrl_ros.core.errors import ConfigError, TargetError
from torque_ctrl_ros.core.types import JointState

HOME = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
V = np.array([0.2, -0.15, 0.1, 0.25, -0.3, 0.2, 0.1])


@pytest.mark.parametrize(
    ("params", "acts"),
    [
        ({}, False),
        ({"constrained_axes": "x, y, z"}, False),
        ({"constrained_axes": "x, y, z", "free_axis_damping": [0.0, 0.0, 0.0, 0.05, 0.05, 0.05]}, True),
        ({"constrained_axes": "x, y, z", "task_wrench": [0.0, 0.0, 0.0, 0.4, -0.2, 0.1]}, True),
        # Task wrench on a constrained axis only: it changes λ, not q̈ (module docs), yet it is in.
        ({"task_wrench": [0.0, 0.0, -5.0, 0.0, 0.0, 0.0]}, True),
    ],
)
def test_the_wrench_is_left_out_only_where_it_is_zero_at_every_step(
    robot: RobotModel, params: dict[str, object], acts: bool
) -> None:
    """The solution's wrench is ``f_task − B ∘ ẋ`` on the free axes, and its ``q̈``, ``λ`` and
    command are those of :meth:`ConstrainedDynamics.solve` given that wrench, whether the step
    passed it on (``acts``) or left out a wrench of zeros. Mutant: the wrench counted as acting
    only with a task wrench, so ``free_axis_damping`` alone was dropped (the third case)."""
    ctrl = AchdRnea.from_params(robot, params)
    reference = ctrl.hold_reference(JointState(HOME + 0.02, np.zeros(robot.n)))
    sol = ctrl.solve(HOME, V, reference)
    kin = ctrl.dynamics.kinematics(HOME, V)
    free = ctrl.alpha.sum(axis=1) == 0.0
    wrench = ctrl.config.task_wrench - np.where(free, ctrl.config.free_axis_damping, 0.0) * kin.velocity
    assert bool(np.any(wrench != 0.0)) is acts
    np.testing.assert_array_equal(sol.wrench, wrench)
    expected = ctrl.dynamics.solve(HOME, V, ctrl.alpha, sol.beta, sol.feedforward_torque, wrench)
    np.testing.assert_allclose(sol.dynamics.qdd, expected.qdd, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(sol.dynamics.lam, expected.lam, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(sol.constraint_torque, expected.constraint_torque, rtol=1e-12, atol=1e-9)


def test_the_zero_wrench_of_a_solution_cannot_be_written(robot: RobotModel) -> None:
    """Every solution of a step without a wrench shares one array of zeros: written in place, it
    would change the next solutions' ``wrench``. It is read-only."""
    ctrl = AchdRnea.from_params(robot, {})
    sol = ctrl.solve(HOME, V, ctrl.hold_reference(JointState(HOME, np.zeros(robot.n))))
    with pytest.raises(ValueError, match="read-only"):
        sol.wrench[2] = 1.0


def test_a_new_reference_is_checked_and_its_fields_copied(robot: RobotModel) -> None:
    """Each new reference object is checked (a NaN after a good one is refused), and the step
    follows the checked copies: the caller's arrays changed in place after a step do not reach
    the next step with that same object."""
    ctrl = AchdRnea.from_params(robot, {})
    good = ctrl.hold_reference(JointState(HOME + 0.02, np.zeros(robot.n)))
    first = ctrl.solve(HOME, V, good).tau
    with pytest.raises(TargetError, match="target position"):
        ctrl.solve(HOME, V, PoseReference(np.array([0.4, np.nan, 0.3]), good.rotation))
    moved = PoseReference(good.position.copy(), good.rotation.copy())
    before = ctrl.solve(HOME, V, moved).tau
    np.testing.assert_array_equal(before, first)
    moved.position[2] += 0.1  # in place: the same object again
    np.testing.assert_array_equal(ctrl.solve(HOME, V, moved).tau, first)


def test_the_se3_error_follows_a_new_reference_and_decoupled_needs_no_pose(robot: RobotModel) -> None:
    """``se3`` takes its error toward each new reference's pose; ``decoupled`` builds no pose for
    it (``_reference_se3`` stays the identity it started as). Mutant: the pose built only for
    ``decoupled`` (the condition inverted), so ``se3`` aimed at the identity."""
    se3 = AchdRnea.from_params(robot, {"pose_error": "se3"})
    decoupled = AchdRnea.from_params(robot, {})
    for offset in (0.02, -0.03):
        reference = se3.hold_reference(JointState(HOME + offset, np.zeros(robot.n)))
        se3.solve(HOME, V, reference)
        decoupled.solve(HOME, V, reference)
        np.testing.assert_array_equal(se3._reference_se3.translation, reference.position)
        np.testing.assert_array_equal(se3._reference_se3.rotation, reference.rotation)
        assert decoupled._reference_se3.isIdentity()


def test_a_config_built_directly_with_an_unknown_pose_error_is_refused(robot: RobotModel) -> None:
    """``create()`` refuses an unknown ``pose_error``; a config built directly (or changed with
    ``dataclasses.replace``) is checked by the controller too. Before, ``"SE3"`` took the se3
    branch toward a pose built for ``"se3"`` only, the identity: holding its pose at HOME, the arm
    was driven 2.19 m·rad off while ``position_error`` read 0 (a review of the shortcuts)."""
    config = dataclasses.replace(AchdRneaConfig.create(robot.n), pose_error="SE3")
    with pytest.raises(ConfigError, match="achd_rnea.pose_error"):
        AchdRnea(robot, config)


def test_a_config_built_directly_with_lists_still_computes(robot: RobotModel) -> None:
    """A config built directly may hold lists where ``create()`` gives arrays: the step's set-up
    takes them as numbers (``task_wrench.any()`` had raised AttributeError at construction)."""
    made = AchdRneaConfig.create(robot.n, constrained_axes="x, y, z", task_wrench=[0.0, 0.0, 0.0, 0.3, 0, 0])
    config = dataclasses.replace(
        made,
        task_wrench=made.task_wrench.tolist(),
        joint_damping=made.joint_damping.tolist(),
        kp=made.kp.tolist(),
        kd=made.kd.tolist(),
    )
    listed, arrays = AchdRnea(robot, config), AchdRnea(robot, made)
    reference = arrays.hold_reference(JointState(HOME + 0.02, np.zeros(robot.n)))
    np.testing.assert_array_equal(listed.solve(HOME, V, reference).tau, arrays.solve(HOME, V, reference).tau)
