"""Core behaviours no other test pinned down, each against an independent computation.

- Trajectory: waypoint velocities given with the points are the sampled velocities there (not
  the estimator's), and each cubic segment is the Hermite interpolant written out here; the
  sampled velocity and acceleration are the finite differences of the sampled position.
- Self-collision barrier: ``∇d`` against central finite differences of coal's minimum distance,
  the drift against the second derivative of ``n̂·(p₂ − p₁)`` for witness points fixed on their
  links, and the row ``lower = −drift − 2α·∇d_f·q̇ − α²·(d − d_safe)`` with the gradient filter
  ``∇d_f = g₁ + β·(g₂ − g₁)`` after two updates (raw again after ``reset()``).
- ``exclude_pairs`` removes the pair: the pair set against the chain's non-adjacent pairs, the
  minimum distance against coal's distances of the model without the exclusion. (Capsule
  distances computed here from the YAML segments must equal coal's.)
- Gravity compensation with the per-joint ``DEFAULT_DAMPING``: ``τ = g(q) − K_d·q̇``.
- Watchdog: a NaN or ±inf stamp is refused as inconsistent.
- Constrained dynamics near the stretched singularity: the regularised solve still meets the
  constraints along the well-conditioned directions of the Delassus matrix.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.constrained_dynamics import ConstrainedDynamics, alpha_from_axes
from torque_ctrl_ros.core.controllers.joint_space import GravityCompensation, GravityCompensationConfig
from torque_ctrl_ros.core.qp.collision import SelfCollisionModel
from torque_ctrl_ros.core.qp.constraints import SelfCollisionBarrier
from torque_ctrl_ros.core.qp.tasks import KinematicsState
from torque_ctrl_ros.core.safety import DEFAULT_DAMPING, RejectReason, Watchdog, WatchdogConfig
from torque_ctrl_ros.core.trajectory import JointTrajectory

TOOL = "end_effector_link"
COLLISION = Path(__file__).resolve().parent.parent / "config" / "gen3_collision.yaml"


# --------------------------------------------------------------------------- trajectory
def _hermite(
    t: float, t0: float, t1: float, p0: np.ndarray, v0: np.ndarray, p1: np.ndarray, v1: np.ndarray
) -> np.ndarray:
    """Cubic Hermite position at ``t`` on ``[t0, t1]`` from the endpoint positions and velocities."""
    T = t1 - t0
    s = (t - t0) / T
    h00, h10 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s
    h01, h11 = -2 * s**3 + 3 * s**2, s**3 - s**2
    return h00 * p0 + h10 * T * v0 + h01 * p1 + h11 * T * v1


def _estimated(t: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The documented estimator: 0 at the ends and at turns, else the time-weighted secant mean
    limited to 3× the smaller secant (Fritsch–Carlson)."""
    v = np.zeros_like(p)
    for k in range(1, len(t) - 1):
        left = (p[k] - p[k - 1]) / (t[k] - t[k - 1])
        right = (p[k + 1] - p[k]) / (t[k + 1] - t[k])
        wl, wr = t[k + 1] - t[k], t[k] - t[k - 1]
        mean = (wl * left + wr * right) / (wl + wr)
        lim = 3.0 * np.minimum(np.abs(left), np.abs(right))
        v[k] = np.where(left * right > 0, np.clip(mean, -lim, lim), 0.0)
    return v


