"""A persistent dense QP: fixed sizes, preallocated matrices, warm-started every step.

Problem (all arrays owned by :class:`DenseQP` and filled in place by the caller)::

    minimise    ½·xᵀ·H·x + gᵀ·x
    subject to  A·x = b                (n_eq rows)
                l ≤ C·x ≤ u            (n_in rows; ±inf for a one-sided row)

Only this module talks to the solver (ProxSuite's dense ProxQP). The first
:meth:`DenseQP.solve` initialises the solver (factorisation workspace, Ruiz
preconditioner); every later one passes the refilled arrays to ``update`` and
warm-starts from the previous primal-dual solution, so a control step costs one
update and a few iterations, with no allocation of the problem matrices.

Proximal parameters (``reset_proximal``, default on): a warm solve restarts from the
solver's default proximal parameters (``rho``, ``mu_eq``, ``mu_in``) instead of those ProxSuite
adapted during the last solve. Along a closed loop the adapted values drift to suit the previous
problem, not the next: reset bounds the iterations where barrier rows are active, the steps whose
time matters most, for a few more where none is. hqpid's lower levels reset too: keeping the
adapted values, the middle level of a three-level hqpid took up to 8 401 iterations (60 ms) on one
step of a closed loop. (Figures for this whole docstring: docs/performance.md, "Measurements behind
the core's choices".)

Warm attempts capped (``warm_max_iter``, hqpid's lower levels): a warm start keeps the
preconditioner of the first problem (see below), and on it a warm solve can take hundreds or
thousands of inner iterations where a cold one takes tens; reporting SOLVED, it is no failure to
retry. With the cap, a warm attempt stops after ``warm_max_iter`` outer iterations of at most
:data:`_WARM_MAX_ITER_IN` inner ones and is retried cold.

Iteration cap and retry: ``max_iter`` caps the solver's outer (proximal / BCL) iterations of one
attempt (default 50); the iterations a :class:`Solution` reports are ProxSuite's ``info.iter``,
its inner (semi-smooth Newton) ones, which can exceed ``max_iter``. A warm attempt that fails is
retried once from a cold start: ``init`` rebuilds the preconditioner for the current matrices. A
warm start keeps the preconditioner of the first problem, which goes stale along a closed loop
whose active set changed a lot; a warm solve then needs many times the iterations of a cold one,
and can even stop, reported SOLVED, at a point that is not the optimum (a multiplier on a bound its
row does not meet): such a solve is retried cold too (``_multipliers_on_their_bounds``). A cold
solve found so (rarer: a lower level of a 4-level hqpid in a review) is reported as
MAX_ITERATIONS, a solve stopped short.
An infeasible problem is therefore reported after at most ``2·max_iter`` outer iterations instead
of running for ten times that. That is no time bound: each outer iteration may take up to
``_MAX_ITER_IN`` inner ones. Typically ~1.5–2 ms at 50; a review measured a failing level 0 at 3.2
ms (median) and up to 7.6 ms (qpid) / 14 ms (hqpid) over 300 cold states at 3–10 times the speed
limits, and the middle level of a three-level hqpid up to 12 ms cold (45 ms warm-started from an
unrelated state): such a step's command comes that late. A solve that succeeds could be slow too:
in closed loop within the speed limits a three-level hqpid's middle level took 2 358 inner
iterations (18.6 ms) and reported SOLVED (docs/controllers.md), before its warm attempts were capped
(at most 49 since, over the same runs). ProxSuite also reports some clearly
infeasible problems as MAX_ITERATIONS (a joint 0.6 rad past its limit moving outward, after ~300
iterations), so the status alone does not tell "infeasible" from "slow".

Problems known to be feasible (``known_feasible``: hqpid's lower levels, where ``x = 0`` meets
every row, and a level 0 with a slack on every barrier row): ProxSuite's primal infeasibility test
(tolerance ``eps_primal_inf``, 1e-4 by default) raises false alarms on them, PRIMAL_INFEASIBLE on
problems another solver solves exactly. An alarm on them is reported as MAX_ITERATIONS: the solve
stopped short of a problem that has a solution. On the lower levels the test is also made strict
(``strict_infeasibility``, tolerance 1e-12) so that the solver goes on instead. Level 0 keeps the
default: at 10–50 times the speed limits (300 cold states, 2026-12-08) the strict test turned
none of its failing solves into a solution and made each run on to the cap, 4.2 ms against 2.3
(median) before the fallback torque went out.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from proxsuite import proxqp

from ..errors import ConfigError
from ..validation import FloatArray

# ProxSuite treats bounds beyond this magnitude as infinite; keep ours inside it so
# no inf ever reaches the solver's arithmetic.
_INF = 1e20


class SolveStatus(IntEnum):
    """Outcome of a solve, solver-independent. The value is reported in diagnostics."""

    SOLVED = 0
    MAX_ITERATIONS = 1
    PRIMAL_INFEASIBLE = 2
    DUAL_INFEASIBLE = 3
    NON_FINITE = 4
    NOT_RUN = 5


#: Inner iterations per outer iteration; ProxSuite's default (1500) lets a degenerate
#: problem spin for 1500·``max_iter`` iterations before giving up: 75 000 at the default 50,
#: 1.5 million at the largest accepted (1000). (NaN data, the case that showed it, no longer
#: reaches the solver: :meth:`DenseQP.solve` refuses it.)
_MAX_ITER_IN = 200
#: Inner iterations per outer one of a warm attempt capped by ``warm_max_iter`` (:class:`DenseQP`).
_WARM_MAX_ITER_IN = 50
#: A multiplier :meth:`DenseQP.solve` takes for 0 (rounding) in its check of a warm solve.
_LOOSE_Z = 1e-6
#: Room between ``C_i·x`` and a bound beyond which that bound is not met (a row's units).
_ROOM = 1e-5
#: Signs that turn ``[l − C·x; u − C·x]`` into the room to each bound, ``[z; z]`` into the
#: multiplier on each (ProxSuite's ``z`` is > 0 on an upper bound, < 0 on a lower one).
_LOWER_UPPER = np.array([[-1.0], [1.0]])
#: ``eps_primal_inf`` of a problem with ``strict_infeasibility`` (see the module docs).
_STRICT_EPS_PRIMAL_INF = 1e-12


def _configure(qp: proxqp.dense.QP, eps_abs: float, max_iter: int, strict_infeasibility: bool) -> None:
    """The settings every solve here uses (``DenseQP`` and its floor, ``WarmReplay``)."""
    settings = qp.settings
    settings.eps_abs = float(eps_abs)
    settings.eps_rel = 0.0
    settings.max_iter = int(max_iter)
    settings.max_iter_in = _MAX_ITER_IN
    settings.verbose = False
    if strict_infeasibility:
        settings.eps_primal_inf = _STRICT_EPS_PRIMAL_INF


def _warm_solve(qp: proxqp.dense.QP, warm_max_iter: int | None, max_iter: int) -> None:
    """``qp.solve()`` warm, within ``warm_max_iter`` outer iterations of :data:`_WARM_MAX_ITER_IN`
    inner ones where given (``None``: the full caps), which are set back to ``max_iter`` and
    :data:`_MAX_ITER_IN` after it for a cold retry."""
    if warm_max_iter is None:
        qp.solve()
        return
    settings = qp.settings
    settings.max_iter, settings.max_iter_in = warm_max_iter, _WARM_MAX_ITER_IN
    qp.solve()
    settings.max_iter, settings.max_iter_in = max_iter, _MAX_ITER_IN


def _default_proximal(qp: proxqp.dense.QP) -> dict[str, float]:
    """The solver's default proximal parameters, as ``update`` takes them: a warm solve restarted
    from these rather than the last solve's adapted ones needs fewer iterations where barrier rows
    are active, a few more where none is (docs/performance.md)."""
    settings = qp.settings
    return {"rho": settings.default_rho, "mu_eq": settings.default_mu_eq, "mu_in": settings.default_mu_in}


_SOLVED = proxqp.QPSolverOutput.PROXQP_SOLVED
_WARM = proxqp.InitialGuess.WARM_START_WITH_PREVIOUS_RESULT
_COLD = proxqp.InitialGuess.EQUALITY_CONSTRAINED_INITIAL_GUESS

_STATUS = {
    proxqp.QPSolverOutput.PROXQP_SOLVED: SolveStatus.SOLVED,
    proxqp.QPSolverOutput.PROXQP_MAX_ITER_REACHED: SolveStatus.MAX_ITERATIONS,
    proxqp.QPSolverOutput.PROXQP_PRIMAL_INFEASIBLE: SolveStatus.PRIMAL_INFEASIBLE,
    proxqp.QPSolverOutput.PROXQP_SOLVED_CLOSEST_PRIMAL_FEASIBLE: SolveStatus.PRIMAL_INFEASIBLE,
    proxqp.QPSolverOutput.PROXQP_DUAL_INFEASIBLE: SolveStatus.DUAL_INFEASIBLE,
    proxqp.QPSolverOutput.PROXQP_NOT_RUN: SolveStatus.NOT_RUN,
}


@dataclass
class Solution:
    """Result of one :meth:`DenseQP.solve`.

    Attributes:
        x: primal solution: a view of the solver's buffer, overwritten by the next solve (copy
            it to keep it) and the next warm start (do not write to it).
        y: multipliers of ``A·x = b``; z: multipliers of ``l ≤ C·x ≤ u`` (same ownership).
        status: outcome; only :attr:`SolveStatus.SOLVED` with finite ``x`` is usable.
        iterations: the solver's inner iterations of this solve (``info.iter``; ``max_iter``
            caps the outer ones).
        primal_residual: ``max(‖A·x − b‖∞, ‖dist(C·x, [l, u])‖∞)`` as reported by the solver.
        dual_residual: ``‖H·x + g + Aᵀ·y + Cᵀ·z‖∞`` as reported by the solver.
        solve_time: wall time of update + solve (s), the cold retry included.
        warm: ``True`` if warm-started from the previous solution.
        retried: ``True`` if the warm attempt failed (or its multipliers were off their rows'
            bounds) and this is the result of the cold retry
            (``iterations`` then counts both attempts).
    """

    x: FloatArray
    y: FloatArray
    z: FloatArray
    status: SolveStatus
    iterations: int
    primal_residual: float
    dual_residual: float
    solve_time: float
    warm: bool
    retried: bool = False

    @property
    def ok(self) -> bool:
        """``True`` when the solve succeeded and ``x`` is finite."""
        return self.status is SolveStatus.SOLVED


class DenseQP:
    """A dense QP of fixed size, solved repeatedly with warm starts.

    Fill :attr:`H`, :attr:`g`, :attr:`A`, :attr:`b`, :attr:`C`, :attr:`l`, :attr:`u`
    in place (never rebind them), then call :meth:`solve`. Infinite bounds in ``l`` /
    ``u`` are accepted and clipped to ±1e20 for the solver.

    Args:
        n: number of variables.
        n_eq: number of equality rows.
        n_in: number of inequality rows.
        eps_abs: absolute tolerance on primal and dual residuals.
        max_iter: cap on the outer iterations of one attempt (see the module docs: a failed
            warm attempt is retried cold once); reaching it is reported as a failure.
        reset_proximal: start each warm solve from the default proximal parameters (see
            the module docs) instead of the previous solve's.
        known_feasible: the caller guarantees a feasible ``x`` (e.g. ``x = 0``): a failure is then
            MAX_ITERATIONS (or a refusal of the data), never a false PRIMAL_INFEASIBLE.
        strict_infeasibility: make the solver's infeasibility test strict (see the module docs),
            so that a false alarm does not stop it; ``None``: as ``known_feasible``.
        warm_max_iter: cap on the outer iterations of a warm attempt, each of at most
            :data:`_WARM_MAX_ITER_IN` inner ones (``None``: as a cold one); past it the solve is
            retried cold (see the module docs).
    """

    def __init__(
        self,
        n: int,
        n_eq: int,
        n_in: int,
        *,
        eps_abs: float = 1e-9,
        max_iter: int = 50,
        reset_proximal: bool = True,
        known_feasible: bool = False,
        strict_infeasibility: bool | None = None,
        warm_max_iter: int | None = None,
    ) -> None:
        if n <= 0 or n_eq < 0 or n_in < 0:
            raise ConfigError(f"DenseQP: invalid sizes n={n}, n_eq={n_eq}, n_in={n_in}")
        if not (np.isfinite(eps_abs) and eps_abs > 0.0):
            raise ConfigError(f"DenseQP: eps_abs must be a finite number > 0, got {eps_abs!r}")
        if int(max_iter) < 1:
            raise ConfigError(f"DenseQP: max_iter must be >= 1, got {max_iter!r}")
        if warm_max_iter is not None and int(warm_max_iter) < 1:
            raise ConfigError(f"DenseQP: warm_max_iter must be >= 1 or None, got {warm_max_iter!r}")
        self.n, self.n_eq, self.n_in = n, n_eq, n_in
        self._max_iter = int(max_iter)
        self.warm_max_iter = None if warm_max_iter is None else int(warm_max_iter)
        self._eps_abs = float(eps_abs)
        # H, g, A, b, C as views of one buffer: one dot product tells whether all are finite.
        sizes = np.cumsum([0, n * n, n, n_eq * n, n_eq, n_in * n])
        self._data = np.zeros(int(sizes[-1]))
        parts = [self._data[sizes[i] : sizes[i + 1]] for i in range(5)]
        self.H = parts[0].reshape(n, n)
        self.g = parts[1]
        self.A = parts[2].reshape(n_eq, n)
        self.b = parts[3]
        self.C = parts[4].reshape(n_in, n)
        # l and u as the rows of one array, so that clipping both is two ufunc calls.
        self._lu = np.empty((2, n_in))
        self.l, self.u = self._lu
        self.l[:] = -np.inf
        self.u[:] = np.inf
        self._lu_clipped = np.zeros((2, n_in))
        self._lu_flat = self._lu_clipped.reshape(-1)
        self._l, self._u = self._lu_clipped
        self._qp = proxqp.dense.QP(n, n_eq, n_in)
        self.known_feasible = bool(known_feasible)
        strict = self.known_feasible if strict_infeasibility is None else strict_infeasibility
        self.strict_infeasibility = bool(strict)
        _configure(self._qp, eps_abs, max_iter, self.strict_infeasibility)
        self.reset_proximal = bool(reset_proximal)
        self._proximal = _default_proximal(self._qp) if reset_proximal else {}
        self._initialised = False
        self._last_ok = False
        self._x_buf = np.zeros(n)
        self._y_buf = np.zeros(n_eq)
        self._z_buf = np.zeros(n_in)
        # Work buffers of the check of a warm solve's multipliers (_multipliers_on_their_bounds).
        self._cx = np.zeros(n_in)
        self._room, self._signed_z = np.zeros((2, n_in)), np.zeros((2, n_in))
        self._far, self._held = np.zeros((2, n_in), dtype=bool), np.zeros((2, n_in), dtype=bool)

    def reset(self) -> None:
        """Forget the previous solution: the next :meth:`solve` re-initialises cold."""
        self._initialised = False
        self._last_ok = False

    def solve(self) -> Solution:
        """Solve the problem as currently filled; never raises on solver failure.

        Data with a NaN (or an infinite entry outside ``l`` / ``u``) is not passed to the
        solver: warm-started on it, ProxSuite could report SOLVED and return the previous
        solution. It gives :attr:`SolveStatus.NON_FINITE` at once, and the next solve is cold.
        Nor is a row whose bounds cross beyond rounding (``l − u > eps_abs·max(1, |l|, |u|)``, with
        ``±inf`` clipped to ``±1e20``: no ``x`` meets it): ProxSuite can take thousands of iterations
        over such problems and mostly reports MAX_ITERATIONS, and the one-variable closed form
        would read ``l = +inf, u = 1`` as unbounded. It gives :attr:`SolveStatus.PRIMAL_INFEASIBLE` at
        once, its primal residual the largest ``l − u``, and the next solve is cold. Bounds
        crossed by rounding go to the solver (the closed form accepts them as met).
        """
        # ±inf → ±1e20 for the solver (two ufunc calls; np.clip's wrapper costs more).
        np.maximum(self._lu, -_INF, out=self._lu_clipped)
        np.minimum(self._lu_clipped, _INF, out=self._lu_clipped)
        # A sum of squares is finite iff every entry is (or one exceeds ~1e154: garbage too);
        # clipped bounds are at most 1e20, so only a NaN makes theirs non-finite.
        if not (
            math.isfinite(float(self._data.dot(self._data)))
            and math.isfinite(float(self._lu_flat.dot(self._lu_flat)))
        ):
            return self._refused(SolveStatus.NON_FINITE, math.nan)
        if np.count_nonzero(np.greater(self._l, self._u)):  # rare: the exact test only then
            crossed = self._l - self._u
            scale = np.maximum(np.abs(self._l), np.abs(self._u))
            if (crossed > self._eps_abs * np.maximum(scale, 1.0)).any():
                return self._refused(SolveStatus.PRIMAL_INFEASIBLE, float(crossed.max()))
        if self.n == 1 and self.n_eq == 0:
            return self._solve_scalar(self.H, self.g, self.C, self.l, self.u)
        qp = self._qp
        t0 = time.perf_counter()
        warm = self._initialised and self._last_ok
        retried = False
        if warm:
            # The solver is set to warm-start (see _init_and_solve).
            qp.update(self.H, self.g, self.A, self.b, self.C, self._l, self._u, **self._proximal)
            _warm_solve(qp, self.warm_max_iter, self._max_iter)
            info = qp.results.info
            iterations = int(info.iter)
            if info.status != _SOLVED or not self._multipliers_on_their_bounds(qp.results):
                # Retry once from a cold start: fresh preconditioner and proximal parameters.
                self._init_and_solve()
                iterations += int(qp.results.info.iter)
                retried = True
        else:
            # A cold (re)start also rebuilds the preconditioner, e.g. after a failure
            # left the previous iterate meaningless.
            self._init_and_solve()
            iterations = int(qp.results.info.iter)
        elapsed = time.perf_counter() - t0
        res = qp.results
        info = res.info
        status = _STATUS.get(info.status, SolveStatus.NOT_RUN)
        if (
            status is SolveStatus.SOLVED
            and (retried or not warm)
            and not self._multipliers_on_their_bounds(res)
        ):
            # A cold solve can stop off the optimum too (a review: a lower level of a 4-level
            # hqpid, residuals 1e-13, multipliers on rows up to 0.076 from their bounds, q̈ 16 rad/s²
            # off): nothing to retry from, so it is reported as stopped short.
            status = SolveStatus.MAX_ITERATIONS
        if status is SolveStatus.PRIMAL_INFEASIBLE and self.known_feasible:
            # The caller's feasible x says it is a false alarm (they still come at
            # eps_primal_inf 1e-12: see the module docs).
            status = SolveStatus.MAX_ITERATIONS
        # Views of the solver's own result vectors (allocated once, overwritten by every solve
        # and read as the warm start of the next): no copies.
        x = res.x
        # x·x is finite iff every entry is (or one exceeds ~1e154: no usable solution either).
        if status is SolveStatus.SOLVED and not math.isfinite(float(x.dot(x))):
            status = SolveStatus.NON_FINITE
        self._last_ok = status is SolveStatus.SOLVED
        return Solution(
            x=x,
            y=res.y,
            z=res.z,
            status=status,
            iterations=iterations,
            primal_residual=float(info.pri_res),
            dual_residual=float(info.dua_res),
            solve_time=elapsed,
            warm=warm,
            retried=retried,
        )

    def _multipliers_on_their_bounds(self, results: proxqp.Results) -> bool:
        """Whether each inequality multiplier of a solve reported SOLVED sits on a bound its row
        meets: ``z_i > 0`` (ProxSuite's sign for the upper bound) only where ``C_i·x`` is at
        ``u_i``, ``z_i < 0`` only where it is at ``l_i``, each within :data:`_ROOM` (with
        :data:`_LOOSE_Z` of rounding on ``z``). A warm start keeps the first problem's
        preconditioner, and with it ProxSuite can stop at a point where a row far from both its
        bounds holds a multiplier (a floor row with ``z`` 4.0 and its upper bound at 1e20), its
        residuals at 1e-12: a KKT point of another problem, reported SOLVED. A review found it on
        3–8 of ~1 300 warm solves at random states with hard barrier groups (torques off by up to
        36 N·m), none along a closed loop."""
        # Row 0 of the (2, n_in) buffers for the lower bounds, row 1 for the upper ones.
        room, far, held, signed = self._room, self._far, self._held, self._signed_z
        np.subtract(self._lu_clipped, np.dot(self.C, results.x, out=self._cx), out=room)
        np.multiply(room, _LOWER_UPPER, out=room)  # C·x − l, u − C·x: the room to each bound
        np.greater(room, _ROOM, out=far)
        np.multiply(results.z, _LOWER_UPPER, out=signed)  # −z, z: a multiplier on each bound
        np.greater(signed, _LOOSE_Z, out=held)
        return not np.count_nonzero(np.logical_and(far, held, out=far))

    def _refused(self, status: SolveStatus, primal_residual: float) -> Solution:
        """The result for data not passed to the solver: nothing solved (NaN ``x``, ``y``, ``z``),
        the next solve cold."""
        self._last_ok = False
        self._x_buf[:] = math.nan
        self._y_buf[:] = math.nan
        self._z_buf[:] = math.nan
        return Solution(
            x=self._x_buf,
            y=self._y_buf,
            z=self._z_buf,
            status=status,
            iterations=0,
            primal_residual=primal_residual,
            dual_residual=math.nan,
            solve_time=0.0,
            warm=False,
        )

    def _solve_scalar(
        self, H: FloatArray, g: FloatArray, C: FloatArray, lower: FloatArray, upper: FloatArray
    ) -> Solution:
        """One variable, inequality rows only, in closed form (exact; no iterations).

        Solves the problem ``H`` (1×1), ``g`` (1), ``C`` (n_in×1), ``lower``, ``upper`` (n_in) passed in:
        :meth:`solve` passes this QP's own arrays, :class:`WarmReplay` (the benchmark's floor) the
        recorded ones, so that the floor times this solve and not copies into this QP.

        ``min ½·h·x² + g·x`` s.t. ``l ≤ c·x ≤ u``: each row with ``c ≠ 0`` confines ``x`` to
        ``[l/c, u/c]`` (ends swapped for ``c < 0``), a row with ``c = 0`` only asks
        ``l ≤ 0 ≤ u``. The minimiser is ``−g/h`` clamped to the intersection ``[lo, hi]``
        (``h > 0``), or the end that ``−g`` points to (``h = 0``). The multiplier of the row
        whose bound is met is ``−(h·x + g)/c``. Why not ProxSuite: on these problems (hqpid's
        lower levels on a 7-DoF arm under a 6-D task) it can take hundreds of iterations, and
        its answers differ from this one by up to 1e-3 where rows are nearly orthogonal to the
        free direction.
        """
        t0 = time.perf_counter()
        h, g0 = float(H[0, 0]), float(g[0])
        lo, hi, violation = -_INF, _INF, 0.0
        j_lo = j_hi = -1
        # A plain loop: ~30 rows cost less this way than a dozen numpy calls.
        for j, (c, lj, uj) in enumerate(zip(C[:, 0].tolist(), lower.tolist(), upper.tolist(), strict=True)):
            if c > 0.0:
                a, b = lj / c, uj / c
            elif c < 0.0:
                a, b = uj / c, lj / c
            else:
                violation = max(violation, lj, -uj)
                continue
            if a > lo:
                lo, j_lo = a, j
            if b < hi:
                hi, j_hi = b, j
        status = SolveStatus.SOLVED
        # Bounds met to within the tolerance count as met: 3·x = 0.3 and x = 0.1 give ends one
        # rounding apart (0.3/3 = 0.09999999999999999; 0.7/7 rounds to the same).
        # An end at ±_INF or beyond (a bound of ±inf on the wrong side: x ≥ +inf) takes no part in
        # the tolerance: it would make an infinite crossing look like rounding.
        tol = self._eps_abs * max(1.0, abs(lo) if abs(lo) < _INF else 1.0, abs(hi) if abs(hi) < _INF else 1.0)
        if 0.0 < lo - hi <= tol:
            hi = lo
        if lo > hi or lo >= _INF or hi <= -_INF or violation > self._eps_abs:
            x, status = min(max(0.0, lo), hi), SolveStatus.PRIMAL_INFEASIBLE
            violation = max(violation, lo - hi)
        elif h > 0.0:
            x = min(max(-g0 / h, lo), hi)
        elif h == 0.0:
            x = lo if g0 > 0.0 else hi if g0 < 0.0 else min(max(0.0, lo), hi)
        else:  # not convex: the better end, if both are finite
            x = lo if 0.5 * h * lo * lo + g0 * lo <= 0.5 * h * hi * hi + g0 * hi else hi
        if status is SolveStatus.SOLVED and not (lo > -_INF and hi < _INF if h < 0.0 else abs(x) < _INF):
            status = SolveStatus.DUAL_INFEASIBLE  # unbounded below
        self._y_buf[:] = 0.0
        z = self._z_buf
        z[:] = 0.0
        # The row whose bound is met; at lo = hi the one the objective pushes against
        # (the lower end when it would go lower: h·x + g > 0).
        if x == lo and x == hi:
            j = j_lo if h * x + g0 > 0.0 else j_hi
        else:
            j = j_lo if x == lo else j_hi if x == hi else -1
        if status is SolveStatus.SOLVED and j >= 0:
            z[j] = -(h * x + g0) / C[j, 0]
        self._x_buf[0] = x
        self._last_ok = status is SolveStatus.SOLVED
        return Solution(
            x=self._x_buf,
            y=self._y_buf,
            z=z,
            status=status,
            iterations=0,
            primal_residual=violation,
            dual_residual=0.0,
            solve_time=time.perf_counter() - t0,
            warm=False,
        )

    def _init_and_solve(self) -> None:
        qp = self._qp
        qp.settings.initial_guess = _COLD
        qp.init(self.H, self.g, self.A, self.b, self.C, self._l, self._u)
        self._initialised = True
        qp.solve()
        qp.settings.initial_guess = _WARM  # for every later solve until the next cold one


#: One problem as the solver sees it: ``(H, g, A, b, C, l, u)`` with bounds clipped to ±1e20.
ProblemData = tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]


def snapshot(qp: DenseQP) -> ProblemData:
    """Copies of ``qp``'s arrays as its last :meth:`DenseQP.solve` passed them to the solver."""
    return (qp.H.copy(), qp.g.copy(), qp.A.copy(), qp.b.copy(), qp.C.copy(), qp._l.copy(), qp._u.copy())


