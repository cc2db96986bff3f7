"""Behaviours of the barrier rows and the capsule model that a second mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) of ``core/qp/constraints.py``
or ``core/qp/collision.py`` it was written to catch: how the joint-limit rows share their slacks,
which extra rows are refused, which capsule pairs are checked, and what the model reports of the
pairs it tracks. Reference values come from coal through a geometry data of its own and from
finite differences of Pinocchio's kinematics, not from the code under test. Pure core: no ROS.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_barrier_derivatives import COLLISION, _coal_distances
from test_core_gaps import _clearly_closest, _fd_drift, _fd_gradient

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.core.qp.collision import CollisionSpec, SelfCollisionModel
from torque_ctrl_ros.core.qp.constraints import (
    JointPositionBarrier,
    JointVelocityBarrier,
    LinearBarrier,
    SelfCollisionBarrier,
)
from torque_ctrl_ros.core.qp.tasks import KinematicsState

CAPSULE = {"from": [0.0, 0.0, 0.0], "to": [0.0, 0.0, 0.1], "radius": 0.05}


@pytest.mark.parametrize("barrier_type", [JointPositionBarrier, JointVelocityBarrier])
def test_a_joints_two_limit_rows_share_one_slack(robot: RobotModel, barrier_type: type) -> None:
    """A joint's lower and upper limit rows take one slack between them, each joint its own: the
    group has as many slacks as joints. With a slack per row the QP carries twice the slack
    columns, and a joint whose two rows contradict each other pays for both and is left free
    anywhere between them. (Mutant: ``slack_of_row = np.arange(2·k)`` in ``_JointRowsBarrier``.)"""
    barrier = barrier_type(robot, alpha=10.0)
    k = len(barrier.index)
    assert k > 0 and barrier.rows == 2 * k
    assert barrier.slacks == k
    np.testing.assert_array_equal(barrier.slack_of_row[:k], np.arange(k))
    np.testing.assert_array_equal(barrier.slack_of_row[k:], np.arange(k))


def test_a_linear_barrier_refuses_fewer_bounds_than_rows(robot: RobotModel) -> None:
    """Two fixed rows given one bound are refused, naming both shapes, not bound with the single
    value broadcast to both rows (the second row's intended bound silently replaced). (Mutant:
    the ``C.shape[0] != lower.shape[0]`` check dropped from ``LinearBarrier.__init__``.)"""
    with pytest.raises(
        ConfigError, match=r"extra: expected finite C \(m × n\) and l \(m,\), got \(2, 7\) / \(1,\)"
    ):
        LinearBarrier("extra", np.eye(2, robot.n), np.zeros(1))


def test_capsules_on_two_links_of_one_joint_are_not_paired(robot: RobotModel) -> None:
    """``end_effector_link`` hangs on the same joint as ``bracelet_link`` (a fixed child): capsules
    on the two never move apart, so the pair is not checked; each is paired with the base. Checked,
    the pair's distance would be constant with a zero gradient, a row no ``q̈`` could meet once the
    two capsules (they overlap here) are inside ``d_safe``. (Mutant: ``ja == jb`` dropped from
    ``adjacent``.)"""
    model = robot.model
    bracelet, tool = (
        int(model.frames[robot.frame_id(f)].parentJoint) for f in ("bracelet_link", "end_effector_link")
    )
    assert bracelet == tool  # the premise: one joint moves both
    capsules = {"base_link": [CAPSULE], "bracelet_link": [CAPSULE], "end_effector_link": [CAPSULE]}
    col = SelfCollisionModel(robot, CollisionSpec.from_mapping({"capsules": capsules}))
    assert sorted(col.pair_links) == [("base_link", "bracelet_link"), ("base_link", "end_effector_link")]


def test_a_capsule_of_zero_radius_is_refused() -> None:
    """A capsule's radius must be positive: ``radius: 0`` (a typo for 0.05, say) would check a bare
    segment and let the link's housing into the other links. (Mutant: the radius read with
    ``allow_zero=True``.)"""
    with pytest.raises(ConfigError, match=r"capsules\.base_link\[0\]\.radius"):
        CollisionSpec.from_mapping({"capsules": {"base_link": [{**CAPSULE, "radius": 0.0}]}})


def _distinct_closest(distances: np.ndarray) -> list[float]:
    """The pair distances in increasing order, a distance within 1 nm of the last one kept dropped."""
    kept: list[float] = []
    for d in np.sort(distances):
        if not kept or d - kept[-1] >= 1e-9:
            kept.append(float(d))
    return kept


def test_rows_left_over_after_a_fuller_state_are_wiped(robot: RobotModel) -> None:
    """A row per pair: after a state whose pairs all differ comes one where some coincide (capsules
    ending on one joint sphere), the rows left over read distance inf, no gradient and no drift,
    nothing of the state before; the others the distinct distances, closest first. Reference: coal
    on every pair through a geometry data of its own. (Mutants: ``self.distances[row + 1:] = inf``,
    one stale distance kept; ``self.drifts[row:] = 0.0`` dropped.)"""
    col = SelfCollisionModel.from_file(robot, COLLISION)
    col = SelfCollisionModel.from_file(robot, COLLISION, pairs=col.num_pairs)
    kin = KinematicsState(robot)
    data = robot.model.createData()
    rng = np.random.default_rng(5)
    full: np.ndarray | None = None
    fewer: tuple[np.ndarray, list[float]] | None = None
    while full is None or fewer is None:
        q = rng.uniform(-3.0, 3.0, robot.n)
        kept = _distinct_closest(_coal_distances(col, robot, data, q))
        if len(kept) == col.num_pairs:
            full = q
        elif fewer is None:
            fewer = (q, kept)
    v = rng.normal(0.0, 1.0, robot.n)
    kin.update(full, v)
    col.update(kin.v, kin.JJd)
    assert np.all(col.drifts != 0.0) and np.all(np.isfinite(col.distances))  # every row filled
    q, kept = fewer
    kin.update(q, v)
    col.update(kin.v, kin.JJd)
    m = len(kept)
    np.testing.assert_array_equal(col.distances[:m], kept)
    assert np.all(np.isinf(col.distances[m:]))
    assert not col.gradients[m:].any() and not col.drifts[m:].any()


def test_with_two_rows_the_scalar_terms_are_the_closest_pairs(robot: RobotModel) -> None:
    """With two rows (the controllers' default), :attr:`distance`, :attr:`gradient`, :attr:`drift`
    and :attr:`closest_pair` are the closest pair's, as documented, not the second row's.
    Reference: coal on every pair, central finite differences of its smallest distance, and the
    drift as the second time derivative of ``n̂·(p₂ − p₁)`` for the witness points fixed on their
    links along ``q + t·q̇``. (Mutants: ``self.closest_pair = self.tracked_pairs[-1]``;
    ``self.drift = float(self.drifts[-1])``; ``self.gradient = self.gradients[-1]`` in
    ``SelfCollisionModel.__init__``.)"""
    col = SelfCollisionModel.from_file(robot, COLLISION, pairs=2)
    kin = KinematicsState(robot)
    data = robot.model.createData()
    velocities = np.random.default_rng(10)
    checked = 0
    for q, distances, k, _, _ in _clearly_closest(col, robot, data, seed=9):
        if checked == 3:
            break
        v = velocities.normal(0.0, 1.0, robot.n)
        kin.update(q, v)
        col.update(kin.v, kin.JJd)
        if abs(col.drifts[1] - col.drifts[0]) < 1e-3:  # rows whose drifts would not tell them apart
            continue
        checked += 1
        d, drift = _fd_drift(col, robot, data, q, v)
        assert col.closest_pair == col.pair_links[k]
        assert col.distance == d == distances.min()
        assert col.drift == pytest.approx(drift, abs=1e-6)
        np.testing.assert_allclose(col.gradient, _fd_gradient(col, robot, data, q), rtol=0.0, atol=1e-6)


def test_a_collision_barrier_with_two_rows_reports_the_closest_pair(robot: RobotModel) -> None:
    """With two rows the barrier's :attr:`distance` (the controllers' ``d_min`` diagnostic),
    :attr:`gradient` and :attr:`margin` are the closest pair's, not the second row's; the first
    update takes the raw gradient. Reference: coal on every pair and central finite differences of
    its smallest distance. (Mutants: ``self.distance = float(col.distances[-1])`` in
    ``SelfCollisionBarrier.update``; ``self.gradient = self.gradients[-1]`` in its ``__init__``.)"""
    d_safe = 0.02
    col = SelfCollisionModel.from_file(robot, COLLISION, pairs=2)
    barrier = SelfCollisionBarrier(robot, col, alpha=10.0, d_safe=d_safe)
    barrier.bind(np.zeros((2, robot.n)), np.zeros(2))
    kin = KinematicsState(robot)
    data = robot.model.createData()
    q, distances, _, _, _ = next(_clearly_closest(col, robot, data, seed=14))
    first = distances.min()
    kin.update(q, np.zeros(robot.n))
    barrier.update(kin)
    assert barrier.distance == first
    assert barrier.margin == first - d_safe
    np.testing.assert_allclose(barrier.gradient, _fd_gradient(col, robot, data, q), rtol=0.0, atol=1e-6)


@pytest.mark.parametrize("gain", [0.0, 0.005, 1.5])
def test_a_collision_barrier_built_directly_refuses_a_filter_gain_out_of_range(
    robot: RobotModel, gain: float
) -> None:
    """The gradient filter ``∇d_f ← ∇d_f + β·(∇d − ∇d_f)`` is checked where the barrier is built, not
    only by the controllers' configuration: ``β = 0`` freezes the row at its first gradient, one
    below 0.05 lags the pairs so that the capsules go inside ``d_safe``, one above 1 overshoots
    every change of gradient.
    (Mutant: ``self.filter_gain = float(filter_gain)`` without ``check_filter_gain``.)"""
    col = SelfCollisionModel.from_file(robot, COLLISION)
    with pytest.raises(ConfigError, match=r"self_collision\.filter: expected"):
        SelfCollisionBarrier(robot, col, alpha=10.0, d_safe=0.02, filter_gain=gain)


def test_an_empty_exclude_pairs_key_excludes_nothing() -> None:
    """``exclude_pairs:`` with nothing under it (every entry commented out) reads as YAML null and
    excludes no pair, as an absent key does, rather than refusing the file. (Mutant:
    ``data.get("exclude_pairs", [])`` for ``data.get("exclude_pairs") or []``.)"""
    spec = CollisionSpec.from_mapping({"capsules": {"base_link": [CAPSULE]}, "exclude_pairs": None})
    assert spec.exclude_pairs == ()


class _NoNormal:
    """A coal distance result without a normal (all zeros), its witnesses and distance given."""

    def __init__(self, distance: float, p1: np.ndarray, p2: np.ndarray) -> None:
        self.min_distance = distance
        self.normal = np.zeros(3)
        self._p1, self._p2 = p1, p2

    def getNearestPoint1(self) -> np.ndarray:  # noqa: N802 (coal's name)
        return self._p1.copy()

    def getNearestPoint2(self) -> np.ndarray:  # noqa: N802 (coal's name)
        return self._p2.copy()


def test_a_missing_normal_of_overlapping_capsules_is_taken_from_the_witnesses_with_its_sign(
    robot: RobotModel,
) -> None:
    """Where coal gives no normal the model takes the witnesses' direction, and coal's witnesses
    satisfy ``p₂ − p₁ = d·n̂``: for overlapping capsules (``d < 0``) they point against ``n̂``.
    A pair's real result, apart, replayed as its mirror (the witnesses swapped, ``d`` negated: the
    same ``n̂``) without a normal: the model's normal and gradient are the real ones. Unsigned,
    the gradient pointed the other way and the row pushed the capsules further in (a review; not
    reached with the shipped capsules, where coal always gave a unit normal)."""
    col = SelfCollisionModel.from_file(robot, COLLISION)
    kin = KinematicsState(robot)
    q = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
    kin.update(q, np.zeros(robot.n))
    col.update(None, kin.JJd)
    k = col.pair_links.index(col.closest_pair)
    real = col._results[k]
    assert real.min_distance > 0.0 and np.linalg.norm(real.normal) == pytest.approx(1.0)
    normal, gradient = col.normal.copy(), col.gradient.copy()
    mirror = _NoNormal(-real.min_distance, real.getNearestPoint2(), real.getNearestPoint1())
    col._results[k] = mirror
    col._pair_terms(0, k, None, kin.JJd[:, None])
    np.testing.assert_allclose(col.normal, normal, atol=1e-9)
    # Each witness moved by d·n̂ along n̂ leaves its moment p × n̂, so the gradient is the same.
    np.testing.assert_allclose(col.gradient, gradient, atol=1e-9)
