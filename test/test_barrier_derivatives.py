"""The analytic terms of the QP barriers against independent computations.

- Singularity barrier: ``w``, ``∇w``, ``ẇ = ∇w·q̇`` and ``ẅ|_{q̈=0} = q̇ᵀ·∇²w·q̇`` against
  central finite differences of ``w(q) = √det(J·Jᵀ)`` (a second Pinocchio data, no shared
  state with the barrier), relative tolerance 1e-6 (1e-8 absolute for ``ẅ``), for the tool and
  for a frame that the last joint does not move.
- Self-collision model: the closest pair, distance and witness points against coal on
  every pair (through a second Pinocchio geometry data); ``∇d`` against central finite
  differences of that distance (the witness points may slide: first order, they do not
  matter), 1e-6 m/rad; the drift against the second time derivative of
  ``n̂·(p₂ − p₁)`` for the witness points held fixed on their links along
  ``q(t) = q + t·q̇``, 1e-6 m/s²; ``update()`` without ``q̇`` gives the same gradient
  and no drift, and with the Jacobians of a ``KinematicsState`` the same terms.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.core.qp.collision import SelfCollisionModel
from torque_ctrl_ros.core.qp.constraints import SingularityBarrier
from torque_ctrl_ros.core.qp.tasks import KinematicsState

TOOL = "end_effector_link"
COLLISION = Path(__file__).resolve().parent.parent / "config" / "gen3_collision.yaml"


def _manipulability(robot: RobotModel, data: pin.Data, joint: int, q: np.ndarray) -> float:
    pin.computeJointJacobians(robot.model, data, robot.configuration(q))
    J = pin.getJointJacobian(robot.model, data, joint, pin.WORLD)
    return math.sqrt(max(float(np.linalg.det(J @ J.T)), 0.0))


@pytest.mark.parametrize("frame", [TOOL, "spherical_wrist_2_link"])  # moved by 7 and by 6 joints
def test_singularity_terms_match_finite_differences(robot: RobotModel, frame: str) -> None:
    kin = KinematicsState(robot)
    barrier = SingularityBarrier(robot, frame, alpha=10.0, w_min=0.01)
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


def _coal_distances(col: SelfCollisionModel, robot: RobotModel, data: pin.Data, q: np.ndarray) -> np.ndarray:
    """Every pair's signed distance (m), from coal through a separate geometry data."""
    geom_data = pin.GeometryData(col.geom_model)
    for req in geom_data.distanceRequests:
        req.enable_signed_distance = True
    pin.forwardKinematics(robot.model, data, robot.configuration(q))
    pin.updateGeometryPlacements(robot.model, data, col.geom_model, geom_data)
    pin.computeDistances(col.geom_model, geom_data)
    return np.array([res.min_distance for res in geom_data.distanceResults])


def _gap(
    robot: RobotModel,
    data: pin.Data,
    joints: list[int],
    local: list[np.ndarray],
    n: np.ndarray,
    q: np.ndarray,
) -> float:
    """``n̂·(x₂ − x₁)`` (m) at ``q`` for the points ``local`` fixed on the links of ``joints``."""
    pin.forwardKinematics(robot.model, data, robot.configuration(q))
    x1, x2 = (data.oMi[j].act(p) for j, p in zip(joints, local, strict=True))
    return float(n @ (x2 - x1))


def test_singularity_barrier_near_the_singular_set_is_treated_as_singular(robot: RobotModel) -> None:
    """Below ``SINGULAR_W`` the terms from ``(J·Jᵀ)⁻¹`` are rounding noise (the curvature reads
    −83 to 1.6e5 there): the row is the singular one (w taken as 0: no gradient or curvature,
    the row left out); above it the curvature keeps the order it has further out."""
    from torque_ctrl_ros.core.qp.constraints import SINGULAR_W

    kin = KinematicsState(robot)
    barrier = SingularityBarrier(robot, TOOL, alpha=10.0, w_min=0.01)
    C, lower = np.zeros((1, robot.n)), np.zeros(1)
    barrier.bind(C, lower)
    v = np.full(robot.n, 0.5)
    curvatures = {}
    for eps in (1e-3, 1e-4, 1e-6, 1e-7, 1e-8):
        kin.update(np.array([0.0, 0.3, 0.0, eps, 0.0, 0.3, 0.0]), v)
        barrier.update(kin)
        assert not math.isnan(lower[0]) and np.isfinite(C).all()
        curvatures[eps] = barrier.curvature
        if eps < 1e-5:  # w ≈ 1.2e-7 and below
            assert barrier.value == 0.0 and not C.any() and barrier.curvature == barrier.rate == 0.0
            assert lower[0] == -math.inf  # left out: no q̈ could meet it
        else:
            assert barrier.value > SINGULAR_W and C.any()
    # ε = 1e-3 and 1e-4 stay above the threshold with sane terms; 1e-6 and below fall under it.
    assert abs(curvatures[1e-3]) < 1.0 and abs(curvatures[1e-4]) < 1.0
    assert curvatures[1e-6] == curvatures[1e-7] == curvatures[1e-8] == 0.0
    with pytest.raises(ConfigError, match=r"singularity.w_min: expected >= 1e-05"):
        SingularityBarrier(robot, TOOL, alpha=10.0, w_min=1e-6)


