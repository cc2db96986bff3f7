"""ACHD → RNEA: the Gauss-principle solve and the ``achd_rnea`` controller (issue 4, no ROS).

Simulations run on the exact torque plant (MuJoCo motor actuators, 1 ms steps) with the
controller at 1 kHz, zero-order hold, no delay. Measured figures are printed (``pytest -s``).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pinocchio as pin
import proxsuite
import pytest

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.approach import PoseApproach
from torque_ctrl_ros.core.constrained_dynamics import (
    MIN_RCOND,
    ConstrainedDynamics,
    alpha_from_axes,
    check_alpha,
)
from torque_ctrl_ros.core.controllers import create_controller
from torque_ctrl_ros.core.controllers.cartesian import AchdRnea, AchdRneaConfig, PoseReference, pose_error
from torque_ctrl_ros.core.errors import ConfigError, TargetError
from torque_ctrl_ros.core.types import JointState
from torque_ctrl_ros.sim.plant import MujocoPlant

ROOT = Path(__file__).resolve().parent.parent
URDF = ROOT / "urdf" / "gen3.urdf"
SCENE = ROOT / "mjcf" / "scene.xml"
SCENE_TABLE = ROOT / "mjcf" / "scene_table.xml"
TOOL = "end_effector_link"
NO_Z = ["x", "y", "rx", "ry", "rz"]

# Table slide set-up (see test_table_slide for why these numbers).
TABLE_Z = 0.10  # m, top of the table in scene_table.xml
TIP_BELOW_SITE = 2.5e-5  # m: the bracelet capsule's tip is 0.025 mm above the tool site
PUSH = 5.0  # N, downward task wrench on the unconstrained z axis
SLIDE = 0.15  # m along +x
SLIDE_TIME = 2.0  # s


@pytest.fixture(scope="module")
def gen3() -> RobotModel:
    return RobotModel.from_urdf_file(URDF)


def _random_state(robot: RobotModel, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    lo = np.where(np.isfinite(robot.position_lower), robot.position_lower, -np.pi)
    hi = np.where(np.isfinite(robot.position_upper), robot.position_upper, np.pi)
    return rng.uniform(lo, hi), rng.normal(0.0, 1.0, robot.n)


def _random_alpha(n_c: int, rng: np.random.Generator) -> np.ndarray:
    """Unit constraint directions: n_c = 6 and 5 as rotated Cartesian frames (columns purely
    linear or purely angular, as a task would use; for 5 one linear column is dropped), n_c = 3
    as arbitrary unit 6-vectors mixing force and moment directions."""
    if n_c <= 3:
        alpha = rng.normal(size=(6, n_c))
        return alpha / np.linalg.norm(alpha, axis=0)
    alpha = np.zeros((6, 6))
    alpha[:3, :3] = pin.exp3(rng.normal(size=3))
    alpha[3:, 3:] = pin.exp3(rng.normal(size=3))
    return np.delete(alpha, rng.integers(3), axis=1) if n_c == 5 else alpha


def _drift(plant: MujocoPlant, target: np.ndarray) -> float:
    return float(np.linalg.norm(plant.site_pose(TOOL)[0] - target))


# ---------------------------------------------------------------------------------------------
# (1) + (3) The solve against an independent QP, and the exact torque relations
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n_c", [6, 5, 3])
def test_qdd_equals_proxsuite_gauss_qp(gen3: RobotModel, n_c: int) -> None:
    """q̈ = argmin ½(q̈−q̈_free)ᵀM(q̈−q̈_free) s.t. αᵀ(J q̈ + J̇ q̇) = β, solved by ProxSuite.

    The QP is built from RobotModel's own M, c, J and J̇q̇ (separate Pinocchio calls, not the
    solver's). Random q in the limits, q̇ ~ N(0, 1), random unit α, β, τ_ff and wrench. States
    whose Delassus matrix has condition number above 1e5 are not compared: there the
    problem itself amplifies rounding (|q̈| up to 1e4 rad/s²), so 1e-8 agreement is not
    meaningful for either solver; they are counted and must stay a minority.
    """
    rng = np.random.default_rng(4 + n_c)
    assert n_c in (3, 5, 6)
    solver = ConstrainedDynamics(gen3, TOOL)
    compared, skipped, worst, worst_eom = 0, 0, 0.0, 0.0
    while compared < 120:
        q, v = _random_state(gen3, rng)
        alpha = _random_alpha(n_c, rng)
        beta, tau_ff, f_ext = rng.normal(size=n_c), rng.normal(size=gen3.n), rng.normal(size=6)
        res = solver.solve(q, v, alpha, beta, tau_ff, f_ext)
        if res.delassus_condition > 1e5:
            skipped += 1
            assert skipped < 40, "too many ill-conditioned random states"
            continue
        assert not res.regularised
        m = gen3.mass_matrix(q)
        c = gen3.nonlinear_effects(q, v)
        jac = gen3.frame_jacobian(q, TOOL)
        drift = gen3.frame_bias_acceleration(q, v, TOOL)
        qdd_free = np.linalg.solve(m, tau_ff + jac.T @ f_ext - c)
        qp = proxsuite.proxqp.dense.QP(gen3.n, n_c, 0)
        qp.settings.eps_abs = 1e-12
        qp.settings.eps_rel = 0.0
        qp.settings.max_iter = 1000
        qp.init(m, -m @ qdd_free, alpha.T @ jac, beta - alpha.T @ drift, None, None, None)
        qp.solve()
        worst = max(worst, float(np.max(np.abs(qp.results.x - res.qdd))))
        # (3) M q̈ + c = τ_ff + Jᵀ f_ext + J_cᵀ λ, with J_c = αᵀ J.
        np.testing.assert_allclose(res.constraint_torque, (alpha.T @ jac).T @ res.lam, atol=1e-12)
        eom = m @ res.qdd + c - (tau_ff + jac.T @ f_ext + res.constraint_torque)
        worst_eom = max(worst_eom, float(np.max(np.abs(eom))))
        assert res.constraint_residual < 1e-9
        compared += 1
    print(
        f"\n[equivalence n_c={n_c}] {compared} states vs ProxSuite: max |Δq̈| = {worst:.2e} rad/s²; "
        f"max |M q̈ + c − τ_ff − Jᵀf − J_cᵀλ| = {worst_eom:.2e} N·m; skipped (cond > 1e5): {skipped}"
    )
    assert worst <= 1e-8
    assert worst_eom <= 1e-9


def test_command_is_rnea_and_constraint_torque_relation(gen3: RobotModel) -> None:
    """The command is RNEA(q, q̇, q̈) with zero wrench; J_cᵀλ = command − τ_ff − Jᵀ f_task.

    So the constraint torque equals the full command only when τ_ff = 0 and there is no task
    wrench (then the constraint forces at the tool carry gravity as well). With gravity in
    τ_ff (the default, so that the elbow self-motion does not fall), J_cᵀλ lacks g(q): sent
    alone it lets the arm sag. KDL's variant (gravity as a root acceleration) differs again
    (≈ M q̈ − c, per the reference document); none of these is a valid command by itself.
    """
    rng = np.random.default_rng(7)
    wrench = np.array([1.0, -2.0, -5.0, 0.1, 0.2, -0.1])
    ctrl = AchdRnea(
        gen3,
        AchdRneaConfig.create(gen3.n, constrained_axes=NO_Z, task_wrench=wrench, free_axis_damping=50.0),
    )
    bare = AchdRnea(gen3, AchdRneaConfig.create(gen3.n, gravity_feedforward=False, joint_damping=0.0))
    for _ in range(50):
        q, v = _random_state(gen3, rng)
        ref = PoseReference.from_se3(
            gen3.frame_placement(q, TOOL) * pin.exp6(rng.normal(0, 0.05, 6)),
            rng.normal(size=6),
            rng.normal(size=6),
        )
        sol = ctrl.solve(q, v, ref)
        tau, _ = ctrl.torque(q, v, ref)
        np.testing.assert_array_equal(tau, sol.tau)
        np.testing.assert_allclose(sol.tau, gen3.rnea(q, v, sol.dynamics.qdd), rtol=0, atol=1e-12)
        jac = sol.dynamics.kinematics.jacobian
        np.testing.assert_allclose(sol.wrench, wrench - 50.0 * np.array([0, 0, 1, 0, 0, 0]) * (jac @ v))
        applied = sol.feedforward_torque + jac.T @ sol.wrench
        np.testing.assert_allclose(sol.tau, applied + sol.constraint_torque, rtol=0, atol=1e-9)
        np.testing.assert_allclose(sol.feedforward_torque, gen3.gravity(q) - ctrl.config.joint_damping * v)
        sol0 = bare.solve(q, v, ref)
        np.testing.assert_allclose(sol0.tau, sol0.constraint_torque, rtol=0, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# (2) Hold at home on the exact plant
# ---------------------------------------------------------------------------------------------
def test_hold_home_drift(gen3: RobotModel) -> None:
    """Tool held at `home` for 2500 steps: ACHD → RNEA ≤ 0.1 mm; J_cᵀλ alone sags."""
    plant = MujocoPlant(SCENE, gen3.joint_names)
    plant.reset("home")
    ctrl = AchdRnea(gen3)
    ref = ctrl.hold_reference(JointState(plant.q, plant.v))
    target = ref.position
    np.testing.assert_allclose(plant.site_pose(TOOL)[0], target, atol=1e-9)

    def run(command: str, config: AchdRneaConfig | None = None) -> tuple[float, int]:
        c = AchdRnea(gen3, config) if config is not None else ctrl
        plant.reset("home")
        worst = 0.0
        for k in range(2500):
            state = JointState(plant.q, plant.v)
            tau = c.compute(state, ref).tau if command == "rnea" else c.constraint_torque_command(state, ref)
            plant.set_torque(tau)
            plant.step()
            worst = max(worst, _drift(plant, target))
            if worst > 0.1:  # collapsed: stop before the plant goes unstable
                return worst, k + 1
        return worst, 2500

    drift, _ = run("rnea")
    drift_ct, steps_ct = run("constraint")
    drift_ff0, _ = run("rnea", AchdRneaConfig.create(gen3.n, gravity_feedforward=False, joint_damping=0.0))
    print(
        f"\n[hold home, 2500 steps] ACHD→RNEA max drift {drift * 1e3:.2e} mm; "
        f"constraint torque J_cᵀλ alone: {drift_ct * 1e3:.1f} mm after {steps_ct} steps (stopped at 100 mm); "
        f"ACHD→RNEA with τ_ff = 0 (self-motion falls, undamped): {drift_ff0 * 1e3:.2f} mm"
    )
    assert drift <= 1e-4
    assert drift_ff0 > drift  # the gravity feedforward is what holds the self-motion
    assert drift_ct > 1e-2


# ---------------------------------------------------------------------------------------------
# (4) Cartesian step
# ---------------------------------------------------------------------------------------------
def test_cartesian_step(gen3: RobotModel) -> None:
    """5 cm in x, y and z plus 0.2 rad about (1, 1, 1)/√3 at once, kp = 100 /s², kd = 20 /s.

    Critically damped (ω_n = 10 rad/s): each error should follow e(t) = e₀ (1 + ω t) e^{−ω t},
    with no overshoot. Tolerances: overshoot ≤ 0.05 mm / 0.5 mrad, distance from that curve
    ≤ 0.5 mm / 2 mrad (the 1 ms zero-order hold and the rotation's nonlinearity), final
    error < 0.5 mm / 0.005 rad at t = 2 s.
    """
    plant = MujocoPlant(SCENE, gen3.joint_names)
    plant.reset("home")
    ctrl = AchdRnea(gen3, AchdRneaConfig.create(gen3.n, kp=100.0))
    start = ctrl.hold_reference(JointState(plant.q, plant.v))
    axis = np.ones(3) / np.sqrt(3.0)
    target = pin.SE3(pin.exp3(0.2 * axis) @ start.rotation, start.position + 0.05)
    ref = PoseReference.from_se3(target)
    e0 = target.translation - start.position
    u0 = e0 / np.linalg.norm(e0)
    t = np.arange(1, 2001) * plant.timestep
    shape = (1.0 + 10.0 * t) * np.exp(-10.0 * t)
    pos_err, rot_err, saturated = [], [], 0
    for _ in range(2000):
        out = ctrl.compute(JointState(plant.q, plant.v), ref)
        saturated += out.any_saturated
        plant.set_torque(out.tau)
        plant.step()
        p, rot = plant.site_pose(TOOL)
        pos_err.append(target.translation - p)
        rot_err.append(pin.log3(target.rotation @ rot.T))
    pe, re = np.array(pos_err), np.array(rot_err)
    overshoot = max(0.0, float(-(pe @ u0).min()))
    rot_overshoot = max(0.0, float(-(re @ axis).min()))
    dev = float(np.max(np.linalg.norm(pe - e0[None, :] * shape[:, None], axis=1)))
    rot_dev = float(np.max(np.abs(np.linalg.norm(re, axis=1) - 0.2 * shape)))
    final, final_rot = float(np.linalg.norm(pe[-1])), float(np.linalg.norm(re[-1]))
    t_05 = float(t[np.argmax(np.linalg.norm(pe, axis=1) < 5e-4)])
    print(
        f"\n[step 5 cm xyz + 0.2 rad] final {final * 1e3:.2e} mm / {final_rot:.2e} rad at 2 s; "
        f"< 0.5 mm after {t_05:.3f} s; overshoot {overshoot * 1e3:.3f} mm / {rot_overshoot:.2e} rad; "
        f"max distance from the critically damped curve {dev * 1e3:.3f} mm / {rot_dev:.2e} rad; "
        f"saturated steps {saturated}"
    )
    assert final < 5e-4 and final_rot < 5e-3
    assert overshoot <= 5e-5 and rot_overshoot <= 5e-4
    assert dev <= 5e-4 and rot_dev <= 2e-3


# ---------------------------------------------------------------------------------------------
# (5) Table: keyframe and slide with n_c = 5
# ---------------------------------------------------------------------------------------------
def _tool_down_rotation(robot: RobotModel) -> np.ndarray:
    """Tool z pointing down, tool x along world y: `home`'s tool rotated by +90° about y."""
    return np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])


