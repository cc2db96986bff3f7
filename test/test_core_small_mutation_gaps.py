"""Behaviours of the small core modules that a mutation review found unpinned.

Modules reviewed: :mod:`torque_ctrl_ros.core.delay_estimate`, :mod:`torque_ctrl_ros.core.saturation`,
:mod:`torque_ctrl_ros.core.target_checks`, :mod:`torque_ctrl_ros.core.constrained_dynamics` and
:mod:`torque_ctrl_ros.core.controllers.joint_space`. Each test names the behaviour it pins and the
source change (mutant) it was written to catch. All pure core, no ROS.
"""

from __future__ import annotations

import numpy as np
import pytest

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.constrained_dynamics import ConstrainedDynamics, alpha_from_axes
from torque_ctrl_ros.core.controllers.joint_space import (
    ComputedTorque,
    ComputedTorqueConfig,
    GravityCompensationConfig,
)
from torque_ctrl_ros.core.delay_estimate import DelayEstimator
from torque_ctrl_ros.core.errors import ConfigError, SolverError
from torque_ctrl_ros.core.saturation import TorqueLimiter
from torque_ctrl_ros.core.types import JointReference

TOOL = "end_effector_link"
MS = 1_000_000  # ns
T0 = 1_700_000_000_000 * MS  # a wall-clock stamp (ns)


# ------------------------------------------------------------------ delay_estimate.py
@pytest.mark.parametrize(("states", "read"), [(101, False), (102, True)])
def test_a_delay_is_read_from_one_hundred_periods_and_not_from_ninety_nine(states: int, read: bool) -> None:
    """Independent commands (1 N·m, so no neighbouring delay correlates) from the first state on,
    efforts echoing them exactly 2 periods late: 102 states give delay 2 its 100 periods with both
    known, and it is read on them; 101 give it 99, and nothing is read however well they
    correlate. (Mutant: ``MIN_SAMPLES = 50``: delay 2 read on 99 periods.)"""
    tau = np.random.default_rng(28).normal(0.0, 1.0, (states, 7))
    est = DelayEstimator(7)
    for k in range(states):
        est.add(T0 + k * MS, tau[k - 2] if k >= 2 else None, tau[k])
    found = est.estimate()
    if read:
        assert found is not None and found.periods == 2 and found.samples == 100
        assert found.correlation == pytest.approx(1.0, abs=1e-12)
    else:
        assert found is None


# ------------------------------------------------------------------ saturation.py
def test_a_command_three_times_rounding_past_its_limit_is_reported_saturated() -> None:
    """A command 3e-5 N·m past its 10 N·m limit is more than rounding (1e-5 N·m): clipped to the
    limit and named saturated, while one 5e-6 past is clipped unreported. (Mutant:
    ``ROUNDING = 1e-4``: the 3e-5 excess passes as rounding, unreported.)"""
    limiter = TorqueLimiter(("a", "b"), np.array([10.0, 10.0]))
    out = limiter.apply(np.array([10.0 + 3e-5, -(10.0 + 5e-6)]))
    np.testing.assert_array_equal(out.tau, [10.0, -10.0])
    assert out.saturated_joints == ("a",)
    assert out.saturated.tolist() == [True, False]


# ------------------------------------------------------------------ constrained_dynamics.py
def test_constrained_axes_are_named_in_any_case_and_with_surrounding_spaces() -> None:
    """``alpha_from_axes`` reads a name as written in a YAML list, spaces and capitals and all:
    ``[" Z", "RX "]`` gives the columns of ``z`` and ``rx``. (Mutant: the names taken as given,
    without ``strip().lower()``: a ``TargetError`` for unknown names.)"""
    alpha = alpha_from_axes([" Z", "RX "])
    expected = np.zeros((6, 2))
    expected[2, 0] = expected[3, 1] = 1.0
    np.testing.assert_array_equal(alpha, expected)


def test_a_rounding_negative_smallest_delassus_eigenvalue_reads_as_an_infinite_condition(
    robot: RobotModel,
) -> None:
    """At the stretched zero pose with all six axes constrained, ``D`` is singular and its smallest
    eigenvalue comes out of LAPACK as rounding (−6.6e-14 against ``d_max`` ~1570 in the pinned
    environment): the condition ``d_max / d_min`` is ``inf`` for ``d_min <= 0`` (never a negative
    number), and in any case huge; the step is regularised. (Mutant: ``condition = d_max / d_min
    if d_min != 0.0``: a condition of about −2e16.)"""
    dyn = ConstrainedDynamics(robot, TOOL)
    result = dyn.solve(
        np.zeros(7), np.zeros(7), alpha_from_axes(["x", "y", "z", "rx", "ry", "rz"]), np.zeros(6)
    )
    assert result.regularised
    assert result.delassus_condition > 1e12


