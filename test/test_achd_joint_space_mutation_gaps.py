"""Behaviours of the constrained dynamics, achd_rnea and the joint-space controllers that a mutation
review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
``core/constrained_dynamics.py``, ``core/controllers/cartesian.py`` and
``core/controllers/joint_space.py``. Reference values come from Pinocchio (directly or through
RobotModel's own calls) or from formulas written out here, never from the code under test. Pure
core: no ROS.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from test_qp_terms import HOME, TOOL

from torque_ctrl_ros.core import JointReference, JointState, RobotModel
from torque_ctrl_ros.core.constrained_dynamics import (
    UNIT_TOLERANCE,
    ConstrainedDynamics,
    alpha_from_axes,
    check_alpha,
    selection_rows,
)
from torque_ctrl_ros.core.controllers import ComputedTorque, ComputedTorqueConfig, create_controller
from torque_ctrl_ros.core.controllers.cartesian import (
    AchdRnea,
    AchdRneaConfig,
    PoseReference,
)
from torque_ctrl_ros.core.errors import ConfigError, SolverError, TargetError


def test_check_alpha_takes_a_six_vector_as_one_column() -> None:
    """A flat 6-vector ``α`` is one constraint direction, the (6 × 1) column. Without the reshape
    (mutant: the ``a.ndim == 1`` branch deleted) it is refused as a shape (6,)."""
    direction = np.array([0.0, 0.6, 0.8, 0.0, 0.0, 0.0])
    alpha = check_alpha(direction)
    assert alpha.shape == (6, 1)
    np.testing.assert_array_equal(alpha[:, 0], direction)


def test_check_alpha_refuses_no_columns_as_a_shape_error() -> None:
    """``α`` of shape (6, 0) is a ``TargetError`` naming the shape. With ``0 <= n_c`` (mutant of
    ``1 <= a.shape[1] <= 6``) it reached the rank check and raised an ``IndexError``."""
    with pytest.raises(TargetError, match=r"1 <= n_c <= 6, got \(6, 0\)"):
        check_alpha(np.zeros((6, 0)))


def test_check_alpha_unit_norm_tolerance() -> None:
    """A column is a unit vector within ``UNIT_TOLERANCE`` (1e-6): norm ``1 + 2e-6`` refused,
    ``1 + 5e-7`` taken. A loosened tolerance (mutant ``> 1e-1``) took a 1.05 column, scaling that
    constraint's ``β``; the existing test only tried a norm of 2."""
    assert UNIT_TOLERANCE == 1e-6
    column = np.zeros((6, 1))
    column[2, 0] = 1.0
    check_alpha(column * (1.0 + 0.5 * UNIT_TOLERANCE))
    for norm in (1.0 + 2.0 * UNIT_TOLERANCE, 1.05, 0.95):
        with pytest.raises(TargetError, match="unit vector"):
            check_alpha(column * norm)


def test_selection_rows_is_none_unless_each_column_has_exactly_one_one() -> None:
    """``selection_rows`` promises ``αᵀ·X = X[r]``: a zero column or a column with two ones has no
    such row, so ``None``. Without the one-per-column test (mutant: ``ones.sum(axis=0) == 1``
    dropped) the zero column read as row 0 and the double one as its first row."""
    X = np.arange(6.0 * 7.0).reshape(6, 7)
    zero_column = np.zeros((6, 2))
    zero_column[3, 0] = 1.0
    assert not np.array_equal(zero_column.T @ X, X[[3, 0]])  # what row 0 would have claimed
    assert selection_rows(zero_column) is None
    double = np.zeros((6, 1))
    double[[1, 4], 0] = 1.0
    assert selection_rows(double) is None


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the overflow this refusal is about
def test_a_solve_that_overflows_is_a_solver_error(robot: RobotModel) -> None:
    """``β`` finite but 1e308 overflows ``λ``: the solve raises ``SolverError`` naming the frame
    instead of returning ``inf``/``NaN`` accelerations. Mutant: the finiteness check removed."""
    dyn = ConstrainedDynamics(robot, TOOL)
    with pytest.raises(SolverError, match=r"constrained dynamics at 'end_effector_link': non-finite"):
        dyn.solve(HOME, np.zeros(7), alpha_from_axes(["x", "y", "z"]), np.full(3, 1e308))


def test_gravity_given_earlier_kinematics_is_that_of_their_state(robot: RobotModel) -> None:
    """``gravity(q, kin)`` reads the buffer's ``g`` only when ``kin`` is the latest
    :meth:`kinematics` result; for earlier kinematics it is ``g(q)`` of the ``q`` passed (checked
    against ``pin.computeGeneralizedGravity``). Mutant: the ``kinematics is self._terms_of``
    identity test dropped, which returned the other state's gravity."""
    dyn = ConstrainedDynamics(robot, TOOL)
    other = np.array([0.5, -0.4, 1.0, 1.2, -0.3, 0.7, 0.2])
    kin_home = dyn.kinematics(HOME, np.zeros(7))
    dyn.kinematics(other, np.zeros(7))
    data = robot.model.createData()
    expected = pin.computeGeneralizedGravity(robot.model, data, robot.configuration(HOME))
    assert (
        np.abs(expected - pin.computeGeneralizedGravity(robot.model, data, robot.configuration(other))).max()
        > 1.0
    )
    np.testing.assert_allclose(dyn.gravity(HOME, kin_home), expected, atol=1e-12)


