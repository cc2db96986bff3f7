"""Behaviours of the QP step that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
the dense QP wrapper (``core/qp/problem.py``), the QP controllers (``core/controllers/qpid.py``)
and their tasks (``core/qp/tasks.py``): the code that decides what torque reaches the arm. Pure
core: no ROS.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pinocchio as pin
import pytest
from test_qp_terms import HOME, NO_BARRIERS, TOOL, _tool_over_posture

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers.qpid import HQPID, QPID, _QPController
from torque_ctrl_ros.core.qp.constraints import JointPositionBarrier
from torque_ctrl_ros.core.qp.problem import DenseQP, SolveStatus
from torque_ctrl_ros.core.qp.tasks import CartesianTarget, KinematicsState, OrientationTask
from torque_ctrl_ros.core.types import JointState

#: Joint 2 alone pulled by 1.5 rad (the barrier tests' and the torque-limit tests' pull).
JOINT_2 = np.array([0.0, 1.5, 0.0, 0.0, 0.0, 0.0, 0.0])


def _posture_alone(kp: float, **extra: Any) -> dict[str, Any]:
    """qpid/hqpid parameters: one posture task of weight 1 and gain ``kp`` (1/s²), ``extra`` on top."""
    return {
        "tasks": ["posture"],
        **{"posture.type": "posture", "posture.kp": kp, "posture.weight": 1.0},
        **extra,
    }


def test_a_one_variable_qp_with_an_equality_row_is_not_solved_in_closed_form() -> None:
    """``min ½·x²`` subject to ``x = 2`` and ``−10 ≤ x ≤ 10``: the answer is ``x = 2`` (the equality
    decides). The closed form is for one variable with inequality rows only; taken for any
    one-variable problem (mutant ``if self.n == 1:`` in ``DenseQP.solve``) it drops ``A·x = b`` and
    reports ``x = 0`` as SOLVED."""
    qp = DenseQP(1, 1, 1)
    qp.H[0, 0] = 1.0
    qp.A[0, 0], qp.b[0] = 1.0, 2.0
    qp.C[0, 0], qp.l[0], qp.u[0] = 1.0, -10.0, 10.0
    sol = qp.solve()
    assert sol.status is SolveStatus.SOLVED
    assert sol.x[0] == pytest.approx(2.0, abs=1e-7)


def test_a_solve_after_a_failed_one_starts_cold() -> None:
    """Two variables, rows ``x₀ ≥ 1`` and ``−x₀ ≥ 0``: no ``x`` meets both (neither row's bounds
    cross, so the solver is run and fails). The next problem, with the second row dropped, must not
    warm-start from that meaningless iterate: it is solved cold (``warm`` false) and right
    (``x = [1, 0]``, the closed form). Marking every solve as a good warm start (mutant
    ``self._last_ok = True`` after the solver in ``DenseQP.solve``) warm-starts it."""
    qp = DenseQP(2, 0, 2)
    qp.H[:] = np.eye(2)
    qp.C[:] = [[1.0, 0.0], [-1.0, 0.0]]
    qp.l[:] = [1.0, 0.0]
    first = qp.solve()
    assert not first.ok
    qp.l[1] = -np.inf
    again = qp.solve()
    assert again.status is SolveStatus.SOLVED and not again.warm
    np.testing.assert_allclose(again.x, [1.0, 0.0], atol=1e-7)


def test_a_scaled_back_step_keeps_the_lower_bounds() -> None:
    """An unfinished iterate ``x = [−1.5, −1.5]`` against rows ``x₀ ≥ −1``, ``x₁ ≥ −2`` (upper bounds
    1), the cost decreasing along ``x`` (``g = [1, 1]``, nearly flat: ``H = 1e-6·I``): the step is
    ``l₀/(C₀·x) = 2/3`` (closed form), the only lower row ``x`` misses deciding it, and ``s·x`` meets
    every row. Testing the rows against ``2·l`` (mutant ``rows < 2.0 * qp.l`` in ``_scaled_back``)
    misses row 0 (−1.5 > −2) and keeps the whole step past it."""
    qp = DenseQP(2, 0, 2)
    qp.H[:] = 1e-6 * np.eye(2)
    qp.g[:] = [1.0, 1.0]
    qp.C[:] = np.eye(2)
    qp.l[:] = [-1.0, -2.0]
    qp.u[:] = [1.0, 1.0]
    x = np.array([-1.5, -1.5])
    step = _QPController._scaled_back(qp, x)
    assert step == pytest.approx(2.0 / 3.0, rel=1e-12)
    assert (qp.C @ (step * x) >= qp.l - 1e-12).all()


def test_controller_reset_cold_starts_every_level(robot: RobotModel) -> None:
    """hqpid with a position task on level 0 and a posture task on level 1 (a 4-variable QP, solved
    by ProxSuite, not in closed form): the second step warm-starts both levels, and after
    ``reset()`` (e.g. after a state jump, or the benchmark's replay) the next step solves both cold.
    Without the reset reaching the QPs (mutant ``pass`` for ``lv.qp.reset()`` in
    ``_QPController.reset``) or with ``DenseQP.reset`` forgetting nothing (mutant ``pass`` there)
    they warm-start from the state before the jump."""
    c = HQPID.from_params(robot, _tool_over_posture(1, **NO_BARRIERS))
    assert c.levels[1].nz == robot.n - 3
    ref = c.hold_reference(JointState(HOME, np.zeros(7)))
    ref["posture"] = HOME + 0.1
    for _ in range(2):
        c.torque(HOME, np.zeros(7), ref)
    assert [s.warm for s in c.last_solutions] == [True, True]
    c.reset()
    c.torque(HOME, np.zeros(7), ref)
    assert [s.ok for s in c.last_solutions] == [True, True]
    assert [s.warm for s in c.last_solutions] == [False, False]


def test_orientation_task_reads_the_angular_rows_of_its_target_and_a_base_frame_error(
    robot: RobotModel,
) -> None:
    """An orientation task on the tool, moving (``q̇ ≠ 0``), given a target turned by ``w`` about
    base-frame axes (``R_ref = exp₃(w)·R``) with a 6-D velocity and acceleration whose linear and
    angular parts differ: ``e = w`` and ``ẍᵈ = a_ref[3:] + kp·w + kd·(v_ref[3:] − J[3:]·q̇)``, the law
    written out here with ``J`` from :meth:`RobotModel.frame_jacobian`. Taking the first three
    entries of the target's velocity or acceleration (mutants ``vel6[: self.dim]``,
    ``acc6[: self.dim]`` in ``FrameTask._set_target``) feeds the linear ones to the angular rows; the
    error ``log₃(Rᵀ·R_ref)`` (mutant in ``OrientationTask._error``) is ``w`` in the tool's axes."""
    q = np.array([0.1, 0.3, -0.2, 1.5, 0.1, 0.8, 0.2])
    v = np.array([0.2, -0.1, 0.3, 0.1, -0.2, 0.1, 0.3])
    kin = KinematicsState(robot)
    kin.update(q, v)
    task = OrientationTask("ori", robot, TOOL, kp=100.0)
    current = kin.data.oMf[task.frame_id]
    w = np.array([0.05, -0.08, 0.03])
    velocity = np.array([0.3, -0.2, 0.1, 0.02, 0.04, -0.06])
    acceleration = np.array([1.0, 2.0, 3.0, -0.1, 0.2, 0.5])
    target = pin.SE3(pin.exp3(w) @ current.rotation, current.translation.copy())
    task.set_target(CartesianTarget(target, velocity=velocity, acceleration=acceleration))
    task.update(kin)
    np.testing.assert_allclose(task.error, w, atol=1e-12)
    J_ang = robot.frame_jacobian(q, TOOL)[3:]
    desired = acceleration[3:] + 100.0 * w + 20.0 * (velocity[3:] - J_ang @ v)
    np.testing.assert_allclose(task.desired, desired, atol=1e-9)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_qpid_torque_stays_within_both_limits_at_level_0(robot: RobotModel, sign: float) -> None:
    """qpid, a posture task alone pulling joint 2 by ±1.5 rad at kp 400 (600 rad/s² asked, far more
    torque than the joint has), barriers off: level 0's rows ``−τ_max ≤ τ ≤ τ_max`` hold the QP
    torque there, and joint 2 sits at ``±τ_max`` exactly (the URDF's effort limit). With the upper
    bound left infinite (mutant ``np.inf`` for ``self._tau_max`` in ``top.u`` in
    ``_build_levels``) the pull up asks hundreds of N·m."""
    c = QPID.from_params(robot, _posture_alone(400.0, **NO_BARRIERS))
    ref = {"posture": HOME + sign * JOINT_2}
    tau, info = c.torque(HOME, np.zeros(7), ref)
    assert info["fallback"] == 0.0
    assert (np.abs(tau) <= robot.effort_limit * (1.0 + 1e-9)).all()
    assert tau[1] == pytest.approx(sign * robot.effort_limit[1], abs=1e-3)


