"""Behaviours of hqpid's lower levels, qpid's failure handling and the dense QP that a second
mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
the dense QP wrapper (``core/qp/problem.py``) and the QP controllers (``core/controllers/qpid.py``).
Reference values come from closed forms or from the conditions the result must meet, never from the
code under test. Pure core: no ROS.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pinocchio as pin
import pytest
import qpsolvers
from test_qp_terms import HOME, NO_BARRIERS, TOOL
from test_qpid import _params

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers.qpid import HQPID, QPID, _LevelsOutcome, _QPController
from torque_ctrl_ros.core.controllers.qpid_config import QPIDConfig
from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.core.qp.constraints import LinearBarrier
from torque_ctrl_ros.core.qp.problem import DenseQP, Solution, SolveStatus
from torque_ctrl_ros.core.types import JointState


def _three_levels(robot: RobotModel) -> tuple[_QPController, dict[str, Any]]:
    """hqpid: tool position (level 0), tool orientation (level 1: 4 free directions, ProxSuite),
    posture (level 2: 1 free direction, the closed form), barriers off; a reference that turns the
    tool and pulls every joint by −0.2 rad, so that every level acts."""
    params: dict[str, Any] = {"tasks": ["pos", "ori", "posture"], **NO_BARRIERS}
    for name, kind, level in (("pos", "position", 0), ("ori", "orientation", 1), ("posture", "posture", 2)):
        params |= {f"{name}.type": kind, f"{name}.level": level}
        if kind != "posture":
            params[f"{name}.frame"] = TOOL
    c = HQPID.from_params(robot, params)
    held = c.hold_reference(JointState(HOME, np.zeros(7)))
    turned = held["ori"] @ pin.exp3(np.array([-0.1, 0.2, 0.1]))
    return c, {"pos": held["pos"], "ori": turned, "posture": HOME - 0.2}


def _report_as(qp: DenseQP, status: SolveStatus, keep_iterate: bool) -> Callable[[], Solution]:
    """``qp.solve`` that solves, then reports ``status`` with the iterate kept or replaced by NaN."""
    solve = qp.solve

    def reported() -> Solution:
        sol = solve()
        x = sol.x if keep_iterate else np.full_like(sol.x, np.nan)
        return dataclasses.replace(sol, status=status, x=x)

    return reported


# ------------------------------------------------------------------------------ DenseQP
def test_a_fresh_qp_leaves_its_rows_unbounded_below() -> None:
    """A new :class:`DenseQP` starts with ``l = −inf`` and ``u = +inf``: a caller that sets only
    ``u`` gets a one-sided row. ``min ½·‖x‖² + 3·x₀`` with ``x₀ ≤ 1`` alone: ``x = [−3, 0]`` (the
    unconstrained minimiser meets the row). Started at ``l = 0`` (mutant ``self.l[:] = 0.0`` in
    ``DenseQP.__init__``) the row also asks ``x₀ ≥ 0`` and the answer is ``[0, 0]``."""
    qp = DenseQP(2, 0, 1)
    qp.H[:] = np.eye(2)
    qp.g[:] = [3.0, 0.0]
    qp.C[0] = [1.0, 0.0]
    qp.u[0] = 1.0
    sol = qp.solve()
    assert sol.status is SolveStatus.SOLVED
    np.testing.assert_allclose(sol.x, [-3.0, 0.0], atol=1e-7)


def test_only_a_problem_known_feasible_turns_an_infeasibility_report_into_stopped_short() -> None:
    """``x₀ = 1`` and ``x₀ ≤ 0``: no ``x`` meets both. ProxSuite finds that out within a few
    iterations, and a QP not marked ``known_feasible`` reports PRIMAL_INFEASIBLE. Marked
    ``known_feasible`` (the caller says a solution exists), the strict infeasibility test keeps the
    solver going to its iteration cap (``max_iter`` outer iterations, at least as many inner) and the
    outcome is MAX_ITERATIONS. Mapping every PRIMAL_INFEASIBLE to MAX_ITERATIONS (mutant dropping
    ``and self.known_feasible`` in ``DenseQP.solve``) hides real infeasibility; leaving ProxSuite's
    default tolerance (mutant dropping ``settings.eps_primal_inf = …`` in ``_configure``) stops a
    known-feasible solve at the first false alarm."""
    statuses: dict[bool, Solution] = {}
    for known_feasible in (False, True):
        qp = DenseQP(2, 1, 1, max_iter=50, known_feasible=known_feasible)
        qp.H[:] = np.eye(2)
        qp.A[0], qp.b[0] = [1.0, 0.0], 1.0
        qp.C[0], qp.u[0] = [1.0, 0.0], 0.0
        statuses[known_feasible] = qp.solve()
    assert statuses[False].status is SolveStatus.PRIMAL_INFEASIBLE
    assert statuses[True].status is SolveStatus.MAX_ITERATIONS
    assert statuses[True].iterations >= 50


def test_a_known_feasible_problem_may_keep_the_default_infeasibility_test() -> None:
    """The infeasible pair of the test above, ``known_feasible`` with ``strict_infeasibility=False``
    (qpid's level 0 with every barrier row soft): reported MAX_ITERATIONS like a strict one, but
    stopped at ProxSuite's own early alarm, well before the cap (a strict test runs on to it: 4.2
    against 2.3 ms a failing step, docs/performance.md)."""
    qp = DenseQP(2, 1, 1, max_iter=50, known_feasible=True, strict_infeasibility=False)
    assert qp.known_feasible and not qp.strict_infeasibility
    qp.H[:] = np.eye(2)
    qp.A[0], qp.b[0] = [1.0, 0.0], 1.0
    qp.C[0], qp.u[0] = [1.0, 0.0], 0.0
    sol = qp.solve()
    assert sol.status is SolveStatus.MAX_ITERATIONS
    assert sol.iterations < 50
    assert DenseQP(2, 1, 1, known_feasible=True).strict_infeasibility  # strict by default


def test_a_false_infeasibility_alarm_on_a_known_feasible_problem_is_never_solved() -> None:
    """A 4-variable lower-level problem (rounded from one that hqpid met, the tool at its torque limits
    below a stiff posture, at ``u = 0`` strictly inside every row: feasible) on which ProxSuite stops
    after 15 iterations with PRIMAL_INFEASIBLE even at ``eps_primal_inf`` 1e-12. Its iterate is
    ~0 and the optimum (quadprog, written in the test) is 5.8e-3 away: the solve stopped short and
    is reported MAX_ITERATIONS (the controller then scales the iterate back). Turned into SOLVED
    (mutant ``status = SolveStatus.SOLVED`` for ``… MAX_ITERATIONS`` in ``DenseQP.solve``), a
    wrong ``x`` passes as the solution."""
    qp = DenseQP(4, 0, 7, known_feasible=True)
    qp.H[:] = 2.0002 * np.eye(4)
    qp.g[:] = [-12600.0, 5150.0, -4920.0, -2590.0]
    qp.C[:] = [
        [-2.13e-2, 3.55e-2, 3.39e-3, 1.94e-3],
        [-2.33e-2, -4.83e-3, 9.61e-2, -1.04e-3],
        [-7.00e-3, 2.67e-2, 6.20e-3, 1.87e-3],
        [5.76e-3, 9.92e-3, -2.26e-2, 1.30e-3],
        [2.86e-4, -6.26e-4, 1.50e-5, -9.91e-6],
        [5.29e-4, -2.43e-4, -2.02e-3, 1.79e-4],
        [1.43e-4, 5.82e-4, -6.10e-5, 6.74e-4],
    ]
    qp.l[:] = [-78.0, -78.0, -1e-6, -78.0, -18.0, -13.9, -6.91]
    qp.u[:] = [1e-6, 1e-6, 78.0, 1e-6, 1.09e-6, 4.13, 11.1]
    assert (qp.l < 0.0).all() and (qp.u > 0.0).all()  # u = 0 meets every row
    optimum = qpsolvers.solve_qp(
        qp.H, qp.g, np.vstack([-qp.C, qp.C]), np.concatenate([-qp.l, qp.u]), solver="quadprog"
    )
    assert optimum is not None
    sol = qp.solve()
    assert np.abs(sol.x - optimum).max() > 1e-3  # the solver stopped short of the optimum
    assert sol.status is SolveStatus.MAX_ITERATIONS


def test_a_retried_solve_counts_the_iterations_of_both_attempts() -> None:
    """A warm solve (``max_iter`` 3) from a very different problem fails and is retried cold; the
    :class:`Solution` reports ``retried`` and the iterations of both attempts, so more than a cold
    solve of the same problem alone takes (a fresh QP, the same settings: deterministic). Counting the
    cold retry only (mutant ``iterations = …`` for ``iterations += …`` in ``DenseQP.solve``) reports
    exactly the cold solve's count, and the failed warm attempt's work disappears from the step's
    ``qp_iterations``."""
    rng = np.random.default_rng(0)
    n = 5

    def fill(qp: DenseQP, scale: float, draws: list[np.ndarray]) -> None:
        B, g, A, b = draws
        qp.H[:] = B @ B.T + np.eye(n)
        qp.g[:], qp.A[:], qp.b[:] = scale * g, A, scale * b
        qp.C[:] = np.eye(n)
        qp.l[:], qp.u[:] = -1e6, 1e6

    retried = 0
    for _ in range(20):
        qp = DenseQP(n, 2, n, max_iter=3)
        draws = [rng.normal(size=shape) for shape in ((n, n), n, (2, n), 2)]
        fill(qp, 1.0, draws)
        qp.solve()
        draws = [rng.normal(size=shape) for shape in ((n, n), n, (2, n), 2)]
        fill(qp, 1e3, draws)
        sol = qp.solve()
        if not (sol.ok and sol.retried):
            continue
        cold = DenseQP(n, 2, n, max_iter=3)
        fill(cold, 1e3, draws)
        alone = cold.solve()
        assert alone.ok and not alone.warm
        assert sol.iterations > alone.iterations
        retried += 1
    assert retried >= 3  # the case was met


def test_a_one_variable_qp_reports_no_stale_multiplier() -> None:
    """One variable, ``min ½·x² − 5·x`` with ``x ≤ 1``: the row is at its bound, its multiplier is
    ``z = −(h·x + g)/c = 4``. Then the same QP with ``x ≤ 10``: the minimiser ``x = 5`` is inside, so
    ``z = 0`` and the KKT condition ``h·x + g + c·z = 0`` holds. Keeping the previous multipliers
    (mutant dropping ``z[:] = 0.0`` in ``DenseQP._solve_scalar``) reports ``z = 4`` on a row that
    is not at its bound."""
    h, g, c = 1.0, -5.0, 1.0
    qp = DenseQP(1, 0, 1)
    qp.H[0, 0], qp.g[0], qp.C[0, 0] = h, g, c
    qp.u[0] = 1.0
    first = qp.solve()
    assert first.ok and first.x[0] == 1.0 and first.z[0] == pytest.approx(4.0)
    qp.u[0] = 10.0
    second = qp.solve()
    assert second.ok and second.x[0] == pytest.approx(5.0)
    assert second.z[0] == 0.0
    assert h * second.x[0] + g + c * second.z[0] == pytest.approx(0.0)


def test_a_one_variable_row_without_the_variable_met_to_the_tolerance_is_met() -> None:
    """A row ``0·x ≥ 1e-12`` (a bound a rounding above 0, as a difference of two bounds gives) beside
    ``x ≤ 1``, ``min ½·x² − x``: the row counts as met to within ``eps_abs`` (1e-9), as the solver's
    own test does for every other problem, and the answer is ``x = 1``. Testing it exactly
    (mutant ``violation > 0.0`` in ``DenseQP._solve_scalar``) reports the problem infeasible."""
    qp = DenseQP(1, 0, 2)
    qp.H[0, 0], qp.g[0] = 1.0, -1.0
    qp.C[:, 0] = [0.0, 1.0]
    qp.l[0] = 1e-12
    qp.u[1] = 1.0
    sol = qp.solve()
    assert sol.status is SolveStatus.SOLVED
    assert sol.x[0] == pytest.approx(1.0)


def test_a_one_variable_row_that_asks_x_past_infinity_is_infeasible() -> None:
    """One variable, ``min ½·x²`` with a row ``x ≥ +inf`` (or ``x ≥ 1e20``, the solver's infinity,
    or ``x ≤ −inf``): no ``x`` meets it, so the problem is PRIMAL_INFEASIBLE. Counting the infinite
    end in the rounding tolerance made the crossing ``lo − hi = inf`` look like rounding: ``x = +inf``
    reported unbounded (DUAL_INFEASIBLE), a review found (2026-12-08)."""
    for lower, upper in ((np.inf, np.inf), (1e20, np.inf), (1e25, np.inf), (-np.inf, -np.inf)):
        qp = DenseQP(1, 0, 1)
        qp.H[0, 0] = 1.0
        qp.C[0, 0] = 1.0
        qp.l[0], qp.u[0] = lower, upper
        assert qp.solve().status is SolveStatus.PRIMAL_INFEASIBLE, (lower, upper)
    qp = DenseQP(1, 0, 1)  # a huge but finite bound is met
    qp.H[0, 0], qp.C[0, 0], qp.l[0] = 1.0, 1.0, 1e19
    sol = qp.solve()
    assert sol.status is SolveStatus.SOLVED and sol.x[0] == 1e19


def test_a_one_variable_qp_without_objective_takes_the_feasible_point_nearest_zero() -> None:
    """``h = 0``, ``g = 0``: every feasible ``x`` is optimal. With ``x ≥ −2`` only (no upper end) the
    answer is the feasible point nearest 0, ``x = 0`` (finite, SOLVED); with ``x ≥ 2`` it is 2. Taking
    the lower end (mutant ``else lo`` for ``else min(max(0.0, lo), hi)`` in ``DenseQP._solve_scalar``)
    gives ``−1e20`` in the first case, reported as an unbounded (DUAL_INFEASIBLE) problem."""
    qp = DenseQP(1, 0, 1)
    qp.C[0, 0] = 1.0
    for lower, expected in ((-2.0, 0.0), (2.0, 2.0)):
        qp.l[0] = lower
        sol = qp.solve()
        assert sol.status is SolveStatus.SOLVED, lower
        assert sol.x[0] == expected


def test_a_refused_solve_reports_no_multipliers() -> None:
    """Two variables, a NaN in ``g``: the data never reaches the solver, nothing is solved, and the
    :class:`Solution` says so in all its vectors: ``x``, ``y`` (equality multipliers) and ``z``
    (inequality multipliers) are NaN. Left at what the buffers held (mutants dropping
    ``self._z_buf[:] = math.nan`` or ``self._y_buf[:] = math.nan`` in ``DenseQP._refused``) the
    multipliers read as those of a solve with every row inactive (0)."""
    qp = DenseQP(2, 1, 2)
    qp.H[:] = np.eye(2)
    qp.g[:] = [np.nan, 0.0]
    qp.A[0] = [1.0, 1.0]
    qp.C[:] = np.eye(2)
    sol = qp.solve()
    assert sol.status is SolveStatus.NON_FINITE
    assert np.isnan(sol.x).all() and np.isnan(sol.y).all() and np.isnan(sol.z).all()


def test_a_qp_with_a_negative_number_of_inequality_rows_is_refused_by_name() -> None:
    """``DenseQP(2, 0, −1)`` is refused when built, with the sizes named (a :class:`ConfigError`), as
    a negative ``n`` or ``n_eq`` is. Without ``n_in < 0`` in the check (mutant in
    ``DenseQP.__init__``) numpy raises a bare ValueError about negative dimensions instead."""
    with pytest.raises(ConfigError, match=r"^DenseQP: invalid sizes n=2, n_eq=0, n_in=-1$"):
        DenseQP(2, 0, -1)


# ------------------------------------------------------------------------ qpid's levels
def test_the_step_info_sums_iterations_and_times_and_takes_the_largest_residuals() -> None:
    """Three levels' solutions with distinct numbers: ``qp_iterations`` is their sum (3 + 40 + 500),
    ``qp_solve_time_us`` the sum of their times in µs (1 + 20 + 300), ``qp_primal_residual`` and
    ``qp_dual_residual`` the largest of each (the dual ones differ from the primal ones). Mutants in
    ``_QPController._step_info``: ``iterations = sol.iterations`` or ``solve_time = sol.solve_time``
    (the last level only), and the dual residual taken from ``sol.primal_residual``."""
    numbers = [(3, 1e-6, 1e-10, 5e-9), (40, 20e-6, 7e-10, 2e-10), (500, 300e-6, 3e-10, 4e-10)]
    empty = np.zeros(0)
    solutions = [
        Solution(empty, empty, empty, SolveStatus.SOLVED, k, primal, dual, time, warm=True)
        for k, time, primal, dual in numbers
    ]
    outcome = _LevelsOutcome(solutions, SolveStatus.SOLVED, -1, -1, 3)
    info = _QPController._step_info(outcome, False, 2e-6)
    assert info["qp_iterations"] == 543.0
    assert info["qp_solve_time_us"] == pytest.approx(321.0)
    assert info["qp_primal_residual"] == 7e-10
    assert info["qp_dual_residual"] == 5e-9
    assert info["prepare_time_us"] == pytest.approx(2.0)


def test_a_failed_middle_level_skips_the_levels_below(
    robot: RobotModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three levels; level 1 fails with no iterate (NON_FINITE). The level below it is not solved
    (its ``q̈ = q̈*₁ + Z₂·u`` would rest on a level that was dropped): one solution per level tried
    (two), ``levels_solved`` 1, ``failed_level`` 1, and ``q̈`` is level 0's own. Going on to the next
    level (mutant ``continue`` for ``break`` in ``_QPController._solve_levels``) solves level 2 and
    adds its share."""
    c, ref = _three_levels(robot)
    monkeypatch.setattr(c.levels[1].qp, "solve", _report_as(c.levels[1].qp, SolveStatus.NON_FINITE, False))
    _, info = c.torque(HOME, np.zeros(7), ref)
    assert (info["failed_level"], info["levels_solved"], info["fallback"]) == (1.0, 1.0, 0.0)
    assert len(c.last_solutions) == 2
    np.testing.assert_array_equal(c.joint_acceleration, c.last_solutions[0].x[: robot.n])