@pytest.mark.parametrize("with_accelerations", [False, True], ids=["cubic", "quintic"])
def test_given_waypoint_velocities_are_used(with_accelerations: bool) -> None:
    rng = np.random.default_rng(21)
    times = np.array([0.0, 0.4, 1.0, 1.7, 2.5])
    pos = np.cumsum(rng.normal(0.0, 0.5, (5, 3)), axis=0)
    vel = rng.normal(0.0, 1.0, (5, 3))
    acc = rng.normal(0.0, 2.0, (5, 3)) if with_accelerations else None
    traj = JointTrajectory(times, pos, vel, acc)
    # The given velocities are far from what the estimator would give (0 at both ends).
    assert np.abs(vel - _estimated(times, pos)).min() > 1e-3
    eps = 1e-9
    for k, t in enumerate(times):
        # At the last waypoint the hold begins (zero velocity): approach it from before.
        q, qd, qdd = traj.sample(float(t) - eps if k == len(times) - 1 else float(t))
        np.testing.assert_allclose(q, pos[k], atol=1e-7)
        np.testing.assert_allclose(qd, vel[k], atol=1e-6)
        if acc is not None:
            np.testing.assert_allclose(qdd, acc[k], atol=1e-5)
    h = 1e-5
    for t in np.linspace(0.01, 2.49, 37):
        if np.abs(times - t).min() < 1e-3:  # cubic accelerations jump at the waypoints
            continue
        q, qd, qdd = traj.sample(float(t))
        k = int(np.searchsorted(times, t)) - 1
        if acc is None:
            expected = _hermite(t, times[k], times[k + 1], pos[k], vel[k], pos[k + 1], vel[k + 1])
            np.testing.assert_allclose(q, expected, atol=1e-12)
        qp, qdp, _ = traj.sample(float(t + h))
        qm, qdm, _ = traj.sample(float(t - h))
        np.testing.assert_allclose((qp - qm) / (2 * h), qd, atol=1e-6)
        np.testing.assert_allclose((qp - 2 * q + qm) / (h * h), qdd, atol=2e-3)
        np.testing.assert_allclose((qdp - qdm) / (2 * h), qdd, atol=1e-5)


# ------------------------------------------------------------------------ self-collision
def _closest(
    col: SelfCollisionModel, robot: RobotModel, data: pin.Data, q: np.ndarray
) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """Coal on every pair through its own geometry data: ``(distances, k, p₁, p₂)`` of the closest."""
    geom_data = pin.GeometryData(col.geom_model)
    for req in geom_data.distanceRequests:
        req.enable_signed_distance = True
    pin.forwardKinematics(robot.model, data, robot.configuration(q).copy())
    pin.updateGeometryPlacements(robot.model, data, col.geom_model, geom_data)
    pin.computeDistances(col.geom_model, geom_data)
    results = list(geom_data.distanceResults)
    distances = np.array([res.min_distance for res in results])
    k = int(np.argmin(distances))
    return distances, k, np.array(results[k].getNearestPoint1()), np.array(results[k].getNearestPoint2())


def _clearly_closest(
    col: SelfCollisionModel, robot: RobotModel, data: pin.Data, seed: int
) -> Iterator[tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray]]:
    """Seeded configurations (rad, uniform in ±3) whose closest pair is clear, each with
    :func:`_closest`'s ``(distances, k, p₁, p₂)``: the closest at least 5 mm apart (its normal well
    defined) and 5 mm nearer than the second (its distance and gradient unlike the second's)."""
    rng = np.random.default_rng(seed)
    while True:
        q = rng.uniform(-3.0, 3.0, robot.n)
        distances, k, p1, p2 = _closest(col, robot, data, q)
        first, second = np.partition(distances, 1)[:2]
        if second - first >= 5e-3 and first >= 5e-3:
            yield q, distances, k, p1, p2


def _min_distance(col: SelfCollisionModel, robot: RobotModel, data: pin.Data, q: np.ndarray) -> float:
    return float(_closest(col, robot, data, q)[0].min())


def _fd_gradient(col: SelfCollisionModel, robot: RobotModel, data: pin.Data, q: np.ndarray) -> np.ndarray:
    h = 1e-6
    return np.array(
        [
            (_min_distance(col, robot, data, q + h * e) - _min_distance(col, robot, data, q - h * e))
            / (2 * h)
            for e in np.eye(robot.n)
        ]
    )


def _fd_drift(
    col: SelfCollisionModel, robot: RobotModel, data: pin.Data, q: np.ndarray, v: np.ndarray
) -> tuple[float, float]:
    """``(d, d²/dt² n̂·(p₂(t) − p₁(t)))`` along ``q + t·q̇``, the witness points fixed on their links."""
    distances, k, p1, p2 = _closest(col, robot, data, q)
    d = float(distances[k])
    n = (p2 - p1) / float(np.linalg.norm(p2 - p1))
    frames = [robot.frame_id(link) for link in col.pair_links[k]]
    pin.framesForwardKinematics(robot.model, data, robot.configuration(q).copy())
    local = [data.oMf[f].actInv(p) for f, p in zip(frames, (p1, p2), strict=True)]

    def gap(x: np.ndarray) -> float:
        pin.framesForwardKinematics(robot.model, data, robot.configuration(x).copy())
        a, b = (data.oMf[f].act(p) for f, p in zip(frames, local, strict=True))
        return float(n @ (b - a))

    t = 1e-3
    g = [gap(q + i * t * v) for i in (-2, -1, 0, 1, 2)]
    return d, (-g[0] + 16.0 * g[1] - 30.0 * g[2] + 16.0 * g[3] - g[4]) / (12.0 * t * t)