def test_qpid_weighs_a_task_against_the_regularisation_as_the_cost_says(robot: RobotModel) -> None:
    """qpid, a posture task alone (``J = I``, weight ``w = 1``, kp 100, 0.01 rad off on every joint, at
    rest: ``ẍᵈ = 1`` rad/s²) with ``acceleration_weight`` ``a = 1``, nothing active: minimising
    ``w·‖ẍᵈ − q̈‖² + a·‖q̈‖²`` gives ``q̈ = w·ẍᵈ/(w + a) = 0.5`` rad/s² on each joint (closed form).
    The task's terms are ``2·JᵀW·J`` and ``2·JᵀW·(ẍᵈ − J̇·q̇)``; built with ``W`` for ``2·W`` (mutant
    ``t.weight[:, None]`` in ``_build_cost_terms``) the task counts half against the
    regularisation: ``q̈ = 1/3``."""
    c = QPID.from_params(robot, _posture_alone(100.0, acceleration_weight=1.0, **NO_BARRIERS))
    _, info = c.torque(HOME, np.zeros(7), {"posture": HOME + 0.01})
    assert info["fallback"] == 0.0
    np.testing.assert_allclose(c.joint_acceleration, np.full(7, 0.5), rtol=1e-6)


def test_hqpid_lower_level_minimises_its_cost_from_the_acceleration_above(robot: RobotModel) -> None:
    """hqpid: a position task moving the tool 5 cm (level 0, ``q̈*₀ ≠ 0``) over a posture task with
    per-joint weights ``W_p`` (level 1, kp 100, 0.1 rad off, at rest), nothing active. Level 1 minimises
    ``c(q̈) = ‖ẍᵈ − q̈‖²_{W_p} + a·‖q̈‖²`` over ``q̈ = q̈*₀ + Z·u``: at its optimum the gradient
    ``2·W_p·(q̈ − ẍᵈ) + 2·a·q̈`` has no part in the null space of the tool rows ``J`` (projector
    ``I − J⁺·J``, from an SVD here). The level's linear term is ``Zᵀ·(g + H·q̈*₀)``; without
    ``H·q̈*₀`` (mutant dropping ``self._gq += self._Hq.dot(qdd)`` in ``_fill_lower``) it minimises
    the cost as if it started from ``q̈ = 0``."""
    weights = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    params = {**_tool_over_posture(1, **NO_BARRIERS), "posture.kp": 100.0, "posture.weight": weights.tolist()}
    c = HQPID.from_params(robot, params)
    ref = c.hold_reference(JointState(HOME, np.zeros(7)))
    ref["tool"] = ref["tool"] + np.array([0.05, 0.0, 0.0])
    ref["posture"] = HOME + 0.1
    _, info = c.torque(HOME, np.zeros(7), ref)
    assert info["failed_level"] == -1.0 and info["scaled_level"] == -1.0
    qdd = c.joint_acceleration
    J = robot.frame_jacobian(HOME, TOOL)[:3]
    null = np.eye(7) - np.linalg.pinv(J) @ J
    level_0 = c.last_solutions[0].x[:7]
    # q̈*₀ lies in J's row space, but W_p·q̈*₀ does not: the term H·q̈*₀ matters here.
    assert np.linalg.norm(null @ level_0) < 1e-6 < 1.0 < np.linalg.norm(null @ (weights * level_0))
    a = float(c.config.acceleration_weight[0])
    gradient = 2.0 * weights * (qdd - 100.0 * 0.1) + 2.0 * a * qdd
    np.testing.assert_allclose(null @ gradient, np.zeros(7), atol=1e-6)