def _ik(robot: RobotModel, target: pin.SE3, q0: np.ndarray) -> np.ndarray:
    """Damped least-squares IK (used to generate the `table_touch` keyframe)."""
    q = q0.copy()
    for _ in range(200):
        err = pose_error(robot.frame_placement(q, TOOL), target)
        if np.linalg.norm(err) < 1e-13:
            break
        jac = robot.frame_jacobian(q, TOOL)
        q = q + jac.T @ np.linalg.solve(jac @ jac.T + 1e-10 * np.eye(6), err)
    return robot.wrap(q)


def test_a_saturated_command_keeps_the_constrained_acceleration_on_its_line(gen3: RobotModel) -> None:
    """A 0.3 m step stepped into a stiff law (kp 1000 /s²): the command is scaled toward the
    same step's β = 0 command, not clipped joint by joint, so the constrained axes get exactly
    ``s·β`` (the direction the law asked), the tool's drift ``J̇q̇`` included, at any speed."""
    plant = MujocoPlant(SCENE, gen3.joint_names)
    plant.reset("home")
    ctrl = AchdRnea(gen3, AchdRneaConfig.create(gen3.n, kp=1000.0))
    start = ctrl.hold_reference(JointState(plant.q, plant.v))
    ref = PoseReference.from_se3(pin.SE3(start.rotation, start.position + np.array([0.0, 0.3, 0.0])))
    scaled, drift_largest = 0, 0.0
    for _ in range(50):
        q, v = plant.q, plant.v
        out = ctrl.compute(JointState(q, v), ref)
        s = out.info["torque_scale"]
        if s < 1.0:
            scaled += 1
            sol = ctrl.solve(q, v, ref)
            qdd = np.linalg.solve(gen3.mass_matrix(q), out.tau - gen3.nonlinear_effects(q, v))
            kin = sol.dynamics.kinematics
            realised = ctrl.alpha.T @ (kin.jacobian @ qdd + kin.drift)
            np.testing.assert_allclose(realised, s * sol.beta, rtol=0, atol=1e-7)
            # q̈' = q̈₀ + s·(q̈ − q̈₀), q̈₀ the same step's solve with β = 0 (solved afresh here).
            rest = ctrl.dynamics.solve(
                q, v, ctrl.alpha, np.zeros_like(sol.beta), sol.feedforward_torque, sol.wrench
            ).qdd
            np.testing.assert_allclose(qdd, rest + s * (sol.dynamics.qdd - rest), rtol=0, atol=1e-8)
            assert np.max(np.abs(out.tau) / gen3.effort_limit) == pytest.approx(1.0)
            drift_largest = max(drift_largest, float(np.linalg.norm(ctrl.alpha.T @ kin.drift)))
        plant.set_torque(out.tau)
        plant.step()
    assert scaled > 10
    assert drift_largest > 1.0  # the drift is large enough that scaling toward c(q, q̇) bends the line


