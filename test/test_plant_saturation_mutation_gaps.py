"""Behaviours of the MuJoCo plant and the torque limiter that a mutation review of
``sim/plant.py`` and ``core/saturation.py`` found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch:
which way a joint's share pushes when the limiter scales toward the bias, and the rounding
excess it does not report; the plant's refusal of an empty joint list, of actuators that are no
exact torque source and of negative dampings, the actuators and torque ranges it reads for each
joint, the timestep of its damping bound, a refused state leaving it untouched, and the
forward dynamics it computes on loading and on a reset. Reference values come from MuJoCo
directly or from the geometry of the small models written here, never from the code under test.
No ROS.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
from conftest import SCENE_PATH
from test_plant import _ONE_JOINT
from test_plant_robot_mutation_gaps import _driven_dofs
from test_saturation import LIMIT
from test_sim_mutation_gaps import _TWO_JOINTS, _model_file, _two_joints

from torque_ctrl_ros.core.errors import ConfigError, ModelError, StateError
from torque_ctrl_ros.core.saturation import ROUNDING, TorqueLimiter
from torque_ctrl_ros.sim.plant import MujocoPlant

# ------------------------------------------------------------------------------------------------
# core/saturation.py
# ------------------------------------------------------------------------------------------------


def test_a_joint_inside_its_limits_bounds_the_scale_by_the_side_its_share_pushes_toward() -> None:
    """Joint a's command (5) is positive but below its bias (8): its share (−3) pushes down, with
    18 N·m of room to −10, so a sets no bound and b alone (share 12, room 10) sets
    ``s = 10/12``. Mutant: the side read from the sign of the command instead of the share (a's
    2 N·m to the upper limit bound ``s`` to 2/3 and cut b's torque to 8 N·m)."""
    limiter = TorqueLimiter(("a", "b"), np.array([LIMIT, LIMIT]))
    out = limiter.apply(np.array([5.0, 12.0]), bias=np.array([8.0, 0.0]))
    assert out.torque_scale == pytest.approx(10.0 / 12.0, rel=1e-12)
    np.testing.assert_allclose(out.tau, [8.0 - 3.0 * 10.0 / 12.0, LIMIT], rtol=0, atol=1e-12)
    assert out.saturated_joints == ("b",)


def test_a_bias_within_rounding_past_its_limit_is_clipped_there_unreported() -> None:
    """Joint a asks for its bias, which is half a ``ROUNDING`` past its limit: scaled toward the
    bias it stays there and is clipped to the limit without being named, as a command that far
    past is; b's excess halves ``s`` and b alone is reported. Mutant: any excess left after the
    scaling reported (``> 0`` instead of ``> ROUNDING``), naming a too."""
    limiter = TorqueLimiter(("a", "b"), np.array([LIMIT, LIMIT]))
    c_a = LIMIT + ROUNDING / 2
    out = limiter.apply(np.array([c_a, 2 * LIMIT]), bias=np.array([c_a, 0.0]))
    assert out.torque_scale == pytest.approx(0.5, rel=1e-12)
    np.testing.assert_array_equal(out.tau, [LIMIT, LIMIT])
    assert out.saturated_joints == ("b",)
    assert out.saturated.tolist() == [False, True]


# ------------------------------------------------------------------------------------------------
# sim/plant.py: what it refuses
# ------------------------------------------------------------------------------------------------


def test_an_empty_joint_list_is_refused_not_read_as_every_joint(tmp_path: Path) -> None:
    """``joint_names=[]`` asks for no joint: refused at load, not taken for the default (every
    hinge and slide of the model), which would drive joints the caller did not name.
    Mutant: the default taken for any falsy ``joint_names`` instead of ``None`` only."""
    path = _two_joints(tmp_path, "")
    assert MujocoPlant(path).joint_names == ("a", "b")
    with pytest.raises(ModelError, match="no hinge or slide joint to drive"):
        MujocoPlant(path, joint_names=[])


@pytest.mark.parametrize(
    ("actuator", "fragment"),
    [
        ('<general joint="j" gaintype="affine" gainprm="1 0 1"/>', "fixed non-zero gain"),
        ('<motor joint="j" damping="0 1"/>', "damping or armature"),
    ],
    ids=["affine-gain", "damping-polynomial"],
)
def test_an_actuator_with_a_state_dependent_gain_or_polynomial_damping_is_refused(
    tmp_path: Path, actuator: str, fragment: str
) -> None:
    """An affine gain (force ``(1 + q̇)·ctrl`` here: not ``gear·gain·ctrl``) and a damping given
    only by its polynomial terms (``damping="0 1"``: linear coefficient 0, quadratic 1) are
    refused at load, naming the joint. Mutants: the gain-type check dropped (only a zero gain
    refused); the ``dampingpoly`` check dropped."""
    path = _model_file(tmp_path, _ONE_JOINT.replace("JOINT", "").replace("ACTUATOR", actuator))
    with pytest.raises(ModelError, match=f"actuator .* on joint j .*{fragment}"):
        MujocoPlant(path)


def test_negative_dampings_are_refused_by_the_damping_bound_and_check(tmp_path: Path) -> None:
    """A negative ``K_d`` (a torque that pushes along the velocity) is refused by
    :meth:`damping_eigenvalue`, not turned into a negative eigenvalue that passes for a safe
    bound, and by :meth:`check_damping`, naming its field. Mutant: ``min_value=0`` dropped from
    ``damping_eigenvalue`` (dropped from ``check_damping`` it is equivalent:
    ``check_damping_stability`` refuses the same vector with the same field)."""
    plant = MujocoPlant(_two_joints(tmp_path, ""))
    with pytest.raises(ConfigError, match="damping"):
        plant.damping_eigenvalue(-1.0)
    with pytest.raises(ConfigError, match="sim_node.safe_damping"):
        plant.check_damping("sim_node.safe_damping", [-1.0, 0.0])


# ------------------------------------------------------------------------------------------------
# sim/plant.py: which actuator and which range each joint's torque goes through
# ------------------------------------------------------------------------------------------------


def test_a_jointinparent_motor_drives_its_joint_within_its_range(tmp_path: Path) -> None:
    """A motor with ``jointinparent`` transmission is the joint's motor, as one with ``joint`` is:
    its joint is in ``motor`` mode and a 5 N·m command is clamped to ``gear·ctrlrange`` = ±2 N·m.
    Mutant: only ``mjTRN_JOINT`` taken as a joint transmission (the joint then ``applied``, its
    command passed whole through ``qfrc_applied``)."""
    plant = MujocoPlant(_two_joints(tmp_path, '<motor jointinparent="a" gear="2" ctrlrange="-1 1"/>'))
    assert plant.joint_modes == ("motor", "applied")
    plant.set_torque([5.0, 0.0])
    plant.forward()
    np.testing.assert_allclose(plant.tau_applied, [2.0, 0.0], rtol=0, atol=1e-12)
    assert plant.data.ctrl[0] == pytest.approx(1.0)


def test_each_motor_scales_its_control_by_its_own_gear_in_any_declaration_order(tmp_path: Path) -> None:
    """Motors declared in another order than the joints (b's first, gear 2; a's second, gear 1):
    each control is the joint's torque over its own actuator's ``gear·gain``, so both joints get
    what was commanded. Mutant: ``gear·gain`` read at the joint's index instead of its actuator's
    (a got half its torque, b twice)."""
    plant = MujocoPlant(_two_joints(tmp_path, '<motor joint="b" gear="2"/><motor joint="a" gear="1"/>'))
    assert plant.joint_modes == ("motor", "motor")
    plant.set_torque([3.0, 0.5])
    plant.forward()
    np.testing.assert_allclose(plant.tau_applied, [3.0, 0.5], rtol=0, atol=1e-12)
    np.testing.assert_allclose(plant.data.ctrl, [0.25, 3.0], rtol=0, atol=1e-12)  # [b's, a's]


def test_the_actuatorfrcrange_is_read_for_each_driven_joint_in_any_order(tmp_path: Path) -> None:
    """Only joint b limits its actuator force (±2 N·m); driven in the order (b, a), b's command
    is clamped to it and a's passes whole. Mutant: the ``actuatorfrclimited`` flags read at the
    driven joints' indices instead of their model ids (b then unlimited, a clamped to b's flag
    with its own zero range)."""
    text = _TWO_JOINTS.replace(
        '<joint name="b" type="hinge" axis="0 0 1"/>',
        '<joint name="b" type="hinge" axis="0 0 1" actuatorfrcrange="-2 2"/>',
    )
    plant = MujocoPlant(
        _model_file(tmp_path, text.replace("ACTUATORS", "").replace("KEYFRAMES", "")), ["b", "a"]
    )
    assert bool(plant.model.jnt_actfrclimited[1]) and not plant.model.jnt_actfrclimited[0]
    plant.set_torque([5.0, 5.0])
    plant.forward()
    np.testing.assert_allclose(plant.tau_applied, [2.0, 5.0], rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# sim/plant.py: the damping bound's timestep, a refused state, derived quantities after a reset
# ------------------------------------------------------------------------------------------------


def test_the_damping_bound_uses_the_models_own_timestep(tmp_path: Path) -> None:
    """With ``timestep="0.01"`` and ``M = I`` (two unit inertias on separate hinges), the damping
    eigenvalue of ``K_d = 50`` is ``0.01·50 = 0.5``, and ``K_d = 150`` (λ = 1.5) is refused.
    Mutants: ``damping_eigenvalue`` or ``check_damping`` taking h = 1 ms (the Gen3's) instead of
    the model's step (0.05, and 0.15 accepted)."""
    text = _TWO_JOINTS.replace('<option integrator="Euler"', '<option timestep="0.01" integrator="Euler"')
    plant = MujocoPlant(_model_file(tmp_path, text.replace("ACTUATORS", "").replace("KEYFRAMES", "")))
    assert plant.timestep == 0.01
    data = mujoco.MjData(plant.model)
    mujoco.mj_forward(plant.model, data)
    mass = np.zeros((2, 2))
    mujoco.mj_fullM(plant.model, data, mass)
    np.testing.assert_allclose(mass, np.eye(2), rtol=0, atol=1e-12)
    assert plant.damping_eigenvalue(50.0, configurations=[[0.0, 0.0]]) == pytest.approx(0.5, rel=1e-12)
    assert plant.check_damping("sim_node.safe_damping", 50.0) == pytest.approx(0.5, rel=1e-12)
    with pytest.raises(ConfigError, match="sim_node.safe_damping"):
        plant.check_damping("sim_node.safe_damping", 150.0)


def test_a_refused_state_leaves_the_positions_and_velocities_as_they_were(tmp_path: Path) -> None:
    """``set_state`` checks both vectors before writing either: a non-finite velocity is refused
    and the positions given with it are not written. Mutant: the positions written before the
    velocities are checked (the plant left at the new pose with the old velocities)."""
    plant = MujocoPlant(_two_joints(tmp_path, ""))
    plant.set_state([0.1, 0.2], [0.3, 0.4])
    with pytest.raises(StateError, match=r"v is not finite at \['a'\]"):
        plant.set_state([1.0, 1.0], [np.nan, 0.0])
    np.testing.assert_array_equal(plant.q, [0.1, 0.2])
    np.testing.assert_array_equal(plant.v, [0.3, 0.4])


def _forward_at(model: mujoco.MjModel, keyframe: int | None = None) -> mujoco.MjData:
    """Fresh data at ``qpos0`` (or a keyframe) with zero controls, after ``mj_forward``."""
    data = mujoco.MjData(model)
    if keyframe is not None:
        mujoco.mj_resetDataKeyframe(model, data, keyframe)
    data.ctrl[:] = 0.0
    mujoco.mj_forward(model, data)
    return data


def test_a_new_or_reset_plant_has_its_derived_quantities_computed() -> None:
    """Right after loading, and after :meth:`reset` to a keyframe, the plant's accelerations and
    bias forces are MuJoCo's at that pose with zero torque (the arm moving off its pose), not the
    zeros ``MjData`` starts or is reset with. Mutants: the ``mj_forward`` at the end of
    ``__init__`` dropped; the :meth:`forward` at the end of :meth:`reset` dropped."""
    plant = MujocoPlant(SCENE_PATH)
    model = plant.model
    loaded = _forward_at(model)
    assert np.max(np.abs(loaded.qacc)) > 0.1  # the case under test: the arm moves off qpos0
    np.testing.assert_allclose(plant.data.qacc, loaded.qacc, rtol=0, atol=1e-9)
    np.testing.assert_allclose(plant.data.qfrc_bias, loaded.qfrc_bias, rtol=0, atol=1e-9)
    plant.set_torque(np.full(plant.n, 5.0))
    plant.step(10)
    plant.reset("home")
    home = _forward_at(model, plant.keyframe_names.index("home"))
    assert np.max(np.abs(home.qfrc_bias)) > 1.0 and np.max(np.abs(home.qacc)) > 0.1
    np.testing.assert_allclose(plant.qacc, home.qacc[_driven_dofs(plant)], rtol=0, atol=1e-9)
    np.testing.assert_allclose(plant.data.qfrc_bias, home.qfrc_bias, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(plant.tau_applied, np.zeros(plant.n))