def test_hqpid_reports_the_status_of_the_first_level_that_stopped_short(
    robot: RobotModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three levels (position, orientation, posture): level 1 stops short (its solution reported as
    MAX_ITERATIONS: scaled back, kept) and level 2 fails (NON_FINITE, no iterate: dropped).
    ``info["qp_status"]`` is the status of the first level that did not succeed, MAX_ITERATIONS,
    beside ``scaled_level`` 1 and ``failed_level`` 2. Overwritten by every failing level (mutant
    ``if True:`` for ``if status is SolveStatus.SOLVED:`` in ``_solve_levels``) it reads NON_FINITE."""
    params = {
        "tasks": ["pos", "ori", "posture"],
        "posture.type": "posture",
        "posture.level": 2,
        **NO_BARRIERS,
    }
    for name, kind, level in (("pos", "position", 0), ("ori", "orientation", 1)):
        params |= {f"{name}.type": kind, f"{name}.frame": TOOL, f"{name}.level": level}
    c = HQPID.from_params(robot, params)
    ref = c.hold_reference(JointState(HOME, np.zeros(7)))
    ref["ori"] = ref["ori"] @ pin.exp3(np.array([0.2, -0.1, 0.15]))
    ref["posture"] = HOME + 0.3
    middle, last = c.levels[1].qp, c.levels[2].qp
    solve_middle, solve_last = middle.solve, last.solve

    def stopped_short() -> Any:
        return dataclasses.replace(solve_middle(), status=SolveStatus.MAX_ITERATIONS)

    def no_iterate() -> Any:
        sol = solve_last()
        return dataclasses.replace(sol, status=SolveStatus.NON_FINITE, x=np.full_like(sol.x, np.nan))

    monkeypatch.setattr(middle, "solve", stopped_short)
    monkeypatch.setattr(last, "solve", no_iterate)
    _, info = c.torque(HOME, np.zeros(7), ref)
    assert (info["scaled_level"], info["failed_level"], info["levels_solved"]) == (1.0, 2.0, 2.0)
    assert info["qp_status"] == SolveStatus.MAX_ITERATIONS.value


def test_a_velocity_row_slack_never_loosens_another_groups_row(robot: RobotModel) -> None:
    """qpid, both limit groups soft: joint 1 at 6 rad/s (limit 1.40) needs its velocity slack (tens of
    rad/s²) while joint 2, 5 cm under its upper limit and moving up at 0.3 rad/s, is pulled up hard by a
    posture task (600 rad/s² asked, far less than what a slack costs at ``slack_weight`` 1e6): its
    position row holds, ``−q̈₂ ≥ 2α·q̇₂ − α²·(q_max − q₂)`` (the barrier's closed form, written out
    here). Each soft group's slacks are columns of their own: numbered from 0 in every group (mutant
    ``int(k)`` for ``n_s + int(k)`` in ``_stack_barrier_rows``) joint 1's velocity rows and joint 2's
    position rows share slack 0, and joint 1's slack loosens joint 2's row."""
    params = _posture_alone(
        400.0, **{"self_collision.enabled": False, "floor.enabled": False, "singularity.enabled": False}
    )
    c = QPID.from_params(robot, params)
    assert [b.soft for b in c.barriers] == [True, True]
    q = HOME.copy()
    q[1] = robot.position_upper[1] - 0.05
    v = np.zeros(7)
    v[0], v[1] = 6.0, 0.3
    ref = {"posture": q + JOINT_2}
    _, info = c.torque(q, v, ref)
    assert info["fallback"] == 0.0
    assert c.slack.max() > 1.0  # joint 1's velocity slack is in use
    alpha = next(b for b in c.barriers if isinstance(b, JointPositionBarrier)).alpha
    bound = 2.0 * alpha * v[1] - alpha**2 * (robot.position_upper[1] - q[1])
    assert -c.joint_acceleration[1] >= bound - 1e-5
