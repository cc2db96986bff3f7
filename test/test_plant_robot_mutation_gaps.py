"""Behaviours of the MuJoCo plant and the Pinocchio robot model that a second mutation review of
``sim/plant.py`` and ``core/robot.py`` found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch: the
DoF and qpos maps the plant reads its state through and samples its inertia with, its divergence
and keyframe checks; the robot model's position limits, refusal of a model without joints, angle
wrapping, joint-name map, the reference frame of its Jacobians, and the refusals and exclusive
bound of its damping checks. Reference values come from MuJoCo and Pinocchio directly, finite
differences or the geometry, never from the code under test. No ROS.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest
from conftest import SCENE_PATH, TOOL_FRAME
from test_robot_model import _ONE_LINK
from test_sim_mutation_gaps import _FREE_BODY_FIRST, _model_file

from torque_ctrl_ros.core import RobotModel, wrap_angle
from torque_ctrl_ros.core.errors import ConfigError, ModelError, SimulationError, StateError
from torque_ctrl_ros.core.robot import (
    check_damping_stability,
    damping_eigenvalue_bound,
    damping_eigenvalues,
)
from torque_ctrl_ros.sim.plant import MujocoPlant

#: _FREE_BODY_FIRST under gravity, its hinge turning about a horizontal axis: gravity loads both
#: driven joints, whose DoF addresses (6, 7) differ from their qpos addresses (7, 8).
_FREE_BODY_FIRST_UNDER_GRAVITY = _FREE_BODY_FIRST.replace(' gravity="0 0 0"', "").replace(
    '<joint name="hinge" type="hinge" axis="0 0 1"/>', '<joint name="hinge" type="hinge" axis="0 1 0"/>'
)

#: Two hinges limited to [-1, 2] rad, a keyframe at the ends of their ranges and one just past.
_RANGED_KEYFRAMES = """<mujoco><compiler angle="radian"/><option gravity="0 0 0"/><worldbody>
<body><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/><joint name="a" axis="0 0 1" range="-1 2"/>
<body pos="1 0 0"><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>
<joint name="b" axis="0 0 1" range="-1 2"/></body></body></worldbody>
<keyframe><key name="ends" qpos="2 -1"/><key name="past" qpos="2 -1.000001"/></keyframe></mujoco>"""


def _driven_dofs(plant: MujocoPlant) -> np.ndarray:
    model = plant.model
    return np.array([model.jnt_dofadr[model.joint(name).id] for name in plant.joint_names])


def _bias(model: mujoco.MjModel, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
    """MuJoCo's ``qfrc_bias`` (gravity + Coriolis, all DoFs) at a state, on fresh data."""
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    data.qvel[:] = qvel
    mujoco.mj_forward(model, data)
    return data.qfrc_bias.copy()


# ------------------------------------------------------------------------------------------------
# sim/plant.py
# ------------------------------------------------------------------------------------------------


def test_gravity_and_accelerations_are_read_at_the_driven_joints_dofs(tmp_path: Path) -> None:
    """With a free body declared before the arm, a driven joint's DoF address is not its qpos
    address: ``gravity()`` and ``qacc`` read MuJoCo's per-DoF vectors at the DoF addresses, and
    ``qacc`` is ``M⁻¹·(τ − c)`` built here from ``mj_fullM`` and the bias force.
    Mutants: ``gravity()`` and ``qacc`` indexed with the qpos addresses."""
    plant = MujocoPlant(_model_file(tmp_path, _FREE_BODY_FIRST_UNDER_GRAVITY))
    model = plant.model
    dofs = _driven_dofs(plant)
    assert dofs.tolist() == [6, 7]
    plant.set_state([0.4, 0.1], [0.5, -0.3])
    tau = np.array([0.7, -0.2])
    plant.set_torque(tau)
    plant.forward()

    gravity = _bias(model, plant.data.qpos, np.zeros(model.nv))
    np.testing.assert_allclose(plant.gravity(), gravity[dofs], rtol=0.0, atol=1e-12)
    assert np.all(np.abs(gravity[dofs]) > 0.1)  # both joints hold weight

    force = -_bias(model, plant.data.qpos, plant.data.qvel)
    force[dofs] += tau
    mass = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, plant.data, mass)
    np.testing.assert_allclose(plant.qacc, np.linalg.solve(mass, force)[dofs], rtol=0.0, atol=1e-9)