@pytest.mark.parametrize("late", [3, 5])
def test_the_default_joint_damping_tracks_with_the_command_several_periods_late(
    gen3: RobotModel, late: int
) -> None:
    """The command applied ``late`` steps after its state (a busy simulator in realtime mode, the
    real arm's 3–5 ms loop), a 20 Hz stream of points on a 5 cm circle stepped into the law: the
    default ``joint_damping`` keeps every joint within its velocity limit. The safe brakes'
    larger damping, the default before, rang joints 1 and 3 to 12 times theirs at 3 steps."""
    ctrl = AchdRnea(gen3, AchdRneaConfig.create(gen3.n))
    plant = MujocoPlant(SCENE, gen3.joint_names)
    plant.reset("home")
    start = ctrl.hold_reference(JointState(plant.q, plant.v))
    queue: list[np.ndarray] = []
    fastest, ref = 0.0, start
    for k in range(3000):
        t = k * 1e-3
        if k % 50 == 0:
            offset = 0.05 * np.array([np.cos(np.pi * t) - 1.0, np.sin(np.pi * t), 0.0])
            ref = PoseReference(start.position + offset, start.rotation)
        tau = ctrl.compute(JointState(plant.q, plant.v), ref).tau
        queue = queue or [tau] * late
        queue.append(tau)
        plant.set_torque(queue.pop(0))
        plant.step()
        fastest = max(fastest, float(np.max(np.abs(plant.v) / gen3.velocity_limit)))
    assert fastest < 1.0