def test_a_multiplier_whose_square_overflows_is_a_solver_error(robot: RobotModel) -> None:
    """At ``base_link`` no joint moves the frame (``D = 0``, damped by ``rcond``): a ``β`` of
    1e160 m/s² gives ``λ = β/rcond = 1e166`` N while ``q̈`` stays the free motion, finite. A
    multiplier that large is no usable result: :class:`SolverError`, not a returned result.
    (Mutant: the finiteness check on ``q̈·q̈`` only, without ``λ·λ``: the result returned.)"""
    dyn = ConstrainedDynamics(robot, "base_link", rcond=1e-6)
    # The squares overflowing is how the check sees it (numpy warns of that overflow).
    with pytest.raises(SolverError, match="non-finite result"), np.errstate(over="ignore"):
        dyn.solve(np.zeros(7), np.zeros(7), alpha_from_axes(["z"]), np.array([1e160]))


# ------------------------------------------------------------------ controllers/joint_space.py
def test_a_negative_gravity_comp_damping_is_refused() -> None:
    """A negative ``gravity_comp.damping`` entry pushes the arm along its velocity (energy in, not
    out): the config itself refuses it with a :class:`ConfigError` naming the field, scalar or per
    joint, before a controller's damping check sees it. (Mutant: no ``min_value=0.0`` in
    ``GravityCompensationConfig.create``: the config accepted, only the controller refusing it.)"""
    with pytest.raises(ConfigError, match=r"gravity_comp\.damping"):
        GravityCompensationConfig.create(7, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.01])
    with pytest.raises(ConfigError, match=r"gravity_comp\.damping"):
        GravityCompensationConfig.create(7, -0.05)


def test_computed_torque_from_params_keeps_the_kd_given(robot: RobotModel) -> None:
    """``computed_torque`` parameters ``kp`` 100 and ``kd`` 30 (over-damped, ratio 1.5) give a
    controller with exactly that ``kd`` on every joint, not the critical ``2·√kp`` = 20. (Mutant:
    ``from_params`` passes ``None`` for ``kd``: the critical default.)"""
    ctrl = ComputedTorque.from_params(robot, {"kp": 100.0, "kd": 30.0})
    np.testing.assert_array_equal(ctrl.config.kd, np.full(7, 30.0))
    np.testing.assert_array_equal(ctrl.config.kp, np.full(7, 100.0))


def test_computed_torque_keeps_the_kd_of_a_prebuilt_config(robot: RobotModel) -> None:
    """A config built with its own ``kd`` (per joint, 25 to 31) keeps it when the controller
    re-validates it, and the torque uses it: at ``q = q_ref`` with ``q̇`` 0.1 rad/s on joint 1 the
    command is ``RNEA(q, q̇, −kd·q̇)``. (Mutant: ``ComputedTorque.__init__`` re-validates with
    ``kd=None``: every joint critically damped, kd 20.)"""
    kd = np.linspace(25.0, 31.0, 7)
    ctrl = ComputedTorque(robot, ComputedTorqueConfig.create(7, 100.0, kd))
    np.testing.assert_array_equal(ctrl.config.kd, kd)
    q = np.array([0.0, 0.3, 0.0, 1.2, 0.0, 0.6, 0.0])
    v = np.zeros(7)
    v[0] = 0.1
    tau, _ = ctrl.torque(q, v, JointReference(q.copy()))
    np.testing.assert_allclose(tau, robot.rnea(q, v, -kd * v), rtol=0.0, atol=1e-9)


def test_computed_torque_checks_a_prebuilt_config_at_the_robots_command_delay(robot: RobotModel) -> None:
    """A config built for a command one period late (kp 1e5 at critical damping passes there) is
    checked again at the robot's own delay when the controller is built: with ``command_delay``
    5 ms (4 periods) those gains are unstable and refused, naming the delay. (Mutant:
    ``ComputedTorque.__init__`` re-checks with ``delay=1`` instead of ``robot.delay_periods``.)"""
    config = ComputedTorqueConfig.create(7, 1e5, delay=1)
    robot.set_command_delay(0.005)
    assert robot.delay_periods == 4
    with pytest.raises(ConfigError, match=r"5 ms late"):
        ComputedTorque(robot, config)