def test_achd_config_refuses_rcond_one(robot: RobotModel) -> None:
    """``AchdRneaConfig.create`` refuses ``rcond = 1`` itself (the interval is open), not only the
    controller built from it. Mutant: ``rc > 1.0`` for ``rc >= 1.0``."""
    with pytest.raises(ConfigError, match=r"^achd_rnea\.rcond: expected a number in \[1e-12, 1\), got 1\.0$"):
        AchdRneaConfig.create(robot.n, rcond=1.0)


def test_achd_frame_moved_by_one_joint_fewer_than_the_axes_is_refused_by_the_joint_count(
    robot: RobotModel,
) -> None:
    """Six axes on spherical_wrist_1_link (moved by 5 joints) are refused by the joint count, the
    message saying so (the existing test tries 4 joints). Mutant ``dofs < axes - 1``: the refusal
    was left to the rank check, whose message speaks of dependent rows, not of the joints."""
    assert robot.dofs_moving("spherical_wrist_1_link") == 5
    with pytest.raises(
        ConfigError, match=r"'spherical_wrist_1_link' is moved by 5 joint\(s\), fewer than the 6"
    ):
        create_controller("achd_rnea", robot, {"frame": "spherical_wrist_1_link"})


def test_computed_torque_reports_the_largest_error_in_magnitude(robot: RobotModel) -> None:
    """``max_abs_error`` is ``max |q_ref − q|``: with errors ``+0.1`` and ``−0.3`` rad it is 0.3.
    Mutant ``float(error.max())`` (the signed maximum) reported 0.1."""
    controller = ComputedTorque(robot)
    q_ref = HOME.copy()
    q_ref[1] += 0.1
    q_ref[3] -= 0.3
    _, info = controller.torque(HOME, np.zeros(7), JointReference(q_ref))
    assert info["max_abs_error"] == pytest.approx(0.3, abs=1e-12)


def test_computed_torque_refuses_a_negative_kd_as_a_bound(robot: RobotModel) -> None:
    """A negative ``kd`` is refused by its own bound, the message naming ``computed_torque.kd`` and
    ``>= 0``. Without ``min_value=0.0`` (mutant) it reached the stability check, which refused it as
    unstable ``kp/kd`` gains instead."""
    with pytest.raises(ConfigError, match=r"^computed_torque\.kd: expected every entry >= 0"):
        ComputedTorqueConfig.create(7, 100.0, -1.0)


@pytest.mark.parametrize("field", ["velocity", "acceleration"])
def test_computed_torque_refuses_a_one_entry_reference_rate(robot: RobotModel, field: str) -> None:
    """A float64 reference velocity or acceleration of shape (1,) is refused by name; the per-step
    check must not wave it through, or numpy broadcasts the one entry to all seven joints and the
    command is silently wrong. Mutant: ``arr.shape == (n,)`` dropped from ``_well_formed``."""
    one = np.array([0.5])
    reference = JointReference(HOME, one) if field == "velocity" else JointReference(HOME, None, one)
    with pytest.raises(TargetError, match=rf"reference {field}: expected 7 numbers, got shape \(1,\)"):
        ComputedTorque(robot).compute(JointState(HOME, np.zeros(7)), reference)


def test_alpha_from_axes_refuses_a_string() -> None:
    """One string is refused as not a list, even ``"xyz"``, whose letters are all axis names:
    taken as a sequence (mutant: the ``isinstance(axes, str)`` test dropped) it became the three
    constrained axes ``x, y, z``."""
    with pytest.raises(TargetError, match=r"^constrained axes: expected a list of names"):
        alpha_from_axes("xyz")