def test_table_touch_keyframe(gen3: RobotModel) -> None:
    """`table_touch`: tool down, capsule tip on the table top at (0.40, 0), contact at distance 0."""
    plant = MujocoPlant(SCENE_TABLE, gen3.joint_names)
    plant.reset("table_touch")
    pos, rot = plant.site_pose(TOOL)
    target = pin.SE3(_tool_down_rotation(gen3), np.array([0.40, 0.0, TABLE_Z - TIP_BELOW_SITE]))
    np.testing.assert_allclose(pos, target.translation, atol=1e-7)
    np.testing.assert_allclose(rot, target.rotation, atol=1e-7)
    m, d = plant.model, plant.data
    dist = mujoco.mj_geomDistance(
        m, d, m.geom("bracelet_link_collision").id, m.geom("table_top").id, 0.01, np.zeros(6)
    )
    assert abs(dist) < 1e-6
    # The numbers in the scene are the IK solution from `home` (regenerate with _ik).
    home = np.array([0.0, 0.26179939, 3.14159265, -2.26892803, 0.0, 0.95993109, 1.57079633])
    np.testing.assert_allclose(_ik(gen3, target, home), plant.q, atol=1e-6)


def _normal_force(plant: MujocoPlant, tool: int, table: int) -> float:
    m, d = plant.model, plant.data
    force, total = np.zeros(6), 0.0
    for i in range(d.ncon):
        con = d.contact[i]
        if {int(con.geom1), int(con.geom2)} == {tool, table}:
            mujoco.mj_contactForce(m, d, i, force)
            total += force[0]
    return total


