"""Behaviours of the Gauss-principle solve and of achd_rnea that a second mutation review found
unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
``core/constrained_dynamics.py`` and ``core/controllers/cartesian.py``. Reference values come from
RobotModel's own Pinocchio calls (``M``, ``c``, ``J``, ``J̇·q̇``, forward kinematics) and from the
Gauss least-squares problem solved here directly as a KKT system in numpy, never from the code
under test. Pure core: no ROS.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from test_qp_terms import HOME, TOOL

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.constrained_dynamics import ConstrainedDynamics, alpha_from_axes, check_alpha
from torque_ctrl_ros.core.controllers.cartesian import AchdRnea, AchdRneaConfig, PoseReference
from torque_ctrl_ros.core.errors import ConfigError, TargetError

#: A moving state away from singularities (rad, rad/s).
Q_MOVING = np.array([0.4, 0.5, 2.9, -1.9, 0.3, 0.8, 1.2])
V_MOVING = np.array([0.6, -0.5, 0.8, 0.7, -0.9, 0.6, 1.0])


def _gauss_kkt(
    robot: RobotModel,
    q: np.ndarray,
    v: np.ndarray,
    alpha: np.ndarray,
    beta: np.ndarray,
    tau: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(q̈, λ)`` of ``min ½‖q̈ − q̈_free‖²_M`` s.t. ``αᵀ(J·q̈ + J̇·q̇) = β``, from the KKT system
    ``[M −Aᵀ; A 0]·[q̈; λ] = [τ − c; β − αᵀJ̇q̇]`` with ``A = αᵀJ`` (RobotModel's ``M``, ``c``, ``J``
    and ``J̇·q̇`` at the tool)."""
    n, n_c = robot.n, alpha.shape[1]
    a_mat = alpha.T @ robot.frame_jacobian(q, TOOL)
    kkt = np.zeros((n + n_c, n + n_c))
    kkt[:n, :n] = robot.mass_matrix(q)
    kkt[:n, n:] = -a_mat.T
    kkt[n:, :n] = a_mat
    rhs = np.concatenate(
        [tau - robot.nonlinear_effects(q, v), beta - alpha.T @ robot.frame_bias_acceleration(q, v, TOOL)]
    )
    solution = np.linalg.solve(kkt, rhs)
    return solution[:n], solution[n:]


def test_a_regularised_solve_damps_the_delassus_matrix_by_the_damping_it_reports(robot: RobotModel) -> None:
    """Near the stretched pose (``d_min ≈ 0.37·ε``) the solve is ``λ = (D + μI)⁻¹(b − A·q̈_free)``,
    ``q̈ = q̈_free + M⁻¹Aᵀλ`` with ``μ = ε·(1 − (d_min/ε)²)``, ``ε = rcond·d_max``: all written out
    here from RobotModel's ``M``, ``c``, ``J``, ``J̇q̇``; the relaxed constraint's residual is the
    norm ``‖αᵀ(J·q̈ + J̇·q̇) − β‖``. The existing test checks the reported ``μ`` only. Mutants:
    ``damped = eigval + 2.0 * mu`` (the solve damped by another ``μ`` than reported) and the
    residual reported as ``max |r|``."""
    q = np.array([0.0, 0.0, 0.0, 0.03, 0.0, 0.03, 0.0])
    v = np.array([0.1, -0.2, 0.1, 0.3, -0.1, 0.2, 0.1])
    alpha = np.eye(6)
    beta = np.array([0.5, -0.3, 1.0, 0.2, -0.4, 0.1])
    tau = robot.gravity(q) + 0.5
    result = ConstrainedDynamics(robot, TOOL, rcond=1e-6).solve(q, v, alpha, beta, tau)

    m_inv = np.linalg.inv(robot.mass_matrix(q))
    jac = robot.frame_jacobian(q, TOOL)
    qdd_free = m_inv @ (tau - robot.nonlinear_effects(q, v))
    delassus = jac @ m_inv @ jac.T
    eigenvalues = np.linalg.eigvalsh(delassus)
    eps = 1e-6 * eigenvalues[-1]
    assert 0.2 < eigenvalues[0] / eps < 0.6  # regularised, well inside the damped band
    mu = eps * (1.0 - (eigenvalues[0] / eps) ** 2)
    rhs = beta - robot.frame_bias_acceleration(q, v, TOOL) - jac @ qdd_free
    lam = np.linalg.solve(delassus + mu * np.eye(6), rhs)

    assert result.regularised
    assert result.damping == pytest.approx(mu, rel=1e-8)
    np.testing.assert_allclose(result.lam, lam, rtol=1e-8)
    qdd = qdd_free + m_inv @ jac.T @ lam
    np.testing.assert_allclose(result.qdd, qdd, rtol=0.0, atol=1e-6)
    residual = jac @ qdd + robot.frame_bias_acceleration(q, v, TOOL) - beta
    assert np.linalg.norm(residual) - np.abs(residual).max() > 5e-4  # the norm, not the largest entry
    assert result.constraint_residual == pytest.approx(np.linalg.norm(residual), abs=1e-8)