def test_scaled_level_names_the_first_of_two_scaled_levels(
    robot: RobotModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three levels; levels 1 and 2 both stop short with a finite iterate (reported MAX_ITERATIONS,
    their iterate the optimum): both are scaled back and kept (``levels_solved`` 3), and
    ``scaled_level`` names the first, 1. Overwritten by every scaled level (mutant dropping
    ``if scaled_level < 0:`` in ``_QPController._solve_levels``) it reads 2."""
    c, ref = _three_levels(robot)
    for k in (1, 2):
        qp = c.levels[k].qp
        monkeypatch.setattr(qp, "solve", _report_as(qp, SolveStatus.MAX_ITERATIONS, True))
    _, info = c.torque(HOME, np.zeros(7), ref)
    assert (info["scaled_level"], info["failed_level"], info["levels_solved"]) == (1.0, -1.0, 3.0)
    assert info["qp_status"] == SolveStatus.MAX_ITERATIONS.value


def test_a_scaled_back_step_never_goes_past_the_iterate() -> None:
    """An unfinished iterate ``x = [1, 1]`` that meets its rows ``x ≤ 1.5`` (lower bounds −1), for
    ``min ½·‖x‖² − 2·(x₀ + x₁)`` whose minimiser along ``x`` is ``2·x``: the step is 1 (``s ≤ 1``,
    the solver's own iterate). Rows that ``x`` meets are never tested, so starting above 1 (mutant
    ``step = 2.0`` in ``_QPController._scaled_back``) takes ``2·x``, past both rows."""
    qp = DenseQP(2, 0, 2)
    qp.H[:] = np.eye(2)
    qp.g[:] = [-2.0, -2.0]
    qp.C[:] = np.eye(2)
    qp.l[:], qp.u[:] = -1.0, 1.5
    x = np.array([1.0, 1.0])
    step = _QPController._scaled_back(qp, x)
    assert step == 1.0
    assert (qp.C @ (step * x) <= qp.u).all()


def test_after_a_fallback_no_row_is_active_and_no_slack_is_used(robot: RobotModel) -> None:
    """qpid with two hard rows no ``q̈`` meets (``q̈₁ ≥ 1`` and ``q̈₁ ≤ 0``): level 0 fails, the torque is
    the fallback ``g(q) − K_d·q̇``, and the diagnostics report no active row and no slack (the
    fallback solves nothing). Counted from ``q̈`` anyway (mutant ``if self.n_b:`` for ``if not
    self._last_fallback and self.n_b:`` in ``_QPController.diagnostics``) the rows of a ``q̈`` never
    solved for (0 on the first step) count: ``q̈₁ = 0`` sits on the second row, past the first."""
    rows = np.zeros((2, robot.n))
    rows[:, 0] = [1.0, -1.0]
    config = QPIDConfig.from_params(robot, _params())
    c = QPID(
        robot, config, extra_barriers=[LinearBarrier("contradiction", rows, np.array([1.0, 0.0]), soft=False)]
    )
    v = np.full(robot.n, 0.1)
    tau, info = c.torque(HOME, v, c.hold_reference(JointState(HOME, v)))
    assert info["fallback"] == 1.0
    np.testing.assert_allclose(tau, robot.gravity(HOME) - config.fallback_damping * v, atol=1e-12)
    diag = c.diagnostics()
    assert diag["active.contradiction"] == 0.0 and diag["active_constraints"] == 0.0
    assert diag["slack_total"] == 0.0


def test_a_level_0_solve_that_stops_short_falls_back(
    robot: RobotModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """qpid, a posture task pulling every joint by 0.3 rad, moving at 0.1 rad/s; the level-0 solve
    reports MAX_ITERATIONS with a finite iterate along which its cost decreases. Only a lower level's
    unfinished solve is scaled back (``u = 0`` meets its rows; level 0 has no such point): level 0
    fails, the torque is the fallback ``g(q) − K_d·q̇`` and ``failed_level`` is 0. Scaling level 0
    back too (mutant ``self._scaled_back(qp, sol.x)`` for ``… if lv.index > 0 else 0.0`` in
    ``_QPController._solve_levels``) counts it as solved and sends ``M·q̈ + nle`` for a ``q̈`` that
    no solve produced (0 here: the gravity and Coriolis torque, no damping)."""
    c = QPID.from_params(robot, {"tasks": ["posture"], "posture.type": "posture", "posture.kp": 100.0})
    qp = c.levels[0].qp
    monkeypatch.setattr(qp, "solve", _report_as(qp, SolveStatus.MAX_ITERATIONS, True))
    v = np.full(robot.n, 0.1)
    tau, info = c.torque(HOME, v, {"posture": HOME + 0.3})
    assert qp.g.dot(c.last_solutions[0].x) < 0.0  # the iterate lowers the cost: scaling it back would keep it
    assert (info["fallback"], info["failed_level"], info["scaled_level"]) == (1.0, 0.0, -1.0)
    assert info["qp_status"] == SolveStatus.MAX_ITERATIONS.value
    np.testing.assert_allclose(tau, robot.gravity(HOME) - c.config.fallback_damping * v, atol=1e-12)


def test_a_scaled_back_step_catches_a_small_overshoot_past_an_upper_row() -> None:
    """An unfinished iterate ``x = [1.2, 0]`` past its row ``x₀ ≤ 1`` by 0.2 (rows ``−1 ≤ x ≤ 1``),
    the cost decreasing along it (``g = [−1, 0]``, nearly flat ``H``): the step is ``u₀/(C₀·x) = 1/1.2``
    (closed form), and ``s·x`` meets the row. Testing rows against a loosened bound (mutant
    ``rows > qp.u + 1.0`` in ``_QPController._scaled_back``) misses an overshoot under 1 (rad/s² or
    N·m past a barrier or a torque limit) and keeps the whole iterate."""
    qp = DenseQP(2, 0, 2)
    qp.H[:] = 1e-6 * np.eye(2)
    qp.g[:] = [-1.0, 0.0]
    qp.C[:] = np.eye(2)
    qp.l[:], qp.u[:] = -1.0, 1.0
    x = np.array([1.2, 0.0])
    step = _QPController._scaled_back(qp, x)
    assert step == pytest.approx(1.0 / 1.2, rel=1e-12)
    assert (qp.C @ (step * x) <= qp.u + 1e-12).all()


def test_a_lower_level_gets_ten_times_the_solver_tolerance_of_room(robot: RobotModel) -> None:
    """hqpid at ``solver.eps_abs`` 1e-6, a posture level below the tool: every row of the lower level
    has at least ``10·eps_abs`` = 1e-5 of room on each side of ``u = 0`` (``l ≤ −1e-5``, ``u ≥ 1e-5``):
    the level above meets its rows only to within its tolerance, and a thinner slab leaves the lower
    level rounding to fight. Taking the fixed 1e-6 room whatever the tolerance (mutant
    ``self._tol = _LOWER_LEVEL_ROOM`` for ``max(10.0 * c.eps_abs, _LOWER_LEVEL_ROOM)`` in
    ``_QPController._build_cost_terms``) leaves rows level 0 holds at their bounds 1e-6 of room."""
    params = {**_params(**{"posture.level": 1}), "solver": {"eps_abs": 1e-6}}
    c = HQPID.from_params(robot, params)
    ref = c.hold_reference(JointState(HOME, np.zeros(7)))
    ref["tool"] = np.array([0.05, 0.0, 0.10])  # into the base: level 0 holds barrier rows at their bounds
    _, info = c.torque(HOME, np.zeros(7), ref)
    assert info["fallback"] == 0.0
    lower = c.levels[1].qp
    assert min(float(lower.u.min()), float(-lower.l.max())) >= 1e-5 * (1.0 - 1e-9)
