"""Behaviours of the controllers' math that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch,
in the QP controllers, their barriers and tasks, the ACHD→RNEA controller and the trajectories.
Pure core: no ROS.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_qp_terms import HOME, NO_BARRIERS, TOOL

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.constrained_dynamics import selection_rows
from torque_ctrl_ros.core.controllers.qpid import HQPID
from torque_ctrl_ros.core.qp.constraints import JointPositionBarrier
from torque_ctrl_ros.core.qp.problem import DenseQP, SolveStatus
from torque_ctrl_ros.core.trajectory import JointTrajectory
from torque_ctrl_ros.core.types import JointState


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_hqpid_lower_level_uses_the_whole_torque_range_on_both_sides(robot: RobotModel, sign: float) -> None:
    """A posture level pulling joint 2 hard (±1.5 rad) below a held tool, barriers off: the QP
    torque on joint 2 reaches its limit ``±τ_max`` exactly. The lower level's rows are
    ``−τ_max − nle ≤ M·q̈ ≤ τ_max − nle``; with ``+nle`` in the upper one (mutant
    ``np.add(self._tau_max, kin.nle, out=hi[nb:])`` in ``_fill_lower``) joint 2, where
    ``nle ≈ −8.7 N·m`` at HOME, stops at ``τ_max + 2·nle`` and the limit is never reached."""
    params = {
        "tasks": ["tool", "posture"],
        **{"tool.type": "position", "tool.frame": TOOL, "tool.kp": 100.0},
        **{"posture.type": "posture", "posture.kp": 400.0, "posture.weight": 1.0, "posture.level": 1},
        **NO_BARRIERS,
    }
    c = HQPID.from_params(robot, params)
    ref = c.hold_reference(JointState(HOME, np.zeros(7)))
    ref["posture"] = HOME + sign * 1.5
    tau, info = c.torque(HOME, np.zeros(7), ref)
    assert info["failed_level"] == -1.0 and info["fallback"] == 0.0
    assert abs(float(c.kin.nle[1])) > 5.0  # gravity on joint 2: the two bounds differ by 2·|nle|
    assert tau[1] == pytest.approx(sign * robot.effort_limit[1], abs=1e-3)


def test_hqpid_hard_barrier_rows_get_no_share_of_level_0_slack(robot: RobotModel) -> None:
    """Joint 1 at 6 rad/s (limit 1.40) needs level 0's soft velocity slack (~22 rad/s², slack #0)
    while joint 2, 5 cm under its upper limit and moving up, sits on a HARD position-limit row that a
    lower posture level pulls past. The lower levels' barrier bounds are ``l_b − E·s`` with
    ``E·s = 0`` on hard rows; given slack #0 too (mutant ``np.copyto(self._Es,
    self._s[self._row_slack])`` in ``_update_slack_rows``, dropping ``_row_soft``) the hard row
    loosens by 22 rad/s² and stops counting as active. Reference: the barrier's closed form
    ``−q̈ ≥ 2α·q̇ − α²·(q_max − q)``."""
    params = {
        "tasks": ["tool", "posture"],
        **{"tool.type": "position", "tool.frame": TOOL, "tool.kp": 100.0},
        **{"posture.type": "posture", "posture.kp": 400.0, "posture.weight": 1.0, "posture.level": 1},
        **{"self_collision.enabled": False, "floor.enabled": False, "singularity.enabled": False},
        "joint_position_limit.soft": False,
    }
    c = HQPID.from_params(robot, params)
    q = HOME.copy()
    q[1] = robot.position_upper[1] - 0.05
    v = np.zeros(7)
    v[0], v[1] = 6.0, 0.3
    ref = c.hold_reference(JointState(q, v))
    ref["posture"] = q + np.array([0.0, 1.5, 0.0, 0.0, 0.0, 0.0, 0.0])
    _, info = c.torque(q, v, ref)
    assert info["failed_level"] == -1.0 and info["fallback"] == 0.0
    assert c.diagnostics()["slack.joint_velocity"] > 1.0  # the soft slack is in use
    barrier = next(b for b in c.barriers if isinstance(b, JointPositionBarrier))
    alpha = barrier.alpha
    bound = 2.0 * alpha * v[1] - alpha**2 * (robot.position_upper[1] - q[1])
    assert -c.joint_acceleration[1] >= bound - 1e-5
    assert c.diagnostics()["active.joint_position"] == 1.0


def test_hqpid_lower_level_keeps_the_weighted_rows_of_a_partly_weighted_task(robot: RobotModel) -> None:
    """A pose task weighted on its angular rows only (``[0, 0, 0, 1, 1, 1]``) above a posture level
    pulling every joint by 0.5 rad: the posture level changes ``q̈`` (by tens of rad/s²) only in
    the null space of the weighted rows, so ``J_ang·q̈`` is that of the tool level solved alone.
    Freezing the first three rows instead of the weighted ones (mutant ``np.copyto(block,
    J[: len(weighted)])`` in ``_Level.fill_frozen``) lets the posture level turn the tool."""
    base = {
        **{"tool.type": "pose", "tool.frame": TOOL, "tool.kp": 100.0},
        "tool.weight": [0.0, 0.0, 0.0, 1.0, 1.0, 1.0],
        **NO_BARRIERS,
    }
    posture = {"posture.type": "posture", "posture.kp": 100.0, "posture.weight": 1.0, "posture.level": 1}
    full = HQPID.from_params(robot, {"tasks": ["tool", "posture"], **base, **posture})
    alone = HQPID.from_params(robot, {"tasks": ["tool"], **base})
    v = np.full(7, 0.1)
    ref = full.hold_reference(JointState(HOME, v))
    ref["posture"] = HOME + 0.5
    full.torque(HOME, v, ref)
    alone.torque(HOME, v, {"tool": ref["tool"]})
    change = full.joint_acceleration - alone.joint_acceleration
    assert np.abs(change).max() > 10.0  # the posture level acts
    np.testing.assert_allclose(full.task("tool").J[3:] @ change, np.zeros(3), atol=1e-6)


@pytest.mark.parametrize("n", [1, 2])
def test_bounds_crossed_by_rounding_near_zero_go_to_the_solver(n: int) -> None:
    """A row whose bounds cross by less than ``eps_abs`` near 0 (``l = 1e-12``, ``u = 0``: rounding
    in a bound computed as a difference) is solved, not refused: the refusal needs
    ``l − u > eps_abs·max(1, |l|, |u|)``. Without the ``max(…, 1)`` (mutant ``crossed >
    self._eps_abs * scale`` in ``DenseQP.solve``) every tiny crossing reads as infeasible and the
    controller falls back. Reference: the closed form ``x = 0`` (``H = I``, ``g = 0``)."""
    qp = DenseQP(n, 0, 1)
    qp.H[:] = np.eye(n)
    qp.C[0, 0] = 1.0
    qp.l[0], qp.u[0] = 1e-12, 0.0
    sol = qp.solve()
    assert sol.status is SolveStatus.SOLVED
    np.testing.assert_allclose(sol.x, np.zeros(n), atol=1e-8)


#: Segments per trajectory below: more than ``_FEW_SEGMENTS`` (16), so the coarse screen over the
#: whole segments (``_coarse_may_pass``) runs first and what it clears is never looked at again.
SEGMENTS = 20


def _flat_then(last_position: float, last_velocity: float, period: float) -> JointTrajectory:
    """One joint at rest at 0 rad for ``SEGMENTS − 1`` segments of ``period`` s, then a last segment
    to ``last_position`` (rad), arriving at ``last_velocity`` (rad/s)."""
    times = [period * k for k in range(SEGMENTS + 1)]
    positions = [[0.0]] * SEGMENTS + [[last_position]]
    velocities = [[0.0]] * SEGMENTS + [[last_velocity]]
    return JointTrajectory(times, positions, velocities)


def test_a_cubic_bulging_past_a_limit_between_level_waypoints_is_found() -> None:
    """Last segment: both waypoints at 0 rad, ending at −1 rad/s (1 s apart): the cubic
    ``q(s) = s²·(1 − s)`` peaks at ``4/27 ≈ 0.148`` rad at ``s = 2/3``, past an upper limit of
    0.1 rad. The coarse screen's Bernstein hull of a cubic is ``(p₀, p₀ + m₀/3, p₁ − m₁/3, p₁)``;
    with ``p₁ + m₁/3`` (mutant in ``_coarse_may_pass``) its top is 0, the segment is cleared
    unchecked and the violation missed. Reference: the motion sampled densely."""
    tr = _flat_then(0.0, -1.0, 1.0)
    t_last = float(SEGMENTS - 1)
    sampled = max(float(tr.sample(t)[0][0]) for t in np.linspace(t_last, t_last + 1.0, 301))
    assert sampled == pytest.approx(4.0 / 27.0, abs=1e-4)
    found = tr.limit_violation([-1.0], [0.1], [10.0])
    assert found is not None
    assert (found.quantity, found.joint, found.limit) == ("position", 0, 0.1)
    assert found.value == pytest.approx(4.0 / 27.0, rel=1e-9)
    assert found.time == pytest.approx(t_last + 2.0 / 3.0, rel=1e-9)


def test_a_short_cubic_past_its_acceleration_limit_is_found() -> None:
    """Last segment: 0 → 0.01 rad in 0.1 s from rest to rest: the cubic's acceleration is
    ``6·Δp/T² = 6`` rad/s² at its start (closed form), past a 3 rad/s² bound. The coarse screen
    bounds ``q̈`` by ``d·(d−1)·max|Δ²b|/T²``; divided by ``T`` only (mutant in
    ``_coarse_may_pass``) a segment shorter than 1 s reads ``T`` times too gentle (0.6 rad/s²), is
    cleared unchecked and the violation missed."""
    tr = _flat_then(0.01, 0.0, 0.1)
    t_last = 0.1 * (SEGMENTS - 1)
    assert float(tr.sample(t_last)[2][0]) == pytest.approx(6.0, rel=1e-9)
    found = tr.limit_violation([-1.0], [1.0], [10.0], acceleration_limit=[3.0])
    assert found is not None
    assert (found.quantity, found.joint, found.limit) == ("acceleration", 0, 3.0)
    assert abs(found.value) == pytest.approx(6.0, rel=1e-9)
    assert found.time == pytest.approx(t_last, rel=1e-9)


def test_a_short_cubic_past_its_velocity_limit_is_found() -> None:
    """Last segment: 0 → 0.3 rad in 0.1 s from rest to rest: the cubic's speed peaks at
    ``1.5·Δp/T = 4.5`` rad/s mid-segment (closed form), past a 3 rad/s limit. The coarse screen
    bounds ``q̇`` by ``d·max|Δb|/T``; without the degree ``d = 3`` (mutant ``/ T`` in
    ``_coarse_may_pass``) it reads 1 rad/s, clears the segment unchecked and misses the violation."""
    tr = _flat_then(0.3, 0.0, 0.1)
    t_mid = 0.1 * (SEGMENTS - 1) + 0.05
    assert float(tr.sample(t_mid)[1][0]) == pytest.approx(4.5, rel=1e-9)
    found = tr.limit_violation([-1.0], [1.0], [3.0])
    assert found is not None
    assert (found.quantity, found.joint, found.limit) == ("velocity", 0, 3.0)
    assert found.value == pytest.approx(4.5, rel=1e-9)
    assert found.time == pytest.approx(t_mid, rel=1e-9)


def test_a_trajectory_starting_above_the_speed_limit_and_slowing_down_is_accepted() -> None:
    """Starting at 2 rad/s (limit 1.4) and braking evenly to rest (``Δp = v₀·T/2``: ``q̇`` falls
    linearly from 2 to 0): the first segment may stay as fast as its first point, so no violation.
    Without widening the first segment's speed bound by the start speed (mutant ``v_lim[0]`` for
    ``np.maximum(v_lim[0], v0)`` in ``_screen``) a start a hair too fast rejects every plan."""
    tr = JointTrajectory([0.0, 1.0, 2.0], [[0.0], [1.0], [1.0]], [[2.0], [0.0], [0.0]])
    speeds = [abs(float(tr.sample(t)[1][0])) for t in np.linspace(0.0, 2.0, 401)]
    assert max(speeds) == pytest.approx(2.0)
    assert tr.limit_violation([-5.0], [5.0], [1.4]) is None
    # The later segments get the limit itself: the same speed there is refused.
    late = JointTrajectory([0.0, 1.0, 2.0], [[0.0], [0.0], [1.0]], [[0.0], [2.0], [0.0]])
    assert late.limit_violation([-5.0], [5.0], [1.4]) is not None


def test_a_quintic_bulging_past_a_limit_between_level_waypoints_is_found() -> None:
    """Quintic, last segment: both waypoints at 0 rad, ending at −1 rad/s and −8 rad/s² (1 s apart):
    ``q(s) = s⁴·(1 − s)``, peaking at ``4⁴/5⁵ = 0.08192`` rad at ``s = 4/5`` (closed form), past an
    upper limit of 0.04 rad. Of the coarse screen's Bernstein hull ``(p₀, p₀ + m₀/5,
    p₀ + 2m₀/5 + A₀/20, p₁ − 2m₁/5 + A₁/20, p₁ − m₁/5, p₁)`` only ``p₁ − m₁/5 = 0.2`` is above 0;
    with ``p₁ + m₁/5`` (mutant in ``_coarse_may_pass``) the segment is cleared unchecked."""
    times = [float(k) for k in range(SEGMENTS + 1)]
    tr = JointTrajectory(
        times,
        [[0.0]] * (SEGMENTS + 1),
        [[0.0]] * SEGMENTS + [[-1.0]],
        [[0.0]] * SEGMENTS + [[-8.0]],
    )
    t_peak = SEGMENTS - 1 + 0.8
    assert float(tr.sample(t_peak)[0][0]) == pytest.approx(4.0**4 / 5.0**5, rel=1e-9)
    found = tr.limit_violation([-1.0], [0.04], [100.0])
    assert found is not None
    assert (found.quantity, found.joint, found.limit) == ("position", 0, 0.04)
    assert found.value == pytest.approx(4.0**4 / 5.0**5, rel=1e-9)
    assert found.time == pytest.approx(t_peak, rel=1e-9)


def test_selection_rows_only_for_positive_unit_axes() -> None:
    """``selection_rows(α)`` promises ``αᵀ·X = X[r]`` exactly: true for ``+1`` unit-axis columns
    (checked against the product), false for a ``−1`` column (``αᵀ·X = −X[r]``), which must give
    ``None``. Taking ``|α| == 1`` as a selection (mutant ``np.abs(alpha) == 1.0``) would flip the
    sign of that constraint row."""
    X = np.arange(6.0 * 7.0).reshape(6, 7) - 20.0
    picks = np.zeros((6, 2))
    picks[2, 0] = picks[4, 1] = 1.0
    rows = selection_rows(picks)
    assert rows is not None
    np.testing.assert_array_equal(X[rows], picks.T @ X)
    flipped = picks.copy()
    flipped[4, 1] = -1.0
    assert selection_rows(flipped) is None
