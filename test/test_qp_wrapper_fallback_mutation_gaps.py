"""Behaviours of the dense QP wrapper and qpid's solve and fallback paths that a third mutation
review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
the dense QP wrapper (``core/qp/problem.py``: its one-variable closed form and the benchmark's warm
replay) and the QP controllers' level loop (``core/controllers/qpid.py``). Reference values come
from closed forms or from a second solve, never from the code under test. Pure core: no ROS.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_qp_terms import HOME, NO_BARRIERS, _tool_over_posture

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers.qpid import HQPID, _QPController
from torque_ctrl_ros.core.controllers.qpid_config import QPIDConfig
from torque_ctrl_ros.core.qp.constraints import LinearBarrier
from torque_ctrl_ros.core.qp.problem import DenseQP, SolveStatus, WarmReplay, snapshot
from torque_ctrl_ros.core.types import JointState


# ------------------------------------------------------------------------------ DenseQP
@pytest.mark.parametrize("c", [2.0, -2.0])
def test_a_one_variable_row_with_an_infinite_bound_gives_the_closed_form_no_end(c: float) -> None:
    """``min x·sign(c)`` (``h = 0``) over one row ``c·x ≥ −inf``, ``c·x ≤ 1`` with ``|c| = 2``: the
    objective pushes ``x`` to the side the row leaves open, so the problem is unbounded below
    (DUAL_INFEASIBLE, not SOLVED). The closed form reads the bounds as given, ``±inf`` and all; fed
    the bounds clipped for the solver (mutant ``self._l, self._u`` for ``self.l, self.u`` in the
    call of ``_solve_scalar`` in ``DenseQP.solve``) the open side ends at ``1e20/|c| = 5e19``, inside
    the ±1e20 that counts as infinite, and ``x = ∓5e19`` is reported SOLVED. (hqpid's lower-level
    barrier rows have ``u = +inf`` and any coefficient.)"""
    qp = DenseQP(1, 0, 1)
    qp.H[0, 0], qp.g[0] = 0.0, float(np.sign(c))
    qp.C[0, 0], qp.u[0] = c, 1.0
    sol = qp.solve()
    assert sol.status is SolveStatus.DUAL_INFEASIBLE and not sol.ok


def test_the_warm_replay_redoes_a_failed_warm_solve_cold() -> None:
    """A 5-variable QP (``max_iter`` 3) solved on a problem, then on a very different one (data
    1000× larger): the warm attempt on the second fails and :class:`DenseQP` retries it cold. The
    benchmark's floor, :class:`WarmReplay` over the two recorded problems, must do the same and meet
    the controller's solution (the floor of another problem times nothing useful). Without its cold
    retry (mutant ``if False:`` for ``if qp.results.info.status != _SOLVED:`` in
    ``WarmReplay.__call__``) its ``x`` is the failed warm attempt's iterate."""
    rng = np.random.default_rng(5)
    n, met = 5, 0
    for _ in range(10):
        qp = DenseQP(n, 1, n, max_iter=3)
        qp.C[:] = np.eye(n)
        qp.l[:], qp.u[:] = -1e5, 1e5
        recorded = []
        for size in (1.0, 1e3):
            L = rng.normal(size=(n, n))
            qp.H[:] = L.T @ L + 0.5 * np.eye(n)
            qp.g[:] = size * rng.normal(size=n)
            qp.A[0] = rng.normal(size=n)
            qp.b[0] = size * rng.normal()
            sol = qp.solve()
            recorded.append(snapshot(qp))
        if not (sol.ok and sol.retried):
            continue
        replay = WarmReplay(recorded, eps_abs=1e-9, max_iter=3)
        replay(0)
        replay(1)
        np.testing.assert_allclose(replay.x, sol.x, rtol=1e-9, atol=1e-9)
        met += 1
    assert met >= 3  # the case (warm fails, cold succeeds) was met