def test_inverse_mass_blocks_leave_undriven_joints_at_the_models_qpos0(tmp_path: Path) -> None:
    """``inverse_mass_matrices`` sets only the driven joints' positions: an undriven slide whose
    ``qpos0`` is 0.3 m (``ref``) stays there, where it sets the hinge's inertia, as MuJoCo's own
    ``mj_fullM`` at that pose gives it.
    Mutant: the other positions start at 0 instead of ``qpos0``."""
    text = _FREE_BODY_FIRST.replace('type="slide" axis="1 0 0"/>', 'type="slide" axis="1 0 0" ref="0.3"/>')
    plant = MujocoPlant(_model_file(tmp_path, text), joint_names=["hinge"])
    model = plant.model
    slide = model.joint("slide")
    assert model.qpos0[slide.qposadr[0]] == pytest.approx(0.3)  # the case under test
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0
    data.qpos[model.joint("hinge").qposadr[0]] = 0.7
    mujoco.mj_forward(model, data)
    mass = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, mass)
    dof = _driven_dofs(plant)
    expected = np.linalg.inv(mass)[np.ix_(dof, dof)]
    np.testing.assert_allclose(plant.inverse_mass_matrices([[0.7]])[0], expected, rtol=1e-12, atol=0.0)


def test_one_divergence_raises_once_and_a_restored_state_steps_on() -> None:
    """A diverged step raises :class:`SimulationError` once: after the caller restores a good state
    with ``set_state`` (no reset), the plant steps on; a new divergence raises again.
    Mutant: ``step`` no longer records the divergence count it has reported."""
    plant = MujocoPlant(SCENE_PATH)
    plant.reset("home")
    home = plant.q
    plant.data.qvel[6] = 1e11  # joint_7, spun up from outside the plant
    with pytest.raises(SimulationError, match="BADQVEL"):
        plant.step()
    plant.set_state(home, np.zeros(plant.n))
    before = plant.time
    plant.step(5)
    assert plant.time == pytest.approx(before + 5 * plant.timestep)
    plant.data.qvel[6] = 1e11
    with pytest.raises(SimulationError, match="BADQVEL"):
        plant.step()


def test_a_keyframe_exactly_at_the_ends_of_the_joint_ranges_is_accepted(tmp_path: Path) -> None:
    """A keyframe that puts a joint exactly at the upper or the lower end of its range is a pose
    within range: ``reset`` takes it; a micro-radian past the lower end is refused.
    Mutants: the range check compares with ``high − tolerance`` or with ``low + tolerance``."""
    plant = MujocoPlant(_model_file(tmp_path, _RANGED_KEYFRAMES))
    plant.reset("ends")
    np.testing.assert_array_equal(plant.q, [2.0, -1.0])
    with pytest.raises(ModelError, match=r"keyframe 'past' .* outside their ranges .*'b'"):
        plant.reset("past")


# ------------------------------------------------------------------------------------------------
# core/robot.py
# ------------------------------------------------------------------------------------------------


def test_position_limits_are_read_from_their_own_side_of_the_urdf() -> None:
    """A revolute joint's lower position limit comes from the URDF's ``lower`` and its upper one
    from ``upper`` (the Gen3's are symmetric, so a sign-flipped read passes there); a ``lower``
    as large as Pinocchio's "none" (1e300) with a finite ``upper`` is a one-sided range, refused
    (until a review it left the joint continuous, its upper limit lost), not bounded at −1e300
    that sampling would draw from.
    Mutants: ``position_lower`` read as ``−upperPositionLimit``; the continuity test drops
    ``abs(lo) < _NO_LIMIT``."""
    limit = '<limit lower="-0.5" upper="2" effort="10" velocity="1"/>'
    robot = RobotModel.from_urdf_string(_ONE_LINK.replace("TYPE", "revolute").replace("LIMIT", limit))
    assert robot.continuous.tolist() == [False]
    assert robot.position_lower.tolist() == [-0.5] and robot.position_upper.tolist() == [2.0]
    one_sided = '<limit lower="-1e300" upper="1" effort="10" velocity="1"/>'
    with pytest.raises(ModelError, match=r"position limits \[-1e\+300, 1\] rad: expected a lower limit"):
        RobotModel.from_urdf_string(_ONE_LINK.replace("TYPE", "revolute").replace("LIMIT", one_sided))


def test_wrap_angle_brings_negative_angles_into_minus_pi_to_pi(robot: RobotModel) -> None:
    """``wrap_angle`` maps angles below −π into ``[−π, π)`` as well as those above π: the same
    angle as ``atan2(sin a, cos a)``; ``RobotModel.wrap`` wraps continuous joints only.
    Mutant: ``np.fmod`` for ``np.mod`` (keeps the sign of a negative angle, −4 stays −4)."""
    angles = np.array([-4.0, -10.0, -3.0 * np.pi - 0.5, 7.0, 0.25])
    wrapped = wrap_angle(angles)
    np.testing.assert_allclose(wrapped, np.arctan2(np.sin(angles), np.cos(angles)), rtol=0.0, atol=1e-12)
    assert np.all((-np.pi <= wrapped) & (wrapped < np.pi))
    q = np.full(robot.n, -4.0)
    np.testing.assert_allclose(robot.wrap(q), np.where(robot.continuous, 2.0 * np.pi - 4.0, -4.0), atol=1e-12)


