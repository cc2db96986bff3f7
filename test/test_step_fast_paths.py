"""The per-step fast paths (KinematicsState, configuration, difference, finiteness checks,
saturation) give the same numbers as the plain Pinocchio / numpy formulation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pinocchio as pin
import pytest

from torque_ctrl_ros.core import JointState, RobotModel, SolverError, StateError
from torque_ctrl_ros.core.controllers.base import Controller
from torque_ctrl_ros.core.qp.tasks import FramePoseTask, JointPostureTask, KinematicsState
from torque_ctrl_ros.core.saturation import TorqueLimiter
from torque_ctrl_ros.core.validation import FloatArray, all_finite

TOOL = "end_effector_link"


def _states(robot: RobotModel, count: int = 20, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-4.0, 4.0, robot.n), rng.uniform(-2.0, 2.0, robot.n)) for _ in range(count)]


def _configuration_reference(robot: RobotModel, q: np.ndarray) -> np.ndarray:
    """``(cos q, sin q)`` on continuous joints, ``q`` on bounded ones, written joint by joint."""
    out = pin.neutral(robot.model)
    for i, jid in enumerate(range(1, robot.model.njoints)):
        k = robot.model.joints[jid].idx_q
        if robot.continuous[i]:
            out[k], out[k + 1] = np.cos(q[i]), np.sin(q[i])
        else:
            out[k] = q[i]
    return out


def test_kinematics_state_matches_separate_pinocchio_calls(robot: RobotModel) -> None:
    kin = KinematicsState(robot)
    model, data = robot.model, robot.data
    model_data = model.createData()
    for q, v in _states(robot):
        kin.update(q, v)
        q_pin = robot.configuration(q).copy()
        M = pin.crba(model, model_data, q_pin)
        M_full = np.triu(M) + np.triu(M, 1).T
        # The Python computeAllTerms symmetrises M; the state relies on it.
        np.testing.assert_array_equal(kin.M, kin.M.T)
        np.testing.assert_allclose(kin.M, M_full, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(kin.nle, pin.nonLinearEffects(model, model_data, q_pin, v), atol=1e-10)
        np.testing.assert_array_equal(kin.q, q)
        np.testing.assert_array_equal(kin.v, v)
        np.testing.assert_array_equal(kin.q_pin, q_pin)
        fid = robot.frame_id(TOOL)
        pin.framesForwardKinematics(model, model_data, q_pin)
        np.testing.assert_allclose(data.oMf[fid].homogeneous, model_data.oMf[fid].homogeneous, atol=1e-12)


def test_frame_pose_task_matches_the_definition(robot: RobotModel) -> None:
    kin = KinematicsState(robot)
    task = FramePoseTask("tool", robot, TOOL, kp=100.0)
    posture = JointPostureTask("posture", robot, kp=10.0)
    fid = robot.frame_id(TOOL)
    states = _states(robot, seed=1)
    kin.update(*states[0])
    target = task.hold_target(kin)
    task.set_target(target)
    q_ref = states[0][0] + 7.0  # crosses the ±π seam on continuous joints
    posture.set_target(q_ref)
    for q, v in states[1:]:
        kin.update(q, v)
        task.update(kin)
        posture.update(kin)
        J = robot.frame_jacobian(q, fid)
        drift = robot.frame_bias_acceleration(q, v, fid)
        current = robot.frame_placement(q, fid)
        error = np.concatenate(
            [target.translation - current.translation, pin.log3(target.rotation @ current.rotation.T)]
        )
        np.testing.assert_allclose(task.J, J, atol=1e-12)
        np.testing.assert_allclose(task.drift, drift, atol=1e-10)
        np.testing.assert_allclose(task.error, error, atol=1e-12)
        np.testing.assert_allclose(task.desired, task.kp * error - task.kd * (J @ v), atol=1e-9)
        np.testing.assert_array_equal(posture.error, robot.difference(q_ref, q))


def test_configuration_views_and_index_fallback_agree() -> None:
    """Continuous, bounded, continuous, continuous: unevenly spaced (cos, sin) slots."""
    model = pin.Model()
    parent = 0
    for k, joint in enumerate(
        [pin.JointModelRUBZ(), pin.JointModelRZ(), pin.JointModelRUBY(), pin.JointModelRUBX()]
    ):
        parent = model.addJoint(parent, joint, pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.1])), f"j{k}")
        if isinstance(joint, pin.JointModelRZ):
            model.lowerPositionLimit[model.joints[parent].idx_q] = -2.0
            model.upperPositionLimit[model.joints[parent].idx_q] = 2.0
        model.appendBodyToJoint(parent, pin.Inertia.Random(), pin.SE3.Identity())
    irregular = RobotModel(model)
    assert irregular.continuous.tolist() == [True, False, True, True]
    assert irregular._q_pin_views is None  # the index-array path
    for q, _ in _states(irregular):
        np.testing.assert_array_equal(irregular.configuration(q), _configuration_reference(irregular, q))


def test_configuration_fast_path_is_exact(robot: RobotModel) -> None:
    assert robot._q_pin_views is not None  # the Gen3 alternates continuous / bounded joints
    for q, _ in _states(robot, 200):
        np.testing.assert_array_equal(robot.configuration(q), _configuration_reference(robot, q))


def test_difference_into_out_and_broadcast(robot: RobotModel) -> None:
    rng = np.random.default_rng(2)
    qs = rng.uniform(-10.0, 10.0, (50, robot.n))
    q_to = rng.uniform(-10.0, 10.0, robot.n)
    batch = robot.difference(np.broadcast_to(q_to, qs.shape), qs)
    out = np.empty(robot.n)
    for q, d in zip(qs, batch, strict=True):
        assert robot.difference(q_to, q, out=out) is out
        np.testing.assert_array_equal(out, d)
        ref = q_to - q
        ref[robot.continuous] -= 2 * np.pi * np.round(ref[robot.continuous] / (2 * np.pi))
        np.testing.assert_allclose(d, ref, atol=1e-12)
    # Half turns round to even, as np.round does: π/2π = 0.5 → 0 keeps π, 3π → 1.5 → 2 gives −π.
    d = robot.difference(np.array([np.pi, 0, 3 * np.pi, 0, 0, 0, 0]), np.zeros(robot.n))
    assert d[0] == np.pi and d[2] == -np.pi


# all_finite sums Python floats, which never warn (numpy's x·x warned of an overflow).
_OVERFLOW_OK = pytest.mark.filterwarnings("error::RuntimeWarning")


@_OVERFLOW_OK
@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (np.array([0.0, -1.0, 3.5]), True),
        (np.array([1e200, -1e300]), True),  # x·x overflows: settled elementwise
        (np.array([0.0, np.nan]), False),
        (np.array([np.inf, 1.0]), False),
        (np.array([-np.inf, np.inf]), False),
        (np.array([[1.0, 2.0], [3.0, 4.0]]), True),
        (np.array([[1.0, np.nan], [3.0, 4.0]]), False),
        (np.zeros(0), True),
    ],
)
def test_all_finite(x: np.ndarray, expected: bool) -> None:
    assert all_finite(x) is expected


@_OVERFLOW_OK
def test_check_state_fast_path_and_huge_values(robot: RobotModel) -> None:
    q, v = np.zeros(robot.n), np.ones(robot.n)
    q_out, v_out = robot.check_state(q, v)
    assert q_out is q and v_out is v
    huge = np.full(robot.n, 1e200)
    np.testing.assert_array_equal(robot.check_state(huge, v)[0], huge)
    bad = v.copy()
    bad[3] = np.nan
    with pytest.raises(StateError, match="finite"):
        robot.check_state(q, bad)


class _Fixed(Controller[None]):
    """Returns a preset torque, to drive Controller.compute."""

    name = "fixed"

    def __init__(self, robot: RobotModel, tau: object) -> None:
        super().__init__(robot)
        self.tau = tau

    @classmethod
    def from_params(cls, robot: RobotModel, params: Mapping[str, Any]) -> _Fixed:
        raise NotImplementedError

    def hold_reference(self, state: JointState) -> None:
        return None

    def torque(self, q: FloatArray, v: FloatArray, reference: None) -> tuple[FloatArray, dict[str, float]]:
        # The preset as given, a list here: compute takes a controller's torque through np.asarray.
        return self.tau, {"x": 1.0}  # type: ignore[return-value]


@_OVERFLOW_OK
def test_compute_refuses_non_finite_and_saturates(robot: RobotModel) -> None:
    state = JointState(np.zeros(robot.n), np.zeros(robot.n))
    tau = [100.0, -100.0, 1.0, 0.0, 9.0, -9.5, 1e300]
    out = _Fixed(robot, tau).compute(state, None)
    np.testing.assert_array_equal(out.tau, [39.0, -39.0, 1.0, 0.0, 9.0, -9.0, 9.0])
    np.testing.assert_array_equal(out.tau_unsaturated, tau)
    assert out.saturated.tolist() == [True, True, False, False, False, True, True]
    assert out.saturated_joints == ("joint_1", "joint_2", "joint_6", "joint_7")
    assert out.info == {"x": 1.0}
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(SolverError, match="non-finite torque"):
            _Fixed(robot, [0.0] * 6 + [bad]).compute(state, None)


def test_limiter_scales_toward_the_bias_until_every_joint_fits() -> None:
    """τ' = c + s·(τ − c) with the largest s ≤ 1 that fits: here s = (1 − 0.5)/(3 − 0.5) = 0.2,
    set by joint a; b asked for less than its limit and is scaled all the same (its share of q̈)."""
    limiter = TorqueLimiter(("a", "b", "c"), np.array([1.0, 2.0, np.inf]))
    out = limiter.apply(np.array([3.0, 1.0, -4.0]), {}, bias=np.array([0.5, 0.5, 1.0]))
    np.testing.assert_allclose(out.tau, [1.0, 0.6, 0.0], rtol=0, atol=1e-15)
    assert out.torque_scale == pytest.approx(0.2) and out.saturated_joints == ("a",)
    # Within the limits nothing changes.
    out = limiter.apply(np.array([0.9, -2.0, 5.0]), {}, bias=np.zeros(3))
    np.testing.assert_array_equal(out.tau, [0.9, -2.0, 5.0])
    assert out.torque_scale == 1.0 and out.saturated_joints == ()
    # A joint c alone puts beyond its limit is clipped there and does not set s (it had made
    # s 0: no feedback on any joint); one past its limit by rounding is clipped, not reported.
    out = limiter.apply(np.array([3.0, 3.0, 0.0]), {}, bias=np.array([1.5, 0.0, 0.0]))
    np.testing.assert_allclose(out.tau, [1.0, 2.0, 0.0], rtol=0, atol=1e-15)
    assert out.torque_scale == pytest.approx(2.0 / 3.0) and out.saturated_joints == ("a", "b")
    out = limiter.apply(np.array([1.0 + 1e-7, -2.0 - 1e-7, 0.0]), {}, bias=np.zeros(3))
    np.testing.assert_array_equal(out.tau, [1.0, -2.0, 0.0])
    assert out.saturated_joints == () and out.torque_scale == 1.0


def test_limiter_clips_and_reports_what_the_bias_alone_puts_past_a_limit() -> None:
    """Joint b asks 1.9 (within its 2) but its c = 2.5 is past it: with s = 1/3 from joint a it
    would get 2.3, clipped to 2 and named. With no joint able to set s (c past the limit on every
    joint that moves), s stays 1: b gets the 1.0 it asked, not its c clipped (2.0)."""
    limiter = TorqueLimiter(("a", "b", "c"), np.array([1.0, 2.0, np.inf]))
    out = limiter.apply(np.array([3.0, 1.9, 0.0]), {}, bias=np.array([0.0, 2.5, 0.0]))
    np.testing.assert_allclose(out.tau, [1.0, 2.0, 0.0], rtol=0, atol=1e-12)
    assert out.saturated_joints == ("a", "b")
    limiter = TorqueLimiter(("a", "b"), np.array([1.0, 2.0]))
    out = limiter.apply(np.array([3.0, 1.0]), {}, bias=np.array([1.5, 2.5]))
    assert out.torque_scale == 1.0
    np.testing.assert_allclose(out.tau, [1.0, 1.0], rtol=0, atol=1e-12)


def test_limiter_reports_nothing_within_limits() -> None:
    limiter = TorqueLimiter(("a", "b"), np.array([1.0, np.inf]))
    out = limiter.apply(np.array([0.5, 1e9]))
    assert out.saturated_joints == () and not out.any_saturated and out.info == {}
    np.testing.assert_array_equal(out.tau, [0.5, 1e9])