def _gauss_qdd(robot: RobotModel, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Gauss's principle with all six tool axes held at zero acceleration, from RobotModel's own
    ``M``, ``c``, ``J`` and ``J̇·q̇``: ``q̈ = q̈_u + M⁻¹Jᵀ(JM⁻¹Jᵀ)⁻¹(−J̇q̇ − J·q̈_u)``."""
    m_inv = np.linalg.inv(robot.mass_matrix(q))
    jac = robot.frame_jacobian(q, TOOL)
    qdd_free = m_inv @ (tau - robot.nonlinear_effects(q, v))
    rhs = -robot.frame_bias_acceleration(q, v, TOOL) - jac @ qdd_free
    return qdd_free + m_inv @ jac.T @ np.linalg.solve(jac @ m_inv @ jac.T, rhs)


def test_a_solve_on_the_latest_kinematics_after_one_on_earlier_ones_uses_its_own_dynamics(
    robot: RobotModel,
) -> None:
    """``kinematics(q_b)``, then a solve on earlier kinematics at ``q_a`` (which recomputes ``M``
    and ``c`` at ``q_a`` in the shared buffer), then a solve on the ``q_b`` kinematics: that last
    solve must not reuse ``q_a``'s terms. Mutant: ``self._terms_of = None`` dropped from
    ``_terms``, so the ``q_b`` kinematics still looked current and got ``q_a``'s ``M⁻¹`` and ``c``."""
    dyn = ConstrainedDynamics(robot, TOOL)
    alpha = alpha_from_axes(["x", "y", "z", "rx", "ry", "rz"])
    q_a, v_a = HOME, np.linspace(-0.5, 0.5, 7)
    q_b, v_b = np.array([0.5, -0.4, 1.0, 1.2, -0.3, 0.7, 0.2]), np.linspace(0.4, -0.3, 7)
    tau = np.linspace(1.0, -1.0, 7)
    kin_a = dyn.kinematics(q_a, v_a)
    kin_b = dyn.kinematics(q_b, v_b)
    dyn.solve(q_a, v_a, alpha, np.zeros(6), tau, kinematics=kin_a)
    qdd_b = dyn.solve(q_b, v_b, alpha, np.zeros(6), tau, kinematics=kin_b).qdd
    np.testing.assert_allclose(qdd_b, _gauss_qdd(robot, q_b, v_b, tau), atol=1e-8)


def test_a_reference_from_a_quaternion_keeps_its_twist_and_acceleration() -> None:
    """``PoseReference.from_position_quaternion`` carries the twist and the acceleration it is
    given (a moving target's feed-forward). Mutant: the twist replaced by ``None`` there, which
    turned a moving target's ``K_d·(ẋ_ref − ẋ)`` into ``−K_d·ẋ``: the tool lagged it."""
    twist = np.array([0.1, -0.2, 0.3, 0.0, 0.5, -0.4])
    acceleration = np.array([1.0, 0.0, -2.0, 0.3, 0.0, 0.1])
    ref = PoseReference.from_position_quaternion([0.4, 0.0, 0.4], [0.0, 0.0, 0.0, 1.0], twist, acceleration)
    assert ref.twist is not None and ref.acceleration is not None
    np.testing.assert_array_equal(ref.twist, twist)
    np.testing.assert_array_equal(ref.acceleration, acceleration)


def test_computed_torque_refuses_a_bool_reference_position(robot: RobotModel) -> None:
    """A bool position array is refused as not numbers, as a bool velocity is. Mutant: the
    ``q.dtype == np.float64`` test dropped from ``_well_formed``, which waved it through per step
    and commanded every joint to 1 rad."""
    with pytest.raises(TargetError, match="reference position: expected 7 numbers"):
        ComputedTorque(robot).compute(JointState(HOME, np.zeros(7)), JointReference(np.ones(7, dtype=bool)))


def test_gravity_comp_from_params_is_undamped_by_default(robot: RobotModel) -> None:
    """``gravity_comp`` from parameters without ``damping`` commands ``g(q)`` alone, also while
    the arm moves (checked against ``pin.computeGeneralizedGravity``). Mutant: the ``from_params``
    default 0.1 N·m·s/rad for 0.0 (still a stable damping, so no other check refused it)."""
    controller = create_controller("gravity_comp", robot, {})
    v = np.linspace(-1.0, 1.0, 7)
    tau, _ = controller.torque(HOME, v, None)
    gravity = pin.computeGeneralizedGravity(robot.model, robot.model.createData(), robot.configuration(HOME))
    np.testing.assert_allclose(tau, gravity, rtol=0.0, atol=1e-9)


def test_achd_se3_error_is_taken_towards_the_reference_given(robot: RobotModel) -> None:
    """With ``pose_error: se3`` the law's error is ``log6(oMf⁻¹·oM_ref)`` rotated into base axes,
    towards the reference passed (written out here with ``pin.log6``), and follows a new
    reference. Mutant: the pose (``self._reference_se3``) no longer built in ``_checked_reference``, so
    the se3 error was taken towards the identity pose whatever the target."""
    controller = AchdRnea(robot, AchdRneaConfig.create(robot.n, pose_error="se3"))
    now = robot.frame_placement(HOME, TOOL)
    for offset in (
        np.array([0.05, -0.03, 0.04, 0.3, 0.0, 0.2]),
        np.array([-0.02, 0.01, 0.0, 0.0, -0.1, 0.0]),
    ):
        target = now * pin.exp6(offset)
        error = controller.solve(HOME, np.zeros(7), PoseReference.from_se3(target)).error
        nu = pin.log6(now.actInv(target))
        expected = np.concatenate([now.rotation @ nu.linear, now.rotation @ nu.angular])
        np.testing.assert_allclose(error, expected, atol=1e-12)