def test_table_slide(gen3: RobotModel) -> None:
    """n_c = 5 (no linear z): press with 5 N and slide 15 cm along x in 2 s.

    Design of the push: the ACHD external-wrench input carries a downward task wrench
    (0, 0, −5 N) on the tool. With z unconstrained it is the only thing deciding the vertical
    motion: the free dynamics accelerate the tool down until the table stops it, so the
    contact force settles at ≈ 5 N. free_axis_damping = 50 N·s/m damps that vertical motion.
    The command stays RNEA(q, q̇, q̈), zero wrench (the push is already in q̈).

    What the controller does not model: the table's reaction and friction (μ = 0.1, ≈ 0.5 N
    while sliding) act on the tool, and through the coupling of the tool's inverse inertia
    (J M⁻¹ Jᵀ at table_touch: 2.3 /kg from x-force to x, 15 /(kg·m) from x-force to ry,
    0.9 /(kg·m) from z-force to ry) they disturb the constrained axes; the PD rejects them
    with a steady error ≈ disturbance / kp. Hence the stiffer gains here: kp = 900 /s²
    (translation), 2500 /s² (rotation), critically damped.

    The reference is a quintic from x = 0.40 to 0.55 m with its velocity and acceleration
    as feed-forward; 0.3 s of pressing before, 0.3 s after.
    """
    plant = MujocoPlant(SCENE_TABLE, gen3.joint_names)
    plant.reset("table_touch")
    m = plant.model
    tool, table = m.geom("bracelet_link_collision").id, m.geom("table_top").id
    config = AchdRneaConfig.create(
        gen3.n,
        constrained_axes=NO_Z,
        kp=[900.0] * 3 + [2500.0] * 3,
        task_wrench=[0.0, 0.0, -PUSH, 0.0, 0.0, 0.0],
        free_axis_damping=50.0,
    )
    ctrl = AchdRnea(gen3, config)
    start = ctrl.hold_reference(JointState(plant.q, plant.v))
    settle, n_slide = 300, int(SLIDE_TIME / plant.timestep)
    forces, xy_err, rot_err, z = [], [], [], []
    compare_state: JointState | None = None
    compare_ref: PoseReference | None = None
    for k in range(settle + n_slide + 300):
        s = min(max(k - settle, 0), n_slide) / n_slide
        moving = 0 < k - settle < n_slide
        x = 10 * s**3 - 15 * s**4 + 6 * s**5
        dx = (30 * s**2 - 60 * s**3 + 30 * s**4) / SLIDE_TIME if moving else 0.0
        ddx = (60 * s - 180 * s**2 + 120 * s**3) / SLIDE_TIME**2 if moving else 0.0
        twist = np.array([SLIDE * dx, 0, 0, 0, 0, 0])
        acc = np.array([SLIDE * ddx, 0, 0, 0, 0, 0])
        ref = PoseReference(start.position + np.array([SLIDE * x, 0.0, 0.0]), start.rotation, twist, acc)
        state = JointState(plant.q, plant.v)
        if k == settle + n_slide // 2:
            compare_state, compare_ref = state, ref
        out = ctrl.compute(state, ref)
        assert not out.any_saturated
        plant.set_torque(out.tau)
        plant.step()
        if k >= settle:  # from the start of the slide to 0.3 s after its end
            p, rot = plant.site_pose(TOOL)
            forces.append(_normal_force(plant, tool, table))
            xy_err.append(float(np.linalg.norm((p - ref.position)[:2])))
            rot_err.append(float(np.linalg.norm(pin.log3(start.rotation @ rot.T))))
            z.append(p[2])
    forces_a = np.array(forces)
    final_x = plant.site_pose(TOOL)[0][0]
    print(
        f"\n[table slide n_c=5, push {PUSH} N, mu 0.1] normal force min {forces_a.min():.3f} N, "
        f"mean {forces_a.mean():.3f} N, max {forces_a.max():.3f} N over {forces_a.size} steps; "
        f"max XY error {max(xy_err) * 1e3:.3f} mm; max orientation error {max(rot_err):.2e} rad; "
        f"site z {min(z) - TABLE_Z:+.2e} … {max(z) - TABLE_Z:+.2e} m from the table top; "
        f"travel {(final_x - start.position[0]) * 1e3:.2f} mm"
    )
    assert np.all(forces_a > 0.0)
    assert max(xy_err) < 3e-3
    assert max(rot_err) < 0.01
    assert abs(final_x - start.position[0] - SLIDE) < 1e-3

    # n_c = 6 vs n_c = 5 at the same mid-slide state and reference.
    assert compare_state is not None and compare_ref is not None
    six = AchdRnea(gen3, AchdRneaConfig.create(gen3.n, kp=[900.0] * 3 + [2500.0] * 3))
    q, v = compare_state.q, compare_state.v
    sol5, sol6 = ctrl.solve(q, v, compare_ref), six.solve(q, v, compare_ref)
    kin5 = sol5.dynamics.kinematics
    az5 = float((kin5.jacobian @ sol5.dynamics.qdd + kin5.drift)[2])
    np.set_printoptions(precision=4, suppress=True)
    print(
        "[n_c=6 vs n_c=5, mid-slide state]\n"
        f"  τ (n_c=6, all axes)   = {sol6.tau}\n"
        f"  τ (n_c=5, no z, push) = {sol5.tau}\n"
        f"  difference            = {sol5.tau - sol6.tau}\n"
        f"  predicted tool z accel: n_c=6 {sol6.desired_acceleration[2]:+.4f} m/s² (constrained), "
        f"n_c=5 {az5:+.4f} m/s² (free: pushed into the table)"
    )
    assert np.linalg.norm(sol5.tau - sol6.tau) > 0.1


# ---------------------------------------------------------------------------------------------
# (6) Bad input
# ---------------------------------------------------------------------------------------------
def test_alpha_validation() -> None:
    good = alpha_from_axes(["x", "rz"])
    assert good.shape == (6, 2)
    with pytest.raises(TargetError, match="unit vector"):
        check_alpha(2.0 * good)
    dependent = np.zeros((6, 2))
    dependent[0, :] = 1.0
    with pytest.raises(TargetError, match="linearly dependent"):
        check_alpha(dependent)
    with pytest.raises(TargetError, match="shape"):
        check_alpha(np.zeros((5, 2)))
    with pytest.raises(TargetError, match="finite"):
        check_alpha(np.full((6, 1), np.nan))
    with pytest.raises(TargetError, match="unknown"):
        alpha_from_axes(["x", "w"])
    with pytest.raises(TargetError, match="duplicate"):
        alpha_from_axes(["x", "x"])


def test_a_solve_on_earlier_kinematics_recomputes_their_dynamics(gen3: RobotModel) -> None:
    """Kinematics passed in after another state's were computed: M and c are those of the state
    passed, not the buffer's latest (reused, q̈ was 256 rad/s² off)."""
    dyn = ConstrainedDynamics(gen3, TOOL)
    rng = np.random.default_rng(1)
    (qa, va), (qb, vb) = _random_state(gen3, rng), _random_state(gen3, rng)
    alpha, beta, tau = alpha_from_axes(["x", "y", "z"]), np.zeros(3), gen3.gravity(qa)
    fresh = dyn.solve(qa, va, alpha, beta, tau).qdd.copy()
    kin_a = dyn.kinematics(qa, va)
    dyn.kinematics(qb, vb)
    np.testing.assert_allclose(dyn.solve(qa, va, alpha, beta, tau, kinematics=kin_a).qdd, fresh, atol=1e-9)


def test_solver_rejects_bad_inputs_and_regularises(gen3: RobotModel) -> None:
    solver = ConstrainedDynamics(gen3, TOOL)
    q, v = np.zeros(gen3.n), np.zeros(gen3.n)
    q[1] = 0.3
    alpha = alpha_from_axes(["x", "y", "z"])
    with pytest.raises(TargetError, match="beta"):
        solver.solve(q, v, alpha, [0.0, np.nan, 0.0])
    with pytest.raises(TargetError, match="beta"):
        solver.solve(q, v, alpha, [0.0, 0.0])
    with pytest.raises(TargetError, match="f_ext"):
        solver.solve(q, v, alpha, np.zeros(3), f_ext=[np.inf, 0, 0, 0, 0, 0])
    # Stretched straight up: the tool cannot move along z, D is singular.
    res = solver.solve(np.zeros(gen3.n), v, alpha_from_axes(["x", "y", "z", "rx", "ry", "rz"]), np.ones(6))
    assert res.regularised and res.damping > 0.0
    assert np.all(np.isfinite(res.qdd)) and np.all(np.isfinite(res.lam))
    print(
        f"\n[singular] condition {res.delassus_condition:.2e}, μ {res.damping:.2e}, "
        f"residual {res.constraint_residual:.3f}, max |q̈| {np.abs(res.qdd).max():.1f} rad/s²"
    )