@pytest.mark.parametrize("reset_proximal", [True, False])
def test_the_warm_replay_restarts_the_proximal_parameters_as_the_recording_qp_did(
    reset_proximal: bool,
) -> None:
    """A 6-variable QP (2 equality rows, 8 box rows) along 30 slowly changing steps, every solve
    warm and first time right: :class:`WarmReplay` over the recorded problems, with the recording
    QP's ``reset_proximal``, takes exactly the iterations :class:`DenseQP` took at every step after the
    first and meets its solutions (the same settings, the same warm starts: the benchmark's floor is
    the same solve, bare). Restarting none of its warm solves from the default proximal parameters
    (mutant ``self._proximal = {}`` in ``WarmReplay.__init__``) makes the floor another solver: it
    first differs at step 7 (5 iterations against 11; the same QP without the reset takes 145 over
    steps 1–29, with it 288); restarting all of them (mutant ``_default_proximal(qp)`` whatever
    ``reset_proximal``) differs the other way round."""
    rng = np.random.default_rng(2)
    n, m = 6, 8
    qp = DenseQP(n, 2, m, reset_proximal=reset_proximal)
    L = rng.normal(size=(n, n))
    qp.H[:] = L.T @ L + np.eye(n)
    qp.A[:] = rng.normal(size=(2, n))
    qp.C[:] = rng.normal(size=(m, n))
    qp.l[:], qp.u[:] = -1.0, 1.0
    recorded, iterations, solutions = [], [], []
    for k in range(30):
        t = 0.1 * k
        qp.b[:] = [np.sin(t), np.cos(t)]
        qp.g[:] = 5.0 * np.sin(t + np.arange(n))
        sol = qp.solve()
        assert sol.ok and sol.warm == (k > 0) and not sol.retried
        recorded.append(snapshot(qp))
        iterations.append(sol.iterations)
        solutions.append(sol.x.copy())
    replay = WarmReplay(recorded, eps_abs=1e-9, max_iter=50, reset_proximal=reset_proximal)
    replayed = []
    for k in range(30):
        replay(k)
        replayed.append(replay.iterations)
        np.testing.assert_allclose(replay.x, solutions[k], atol=1e-8)
    assert replayed[1:] == iterations[1:]


# ------------------------------------------------------------------------ qpid's levels
def test_a_scaled_back_step_catches_a_small_miss_below_a_barrier_row() -> None:
    """A lower level's barrier row is one-sided, ``x₀ + x₁ ≥ −1`` (``u = +inf``); an unfinished
    iterate ``x = [−0.50002, −0.50002, 0]`` misses it by 4e-5, the cost decreasing along ``x``
    (``g = [1, 1, 0]``, nearly flat ``H``): the step is ``l/(C·x) = 1/1.00004`` (closed form) and
    ``s·x`` meets the row. Missing it only by more than a tolerance (mutant ``rows < qp.l − 1e-3``
    in ``_QPController._scaled_back``) keeps the whole iterate, past the barrier."""
    qp = DenseQP(3, 0, 1)
    qp.H[:] = 1e-6 * np.eye(3)
    qp.g[:] = [1.0, 1.0, 0.0]
    qp.C[0] = [1.0, 1.0, 0.0]
    qp.l[0] = -1.0
    x = np.array([-0.50002, -0.50002, 0.0])
    step = _QPController._scaled_back(qp, x)
    assert step == pytest.approx(1.0 / 1.00004, rel=1e-12)
    assert qp.C[0] @ (step * x) >= -1.0 - 1e-12


def test_hqpid_lower_level_keeps_level_0_slack_on_every_row_sharing_it(robot: RobotModel) -> None:
    """hqpid: tool position (level 0) over a posture task (level 1), the shipped barriers off, a soft
    group of two rows sharing one slack (as a joint's two limit rows do) ``q̈₁ ≥ 5`` and
    ``q̈₂ ≥ −1``, and a hard row ``q̈₁ ≤ 0``. Level 0 pays slack ``s = 5`` for the first row, which
    loosens the second to ``q̈₂ ≥ −6``. The posture level pulling joint 2 down (600 rad/s² asked)
    stops there: the lower levels' barrier bounds are ``l_b − E·s``, level 0's slack kept (closed
    form ``q̈₂ = −1 − 5``). Without ``E·s`` (mutant dropping ``lo[:nb] -= self._Es`` in
    ``_fill_lower``) it stops at ``−1``; with its sign flipped (``lo[:nb] += self._Es``) at 0."""
    n = robot.n
    pair_rows = np.zeros((2, n))
    pair_rows[0, 0] = pair_rows[1, 1] = 1.0
    pair = LinearBarrier("pair", pair_rows, np.array([5.0, -1.0]), soft=True)
    pair.slack_of_row = np.zeros(2, dtype=np.intp)  # one slack for both rows
    cap_row = np.zeros((1, n))
    cap_row[0, 0] = -1.0
    cap = LinearBarrier("cap", cap_row, np.zeros(1), soft=False)
    config = QPIDConfig.from_params(robot, _tool_over_posture(1, **NO_BARRIERS))
    c = HQPID(robot, config, extra_barriers=[cap, pair])
    ref = c.hold_reference(JointState(HOME, np.zeros(n)))
    ref["posture"] = HOME - np.array([0.0, 1.5, 0.0, 0.0, 0.0, 0.0, 0.0])
    _, info = c.torque(HOME, np.zeros(n), ref)
    assert (info["fallback"], info["failed_level"], info["scaled_level"]) == (0.0, -1.0, -1.0)
    assert c.slack[0] == pytest.approx(5.0, abs=1e-6)
    assert c.last_solutions[0].x[1] > -1.0  # level 0 left the second row inactive
    assert c.joint_acceleration[0] == pytest.approx(0.0, abs=1e-5)
    assert c.joint_acceleration[1] == pytest.approx(-6.0, abs=1e-4)
