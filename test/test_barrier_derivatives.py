"""The analytic terms of the QP barriers against independent computations.

- Singularity barrier: ``w``, ``∇w``, ``ẇ = ∇w·q̇`` and ``ẅ|_{q̈=0} = q̇ᵀ·∇²w·q̇`` against
  central finite differences of ``w(q) = √det(J·Jᵀ)`` (a second Pinocchio data, no shared
  state with the barrier), relative tolerance 1e-6 (1e-8 absolute for ``ẅ``).
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.qp.constraints import SingularityBarrier
from torque_ctrl_ros.core.qp.tasks import KinematicsState

TOOL = "end_effector_link"


def _manipulability(robot: RobotModel, data: pin.Data, joint: int, q: np.ndarray) -> float:
    pin.computeJointJacobians(robot.model, data, robot.configuration(q))
    J = pin.getJointJacobian(robot.model, data, joint, pin.WORLD)
    return math.sqrt(max(float(np.linalg.det(J @ J.T)), 0.0))


def test_singularity_terms_match_finite_differences(robot: RobotModel) -> None:
    kin = KinematicsState(robot)
    barrier = SingularityBarrier(robot, TOOL, alpha=10.0, w_min=0.01)
    barrier.bind(np.zeros((1, robot.n)), np.zeros(1))
    data = robot.model.createData()
    rng = np.random.default_rng(3)
    checked = 0
    while checked < 20:
        q = rng.uniform(-3.0, 3.0, robot.n)
        v = rng.normal(0.0, 1.0, robot.n)
        w = _manipulability(robot, data, barrier.joint, q)
        if w < 0.02:  # finite differences lose their digits near the singular set
            continue
        checked += 1
        kin.update(q, v)
        barrier.update(kin)
        assert math.isclose(barrier.value, w, rel_tol=1e-12)
        h = 1e-6
        grad = np.array(
            [
                (
                    _manipulability(robot, data, barrier.joint, q + h * e)
                    - _manipulability(robot, data, barrier.joint, q - h * e)
                )
                / (2 * h)
                for e in np.eye(robot.n)
            ]
        )
        scale = float(np.abs(grad).max())
        np.testing.assert_allclose(barrier.gradient, grad, rtol=0.0, atol=1e-6 * scale)
        assert math.isclose(barrier.rate, float(grad @ v), abs_tol=1e-6 * scale * float(np.abs(v).sum()))
        # ẅ along q(t) = q + t·q̇ (q̈ = 0), fourth-order central differences
        h = 1e-3
        w_at = [_manipulability(robot, data, barrier.joint, q + k * h * v) for k in (-2, -1, 1, 2)]
        curvature = (-w_at[0] + 16.0 * w_at[1] - 30.0 * w + 16.0 * w_at[2] - w_at[3]) / (12.0 * h * h)
        assert math.isclose(barrier.curvature, curvature, rel_tol=1e-6, abs_tol=1e-8)
        assert barrier.lower[0] == (
            -barrier.curvature - 2.0 * 10.0 * barrier.rate - 100.0 * (barrier.value - 0.01)
        )
        np.testing.assert_array_equal(barrier.C[0], barrier.gradient)