def test_controller_rejects_bad_targets_and_config(gen3: RobotModel) -> None:
    ctrl = create_controller("achd_rnea", gen3, {"constrained_axes": "x, y, rx, ry, rz", "kp": 200.0})
    assert isinstance(ctrl, AchdRnea) and ctrl.alpha.shape == (6, 5)
    state = JointState(np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57]), np.zeros(gen3.n))
    hold = ctrl.hold_reference(state)
    out = ctrl.compute(state, hold)
    assert np.all(np.isfinite(out.tau))
    nan_pose = PoseReference(np.array([np.nan, 0.0, 0.5]), hold.rotation)
    with pytest.raises(TargetError, match="finite"):
        ctrl.compute(state, nan_pose)
    with pytest.raises(TargetError, match="rotation"):
        ctrl.compute(state, PoseReference(hold.position, 2.0 * hold.rotation))
    with pytest.raises(TargetError, match="twist"):
        ctrl.compute(state, PoseReference(hold.position, hold.rotation, twist=np.full(6, np.nan)))
    # Finite but beyond any motion (as a QP task's target, MAX_TARGET_VELOCITY / _ACCELERATION).
    with pytest.raises(TargetError, match="target velocity: an entry above 100"):
        ctrl.compute(state, PoseReference(hold.position, hold.rotation, twist=np.full(6, 1e3)))
    with pytest.raises(TargetError, match="target acceleration: an entry above 10000"):
        ctrl.compute(state, PoseReference(hold.position, hold.rotation, acceleration=np.full(6, 1e308)))
    with pytest.raises(TargetError, match="quaternion"):
        PoseReference.from_position_quaternion([0.4, 0.0, 0.4], [0.0, 0.0, 0.0, 0.0])
    with pytest.raises(TargetError, match="finite"):
        PoseReference.from_position_quaternion([0.4, 0.0, 0.4], [0.0, 0.0, np.nan, 1.0])
    with pytest.raises(TargetError):
        ctrl.compute(state, "not a pose")  # type: ignore[arg-type]
    ref = PoseReference.from_position_quaternion([0.45, 0.0, 0.43], [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(ref.rotation, np.eye(3))
    cases: list[tuple[dict[str, Any], str]] = [
        ({"constrained_axes": ["x", "q"]}, "unknown"),
        ({"constrained_axes": ["x", "x"]}, "duplicate"),
        ({"constrained_axes": []}, "none"),
        ({"kp": -1.0}, "kp"),
        ({"kp": [1.0, 2.0]}, "kp"),
        ({"frame": "nowhere"}, "valid frames"),
        ({"pose_error": "euler"}, "pose_error"),
        ({"rcond": 2.0}, "rcond"),
        ({"gravity_feedforward": "yes"}, "gravity_feedforward"),
        ({"gains": 1.0}, "unknown parameter"),
        ({"kp": [100, 100, 100, True, 1, 1]}, "kp"),  # a bool in a list is not 1.0
        # 6 constrained axes on a frame 4 joints move: regularised on every step, never tracked.
        ({"frame": "forearm_link"}, "moved by 4 joint"),
    ]
    for params, match in cases:
        with pytest.raises(ConfigError, match=match):
            create_controller("achd_rnea", gen3, params)
    create_controller("achd_rnea", gen3, {"frame": "forearm_link", "constrained_axes": ["x", "y", "z"]})


def test_constrained_axes_the_joints_never_move_the_frame_along_are_refused(gen3: RobotModel) -> None:
    """shoulder_link's origin lies on joint 1's axis: its ``x`` row is 0 everywhere, so the
    Delassus matrix is singular and every step was regularised (``delassus_condition`` inf),
    though one joint moves the frame and one axis is constrained. half_arm_1_link's ``x`` and
    ``y`` rows both come from joint 1 alone: dependent everywhere, refused alike."""
    refused = (
        r"^achd_rnea\.frame: the Jacobian rows of 'shoulder_link' on the constrained axes \['x'\] are 0 or "
        r"dependent at all 32 sampled configurations .* independently: \['joint_2', 'half_arm_1_link', "
    )
    with pytest.raises(ConfigError, match=refused):
        create_controller("achd_rnea", gen3, {"frame": "shoulder_link", "constrained_axes": ["x"]})
    # shoulder_link's ry row reads rounding (up to 1.2e-16), not exactly 0: still, within the tolerance.
    with pytest.raises(ConfigError, match=r"'shoulder_link' on the constrained axes \['ry'\]"):
        create_controller("achd_rnea", gen3, {"frame": "shoulder_link", "constrained_axes": ["ry"]})
    with pytest.raises(ConfigError, match=r"'half_arm_1_link' on the constrained axes \['x', 'y'\]"):
        create_controller("achd_rnea", gen3, {"frame": "half_arm_1_link", "constrained_axes": ["x", "y"]})
    # Joint 1 turns shoulder_link about z, and moves half_arm_1_link's origin (5.4 mm off its axis).
    turned = create_controller("achd_rnea", gen3, {"frame": "shoulder_link", "constrained_axes": ["rz"]})
    moved = create_controller("achd_rnea", gen3, {"frame": "half_arm_1_link", "constrained_axes": ["x"]})
    state = JointState(np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57]), np.zeros(gen3.n))
    for ctrl in (turned, moved):
        assert ctrl.compute(state, ctrl.hold_reference(state)).info["regularised"] == 0.0


