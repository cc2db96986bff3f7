"""The QP wrapper's closed-form path for one-variable problems (hqpid's null-space levels)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import qpsolvers

from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.core.qp.problem import DenseQP, SolveStatus, snapshot


def _scalar(h: float, g: float, c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> DenseQP:
    qp = DenseQP(1, 0, len(c))
    qp.H[0, 0], qp.g[0] = h, g
    qp.C[:, 0], qp.l[:], qp.u[:] = c, lo, hi
    return qp


def test_one_variable_qp_matches_quadprog() -> None:
    rng = np.random.default_rng(7)
    worst = 0.0
    active = 0
    for _ in range(500):
        m = int(rng.integers(1, 12))
        c = rng.normal(size=m) * 10.0 ** rng.uniform(-6, 2, m)
        c[rng.random(m) < 0.1] = 0.0
        x0 = rng.normal()  # a feasible point, so the problem is feasible
        lo = c * x0 - rng.uniform(0, 2, m)
        hi = c * x0 + rng.uniform(0, 2, m)
        lo[rng.random(m) < 0.3] = -np.inf
        hi[rng.random(m) < 0.3] = np.inf
        h, g = float(rng.uniform(1e-3, 10)), float(rng.normal() * 10)
        sol = _scalar(h, g, c, lo, hi).solve()
        assert sol.ok and sol.iterations == 0
        G = np.concatenate([-c[np.isfinite(lo)], c[np.isfinite(hi)]])[:, None]
        b = np.concatenate([-lo[np.isfinite(lo)], hi[np.isfinite(hi)]])
        ref = qpsolvers.solve_qp(
            np.array([[h]]), np.array([g]), G if len(b) else None, b if len(b) else None, solver="quadprog"
        )
        assert ref is not None
        worst = max(worst, abs(sol.x[0] - ref[0]) / max(1.0, abs(ref[0])))
        active += int(abs(sol.x[0] + g / h) > 1e-12)
        # KKT: h·x + g + c·z = 0 with the one multiplier reported.
        assert abs(h * sol.x[0] + g + c @ sol.z) < 1e-9 * max(1.0, abs(g))
    assert worst < 1e-9, worst
    assert active > 100  # the constraints mattered in many of them


def test_one_variable_qp_failures_are_reported() -> None:
    one = np.array([1.0])
    infeasible = _scalar(1.0, 0.0, np.array([1.0, 1.0]), np.array([1.0, -np.inf]), np.array([np.inf, 0.0]))
    sol = infeasible.solve()
    assert sol.status is SolveStatus.PRIMAL_INFEASIBLE and not sol.ok and sol.primal_residual >= 1.0
    zero_row = _scalar(1.0, 0.0, np.array([0.0]), one, np.array([2.0]))  # 0·x ≥ 1
    assert zero_row.solve().status is SolveStatus.PRIMAL_INFEASIBLE
    assert _scalar(1.0, np.nan, one, -one, one).solve().status is SolveStatus.NON_FINITE
    linear = _scalar(0.0, 2.0, one, -3 * one, one).solve()  # min 2x on [-3, 1]
    assert linear.ok and linear.x[0] == -3.0
    unbounded = _scalar(0.0, 2.0, one, -np.inf * one, one).solve()
    assert unbounded.status is SolveStatus.DUAL_INFEASIBLE


def _random_qp(rng: np.random.Generator, n: int = 6, n_eq: int = 2, n_in: int = 5) -> DenseQP:
    qp = DenseQP(n, n_eq, n_in)
    L = rng.normal(size=(n, n))
    qp.H[:] = L @ L.T + n * np.eye(n)
    qp.g[:] = rng.normal(size=n)
    qp.A[:] = rng.normal(size=(n_eq, n))
    qp.b[:] = rng.normal(size=n_eq)
    qp.C[:] = rng.normal(size=(n_in, n))
    qp.l[:] = -1.0
    qp.u[:] = 1.0
    return qp


def test_non_finite_data_is_never_solved() -> None:
    """Warm-started on data with a NaN, ProxSuite could report SOLVED and hand back the previous
    solution: such data never reaches it, and the next good problem is solved (cold) right."""
    rng = np.random.default_rng(7)
    for name in ("H", "g", "A", "b", "C", "l", "u"):
        qp = _random_qp(rng)
        good = qp.solve()
        assert good.status is SolveStatus.SOLVED
        x_good = good.x.copy()
        array = getattr(qp, name)
        kept = array.flat[1]
        array.flat[1] = np.nan
        bad = qp.solve()
        assert bad.status is SolveStatus.NON_FINITE and not np.isfinite(bad.x).any(), name
        array.flat[1] = kept
        again = qp.solve()
        assert again.status is SolveStatus.SOLVED and not again.warm, name
        np.testing.assert_allclose(again.x, x_good, atol=1e-7)
    qp = _random_qp(rng)
    qp.C[0, 0] = np.inf  # an infinite bound is fine (clipped), an infinite coefficient is not
    assert qp.solve().status is SolveStatus.NON_FINITE


def test_crossed_bounds_are_never_solved() -> None:
    """A row with l − u > eps_abs has no solution; ProxSuite spent up to thousands of iterations on
    it and mostly reported MAX_ITERATIONS. Such a problem never reaches it; the next good one is
    solved (cold) right. Bounds crossed within the tolerance still go to the solver."""
    rng = np.random.default_rng(11)
    for warm_first in (False, True):
        qp = _random_qp(rng)
        x_good = qp.solve().x.copy() if warm_first else None
        qp.l[2], qp.u[2] = 0.5, 0.5 - 1e-6
        bad = qp.solve()
        assert bad.status is SolveStatus.PRIMAL_INFEASIBLE and not bad.ok
        assert bad.primal_residual == pytest.approx(1e-6) and not np.isfinite(bad.x).any()
        qp.l[2], qp.u[2] = -1.0, 1.0
        again = qp.solve()
        assert again.status is SolveStatus.SOLVED and not again.warm
        if x_good is not None:
            np.testing.assert_allclose(again.x, x_good, atol=1e-7)
    # Equal bounds (an equality written as a two-sided row), or crossed by rounding, are solved.
    for gap in (0.0, 1e-12):
        qp = _random_qp(rng)
        qp.solve()
        qp.l[0], qp.u[0] = 0.25, 0.25 - gap
        sol = qp.solve()
        assert sol.ok and abs(qp.C[0] @ sol.x - 0.25) < 1e-8, gap
    # The one-variable closed form gets the same refusal, also for infinite bounds (l = +inf,
    # u = 1 must not read as an unbounded problem), and still accepts bounds crossed by rounding
    # at a large magnitude.
    one = np.array([1.0])
    assert _scalar(1.0, 0.0, one, one, 0.5 * one).solve().status is SolveStatus.PRIMAL_INFEASIBLE
    assert _scalar(1.0, 0.0, one, np.inf * one, one).solve().status is SolveStatus.PRIMAL_INFEASIBLE
    assert _scalar(1.0, 0.0, one, one, -np.inf * one).solve().status is SolveStatus.PRIMAL_INFEASIBLE
    big = 1e8
    rounding = _scalar(1.0, 0.0, one, np.nextafter(big, np.inf) * one, big * one).solve()
    assert rounding.ok and rounding.x[0] == pytest.approx(big)


def test_one_variable_edge_cases() -> None:
    qp = DenseQP(1, 0, 2)
    qp.H[0, 0], qp.g[0] = 1.0, -5.0  # the objective pushes x up
    qp.C[:, 0] = [1.0, 1.0]
    qp.l[:], qp.u[:] = [1.0, -np.inf], [np.inf, 1.0]  # x >= 1 (row 0) and x <= 1 (row 1)
    sol = qp.solve()
    # x = 1 from both rows: the multiplier is on the row the objective pushes against, row 1.
    assert sol.status is SolveStatus.SOLVED and sol.x[0] == 1.0
    np.testing.assert_allclose(sol.z, [0.0, 4.0])
    # Ends one rounding apart (3x = 0.3 gives x = 0.09999999999999999, x = 0.1) are one point, not
    # an infeasible problem. (3x = 0.3 and 7x = 0.7 give the same end: no tolerance needed.)
    qp.C[:, 0] = [3.0, 1.0]
    qp.l[:], qp.u[:] = [0.3, 0.1], [0.3, 0.1]
    sol = qp.solve()
    assert sol.status is SolveStatus.SOLVED and abs(sol.x[0] - 0.1) < 1e-15
    # Not convex (h < 0): the better end, and the bounds as the solver saw them are recorded.
    qp.H[0, 0], qp.g[0] = -1.0, 0.1
    qp.C[:, 0] = [1.0, 0.0]
    qp.l[:], qp.u[:] = [-1.0, -np.inf], [10.0, np.inf]
    sol = qp.solve()
    assert sol.status is SolveStatus.SOLVED and sol.x[0] == 10.0
    qp.u[0] = np.inf
    assert qp.solve().status is SolveStatus.DUAL_INFEASIBLE
    qp.u[0] = 0.5
    qp.solve()
    assert snapshot(qp)[5].tolist() == [-1.0, -1e20] and snapshot(qp)[6].tolist() == [0.5, 1e20]


def test_only_the_solvers_solved_status_counts_as_solved() -> None:
    """Every outcome ProxSuite can report has a status here, and only PROXQP_SOLVED is SOLVED:
    "solved closest primal feasible" solves the nearest feasible problem to an infeasible one, and
    its torque would break a constraint (ProxSuite reports it only with
    ``primal_infeasibility_solving``, which this package leaves off)."""
    from proxsuite import proxqp

    from torque_ctrl_ros.core.qp.problem import _STATUS

    outcomes = proxqp.QPSolverOutput.__members__
    assert set(_STATUS) == set(outcomes.values())
    assert [name for name, out in outcomes.items() if _STATUS[out] is SolveStatus.SOLVED] == ["PROXQP_SOLVED"]


@pytest.mark.parametrize(
    ("sizes", "settings", "match"),
    [
        ((0, 0, 0), {}, r"invalid sizes n=0"),
        ((2, -1, 0), {}, r"invalid sizes n=2, n_eq=-1"),
        ((2, 0, 1), {"eps_abs": 0.0}, r"eps_abs must be a finite number > 0, got 0\.0"),
        ((2, 0, 1), {"eps_abs": float("nan")}, r"eps_abs must be a finite number > 0, got nan"),
        ((2, 0, 1), {"max_iter": 0}, r"max_iter must be >= 1, got 0"),
    ],
)
def test_a_qp_of_impossible_size_or_settings_is_refused_when_built(
    sizes: tuple[int, int, int], settings: dict[str, float], match: str
) -> None:
    """Sizes and solver settings are checked once, when the QP is built, not left to ProxSuite on
    the first solve."""
    with pytest.raises(ConfigError, match=f"^DenseQP: {match}"):
        DenseQP(*sizes, **settings)  # type: ignore[arg-type]


def test_a_warm_solve_stopped_off_the_optimum_is_redone_cold() -> None:
    """Ten level-0 problems of hqpid with hard barrier groups at random states (recorded from a
    review's scan, ``test/data/hqpid_stale_warm_start.npz``), solved in order as the controller
    solved them: ProxSuite's warm solve of the last, on the first one's preconditioner, reports
    SOLVED with residuals at 1e-12 at a point where a floor row far from both its bounds holds a
    multiplier of 4.0: q̈ 17.7 rad/s² and τ 3.9 N·m off the optimum. The solve sees the multiplier
    off its row's bounds and redoes it cold: the optimum a fresh solver finds."""
    data = np.load(Path(__file__).parent / "data" / "hqpid_stale_warm_start.npz")
    problems = [tuple(data[f"p{k}_{i}"] for i in range(7)) for k in range(10)]
    H0, _, A0, _, C0, _, _ = problems[0]
    qp = DenseQP(H0.shape[0], A0.shape[0], C0.shape[0])

    def solve(qp: DenseQP, problem: tuple[np.ndarray, ...]) -> Any:
        for target, value in zip((qp.H, qp.g, qp.A, qp.b, qp.C, qp.l, qp.u), problem, strict=True):
            target[...] = value
        return qp.solve()

    for problem in problems[:-1]:
        assert solve(qp, problem).ok
    last = solve(qp, problems[-1])
    assert last.ok and last.warm
    fresh = DenseQP(H0.shape[0], A0.shape[0], C0.shape[0])
    cold = solve(fresh, problems[-1])
    assert cold.ok and not cold.warm
    np.testing.assert_allclose(last.x, cold.x, atol=1e-6)
    assert last.retried, "the warm solve no longer stops off the optimum here (another ProxSuite?)"


@pytest.mark.parametrize("warm_max_iter", [None, 10], ids=["uncapped", "capped"])
def test_a_warm_attempt_capped_in_iterations_is_retried_cold(warm_max_iter: int | None) -> None:
    """The middle level of a three-level hqpid (4 variables, 34 rows; recorded in a closed loop,
    ``test/data/hqpid_slow_warm_solve.npz``): its first problem, then the three before a slow
    step, warm-started in turn. Uncapped, the last warm solve takes 1 158 inner iterations (~10
    ms) on the first problem's preconditioner and reports SOLVED. With ``warm_max_iter`` (10
    outer iterations of at most 50 inner ones, as hqpid's lower levels have) the warm attempt
    stops and the cold retry solves it: 165 in all, ~1.5 ms, the same solution to the
    tolerance's effect (5e-6)."""
    data = np.load(Path(__file__).parent / "data" / "hqpid_slow_warm_solve.npz")
    qp = DenseQP(
        4, 0, data["C"].shape[1], eps_abs=1e-9, max_iter=50, known_feasible=True, warm_max_iter=warm_max_iter
    )
    for k in range(4):
        for name in ("H", "g", "C", "l", "u"):
            getattr(qp, name)[...] = data[name][k]
        solution = qp.solve()
    assert solution.ok and solution.warm
    cost = 0.5 * solution.x @ data["H"][3] @ solution.x + data["g"][3] @ solution.x
    if warm_max_iter is None:
        assert solution.iterations > 500 and not solution.retried, "no longer slow here (another ProxSuite?)"
    else:
        assert solution.retried and solution.iterations < 300
    np.testing.assert_allclose(solution.x, [18.02659, 5.90313, -21.42939, -10.98508], atol=1e-4)
    assert cost < 0.0


def test_a_cold_solve_stopped_off_the_optimum_is_reported_as_stopped_short() -> None:
    """A lower level of a 4-level hqpid (2 variables, 32 rows; recorded from a review's closed loop,
    ``test/data/hqpid_cold_off_optimum.npz``) solved cold by a fresh ``known_feasible`` solver:
    ProxSuite reports SOLVED, residuals ~1e-13, at a point whose multipliers sit on rows up to
    0.076 from their bounds, its cost +1.31 where doing nothing costs 0 and the optimum (quadprog)
    −3.6e-5. With nothing to retry from, it is MAX_ITERATIONS: the caller scales back or falls
    back instead of taking it."""
    data = np.load(Path(__file__).parent / "data" / "hqpid_cold_off_optimum.npz")
    qp = DenseQP(2, 0, 32, eps_abs=1e-9, max_iter=50, reset_proximal=False, known_feasible=True)
    for name in ("H", "g", "C", "l", "u"):
        getattr(qp, name)[...] = data[name]
    solution = qp.solve()
    assert not solution.warm
    cost = 0.5 * solution.x @ data["H"] @ solution.x + data["g"] @ solution.x
    assert cost > 1.0, "the cold solve no longer stops off the optimum here (another ProxSuite?)"
    assert solution.status is SolveStatus.MAX_ITERATIONS and not solution.ok
