"""RobotModel: joint order, limits, continuous joints, frames and error messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
import pytest

from torque_ctrl_ros.core import FrameNotFoundError, ModelError, RobotModel, StateError, TorqueCtrlError
from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.core.validation import FloatArray

JOINTS = tuple(f"joint_{i}" for i in range(1, 8))


def test_joint_order_limits_and_continuous_joints(robot: RobotModel) -> None:
    assert robot.joint_names == JOINTS
    assert robot.n == 7
    assert robot.model.nq == 11  # four continuous joints stored as (cos, sin)
    assert robot.continuous.tolist() == [True, False, True, False, True, False, True]
    assert np.isinf(robot.position_lower[robot.continuous]).all()
    np.testing.assert_allclose(robot.position_upper[[1, 3, 5]], [2.24, 2.57, 2.09])
    np.testing.assert_allclose(robot.position_lower[[1, 3, 5]], [-2.24, -2.57, -2.09])
    np.testing.assert_allclose(robot.effort_limit, [39, 39, 39, 39, 9, 9, 9])
    np.testing.assert_allclose(robot.velocity_limit, [1.3963] * 4 + [1.2218] * 3)


def test_configuration_round_trip_and_matches_pinocchio_neutral(robot: RobotModel) -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.uniform(-np.pi, np.pi, robot.n)
        q_pin = robot.configuration(q).copy()
        np.testing.assert_allclose(robot.angles(q_pin), q, atol=1e-12)
        assert pin.isNormalized(robot.model, q_pin)
    np.testing.assert_allclose(robot.configuration(np.zeros(robot.n)), pin.neutral(robot.model))


def test_difference_takes_the_short_way_on_continuous_joints(robot: RobotModel) -> None:
    q_from = np.zeros(robot.n)
    q_to = np.zeros(robot.n)
    q_from[0], q_to[0] = np.pi - 0.1, -np.pi + 0.1  # continuous: +0.2 the short way
    q_from[1], q_to[1] = 2.0, -2.0  # bounded: the plain difference, -4.0
    d = robot.difference(q_to, q_from)
    assert d[0] == pytest.approx(0.2, abs=1e-12)
    assert d[1] == pytest.approx(-4.0)
    wrapped = robot.wrap(np.full(robot.n, 3 * np.pi + 0.5))
    assert wrapped[0] == pytest.approx(-np.pi + 0.5)
    assert wrapped[1] == pytest.approx(3 * np.pi + 0.5)  # bounded joints are never wrapped


def test_unknown_frame_lists_valid_frames(robot: RobotModel) -> None:
    with pytest.raises(FrameNotFoundError) as info:
        robot.frame_id("gripper")
    message = str(info.value)
    assert "'gripper'" in message and "end_effector_link" in message and "bracelet_link" in message
    assert isinstance(info.value, TorqueCtrlError)
    # Indices are checked too: Pinocchio reads past its frame list (zeros, or a crash).
    q = np.zeros(robot.n)
    for index in (robot.model.nframes, -1, 10**5):
        with pytest.raises(FrameNotFoundError, match=f"frame index {index} is not in"):
            robot.frame_jacobian(q, index)
    tool = robot.frame_id("end_effector_link")
    np.testing.assert_array_equal(
        # A NumPy integer on purpose (annotated str | int): it is taken as the index it holds.
        robot.frame_jacobian(q, np.int64(tool)),  # type: ignore[arg-type]
        robot.frame_jacobian(q, "end_effector_link"),
    )


def test_bad_descriptions_raise_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="URDF file not found: '.*nope.urdf'"):
        RobotModel.from_urdf_file(tmp_path / "nope.urdf")
    broken = tmp_path / "broken.urdf"
    broken.write_text("<robot name='x'><link name='a'/><joint name='j' type='revolute'>")
    with pytest.raises(ModelError, match="cannot parse URDF"):
        RobotModel.from_urdf_file(broken)
    with pytest.raises(ModelError, match="expected a URDF document"):
        RobotModel.from_urdf_string("not xml")
    with pytest.raises(ModelError, match="expected a .urdf or an MJCF .xml"):
        RobotModel.from_file(tmp_path / "robot.sdf")


def test_urdf_string_and_file_give_the_same_model(robot: RobotModel, urdf_path: Path) -> None:
    other = RobotModel.from_urdf_string(urdf_path.read_text())
    q = np.linspace(-1, 1, 7)
    np.testing.assert_allclose(other.gravity(q), robot.gravity(q), atol=1e-12)


@pytest.mark.parametrize(
    ("q", "v", "match"),
    [
        (np.full(7, np.nan), np.zeros(7), "joint positions: expected finite numbers"),
        (np.zeros(7), np.array([0, 0, 0, np.inf, 0, 0, 0]), "joint velocities: expected finite"),
        (np.zeros(6), np.zeros(7), r"joint positions: expected 7 numbers, got shape \(6,\)"),
        ("abc", np.zeros(7), "joint positions: expected 7 numbers"),
    ],
)
def test_bad_state_raises_state_error(robot: RobotModel, q: Any, v: FloatArray, match: str) -> None:
    with pytest.raises(StateError, match=match):
        robot.check_state(q, v)


def test_dynamics_helpers_are_consistent(robot: RobotModel) -> None:
    rng = np.random.default_rng(1)
    q, v, a = rng.uniform(-1, 1, (3, robot.n))
    m = robot.mass_matrix(q)
    np.testing.assert_allclose(m, m.T)
    np.testing.assert_allclose(robot.rnea(q, v, a), m @ a + robot.nonlinear_effects(q, v), atol=1e-10)
    np.testing.assert_allclose(robot.rnea(q, np.zeros(7), np.zeros(7)), robot.gravity(q), atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_frame_bias_acceleration_is_the_derivative_of_j_qdot(robot: RobotModel, seed: int) -> None:
    # With q̈ = 0 the state moves along q + t·q̇, and J̇·q̇ = d/dt (J(q + t·q̇)·q̇): a central difference
    # of the world-aligned Jacobian (the one the tasks use) along that line.
    rng = np.random.default_rng(seed)
    q, v = rng.uniform(-2.0, 2.0, (2, robot.n))
    frame = "end_effector_link"
    dt = 1e-6
    ahead = robot.frame_jacobian(q + v * dt, frame) @ v
    behind = robot.frame_jacobian(q - v * dt, frame) @ v
    np.testing.assert_allclose(
        robot.frame_bias_acceleration(q, v, frame), (ahead - behind) / (2 * dt), rtol=0, atol=1e-6
    )


def test_frame_bias_acceleration_takes_no_other_reference(robot: RobotModel) -> None:
    # In LOCAL or WORLD Pinocchio's classical acceleration is off J̇·q̇ by up to ~7 m/s² at 2 rad/s.
    with pytest.raises(TypeError):
        robot.frame_bias_acceleration(np.zeros(7), np.ones(7), "end_effector_link", pin.LOCAL)  # type: ignore[call-arg]


def test_the_mjcf_description_gives_the_urdf_model_in_joint_angles(
    robot: RobotModel, scene_path: Path
) -> None:
    # Pinocchio stores a URDF continuous joint as (cos q, sin q) but an MJCF hinge without a
    # range as q itself: both must take joint angles, give the same dynamics and wrap alike.
    mjcf = RobotModel.from_file(scene_path.parent / "gen3.xml")
    assert mjcf.model.nq == 7 and mjcf.joint_names == robot.joint_names
    assert mjcf.continuous.tolist() == robot.continuous.tolist()
    np.testing.assert_allclose(mjcf.position_lower, robot.position_lower)
    np.testing.assert_allclose(mjcf.position_upper, robot.position_upper)
    rng = np.random.default_rng(4)
    for _ in range(10):
        q, v, a = rng.uniform(-4.0, 4.0, robot.n), rng.uniform(-1, 1, robot.n), rng.uniform(-1, 1, robot.n)
        np.testing.assert_allclose(mjcf.rnea(q, v, a), robot.rnea(q, v, a), atol=1e-9)
        np.testing.assert_allclose(mjcf.mass_matrix(q), robot.mass_matrix(q), atol=1e-9)
        q_pin = mjcf.configuration(q).copy()
        np.testing.assert_allclose(q_pin, q)
        np.testing.assert_allclose(mjcf.angles(q_pin), q)
        np.testing.assert_allclose(mjcf.wrap(q), robot.wrap(q))


def test_moving_columns_mark_the_joints_between_the_root_and_a_body(robot: RobotModel) -> None:
    """The mask the barriers multiply the chain's world Jacobian with: Pinocchio's own joint
    Jacobian of every Gen3 joint is that Jacobian with the other columns set to 0."""
    model, data = robot.model, robot.data
    pin.computeJointJacobians(model, data, robot.configuration(np.linspace(-1.0, 1.0, robot.n)))
    for joint in range(1, model.njoints):
        mask = robot.moving_columns(joint)
        assert mask.tolist() == [1.0] * joint + [0.0] * (robot.n - joint)  # a serial chain
        np.testing.assert_array_equal(data.J * mask, pin.getJointJacobian(model, data, joint, pin.WORLD))
    assert robot.dofs_moving("end_effector_link") == 7 and robot.dofs_moving("shoulder_link") == 1


_ONE_LINK = """<robot name="r"><link name="base"/>
<link name="l1"><inertial><mass value="1"/><origin xyz="0.3 0 0"/>
<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="j1" type="TYPE"><parent link="base"/><child link="l1"/><axis xyz="0 1 0"/>LIMIT</joint>
</robot>"""


@pytest.mark.parametrize(
    ("kind", "limit"),
    [
        ("continuous", '<limit effort="0" velocity="0"/>'),
        ("revolute", '<limit lower="0" upper="0" effort="10" velocity="1"/>'),
    ],
    ids=["zero-effort-and-velocity", "empty-range"],
)
def test_limits_a_description_leaves_open_are_none(kind: str, limit: str) -> None:
    """URDF's 0 effort / velocity and an empty position range mean "none given": no limit (as 0,
    every torque would be refused), and a joint without a range is continuous (wrapped: 3.1 and
    −3.1 rad are 0.083 apart, not 6.2)."""
    robot = RobotModel.from_urdf_string(_ONE_LINK.replace("TYPE", kind).replace("LIMIT", limit))
    if kind == "continuous":
        assert robot.effort_limit[0] == np.inf and robot.velocity_limit[0] == np.inf
    assert robot.continuous.tolist() == [True]
    assert robot.position_lower[0] == -np.inf and robot.position_upper[0] == np.inf
    assert robot.difference(np.array([3.1]), np.array([-3.1]))[0] == pytest.approx(6.2 - 2 * np.pi)


def test_a_revolute_joint_with_limits_out_of_order_is_refused() -> None:
    """Limits given but not a range (lower above upper) name the joint and its limits.
    Taken for "no limits" (as before: a review), a joint 2 with its limits swapped lost them in
    every check and its error wrapped the short way through ±π: 4 rad below its target, computed
    torque pushed it the other way, at −39 N·m into its stop."""
    limit = '<limit lower="2.24" upper="-2.24" effort="10" velocity="1"/>'
    with pytest.raises(
        ModelError, match=r"joint 'j1' has position limits \[2.24, -2.24\] rad: expected a lower"
    ):
        RobotModel.from_urdf_string(_ONE_LINK.replace("TYPE", "revolute").replace("LIMIT", limit))


def test_a_joint_moving_no_inertia_is_refused(urdf_path: Path) -> None:
    """A link without ``<inertial>`` after the last joint leaves ``M(q)`` singular: refused at load,
    naming that joint (numpy's eigensolver failed in the damping check with no name, and with no
    damping set the safe brake ran forward dynamics on a singular ``M``; a review)."""
    urdf = urdf_path.read_text()
    block = urdf[urdf.index('<link name="bracelet_link">') :]
    inertial = block[: block.index("</inertial>") + len("</inertial>")]
    inertial = inertial[inertial.index("<inertial>") :]
    with pytest.raises(ModelError, match=r"joint_7 moves almost no inertia at q = .* smallest eigenvalue"):
        RobotModel.from_urdf_string(urdf.replace(inertial, "", 1))
    light = (
        '<inertial><mass value="1e-3"/>'
        '<inertia ixx="1e-7" ixy="0" ixz="0" iyy="1e-7" iyz="0" izz="1e-7"/></inertial>'
    )
    assert RobotModel.from_urdf_string(urdf.replace(inertial, light, 1)).n == 7  # light, not massless


def test_a_damping_that_overflows_the_check_is_refused_by_name(robot: RobotModel) -> None:
    """``h·M⁻¹·K_d`` overflowing (1e306 N·m·s/rad) is a :class:`ConfigError` naming the field, as
    1e305 is; numpy's eigensolver raised LinAlgError on the overflowed product (a review)."""
    for kd in (1e305, 1e306, 1e308):
        with pytest.raises(ConfigError, match="^fallback: "):
            robot.check_damping("fallback", kd)