def test_the_command_realises_beta_on_axes_that_are_not_the_first_rows(robot: RobotModel) -> None:
    """With the constrained axes ``y, rx, rz`` (rows 1, 3, 5, not the first three) at a moving state
    the command's acceleration ``q̈ = M⁻¹(τ − c)`` and ``λ`` are the KKT solution for those rows, so
    the tool gets ``αᵀ(J·q̈ + J̇·q̇) = β`` exactly, ``J̇·q̇`` of rows 1, 3, 5 included. The table tests'
    five axes did not notice ``J̇·q̇`` of the wrong rows. Mutant: ``drift_c = kin.drift[: len(beta)]``
    on the axis-selection path (rows 0, 1, 2 of ``J̇·q̇``)."""
    axes = ["y", "rx", "rz"]
    controller = AchdRnea(robot, AchdRneaConfig.create(robot.n, constrained_axes=axes))
    now = robot.frame_placement(Q_MOVING, TOOL)
    reference = PoseReference.from_se3(now * pin.exp6(np.array([0.02, -0.01, 0.03, 0.1, -0.05, 0.08])))
    sol = controller.solve(Q_MOVING, V_MOVING, reference)

    alpha = alpha_from_axes(axes)
    drift = robot.frame_bias_acceleration(Q_MOVING, V_MOVING, TOOL)
    assert np.abs(drift[[1, 3, 5]] - drift[:3]).max() > 0.1  # the rows differ
    qdd = np.linalg.solve(robot.mass_matrix(Q_MOVING), sol.tau - robot.nonlinear_effects(Q_MOVING, V_MOVING))
    realised = alpha.T @ (robot.frame_jacobian(Q_MOVING, TOOL) @ qdd + drift)
    np.testing.assert_allclose(realised, sol.beta, rtol=0.0, atol=1e-8)
    expected_qdd, expected_lam = _gauss_kkt(
        robot, Q_MOVING, V_MOVING, alpha, sol.beta, sol.feedforward_torque
    )
    np.testing.assert_allclose(qdd, expected_qdd, rtol=0.0, atol=1e-8)
    np.testing.assert_allclose(sol.dynamics.lam, expected_lam, rtol=1e-8, atol=1e-8)


