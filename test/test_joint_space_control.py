"""Gravity compensation and RNEA computed torque, closed loop on the exact MuJoCo plant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from torque_ctrl_ros.core import (
    ConfigError,
    JointReference,
    JointState,
    RobotModel,
    SolverError,
    StateError,
    TargetError,
)
from torque_ctrl_ros.core.controllers import (
    ComputedTorque,
    ComputedTorqueConfig,
    GravityCompensation,
    create_controller,
)
from torque_ctrl_ros.core.controllers.base import Controller
from torque_ctrl_ros.core.validation import FloatArray
from torque_ctrl_ros.sim.plant import MujocoPlant

TOOL = "end_effector_link"


@pytest.fixture
def plant(scene_path: Path) -> MujocoPlant:
    p = MujocoPlant(scene_path)
    p.reset("home")
    return p


def _run(plant: MujocoPlant, controller: Controller[Any], reference: Any, steps: int) -> np.ndarray:
    """Close the loop for ``steps`` steps; return the joint positions before each step."""
    qs = np.empty((steps + 1, plant.n))
    for k in range(steps):
        qs[k] = plant.q
        out = controller.compute(JointState(plant.q, plant.v), reference)
        assert not out.any_saturated, f"saturated {out.saturated_joints} at step {k}"
        plant.set_torque(out.tau)
        plant.step()
    qs[steps] = plant.q
    return qs


def test_gravity_compensation_holds_home_for_5_s(robot: RobotModel, plant: MujocoPlant) -> None:
    start, _ = plant.site_pose(TOOL)
    controller = GravityCompensation(robot)
    steps = round(5.0 / plant.timestep)
    _run(plant, controller, None, steps)
    end, _ = plant.site_pose(TOOL)
    drift_mm = 1e3 * np.linalg.norm(end - start)
    print(f"gravity compensation, 5 s at home: tool drift {drift_mm:.2e} mm")
    assert plant.time == pytest.approx(5.0)
    assert drift_mm < 0.01


def test_without_compensation_the_arm_falls(robot: RobotModel, plant: MujocoPlant) -> None:
    """Control for the test above: 0.5 s with zero torque already moves the tool by > 10 mm."""
    start, _ = plant.site_pose(TOOL)
    plant.set_torque(np.zeros(plant.n))
    plant.step(500)
    assert 1e3 * np.linalg.norm(plant.site_pose(TOOL)[0] - start) > 10.0


def _analytic_error(kp: float, kd: float, e0: float, times: np.ndarray) -> np.ndarray:
    """Solution of ë + kd·ė + kp·e = 0 with e(0) = e0, ė(0) = 0.

    With the roots r1, r2 of r² + kd·r + kp: e = e0·(r2·e^{r1·t} − r1·e^{r2·t}) / (r2 − r1),
    and e = e0·(1 − r·t)·e^{r·t} for the double root r = −kd/2 (critical damping).
    """
    disc = complex(kd * kd - 4.0 * kp)
    if abs(disc) < 1e-12 * kd * kd:
        r = -kd / 2.0
        return e0 * (1.0 - r * times) * np.exp(r * times)
    r1, r2 = (-kd + np.sqrt(disc)) / 2.0, (-kd - np.sqrt(disc)) / 2.0
    return (e0 * (r2 * np.exp(r1 * times) - r1 * np.exp(r2 * times)) / (r2 - r1)).real


def _discrete_error(kp: float, kd: float, e0: float, h: float, steps: int) -> np.ndarray:
    """The same loop under MuJoCo's semi-implicit Euler step with a zero-order-hold command.

    ``q̇ ← q̇ + h·(kp·e − kd·q̇)``, then ``q ← q + h·q̇`` (so ``e ← e − h·q̇``).
    """
    e, qd = e0, 0.0
    out = np.empty(steps + 1)
    for k in range(steps + 1):
        out[k] = e
        qd += h * (kp * e - kd * qd)
        e -= h * qd
    return out


@pytest.mark.parametrize("joint", range(7))
def test_computed_torque_step_follows_the_analytic_second_order_response(
    robot: RobotModel, plant: MujocoPlant, joint: int
) -> None:
    kp = 100.0  # ω_n = 10 rad/s, critically damped: kd = 20
    controller = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, kp))
    step = 0.1
    q_ref = plant.q.copy()
    q_ref[joint] += step
    steps = round(2.0 / plant.timestep)
    qs = _run(plant, controller, JointReference(q_ref), steps)
    errors = robot.difference(np.broadcast_to(q_ref, qs.shape), qs)
    times = np.arange(steps + 1) * plant.timestep
    expected = _analytic_error(kp, 2.0 * np.sqrt(kp), step, times)
    deviation = np.abs(errors[:, joint] - expected).max()
    # The plant is exact, so the only gap to the continuous solution is the 1 ms Euler step;
    # against the discrete-time recursion of the same loop the match is to rounding.
    discrete = np.abs(errors[:, joint] - _discrete_error(kp, 2 * np.sqrt(kp), step, plant.timestep, steps))
    others = np.abs(np.delete(errors, joint, axis=1)).max()
    print(
        f"joint_{joint + 1}: max |e - e_analytic| = {deviation:.2e} rad, "
        f"|e - e_discrete| = {discrete.max():.1e} rad, other joints {others:.1e} rad"
    )
    assert deviation < 0.01 * step
    assert discrete.max() < 1e-9
    assert others < 0.01 * step


def test_continuous_joint_goes_the_short_way(robot: RobotModel, plant: MujocoPlant) -> None:
    q0 = plant.q.copy()
    q0[0] = np.pi - 0.1
    plant.set_state(q0, np.zeros(plant.n))
    q_ref = q0.copy()
    q_ref[0] = -np.pi + 0.1
    controller = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
    qs = _run(plant, controller, JointReference(q_ref), 2000)
    travelled = qs[:, 0] - q0[0]
    print(f"joint_1 travelled {travelled[-1]:+.4f} rad (short way is +0.2)")
    assert travelled.min() > -1e-9  # never heads the long way
    assert travelled[-1] == pytest.approx(0.2, abs=1e-3)
    assert abs(robot.difference(q_ref, qs[-1])[0]) < 1e-3


def test_saturation_caps_torque_and_names_the_joints(robot: RobotModel, plant: MujocoPlant) -> None:
    controller = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 400.0))
    far = plant.q + np.array([0.0, 2.0, 0.0, 2.0, 0.0, 1.5, 0.0])
    seen: set[str] = set()
    for _ in range(300):
        out = controller.compute(JointState(plant.q, plant.v), JointReference(far))
        assert np.all(np.abs(out.tau) <= robot.effort_limit)
        assert np.array_equal(out.saturated, np.abs(out.tau_unsaturated) > robot.effort_limit)
        seen.update(out.saturated_joints)
        plant.set_torque(out.tau)
        plant.step()
        assert np.all(np.abs(plant.tau_applied) <= robot.effort_limit + 1e-9)
    print(f"saturated joints seen: {sorted(seen)}")
    assert {"joint_2", "joint_4"} <= seen


def test_on_the_reference_the_command_is_the_reference_inverse_dynamics(robot: RobotModel) -> None:
    """No error: τ = RNEA(q, q̇, q̈_ref) exactly (the feed-forward is what tracks a trajectory:
    without it a 0.5 rad quintic in 1 s had lagged by 2e-2 rad instead of 2e-4)."""
    controller = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
    rng = np.random.default_rng(5)
    q, v, a = rng.uniform(-1.0, 1.0, robot.n), rng.uniform(-0.5, 0.5, robot.n), rng.uniform(-2, 2, robot.n)
    out = controller.compute(JointState(q, v), JointReference(q.copy(), v.copy(), a))
    np.testing.assert_allclose(out.tau, robot.rnea(q, v, a), rtol=0, atol=1e-12)


def test_a_saturated_command_keeps_the_joints_without_error_still(
    robot: RobotModel, plant: MujocoPlant
) -> None:
    """A 3 rad step on joint_1 alone: the command is scaled along q̈ (one joint at its limit, the
    others' share of the coupling scaled with it). Clipped joint by joint, it had spun
    joints 3, 5 and 7, which had no error, to 13–16 times their velocity limits."""
    controller = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
    reference = JointReference(plant.q + np.eye(robot.n)[0] * 3.0)
    peak = np.zeros(robot.n)
    scales = []
    for _ in range(3000):
        q, v = plant.q, plant.v
        out = controller.compute(JointState(q, v), reference)
        scales.append(out.info["torque_scale"])
        if out.info["torque_scale"] < 1.0:
            # The joints asked for more than they have (the coupling on joints 3, 5 and 7 too);
            # the one that sets the scale is at its limit.
            assert "joint_1" in out.saturated_joints
            assert np.max(np.abs(out.tau) / robot.effort_limit) == pytest.approx(1.0)
            # On the model, the acceleration is the asked one scaled: no joint but joint_1 moves.
            qdd = np.linalg.solve(robot.mass_matrix(q), out.tau - robot.nonlinear_effects(q, v))
            asked = np.linalg.solve(robot.mass_matrix(q), out.tau_unsaturated - robot.nonlinear_effects(q, v))
            np.testing.assert_allclose(qdd, out.info["torque_scale"] * asked, rtol=0, atol=1e-9)
        plant.set_torque(out.tau)
        plant.step()
        peak = np.maximum(peak, np.abs(plant.v) / robot.velocity_limit)
    print(f"peak speed / limit {np.round(peak, 3)}, smallest torque_scale {min(scales):.3f}")
    assert 0.0 < min(scales) < 0.6 and scales[-1] == 1.0
    assert peak[1:].max() < 0.01
    assert abs(robot.difference(reference.q, plant.q)[0]) < 1e-6


def test_controller_configs_reject_bad_values(robot: RobotModel) -> None:
    with pytest.raises(ConfigError, match=r"computed_torque.kp: expected every entry > 0, got \[-1.0"):
        ComputedTorqueConfig.create(7, [-1.0] * 7)
    with pytest.raises(
        ConfigError, match=r"computed_torque.kp: expected a number or 7 numbers, got shape \(3,\)"
    ):
        ComputedTorqueConfig.create(7, [1, 2, 3])
    with pytest.raises(ConfigError, match="computed_torque.kd: expected finite numbers"):
        ComputedTorqueConfig.create(7, 100.0, float("nan"))
    with pytest.raises(ConfigError, match=r"gravity_comp.damping: expected every entry >= 0"):
        create_controller("gravity_comp", robot, {"damping": -1.0})
    with pytest.raises(ConfigError, match=r"unknown parameter\(s\) \['kpp'\]; valid are \['kd', 'kp'\]"):
        create_controller("computed_torque", robot, {"kpp": 1.0})
    with pytest.raises(ConfigError, match=r"unknown 'pid'; valid controllers are \[.*'computed_torque'"):
        create_controller("pid", robot, {})
    config = ComputedTorqueConfig.create(7, 16.0)
    np.testing.assert_allclose(config.kd, 8.0)  # critical damping 2·√kp by default


def test_unstable_gains_are_refused_naming_the_parameters_and_the_joint(robot: RobotModel) -> None:
    """The refusal names ``computed_torque.kp/kd`` and the joint by its name in the model; a
    config made without the robot has only the joints' numbers."""
    kp = [100.0] * 6 + [2e5]
    unstable = r"^computed_torque\.kp/kd: kp 200000 1/s², kd 894\.427 1/s on {} are unstable"
    with pytest.raises(ConfigError, match=unstable.format("joint_7")):
        create_controller("computed_torque", robot, {"kp": kp})
    kp_arr = np.array(kp)
    with pytest.raises(ConfigError, match=unstable.format("joint_7")):
        ComputedTorque(robot, ComputedTorqueConfig(kp_arr, 2.0 * np.sqrt(kp_arr)))  # built directly
    with pytest.raises(ConfigError, match=unstable.format("joint #7")):
        ComputedTorqueConfig.create(7, kp)


def test_hold_reference_refuses_a_malformed_state_and_the_config_has_a_default(robot: RobotModel) -> None:
    """As achd_rnea's and the QP controllers': a 3-joint state is refused here as a state, not
    taken as a 3-vector reference refused later as a target. Without a config, computed_torque
    has from_params' defaults, as gravity_comp and achd_rnea have theirs."""
    controller = ComputedTorque(robot)
    from_params = create_controller("computed_torque", robot, {})
    assert isinstance(from_params, ComputedTorque)
    np.testing.assert_array_equal(controller.config.kp, from_params.config.kp)
    np.testing.assert_array_equal(controller.config.kd, from_params.config.kd)
    np.testing.assert_allclose(controller.config.kp, 100.0)
    for q, v in ((np.zeros(3), np.zeros(3)), (np.full(7, np.nan), np.zeros(7)), (np.zeros(7), np.zeros(6))):
        with pytest.raises(StateError, match="joint"):
            controller.hold_reference(JointState(q, v))
    q = np.linspace(0.1, 0.7, 7)
    held = controller.hold_reference(JointState(q, np.zeros(7)))
    q[0] = 5.0  # the reference is a copy, not the state's array
    assert held.q[0] == 0.1 and held.v is None and held.a is None


def test_bad_reference_and_non_finite_torque_never_produce_a_command(robot: RobotModel) -> None:
    controller = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
    state = JointState(np.zeros(7), np.zeros(7))
    with pytest.raises(TargetError, match="reference position: expected 7 numbers"):
        controller.compute(state, JointReference(np.zeros(3)))
    with pytest.raises(TargetError, match="reference position: expected finite numbers"):
        controller.compute(state, JointReference(np.full(7, np.nan)))
    # What the per-step check had let through (a reference built by hand, not by the nodes):
    # a bool velocity (sent as 1 rad/s), no position, a position so large the short way round
    # on a continuous joint is rounding (1e17 rad: that joint's error read 0).
    with pytest.raises(TargetError, match="reference velocity"):
        controller.compute(state, JointReference(np.zeros(7), np.ones(7, dtype=bool)))
    with pytest.raises(TargetError, match="reference position"):
        controller.compute(state, JointReference(None))  # type: ignore[arg-type]
    huge = np.zeros(7)
    huge[0] = 1e17
    with pytest.raises(TargetError, match="above 1e"):
        controller.compute(state, JointReference(huge))
    # A float64 velocity or acceleration beyond any motion (finite: the per-step check had taken
    # it, and 1e308 rad/s² ended in a non-finite torque instead of a refused target).
    with pytest.raises(TargetError, match="reference velocity"):
        controller.compute(state, JointReference(np.zeros(7), np.full(7, 1e3)))
    with pytest.raises(TargetError, match="reference acceleration"):
        controller.compute(state, JointReference(np.zeros(7), None, np.full(7, 1e308)))
    # A list of ints is taken as its float64 copy, the same torque as the array.
    as_list = controller.compute(state, JointReference([0, 1, 0, 1, 0, 1, 0])).tau  # type: ignore[arg-type]
    as_array = controller.compute(state, JointReference(np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]))).tau
    np.testing.assert_array_equal(as_list, as_array)
    # A config built directly (not by create) is validated as well: negative stiffness had run.
    with pytest.raises(ConfigError, match="kp"):
        ComputedTorque(robot, ComputedTorqueConfig(np.full(7, -100.0), np.full(7, 20.0)))

    class Broken(GravityCompensation):
        def torque(
            self, q: FloatArray, v: FloatArray, reference: None
        ) -> tuple[FloatArray, dict[str, float]]:
            return np.full(7, np.nan), {}

    with pytest.raises(SolverError, match="non-finite torque"):
        Broken(robot).compute(state, None)

    # Not one torque per joint: the limiter's clip would broadcast a scalar or a (1,) to every
    # joint and a (7, 1) to a (7, 7) command (a review: all accepted before).
    for shape in [(), (1,), (7, 1), (6,)]:

        class WrongShape(GravityCompensation):
            returned = np.full(shape, 5.0)

            def torque(
                self, q: FloatArray, v: FloatArray, reference: None
            ) -> tuple[FloatArray, dict[str, float]]:
                return self.returned, {}

        with pytest.raises(SolverError, match=rf"shape \({', '.join(map(str, shape))}"):
            WrongShape(robot).compute(state, None)