class WarmReplay:
    """Bare ProxSuite solves of recorded problems, in order: the floor a :class:`DenseQP` is measured against.

    ``replay(k)`` passes problem ``k``'s matrices to ``update`` and runs ``solve`` warm-started
    from the previous result, with the same settings as the :class:`DenseQP` that recorded
    them: no bound clipping, result views or diagnostics. The solver is initialised on
    ``problems[0]`` here (not part of any call). Call it with ``k = 0, 1, 2, …`` (each solve
    starts from the one before). Like :meth:`DenseQP.solve`, a failed warm solve is redone
    from a cold ``init``: without that, a warm start from a failed iterate keeps failing and
    the "floor" would be slower than the real solve. One-variable problems without equality
    rows are replayed through :meth:`DenseQP`'s closed form, which is their solve, on the recorded
    arrays themselves (no copy into a :class:`DenseQP`, which the controller's step does not pay
    either) and without :meth:`DenseQP.solve`'s checks (the recorded bounds are already clipped).

    :attr:`x` and :attr:`iterations` read the last solve's result (for tests: the replay must
    meet the controller's solutions, or the floor is another problem's).
    """

    def __init__(
        self,
        problems: list[ProblemData],
        *,
        eps_abs: float,
        max_iter: int,
        reset_proximal: bool = True,
        strict_infeasibility: bool = False,
        warm_max_iter: int | None = None,
    ) -> None:
        if not problems:
            raise ValueError("WarmReplay: no problems to replay")
        self.problems = problems
        H, g, A, b, C, lo, hi = problems[0]
        self._scalar: DenseQP | None = None
        if H.shape[0] == 1 and A.shape[0] == 0:
            self._scalar = DenseQP(1, 0, C.shape[0], eps_abs=eps_abs, max_iter=max_iter)
            return
        qp = self._qp = proxqp.dense.QP(H.shape[0], A.shape[0], C.shape[0])
        _configure(qp, eps_abs, max_iter, strict_infeasibility)
        qp.init(H, g, A, b, C, lo, hi)
        qp.solve()
        qp.settings.initial_guess = _WARM
        self._proximal = _default_proximal(qp) if reset_proximal else {}  # as DenseQP does
        self._max_iter, self._warm_max_iter = int(max_iter), warm_max_iter

    def __call__(self, k: int) -> None:
        """Solve problem ``k`` warm from the previous call's result."""
        H, g, A, b, C, lo, hi = self.problems[k]
        if self._scalar is not None:
            self._scalar._solve_scalar(H, g, C, lo, hi)
            return
        qp = self._qp
        qp.update(H, g, A, b, C, lo, hi, **self._proximal)
        _warm_solve(qp, self._warm_max_iter, self._max_iter)
        if qp.results.info.status != _SOLVED:
            qp.settings.initial_guess = _COLD
            qp.init(H, g, A, b, C, lo, hi)
            qp.solve()
            qp.settings.initial_guess = _WARM

    @property
    def x(self) -> FloatArray:
        """The last solve's primal solution (a view, overwritten by the next solve)."""
        return self._scalar._x_buf if self._scalar is not None else self._qp.results.x

    @property
    def iterations(self) -> int:
        """The last solve's iterations (after a failed warm solve, its cold retry's; 0 in closed form)."""
        return 0 if self._scalar is not None else int(self._qp.results.info.iter)


class WarmReplays:
    """Several :class:`WarmReplay` in order, one call solving each at ``k`` (one QP per level)."""

    def __init__(self, replays: Sequence[WarmReplay]) -> None:
        self.replays = tuple(replays)

    def __call__(self, k: int) -> None:
        """Every replay's problem ``k``, warm from its previous call."""
        for replay in self.replays:
            replay(k)