def _clear_states(
    col: SelfCollisionModel, robot: RobotModel, data: pin.Data, count: int, seed: int
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, float, float]]:
    """Random ``(q, q̇, ∇d, d, drift)`` (finite differences) whose closest pair is separated (> 5 mm),
    ahead of the next by > 1 mm, moves with ``q`` (``|∇d| > 0.05`` m/rad; a pair whose witness
    points lie on a joint axis has ``∇d = 0``) and has ``|drift| > 0.01`` m/s² (so that dropping it
    shows). Successive states have different closest pairs (their gradients differ)."""
    rng = np.random.default_rng(seed)
    states: list[tuple[np.ndarray, np.ndarray, np.ndarray, float, float]] = []
    last = -1
    while len(states) < count:
        q = rng.uniform(-3.0, 3.0, robot.n)
        v = rng.normal(0.0, 1.0, robot.n)
        distances, k, _, _ = _closest(col, robot, data, q)
        low = np.partition(distances, 1)
        if k == last or not (low[0] > 0.005 and low[1] - low[0] > 1e-3):
            continue
        g = _fd_gradient(col, robot, data, q)
        d, drift = _fd_drift(col, robot, data, q, v)
        if np.linalg.norm(g) > 0.05 and abs(drift) > 0.01:
            states.append((q, v, g, d, drift))
            last = k
    return states


def test_self_collision_barrier_row_against_finite_differences(robot: RobotModel) -> None:
    col = SelfCollisionModel.from_file(robot, COLLISION)
    alpha, d_safe, beta = 10.0, 0.02, 0.2
    barrier = SelfCollisionBarrier(robot, col, alpha=alpha, d_safe=d_safe, filter_gain=beta)
    barrier.bind(np.zeros((1, robot.n)), np.zeros(1))
    kin = KinematicsState(robot)
    data = robot.model.createData()
    states = _clear_states(col, robot, data, 4, seed=8)
    # (a) the gradient: the first update after construction (and after reset) is the raw one.
    for q, v, g, _, _ in states:
        barrier.reset()
        kin.update(q, v)
        barrier.update(kin)
        np.testing.assert_allclose(barrier.C[0], g, rtol=0.0, atol=1e-6)
    # (b), (c) two updates in a row: filtered gradient, drift and the row's bound.
    for (q1, v1, g1, _, _), (q2, v2, g2, d, drift) in itertools.pairwise(states):
        barrier.reset()
        kin.update(q1, v1)
        barrier.update(kin)
        kin.update(q2, v2)
        barrier.update(kin)
        filtered = g1 + beta * (g2 - g1)
        assert np.abs(g2 - g1).max() > 1e-2  # the filter makes a visible difference
        np.testing.assert_allclose(barrier.C[0], filtered, rtol=0.0, atol=1e-6)
        lower = -drift - 2.0 * alpha * float(filtered @ v2) - alpha * alpha * (d - d_safe)
        tol = 1e-6 + 2.0 * alpha * 1e-6 * float(np.abs(v2).sum())
        assert math.isclose(barrier.lower[0], lower, abs_tol=tol), (barrier.lower[0], lower)
        assert math.isclose(barrier.margin, d - d_safe, abs_tol=1e-12)


def _segment_distance(a0: np.ndarray, a1: np.ndarray, b0: np.ndarray, b1: np.ndarray) -> float:
    """Distance between segments ``a0–a1`` and ``b0–b1``: the minimum of the convex quadratic
    ``|a(s) − b(t)|²`` over ``[0, 1]²``, i.e. its interior stationary point or an edge minimum."""
    u, w, r = a1 - a0, b1 - b0, a0 - b0

    def dist(s: float, t: float) -> float:
        return float(np.linalg.norm(r + s * u - t * w))

    candidates = []
    uu, ww, uw, ur, wr = u @ u, w @ w, u @ w, u @ r, w @ r
    det = uu * ww - uw * uw
    if det > 1e-14:
        s, t = (uw * wr - ww * ur) / det, (uu * wr - uw * ur) / det
        if 0.0 <= s <= 1.0 and 0.0 <= t <= 1.0:
            candidates.append(dist(s, t))
    for t in (0.0, 1.0):  # edges t fixed: s minimises |r − t·w + s·u|
        s = float(np.clip(-(u @ (r - t * w)) / uu, 0.0, 1.0)) if uu > 0 else 0.0
        candidates.append(dist(s, t))
    for s in (0.0, 1.0):
        t = float(np.clip((w @ (r + s * u)) / ww, 0.0, 1.0)) if ww > 0 else 0.0
        candidates.append(dist(s, t))
    return min(candidates)