def test_unstable_gains_are_refused_naming_the_parameters_and_the_axis(gen3: RobotModel) -> None:
    unstable = r"^achd_rnea\.kp/kd: kp 200000 1/s², kd 894\.427 1/s on z are unstable"
    with pytest.raises(ConfigError, match=unstable):
        create_controller("achd_rnea", gen3, {"kp": [100.0, 100.0, 2e5, 100.0, 100.0, 100.0]})


def test_a_bad_rcond_is_a_config_error(gen3: RobotModel) -> None:
    """``rcond`` is a setting, not a target: refused as one, by ``ConstrainedDynamics`` and by the
    controller given a config built directly (not by ``create``, which checks it too)."""
    for rcond in (0.0, 1e-13, 1.0, 2.0, np.nan, "1e-6"):
        with pytest.raises(ConfigError, match=r"^rcond: expected a number in \[1e-12, 1\)"):
            ConstrainedDynamics(gen3, TOOL, rcond=rcond)  # type: ignore[arg-type]
    assert ConstrainedDynamics(gen3, TOOL, rcond=MIN_RCOND).rcond == MIN_RCOND
    # Below MIN_RCOND, ε = rcond·d_max would fall under the eigenvalues' rounding (d_min + μ < 0).
    with pytest.raises(
        ConfigError, match=r"^achd_rnea\.rcond: expected a number in \[1e-12, 1\), got 1e-17$"
    ):
        AchdRneaConfig.create(gen3.n, rcond=1e-17)
    config = dataclasses.replace(AchdRneaConfig.create(gen3.n), rcond=0.0)
    with pytest.raises(ConfigError, match=r"^achd_rnea\.rcond: expected a number in \[1e-12, 1\), got 0\.0$"):
        AchdRnea(gen3, config)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # refused, not overflowing
def test_a_target_beyond_any_reach_is_refused(gen3: RobotModel) -> None:
    """A target given to the controller 1e160 m out (finite) had been taken: the constrained solve
    overflowed and raised a SolverError on every step (1e100 m: a command scaled by 6e-101).
    Refused beyond MAX_TARGET_DISTANCE now, as non-finite ones were already, and the accepted
    reference stays; 5 m out (past the arm's reach) the command is scaled to the limits."""
    ctrl = AchdRnea(gen3)
    state = JointState(np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57]), np.zeros(gen3.n))
    hold = ctrl.hold_reference(state)
    tau_held = ctrl.compute(state, hold).tau
    for far, shown in ((1e160, "1e+160"), (-10.5, "-10.5"), (1e100, "1e+100")):
        with pytest.raises(
            TargetError, match=rf"achd_rnea target: position \(0\.4, 0, {re.escape(shown)}\) m"
        ):
            ctrl.compute(state, PoseReference(np.array([0.4, 0.0, far]), hold.rotation))
        np.testing.assert_allclose(ctrl.compute(state, hold).tau, tau_held, atol=1e-9)
    with pytest.raises(TargetError, match="finite"):
        ctrl.compute(state, PoseReference(np.array([0.4, 0.0, np.inf]), hold.rotation))
    out = ctrl.compute(state, PoseReference(np.array([0.4, 0.0, 5.0]), hold.rotation))
    assert np.isfinite(out.tau).all() and out.torque_scale < 1.0


def _near_stretched_step(robot: RobotModel, rcond: float) -> tuple[float, int]:
    """Peak joint speed (rad/s) and saturated steps over 2 s in MuJoCo: joints 2 and 4 at 0.01 rad
    (the others 0), a target 2.8 cm lower given directly (not approached), the default gains."""
    plant = MujocoPlant(SCENE, robot.joint_names)
    q0 = np.zeros(robot.n)
    q0[[1, 3]] = 0.01
    plant.set_state(q0, np.zeros(robot.n))
    ctrl = AchdRnea(robot, AchdRneaConfig.create(robot.n, rcond=rcond))
    start = ctrl.hold_reference(JointState(q0, np.zeros(robot.n)))
    ref = PoseReference(start.position - np.array([0.0, 0.0, 0.028]), start.rotation)
    peak, saturated = 0.0, 0
    for _ in range(2000):
        out = ctrl.compute(JointState(plant.q, plant.v), ref)
        saturated += bool(out.saturated_joints)
        plant.set_torque(out.tau)
        plant.step()
        peak = max(peak, float(np.abs(plant.v).max()))
    return peak, saturated


def test_the_default_rcond_damps_the_step_near_the_stretched_pose(gen3: RobotModel) -> None:
    """The reason docs/controllers.md gives for ``rcond`` 1e-6: near the stretched pose a step
    with 1e-9 saturates the torques (3.45 rad/s, 10 steps; 84 rad/s when saturation clipped joint
    by joint), 1e-6 none (3.13 rad/s)."""
    assert AchdRneaConfig.create(gen3.n).rcond == 1e-6
    undamped_peak, undamped_saturated = _near_stretched_step(gen3, 1e-9)
    peak, saturated = _near_stretched_step(gen3, 1e-6)
    print(f"rcond 1e-9: {undamped_peak:.2f} rad/s, {undamped_saturated} saturated")
    print(f"rcond 1e-6: {peak:.2f} rad/s, {saturated} saturated")
    assert undamped_saturated > 0 and saturated == 0
    assert peak < undamped_peak