def test_the_pd_law_applies_each_axis_gain_to_its_own_row(robot: RobotModel) -> None:
    """With a different ``kp`` and ``kd`` on every axis, ``a_des = kp∘e + kd∘(ẋ_ref − ẋ) + a_ref``
    row by row: ``e = [p_ref − p; log3(R_ref·Rᵀ)]`` from RobotModel's forward kinematics and
    ``ẋ = J·q̇`` from its Jacobian. Every existing test used the same gain on all six axes.
    Mutants: ``cfg.kd[::-1] * v_err`` and ``cfg.kp[::-1] * error`` (gains on the wrong rows), and
    ``PoseReference.from_se3`` dropping the acceleration it is given."""
    kp = np.array([50.0, 80.0, 120.0, 30.0, 60.0, 90.0])
    kd = np.array([12.0, 15.0, 20.0, 9.0, 13.0, 18.0])
    controller = AchdRnea(robot, AchdRneaConfig.create(robot.n, kp=kp, kd=kd))
    now = robot.frame_placement(Q_MOVING, TOOL)
    target = now * pin.exp6(np.array([0.03, -0.02, 0.01, 0.05, 0.1, -0.07]))
    twist = np.array([0.05, 0.02, -0.03, 0.1, -0.2, 0.15])
    acceleration = np.array([0.3, -0.1, 0.2, 0.05, 0.0, -0.1])
    sol = controller.solve(Q_MOVING, V_MOVING, PoseReference.from_se3(target, twist, acceleration))

    error = np.concatenate([target.translation - now.translation, pin.log3(target.rotation @ now.rotation.T)])
    velocity = robot.frame_jacobian(Q_MOVING, TOOL) @ V_MOVING
    expected = kp * error + kd * (twist - velocity) + acceleration
    np.testing.assert_allclose(sol.desired_acceleration, expected, rtol=0.0, atol=1e-10)
    np.testing.assert_allclose(sol.beta, expected, rtol=0.0, atol=1e-10)


def test_kinematics_keep_the_placement_of_their_own_state(robot: RobotModel) -> None:
    """A :class:`FrameKinematics` is the frame's kinematics at one state: its ``placement`` stays
    that of its ``q`` after a later :meth:`kinematics` call on the same solver (checked against
    RobotModel's forward kinematics). Mutant: ``data.oMf[fid]`` without ``.copy()``, a view into the
    solver's buffer, which the next call moved to the other state's pose."""
    dyn = ConstrainedDynamics(robot, TOOL)
    kin_home = dyn.kinematics(HOME, np.zeros(7))
    dyn.kinematics(Q_MOVING, V_MOVING)
    expected = robot.frame_placement(HOME, TOOL)
    assert np.linalg.norm(expected.translation - robot.frame_placement(Q_MOVING, TOOL).translation) > 0.1
    np.testing.assert_allclose(kin_home.placement.translation, expected.translation, atol=1e-12)
    np.testing.assert_allclose(kin_home.placement.rotation, expected.rotation, atol=1e-12)


def test_a_null_delassus_matrix_is_damped_by_rcond_and_leaves_the_free_motion(robot: RobotModel) -> None:
    """At ``base_link`` no joint moves the frame: ``J = 0``, ``D = 0`` and ``d_max = 0``. The solve
    then damps by ``μ = ε = rcond`` (module comment: "a null Delassus matrix still gets mu = eps
    > 0"): ``λ = β/rcond``, ``q̈ = q̈_free = M⁻¹(τ − c)`` (RobotModel's ``M`` and ``c``), the
    condition ``inf``. Mutants: ``eps = ... else 0.0`` (``β/0``: a ``SolverError``) and
    ``condition = d_max / d_min if d_min >= 0.0`` (a ``ZeroDivisionError``)."""
    dyn = ConstrainedDynamics(robot, "base_link", rcond=1e-6)
    tau = np.linspace(1.0, -1.0, 7)
    beta = np.array([0.2, -0.1])
    result = dyn.solve(Q_MOVING, V_MOVING, alpha_from_axes(["x", "rz"]), beta, tau)
    qdd_free = np.linalg.solve(robot.mass_matrix(Q_MOVING), tau - robot.nonlinear_effects(Q_MOVING, V_MOVING))
    assert result.regularised
    assert result.damping == 1e-6
    assert result.delassus_condition == np.inf
    np.testing.assert_allclose(result.lam, beta / 1e-6, rtol=1e-12)
    np.testing.assert_allclose(result.qdd, qdd_free, rtol=0.0, atol=1e-9)
    np.testing.assert_array_equal(result.constraint_torque, np.zeros(7))