def test_self_collision_terms_match_coal_and_finite_differences(robot: RobotModel) -> None:
    col = SelfCollisionModel.from_file(robot, COLLISION)
    kin = KinematicsState(robot)
    model = robot.model
    data = model.createData()
    rng = np.random.default_rng(4)
    checked = 0
    while checked < 30:
        q = rng.uniform(-3.0, 3.0, robot.n)
        v = rng.normal(0.0, 1.0, robot.n)
        distances = _coal_distances(col, robot, data, q)
        k = int(np.argmin(distances))
        if np.partition(distances, 1)[1] - distances[k] < 1e-3:
            continue  # two pairs nearly tied: finite differences could switch pairs
        checked += 1
        kin.update(q, v)
        d = col.update(kin.v)
        assert col.closest_pair == col.pair_links[k]
        assert d == col.distance == distances[k]
        p1, p2 = col.witness
        n = col.normal
        assert math.isclose(float(np.linalg.norm(n)), 1.0, rel_tol=1e-12)
        assert math.isclose(float(n @ (p2 - p1)), d, abs_tol=1e-9)  # the distance along n̂
        h = 1e-6
        grad = np.array(
            [
                (
                    _coal_distances(col, robot, data, q + h * e)[k]
                    - _coal_distances(col, robot, data, q - h * e)[k]
                )
                / (2 * h)
                for e in np.eye(robot.n)
            ]
        )
        np.testing.assert_allclose(col.gradient, grad, rtol=0.0, atol=1e-6)
        # The witness points as material points of their links, moved along q + t·q̇.
        pair = col.geom_model.collisionPairs[k]
        joints = [int(col.geom_model.geometryObjects[g].parentJoint) for g in (pair.first, pair.second)]
        pin.forwardKinematics(model, data, robot.configuration(q))
        local = [data.oMi[j].actInv(p) for j, p in zip(joints, (p1, p2), strict=True)]

        t = 1e-3
        g = [_gap(robot, data, joints, local, n, q + i * t * v) for i in (-2, -1, 0, 1, 2)]
        drift = (-g[0] + 16.0 * g[1] - 30.0 * g[2] + 16.0 * g[3] - g[4]) / (12.0 * t * t)
        assert math.isclose(col.drift, drift, abs_tol=1e-6)
        gradient, drift_computed = col.gradient.copy(), col.drift
        col.update()
        np.testing.assert_array_equal(col.gradient, gradient)
        assert col.drift == 0.0
        # Reading the Jacobians from a KinematicsState (what the barrier does) gives the same terms.
        col.update(kin.v, kin.JJd)
        np.testing.assert_array_equal(col.gradient, gradient)
        assert col.drift == drift_computed


def test_joint_limit_rows_match_their_formulas(robot: RobotModel) -> None:
    """Joint position / velocity barrier rows written out joint by joint (the code stacks them)."""
    from torque_ctrl_ros.core.qp.constraints import JointPositionBarrier, JointVelocityBarrier

    kin = KinematicsState(robot)
    pos = JointPositionBarrier(robot, alpha=10.0)
    vel = JointVelocityBarrier(robot, alpha=50.0)
    for b in (pos, vel):
        b.bind(np.zeros((b.rows, robot.n)), np.zeros(b.rows))
    rng = np.random.default_rng(11)
    lo = np.where(np.isfinite(robot.position_lower), robot.position_lower, -np.pi)
    hi = np.where(np.isfinite(robot.position_upper), robot.position_upper, np.pi)
    for _ in range(50):
        q = rng.uniform(lo, hi)
        v = rng.uniform(-1, 1, robot.n) * robot.velocity_limit
        kin.update(q, v)
        pos.update(kin)
        vel.update(kin)
        a = 10.0
        for r, j in enumerate(pos.index):
            k = len(pos.index)
            assert pos.C[r, j] == 1.0 and pos.C[k + r, j] == -1.0
            assert math.isclose(pos.lower[r], -2 * a * v[j] - a * a * (q[j] - robot.position_lower[j]))
            assert math.isclose(pos.lower[k + r], 2 * a * v[j] - a * a * (robot.position_upper[j] - q[j]))
        h_pos = [q[j] - robot.position_lower[j] for j in pos.index] + [
            robot.position_upper[j] - q[j] for j in pos.index
        ]
        assert math.isclose(pos.margin, min(h_pos))
        k = len(vel.index)
        vmax = robot.velocity_limit
        np.testing.assert_allclose(vel.lower[:k], -50.0 * (v + vmax)[vel.index])
        np.testing.assert_allclose(vel.lower[k:], -50.0 * (vmax - v)[vel.index])
        assert np.array_equal(np.abs(vel.C).sum(axis=1), np.ones(2 * k))
        assert math.isclose(vel.margin, float(np.min(np.concatenate([v + vmax, vmax - v]))))