def test_never_nan_torque_near_singularity(gen3: RobotModel) -> None:
    """At and around the stretched singularity the regularised solve gives a finite command.

    (``Controller.compute`` turns a non-finite torque into ``SolverError``, so the check is that
    it returns at all: a refusal here would leave the arm without a computed torque.)
    """
    ctrl = AchdRnea(gen3)
    rng = np.random.default_rng(3)
    ref = PoseReference.from_se3(gen3.frame_placement(np.zeros(gen3.n), TOOL) * pin.exp6(np.full(6, 0.05)))
    for scale in (0.0, 1e-9, 1e-6, 1e-3):
        state = JointState(rng.normal(0.0, scale, gen3.n), rng.normal(0.0, 0.1, gen3.n))
        out = ctrl.compute(state, ref)
        assert np.all(np.isfinite(out.tau)), scale


def test_se3_error_needs_the_full_angular_set(gen3: RobotModel) -> None:
    """``pose_error: se3`` with a free rotation axis is refused, and the diagnostics report
    ``p_ref − p`` and ``log3(R_ref Rᵀ)`` whatever the error the law uses.

    The se3 translation rows mix in the free axes' errors through ``V(θ)⁻¹``: with ``x, y, rz``
    constrained they settled at 0 while the tool was mm off target in ``y``, and the
    diagnostics, read from those rows, said 0 as well; with ``x, y, z`` they are unstable for a
    rotation error above ~2.5 rad (test_achd_fixes.py).
    """
    for axes in (
        ["x", "y", "rz"],
        ["z", "rx"],
        ["x", "y", "ry", "rz"],
        ["x", "y", "z", "rz"],
        ["x", "y", "z"],
    ):
        with pytest.raises(ConfigError, match="se3"):
            create_controller("achd_rnea", gen3, {"constrained_axes": axes, "pose_error": "se3"})
        with pytest.raises(ConfigError, match="se3"):  # a config built without create()
            valid = AchdRneaConfig.create(gen3.n, constrained_axes=axes)
            AchdRnea(gen3, dataclasses.replace(valid, pose_error="se3"))
        create_controller("achd_rnea", gen3, {"constrained_axes": axes})  # decoupled: any set
    for axes in (["rx", "ry", "rz", "y"], NO_Z, ["rx", "ry", "rz"]):
        create_controller("achd_rnea", gen3, {"constrained_axes": axes, "pose_error": "se3"})

    ctrl = AchdRnea(gen3, AchdRneaConfig.create(gen3.n, pose_error="se3"))
    q, v = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57]), np.zeros(gen3.n)
    now = gen3.frame_placement(q, TOOL)
    target = pin.SE3(
        pin.exp3(np.array([0.3, 0.0, 0.2])) @ now.rotation, now.translation + np.array([0.05, -0.03, 0.04])
    )
    sol = ctrl.solve(q, v, PoseReference.from_se3(target))
    _, info = ctrl.torque(q, v, PoseReference.from_se3(target))
    expected = pose_error(now, target, "decoupled")
    np.testing.assert_allclose(sol.tracking_error, expected, atol=1e-12)
    assert np.linalg.norm(sol.error[:3] - expected[:3]) > 1e-3  # the law's se3 rows differ
    assert info["position_error"] == pytest.approx(np.linalg.norm(expected[:3]), abs=1e-12)
    assert info["orientation_error"] == pytest.approx(np.linalg.norm(expected[3:]), abs=1e-12)


@pytest.mark.parametrize("moving", [False, True], ids=["from-rest", "from-a-moving-reference"])
def test_a_pose_approach_is_consistent_in_pose_twist_and_acceleration(moving: bool) -> None:
    """The sampled twist and acceleration are the time derivatives of the sampled pose (central
    differences), the start is the given state and the end the goal at rest. From a moving start
    (its acceleration not along its twist) the move after the stop is off the line through
    ``θ = 0``, where the acceleration needs ``R·J̇_r·θ̇`` (dropped, it was up to 4.6e-3 of 2.1 rad/s² off)."""
    rng = np.random.default_rng(3)
    r0 = pin.exp3(rng.normal(size=3))
    start = PoseReference(
        np.array([0.4, 0.1, 0.5]),
        r0,
        rng.normal(size=6) * 0.2 if moving else None,
        rng.normal(size=6) * 0.5 if moving else None,
    )
    goal = PoseReference(np.array([0.2, -0.3, 0.6]), pin.exp3(rng.normal(size=3)) @ r0)
    approach = PoseApproach(start, goal, 1.5, stop_time=0.3 if moving else 0.0)
    first = approach.sample(0.0)
    assert first.twist is not None and first.acceleration is not None
    assert np.allclose(first.position, start.position) and np.allclose(first.rotation, start.rotation)
    assert np.allclose(first.twist, 0.0 if start.twist is None else start.twist, atol=1e-12)
    assert np.allclose(
        first.acceleration, 0.0 if start.acceleration is None else start.acceleration, atol=1e-12
    )
    end = approach.duration
    assert end == pytest.approx(1.8 if moving else 1.5)
    assert approach.sample(end) is approach.goal and approach.sample(9.0) is approach.goal
    assert np.array_equal(approach.goal.position, goal.position) and approach.goal.twist is None
    h = 1e-5
    for t in np.linspace(0.05, end - 0.05, 18):
        before, now, after = approach.sample(t - h), approach.sample(t), approach.sample(t + h)
        assert now.twist is not None and now.acceleration is not None
        assert before.twist is not None and after.twist is not None
        velocity = (after.position - before.position) / (2 * h)
        omega = pin.log3(after.rotation @ before.rotation.T) / (2 * h)  # base axes
        assert np.allclose(now.twist, np.concatenate((velocity, omega)), rtol=0, atol=1e-6)
        acceleration = (after.twist - before.twist) / (2 * h)
        assert np.allclose(now.acceleration[:3], acceleration[:3], rtol=0, atol=1e-5)
        assert np.allclose(now.acceleration[3:], acceleration[3:], rtol=0, atol=1e-5)