def test_the_pd_gains_checked_are_those_of_the_constrained_axes(robot: RobotModel) -> None:
    """``kp`` 2e5 (unstable at 1 kHz with the default ``kd = 2√kp``) on the constrained ``rz`` of
    ``x, rz`` is refused naming ``rz``; on the free ``y`` it is taken (that gain is never used).
    Mutant: ``used = list(range(len(axes)))`` in ``_check_gains`` (the gains of the first
    ``n_c`` axes, ``x`` and ``y``, checked instead)."""
    stiff = 2e5
    on_rz = np.array([100.0, 100.0, 100.0, 100.0, 100.0, stiff])
    with pytest.raises(
        ConfigError, match=r"^achd_rnea\.kp/kd: kp 200000 1/s², kd 894\.427 1/s on rz are unstable"
    ):
        AchdRneaConfig.create(robot.n, constrained_axes=["x", "rz"], kp=on_rz)
    on_y = np.array([100.0, stiff, 100.0, 100.0, 100.0, 100.0])
    config = AchdRneaConfig.create(robot.n, constrained_axes=["x", "rz"], kp=on_y)
    assert config.kp[1] == stiff


def test_alpha_with_seven_columns_is_refused_as_a_shape() -> None:
    """Seven unit directions in a 6-D space are refused by shape, naming ``1 <= n_c <= 6``, even when
    six of them are independent (its smallest of six singular values is far from 0, so the rank
    check alone takes it, and every solve is regularised as ``D`` is singular). Mutant:
    ``1 <= a.shape[1] <= 7``."""
    alpha = np.hstack([np.eye(6), np.full((6, 1), 1.0 / np.sqrt(6.0))])
    assert np.linalg.svd(alpha, compute_uv=False)[-1] > 0.5
    with pytest.raises(TargetError, match=r"1 <= n_c <= 6, got \(6, 7\)"):
        check_alpha(alpha)


def test_a_negative_kd_on_a_free_axis_is_refused(robot: RobotModel) -> None:
    """``kd`` is ``>= 0`` on every axis: ``−1`` on ``z``, left free, is refused naming
    ``achd_rnea.kd``. The stability check looks at the constrained axes only, so without the bound
    (mutant: ``min_value=0.0`` dropped) the negative damping was taken."""
    kd = np.array([20.0, 20.0, -1.0, 20.0, 20.0, 20.0])
    with pytest.raises(ConfigError, match=r"^achd_rnea\.kd: expected every entry >= 0"):
        AchdRneaConfig.create(robot.n, constrained_axes=["x", "y", "rx", "ry", "rz"], kd=kd)


def test_the_diagnostics_report_the_error_on_the_constrained_axes_of_each_kind(robot: RobotModel) -> None:
    """With ``x`` and ``rz`` constrained and the target 3 cm off in ``x`` and 5 cm and 4 cm off in
    the free ``y`` and ``z``, turned 0.2 rad about the free ``rx`` and 0.1 rad about ``rz``:
    ``position_error`` is 0.03 (``x`` only) and ``orientation_error`` 0.1 (``rz`` only). The existing
    test constrains ``x, y`` at a target off in ``z`` alone, where no linear row gives 0 too.
    Mutant: ``_linear_mask = mask[3:]`` (the angular axes' mask picking the linear rows: ``z``)."""
    controller = AchdRnea(robot, AchdRneaConfig.create(robot.n, constrained_axes=["x", "rz"]))
    now = robot.frame_placement(HOME, TOOL)
    target = PoseReference(
        now.translation + np.array([0.03, 0.05, 0.04]), pin.exp3(np.array([0.2, 0.0, 0.1])) @ now.rotation
    )
    _, info = controller.torque(HOME, np.zeros(7), target)
    assert info["position_error"] == pytest.approx(0.03, abs=1e-12)
    assert info["orientation_error"] == pytest.approx(0.1, abs=1e-12)