def _capsule_distances(
    robot: RobotModel, capsules: dict, pairs: set[frozenset[str]], q: np.ndarray
) -> dict[frozenset[str], float]:
    """Per pair of links (one capsule each), the distance (m) of the YAML capsules at ``q``:
    the segments' distance minus the radii, from Pinocchio's frame placements."""
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, robot.configuration(q).copy())
    out = {}
    for pair in pairs:
        ends = []
        for link in sorted(pair):
            cap = capsules[link][0]
            placement = data.oMf[robot.frame_id(link)]
            a, b = (placement.act(np.array(cap[key], dtype=float)) for key in ("from", "to"))
            ends.append((a, b, float(cap["radius"])))
        (a0, a1, ra), (b0, b1, rb) = ends
        out[pair] = _segment_distance(a0, a1, b0, b1) - ra - rb
    return out


def _chain_pairs(links: list[str]) -> set[frozenset[str]]:
    """Every pair of links of the serial chain two or more joints apart (one capsule per link)."""
    return {frozenset((links[i], links[j])) for i in range(len(links)) for j in range(i + 2, len(links))}


def test_exclude_pairs_removes_the_pair(robot: RobotModel, tmp_path: Path) -> None:
    spec = yaml.safe_load(COLLISION.read_text())
    links = list(spec["capsules"])
    assert all(len(c) == 1 for c in spec["capsules"].values())
    yaml_excluded = [sorted(p) for p in spec.get("exclude_pairs") or []]
    all_pairs = _chain_pairs(links) - {frozenset(p) for p in yaml_excluded}
    full = SelfCollisionModel.from_file(robot, COLLISION)
    data = robot.model.createData()
    rng = np.random.default_rng(5)
    while True:  # a pose whose closest pair is ahead of the next by more than 1 cm
        q = rng.uniform(-3.0, 3.0, robot.n)
        distances = dict(zip(map(frozenset, full.pair_links), _closest(full, robot, data, q)[0], strict=True))
        ranked = sorted(distances, key=distances.__getitem__)
        if distances[ranked[1]] - distances[ranked[0]] > 0.01:
            break
    closest = ranked[0]
    kin = KinematicsState(robot)
    kin.update(q, np.zeros(robot.n))
    for name, excluded in (("all", []), ("excluded", [sorted(closest)])):
        path = tmp_path / f"{name}.yaml"
        path.write_text(
            yaml.safe_dump({"capsules": spec["capsules"], "exclude_pairs": yaml_excluded + excluded})
        )
        col = SelfCollisionModel.from_file(robot, path)
        expected = all_pairs - {frozenset(p) for p in excluded}
        assert {frozenset(p) for p in col.pair_links} == expected and col.num_pairs == len(expected)
        d = col.update()
        nearest = ranked[1] if excluded else closest
        assert frozenset(col.closest_pair) == nearest
        assert math.isclose(d, distances[nearest], abs_tol=1e-9)
    assert distances[ranked[1]] > distances[closest] + 0.01  # the exclusion changed the distance


def test_capsules_span_their_yaml_segments(robot: RobotModel) -> None:
    """coal.Capsule(radius, lz) takes the full length: given the half length, every capsule had
    been half as long as its YAML segment (the link ends, the joints, went unchecked)."""
    spec = yaml.safe_load(COLLISION.read_text())
    pairs = _chain_pairs(list(spec["capsules"])) - {frozenset(p) for p in spec.get("exclude_pairs") or []}
    col = SelfCollisionModel.from_file(robot, COLLISION)
    kin = KinematicsState(robot)
    rng = np.random.default_rng(6)
    for _ in range(5):
        q = rng.uniform(-3.0, 3.0, robot.n)
        expected = _capsule_distances(robot, spec["capsules"], pairs, q)
        kin.update(q, np.zeros(robot.n))
        col.update()
        got = dict(zip(map(frozenset, col.pair_links), col.pair_distances(), strict=True))
        for pair in pairs:
            assert math.isclose(got[pair], expected[pair], abs_tol=1e-9), (
                sorted(pair),
                got[pair],
                expected[pair],
            )


