"""Terms of the QP and Cartesian controllers, each pinned against a plausible one-line bug (no ROS).

Each test fails on such a bug in the term it names (a sign, a factor, a dropped term or bound);
the docstrings quote the bug and what it does.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pinocchio as pin
import pytest

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers.cartesian import AchdRnea, PoseReference, pose_error
from torque_ctrl_ros.core.controllers.qpid import HQPID, QPID, _QPController
from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.core.qp.constraints import JointVelocityBarrier
from torque_ctrl_ros.core.qp.problem import DenseQP, SolveStatus
from torque_ctrl_ros.core.qp.tasks import CartesianTarget, FramePoseTask, JointPostureTask, KinematicsState
from torque_ctrl_ros.core.types import JointReference, JointState

TOOL = "end_effector_link"
HOME = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
NO_BARRIERS = {
    "self_collision.enabled": False,
    "floor.enabled": False,
    "singularity.enabled": False,
    "joint_position_limit.enabled": False,
    "joint_velocity_limit.enabled": False,
}


def _tool_over_posture(level: int, **extra: Any) -> dict[str, Any]:
    return {
        "tasks": ["tool", "posture"],
        **{"tool.type": "position", "tool.frame": TOOL, "tool.kp": 100.0},
        **{"posture.type": "posture", "posture.kp": 400.0, "posture.weight": 1.0, "posture.level": level},
        **extra,
    }


@pytest.mark.parametrize("klass", [QPID, HQPID])
def test_level_0_slack_is_read_back_scaled_and_kept_below(
    robot: RobotModel, klass: type[_QPController]
) -> None:
    """Joint 4 at 6 rad/s (limit 1.40): its velocity row needs slack. The slack read back is
    ``σ·ŝ`` (the diagnostics and hqpid's lower bounds ``l − E·s``); read unscaled it is 1 000×
    larger and the posture level below loosens the row by 20 rad/s²."""
    params = _tool_over_posture(
        int(klass is HQPID), **{"self_collision.enabled": False, "singularity.enabled": False}
    )
    c = klass.from_params(robot, params)
    ref = c.hold_reference(JointState(HOME, np.zeros(7)))
    ref["posture"] = HOME + np.array([0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0])
    v = np.zeros(7)
    v[3] = 6.0
    out = c.compute(JointState(HOME, v), ref)
    assert out.info["fallback"] == 0.0
    velocity = c.barriers[1]
    assert isinstance(velocity, JointVelocityBarrier) and velocity.name == "joint_velocity"
    r0, _ = c._barrier_rows[1]
    row = r0 + velocity.rows // 2 + list(velocity.index).index(3)  # joint 4's upper row
    qdd0 = c.last_solutions[0].x[: robot.n]
    needed = c._lb[row] - c._Cb[row] @ qdd0  # what level 0 left of the row
    assert needed > 10.0
    assert c.slack[c._row_slack[row]] == pytest.approx(needed, rel=1e-6)
    assert c.diagnostics()["slack.joint_velocity"] == pytest.approx(needed, rel=1e-6)
    assert c._Cb[row] @ c.joint_acceleration - c._lb[row] >= -needed - 1e-5


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_hqpid_lower_levels_keep_the_torque_limits(robot: RobotModel, sign: float) -> None:
    """A posture level pulling hard below a held tool, the limit barriers off: the QP's own
    torque (before the limiter) stays within the limits on both sides (a lower level without
    its lower torque bound sends −77.7 N·m on joint 2, 39 allowed)."""
    c = HQPID.from_params(robot, _tool_over_posture(1, **NO_BARRIERS))
    ref = c.hold_reference(JointState(HOME, np.zeros(7)))
    ref["posture"] = HOME + sign * 1.5
    tau, info = c.torque(HOME, np.zeros(7), ref)
    assert info["failed_level"] == -1.0 and info["fallback"] == 0.0
    assert np.abs(tau).max() > 0.9 * robot.effort_limit.min()  # a limit is reached
    assert (np.abs(tau) <= robot.effort_limit + 1e-5).all(), tau  # the lower levels' room: 1e-6


def test_velocity_weight_damps_the_next_step_velocity(robot: RobotModel) -> None:
    """``W3·‖dt·q̈ + q̇‖²`` with the tasks nearly off: ``q̈ = −dt·W3·q̇ / (W2 + dt²·W3)``, ``dt`` the
    1 ms control period (its sign flipped, it accelerates the arm; ``dt`` for ``dt²``, it does nothing)."""
    params = {
        "tasks": ["posture"],
        **{"posture.type": "posture", "posture.kp": 0.0, "posture.kd": 0.0, "posture.weight": 1e-9},
        **{"velocity_weight": 10.0, "acceleration_weight": 1e-4},
        **NO_BARRIERS,
    }
    c = QPID.from_params(robot, params)
    v = np.full(7, 0.03)
    c.compute(JointState(HOME, v), {"posture": HOME.copy()})
    expected = -0.001 * 10.0 * v / (1e-4 + 1e-6 * 10.0)
    np.testing.assert_allclose(c.joint_acceleration, expected, rtol=1e-4)


def test_task_references_and_default_damping_reach_the_desired_acceleration(robot: RobotModel) -> None:
    """``desired = a_ref + kd·(v_ref − ẋ) + kp·e``, ``kd = 2·√kp`` by default, for a frame task
    given a velocity and an acceleration and for the posture task (the node sends joint targets
    with velocities)."""
    kin = KinematicsState(robot)
    q = np.array([0.1, 0.3, -0.2, 1.5, 0.1, 0.8, 0.2])
    kin.update(q, np.zeros(7))
    task = FramePoseTask("tool", robot, TOOL, kp=100.0)
    np.testing.assert_array_equal(task.kd, np.full(6, 20.0))
    velocity = np.array([0.1, 0.0, 0.0, 0.0, 0.0, 0.2])
    acceleration = np.array([0.0, 0.3, 0.0, 0.0, 0.4, 0.0])
    task.set_target(
        CartesianTarget(kin.data.oMf[task.frame_id].copy(), velocity=velocity, acceleration=acceleration)
    )
    task.update(kin)
    np.testing.assert_allclose(task.desired, 20.0 * velocity + acceleration, atol=1e-9)
    posture = JointPostureTask("posture", robot, kp=100.0)
    np.testing.assert_array_equal(posture.kd, np.full(7, 20.0))
    posture.set_target(JointReference(q, np.full(7, 0.1), np.full(7, 0.5)))
    posture.update(kin)
    np.testing.assert_allclose(posture.desired, np.full(7, 20.0 * 0.1 + 0.5), atol=1e-12)


def test_achd_reference_acceleration_se3_error_axes_and_quaternion_norm(robot: RobotModel) -> None:
    c = AchdRnea(robot)
    held = c.hold_reference(JointState(HOME, np.zeros(7)))
    acceleration = np.array([0.5, 0.0, 0.0, 0.0, 0.0, 1.0])
    sol = c.solve(HOME, np.zeros(7), PoseReference(held.position, held.rotation, None, acceleration))
    np.testing.assert_allclose(sol.desired_acceleration, acceleration, atol=1e-9)  # at the target, at rest
    # se3: the error in base axes (a tool turned 90° about z, the target 0.1 m along base x).
    rotation = pin.rpy.rpyToMatrix(0.0, 0.0, np.pi / 2)
    error = pose_error(pin.SE3(rotation, np.zeros(3)), pin.SE3(rotation, np.array([0.1, 0.0, 0.0])), "se3")
    np.testing.assert_allclose(error, [0.1, 0.0, 0.0, 0.0, 0.0, 0.0], atol=1e-12)
    with pytest.raises(Exception, match="quaternion"):
        PoseReference.from_position_quaternion([0.4, 0.0, 0.4], [0.0, 0.0, 0.0, 0.5])


def test_scaled_back_iterate_keeps_rows_and_costs_no_more_than_none(robot: RobotModel) -> None:
    """``s·x`` meets every row (the tightest upper row decides: ``u/(C·x)``'s minimum) and stops
    at the cost's minimiser along ``x`` (an iterate 3× the solution: ``s = 1/3``)."""
    qp = DenseQP(2, 0, 2)
    qp.H[:] = 1e-6 * np.eye(2)
    qp.g[:] = [-1.0, -1.0]
    qp.C[:] = np.eye(2)
    qp.l[:] = [-1.0, -1.0]
    qp.u[:] = [1.0, 2.0]
    s = _QPController._scaled_back(qp, np.array([10.0, 10.0]))
    assert s == pytest.approx(0.1) and (qp.C @ (s * np.array([10.0, 10.0])) <= qp.u + 1e-12).all()

    c = HQPID.from_params(robot, {**_tool_over_posture(1), "posture.kp": 10.0, "posture.weight": 1e-3})
    ref = c.hold_reference(JointState(HOME, np.zeros(7)))
    ref["posture"] = HOME + 0.05
    lv = c.levels[1]
    assert lv.qp is not None
    solve = lv.qp.solve
    seen: dict[str, Any] = {}

    def overshooting() -> Any:
        sol = solve()
        seen.update(H=lv.qp.H.copy(), g=lv.qp.g.copy(), qdd0=c.joint_acceleration.copy(), x=sol.x.copy())
        return dataclasses.replace(sol, status=SolveStatus.MAX_ITERATIONS, x=3.0 * sol.x)

    lv.qp.solve = overshooting  # type: ignore[method-assign]
    _, info = c.torque(HOME, np.zeros(7), ref)
    assert info["scaled_level"] == 1.0
    u = lv.Z.T.dot(c.joint_acceleration - seen["qdd0"])
    np.testing.assert_allclose(u, seen["x"], rtol=1e-6, atol=1e-12)  # 1/3 of the iterate: the optimum
    assert 0.5 * u @ seen["H"] @ u + seen["g"] @ u < 0.0


def test_dense_qp_guards_the_solver_misses() -> None:
    """A solution overflowing to ~1e277 is no solution; a one-variable row ``0·x`` whose bounds
    exclude 0 is infeasible; a failed warm solve is retried cold (which then succeeds)."""
    qp = DenseQP(2, 0, 1)
    qp.H[:] = np.diag([1e-300, 1.0])
    qp.g[:] = [1e-10, 0.0]
    qp.C[0] = [0.0, 1.0]
    qp.l[0], qp.u[0] = -1.0, 1.0
    with np.errstate(over="ignore"):
        assert qp.solve().status is SolveStatus.NON_FINITE
    one = DenseQP(1, 0, 2)
    one.H[:], one.g[:] = 1.0, 0.0
    one.C[:, 0] = [0.0, 1.0]
    for lower, upper in (([-np.inf, -1.0], [-0.5, 1.0]), ([0.5, -1.0], [np.inf, 1.0])):
        one.l[:], one.u[:] = lower, upper
        sol = one.solve()
        assert sol.status is SolveStatus.PRIMAL_INFEASIBLE and sol.primal_residual == pytest.approx(0.5)
    rng = np.random.default_rng(0)
    rescued = 0
    for _ in range(40):
        n = 5
        retry = DenseQP(n, 2, n, max_iter=3)
        for scale in (1.0, 1e3):  # a warm start from a very different problem
            B = rng.normal(size=(n, n))
            retry.H[:] = B @ B.T + np.eye(n)
            retry.g[:] = scale * rng.normal(size=n)
            retry.A[:] = rng.normal(size=(2, n))
            retry.b[:] = scale * rng.normal(size=2)
            retry.C[:] = np.eye(n)
            retry.l[:], retry.u[:] = -1e6, 1e6
            sol = retry.solve()
        rescued += sol.ok and sol.retried
    assert rescued >= 10


def test_solver_tolerance_above_its_cap_is_refused(robot: RobotModel) -> None:
    params = {"tasks": ["posture"], "posture.type": "posture", "posture.kp": 10.0}
    with pytest.raises(ConfigError, match="eps_abs"):
        QPID.from_params(robot, {**params, "solver": {"eps_abs": 1e-2}})


def test_achd_reports_constrained_axes_only_and_damps_continuously(robot: RobotModel) -> None:
    """``position_error`` is the error on the constrained axes (z free and 5 cm off: 0), and the
    Delassus damping ``μ = ε·(1 − (d_min/ε)²)`` starts from 0 as ``d_min`` falls below ``ε``
    (a step to ``ε`` at the threshold: ~1 instead of 0.045 at the first regularised pose)."""
    from torque_ctrl_ros.core.constrained_dynamics import ConstrainedDynamics, alpha_from_axes
    from torque_ctrl_ros.core.controllers.cartesian import AchdRneaConfig

    c = AchdRnea(robot, AchdRneaConfig.create(robot.n, constrained_axes=["x", "y"]))
    held = c.hold_reference(JointState(HOME, np.zeros(7)))
    _, info = c.torque(
        HOME, np.zeros(7), PoseReference(held.position + np.array([0.0, 0.0, 0.05]), held.rotation)
    )
    assert info["position_error"] == pytest.approx(0.0, abs=1e-12)
    # The same for orientation: x and rz constrained, 0.1 rad off about x, free.
    c = AchdRnea(robot, AchdRneaConfig.create(robot.n, constrained_axes=["x", "rz"]))
    turned = pin.exp3(np.array([0.1, 0.0, 0.0])) @ held.rotation
    _, info = c.torque(HOME, np.zeros(7), PoseReference(held.position, turned))
    assert info["orientation_error"] == pytest.approx(0.0, abs=1e-12)
    alpha = alpha_from_axes(["x", "y", "z", "rx", "ry", "rz"])
    dyn = ConstrainedDynamics(robot, TOOL, rcond=1e-6)
    for s in np.geomspace(1e-1, 1e-6, 400):  # toward the stretched pose
        q = np.array([0.0, 0.0, 0.0, s, 0.0, s, 0.0])
        result = dyn.solve(q, np.zeros(7), alpha, np.zeros(6))
        if result.regularised:
            break
    else:
        pytest.fail("never regularised")
    J = result.kinematics.jacobian
    d = np.linalg.eigvalsh(J @ np.linalg.inv(robot.mass_matrix(q)) @ J.T)
    eps = 1e-6 * d[-1]
    assert 0.9 < d[0] / eps < 1.0 and result.damping / eps == pytest.approx(1.0 - (d[0] / eps) ** 2, rel=1e-3)