def test_joint_index_maps_names_to_the_models_order_and_refuses_an_unknown_one(robot: RobotModel) -> None:
    """``joint_index`` gives each name's place in ``joint_names`` (the controller node maps its
    command order with it) and refuses an unknown name with :class:`StateError` listing the valid
    joints, not a bare ``ValueError``.
    Mutant: the unknown-name check dropped."""
    assert robot.joint_index(["joint_3", "joint_1", "joint_7"]).tolist() == [2, 0, 6]
    with pytest.raises(
        StateError, match=r"unknown joint name\(s\) \['joint_8'\]; valid joints are \['joint_1'"
    ):
        robot.joint_index(["joint_1", "joint_8"])


def test_a_description_without_joints_is_refused() -> None:
    """A URDF of one link and no joint is refused at load with :class:`ModelError`, not turned into
    a robot of zero joints that every controller would then take.
    Mutant: the no-joints check dropped."""
    with pytest.raises(ModelError, match="robot_description: the model has no joints"):
        RobotModel.from_urdf_string('<robot name="r"><link name="base"/></robot>')


def _finite_difference_jacobian(robot: RobotModel, q: np.ndarray, frame: str, local: bool) -> np.ndarray:
    """The frame's Jacobian by central differences of its placement (step 1e-6 rad): columns of
    ``[ṗ; ω]`` in the base axes, or both rotated into the frame's own axes with ``local``."""
    step = 1e-6
    rotation = robot.frame_placement(q, frame).rotation
    columns = []
    for i in range(robot.n):
        dq = np.zeros(robot.n)
        dq[i] = step
        plus, minus = robot.frame_placement(q + dq, frame), robot.frame_placement(q - dq, frame)
        linear = (plus.translation - minus.translation) / (2 * step)
        angular = pin.log3(plus.rotation @ minus.rotation.T) / (2 * step)
        if local:
            linear, angular = rotation.T @ linear, rotation.T @ angular
        columns.append(np.concatenate([linear, angular]))
    return np.array(columns).T


@pytest.mark.parametrize(("reference", "local"), [(pin.LOCAL_WORLD_ALIGNED, False), (pin.LOCAL, True)])
def test_frame_jacobian_is_given_in_the_reference_asked_for(
    robot: RobotModel, reference: pin.ReferenceFrame, local: bool
) -> None:
    """``frame_jacobian(q, frame, reference)`` honours ``reference``: with ``LOCAL`` the tool's
    velocity and angular velocity come in the tool's own axes, with ``LOCAL_WORLD_ALIGNED`` in the
    base's, each matching central differences of the frame's placement.
    Mutant: the ``reference`` argument ignored (``LOCAL_WORLD_ALIGNED`` always)."""
    q = np.array([0.3, 0.7, -0.4, 1.2, 0.5, -0.8, 0.2])
    expected = _finite_difference_jacobian(robot, q, TOOL_FRAME, local)
    np.testing.assert_allclose(robot.frame_jacobian(q, TOOL_FRAME, reference), expected, rtol=0.0, atol=1e-8)


def test_negative_joint_or_twist_dampings_are_refused(robot: RobotModel) -> None:
    """A negative joint damping (``check_damping``) or twist damping (``check_frame_damping``)
    pushes energy in: both are :class:`ConfigError` naming the field and ``>= 0``, not a NaN
    eigenvalue or a passing check.
    Mutants: ``min_value=0.0`` dropped from either conversion."""
    kd = np.zeros(robot.n)
    kd[0] = -0.1
    with pytest.raises(ConfigError, match=r"gravity_comp.damping: expected every entry >= 0"):
        robot.check_damping("gravity_comp.damping", kd)
    twist = [-1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    with pytest.raises(ConfigError, match=r"achd.damping: expected every entry >= 0"):
        robot.check_frame_damping("achd.damping", np.zeros(robot.n), TOOL_FRAME, twist)


@pytest.mark.parametrize("delay", [1, 4])
def test_a_damping_exactly_at_the_eigenvalue_bound_is_refused(delay: int) -> None:
    """``check_damping_stability`` refuses ``λ >= bound`` (the bound is exclusive): a damping whose
    largest eigenvalue of ``h·M⁻¹·K_d`` equals ``damping_eigenvalue_bound(delay)`` exactly is a
    :class:`ConfigError`, one just below it passes. Here ``M⁻¹ = I`` and ``h`` is the bound, so
    ``λ = h·max(K_d)`` is exact.
    Mutant: ``largest < bound`` as ``largest <= bound``."""
    bound = damping_eigenvalue_bound(delay)
    m_inv = np.eye(2)[None]
    kd = np.array([1.0, 0.5])
    assert damping_eigenvalues(m_inv, kd, bound)[0] == bound  # the case under test
    with pytest.raises(ConfigError, match="reaches eigenvalue"):
        check_damping_stability("damping", kd, bound, m_inv, np.zeros((1, 2)), ("a", "b"), delay)
    below = np.array([1.0 - 1e-12, 0.5])
    assert (
        check_damping_stability("damping", below, bound, m_inv, np.zeros((1, 2)), ("a", "b"), delay) < bound
    )