# ------------------------------------------------------------------- gravity compensation
def test_gravity_compensation_with_default_damping(robot: RobotModel) -> None:
    damping = np.array(DEFAULT_DAMPING)
    assert np.unique(damping).size > 1  # per joint, not one scalar
    ctrl = GravityCompensation(robot, GravityCompensationConfig.create(robot.n, damping))
    data = robot.model.createData()
    rng = np.random.default_rng(17)
    for _ in range(5):
        q = rng.uniform(-2.0, 2.0, robot.n)
        v = rng.uniform(-1.0, 1.0, robot.n)
        gravity = pin.rnea(
            robot.model, data, robot.configuration(q).copy(), np.zeros(robot.n), np.zeros(robot.n)
        )
        tau, _ = ctrl.torque(q, v, None)
        np.testing.assert_allclose(tau, gravity - damping * v, rtol=0.0, atol=1e-9)


# ------------------------------------------------------------------------------ watchdog
@pytest.mark.parametrize("stamp", [math.nan, math.inf, -math.inf])
def test_watchdog_refuses_a_non_finite_stamp(stamp: float) -> None:
    wd = Watchdog(3, WatchdogConfig.create(max_age=0.02))
    q, v = np.zeros(3), np.zeros(3)
    for now in (0.0, 1.0):
        refusal = wd.check(q, v, stamp, now)
        assert refusal is not None, stamp
        reason, message = refusal
        assert reason is RejectReason.INCONSISTENT and "not finite" in message, message
        assert wd.check(q, v, now, now) is None  # the same state with a good stamp passes
        wd.accept(q, v, now, now)


# ------------------------------------------------------------------ constrained dynamics
def test_regularised_solve_keeps_the_well_conditioned_constraints(robot: RobotModel) -> None:
    """Near the stretched pose (q₂, q₄, q₆ ≈ 0; joints 1, 3, 5, 7 aligned) ``D = J·M⁻¹·Jᵀ`` has three
    eigenvalues below ``rcond·d_max`` and three above ``3e-4·d_max``. Damped least squares with
    ``μ ≤ rcond·d_max`` may miss the first three, but along the others the tool acceleration
    (Pinocchio's forward kinematics of the returned ``q̈``) meets ``β`` to ``μ/d·|rhs| ≤ 1e-5·|rhs|``.
    """
    model, fid = robot.model, robot.frame_id(TOOL)
    data = model.createData()
    solver = ConstrainedDynamics(robot, TOOL, rcond=1e-9)  # the bound below is rcond / 1e-4
    alpha = alpha_from_axes(["x", "y", "z", "rx", "ry", "rz"])
    rng = np.random.default_rng(2)
    for scale in (1e-5, 1e-4, 1e-3):
        q = np.zeros(robot.n)
        q[[1, 3, 5]] = scale * rng.uniform(0.5, 1.5, 3) * rng.choice([-1.0, 1.0], 3)
        v = rng.normal(0.0, 0.2, robot.n)
        beta = rng.normal(0.0, 0.5, 6)
        res = solver.solve(q, v, alpha, beta)
        assert res.regularised
        q_pin = robot.configuration(q).copy()
        M = pin.crba(model, data, q_pin)
        M = np.triu(M) + np.triu(M, 1).T
        J = pin.computeFrameJacobian(model, data, q_pin, fid, pin.LOCAL_WORLD_ALIGNED)
        eigval, eigvec = np.linalg.eigh(J @ np.linalg.solve(M, J.T))
        good = eigvec[:, eigval >= 1e-4 * eigval[-1]]
        assert good.shape[1] == 3
        # What the constraint asks of the joint accelerations beyond the free motion (q̈ = ABA(q, q̇, 0)).
        pin.forwardKinematics(model, data, q_pin, v, pin.aba(model, data, q_pin, v, np.zeros(robot.n)))
        free = pin.getFrameClassicalAcceleration(model, data, fid, pin.LOCAL_WORLD_ALIGNED).vector
        rhs = good.T @ (beta - free)
        pin.forwardKinematics(model, data, q_pin, v, res.qdd)
        acc = pin.getFrameClassicalAcceleration(model, data, fid, pin.LOCAL_WORLD_ALIGNED).vector
        miss = good.T @ (acc - beta)
        assert np.abs(miss).max() <= 1e-5 * float(np.abs(rhs).max()) + 1e-9, (scale, miss, rhs)