def test_a_zero_kp_on_a_constrained_axis_is_refused(robot: RobotModel) -> None:
    """``kp`` is ``> 0`` on every axis: 0 on the constrained ``z`` is refused naming
    ``achd_rnea.kp``. A zero stiffness with the default ``kd = 2√kp = 0`` passes the stability check
    (it holds no position: the tool drifts along ``z`` unopposed). Mutant: ``strictly_positive=True``
    replaced by ``min_value=0.0``."""
    kp = np.array([100.0, 100.0, 0.0, 100.0, 100.0, 100.0])
    with pytest.raises(ConfigError, match=r"^achd_rnea\.kp: expected every entry > 0"):
        AchdRneaConfig.create(robot.n, kp=kp)


def test_a_solve_without_a_feedforward_torque_takes_it_as_zero(robot: RobotModel) -> None:
    """:meth:`ConstrainedDynamics.solve` without ``tau_ff`` is the Gauss solve with ``τ_ff = 0``
    (its documented default), checked against the KKT system in numpy. Mutant: the default
    ``np.zeros(n)`` replaced by ``g(q)``."""
    alpha = alpha_from_axes(["x", "y", "z"])
    beta = np.array([0.4, -0.2, 0.3])
    result = ConstrainedDynamics(robot, TOOL).solve(Q_MOVING, V_MOVING, alpha, beta)
    expected_qdd, expected_lam = _gauss_kkt(robot, Q_MOVING, V_MOVING, alpha, beta, np.zeros(7))
    np.testing.assert_allclose(result.qdd, expected_qdd, rtol=0.0, atol=1e-8)
    np.testing.assert_allclose(result.lam, expected_lam, rtol=1e-8, atol=1e-8)


def test_the_diagnostics_report_the_regularised_solve(robot: RobotModel) -> None:
    """With ``rcond`` 0.01 at a moving state whose Delassus matrix has ``d_max/d_min ≈ 6155`` the
    step is regularised, and ``torque()`` reports it: ``regularised`` 1, ``delassus_condition``
    ``d_max/d_min`` (numpy's eigenvalues of ``J·M⁻¹·Jᵀ``) and ``constraint_residual``
    ``‖J·q̈ + J̇·q̇ − β‖`` with the command's ``q̈ = M⁻¹(τ − c)``. The existing tests only saw
    ``regularised`` 0. Mutants: each of the three entries replaced by a constant."""
    controller = AchdRnea(robot, AchdRneaConfig.create(robot.n, rcond=0.01))
    now = robot.frame_placement(Q_MOVING, TOOL)
    reference = PoseReference.from_se3(now * pin.exp6(np.array([0.02, -0.01, 0.03, 0.1, -0.05, 0.08])))
    sol = controller.solve(Q_MOVING, V_MOVING, reference)
    tau, info = controller.torque(Q_MOVING, V_MOVING, reference)
    np.testing.assert_array_equal(tau, sol.tau)

    m_inv = np.linalg.inv(robot.mass_matrix(Q_MOVING))
    jac = robot.frame_jacobian(Q_MOVING, TOOL)
    eigenvalues = np.linalg.eigvalsh(jac @ m_inv @ jac.T)
    assert eigenvalues[0] < 0.01 * eigenvalues[-1]
    qdd = m_inv @ (sol.tau - robot.nonlinear_effects(Q_MOVING, V_MOVING))
    residual = jac @ qdd + robot.frame_bias_acceleration(Q_MOVING, V_MOVING, TOOL) - sol.beta
    assert info["regularised"] == 1.0
    assert info["delassus_condition"] == pytest.approx(eigenvalues[-1] / eigenvalues[0], rel=1e-6)
    assert info["constraint_residual"] == pytest.approx(np.linalg.norm(residual), rel=1e-6)
    assert info["constraint_residual"] > 1.0
