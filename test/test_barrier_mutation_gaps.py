"""Behaviours of the QP barriers and the capsule collision model that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) of ``core/qp/constraints.py``
or ``core/qp/collision.py`` it was written to catch: the rows that bound the joint acceleration
the QP may ask of the arm, and the refusals of barriers and bounds it could not use. Reference
values come from coal and Pinocchio through their own data, not from the code under test.
Pure core: no ROS.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from test_barrier_derivatives import COLLISION, TOOL, _coal_distances, _manipulability
from test_core_gaps import _capsule_distances, _clearly_closest

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.core.qp import constraints
from torque_ctrl_ros.core.qp.collision import CollisionSpec, SelfCollisionModel
from torque_ctrl_ros.core.qp.constraints import (
    JointVelocityBarrier,
    LinearBarrier,
    SelfCollisionBarrier,
    SingularityBarrier,
)
from torque_ctrl_ros.core.qp.tasks import KinematicsState
from torque_ctrl_ros.core.robot import sample_configurations


def test_bind_refuses_views_of_the_wrong_size_and_clears_what_they_held(robot: RobotModel) -> None:
    """``bind`` takes views of the stacked rows: one whose ``C`` has a row too many (the ``lower``
    right) is refused, not taken (the group would zero and hold a row of the next group); and
    the ``C`` bound reads ``σ·e_j`` only, whatever the view held before. (Mutants: the shape
    check's ``or`` becomes ``and``; ``bind`` no longer zeroes ``C`` before ``_bound``.)"""
    barrier = JointVelocityBarrier(robot, alpha=50.0)
    rows, n = barrier.rows, robot.n
    with pytest.raises(ValueError, match=rf"joint_velocity: bind\(\) got \({rows + 1}, {n}\) / \({rows},\)"):
        barrier.bind(np.zeros((rows + 1, n)), np.zeros(rows))
    with pytest.raises(ValueError, match=rf"for {rows} rows"):
        barrier.bind(np.zeros((rows, n)), np.zeros(rows + 1))
    C = np.ones((rows, n))
    barrier.bind(C, np.zeros(rows))
    expected = np.zeros((rows, n))
    k = len(barrier.index)
    expected[np.arange(k), barrier.index] = 1.0
    expected[k + np.arange(k), barrier.index] = -1.0
    np.testing.assert_array_equal(C, expected)


def test_each_collision_row_is_bounded_by_its_own_pairs_distance(robot: RobotModel) -> None:
    """With two rows (the QP controllers' default), at rest each row reads
    ``∇d_i·q̈ + s_i ≥ −α²·(d_i − d_safe)`` with its own pair's distance ``d_i``: the second row
    bounded by the closest pair's distance would ask the second pair to brake as if it were as
    close (here 74 mm closer). (Mutant: ``a·a·(d − d_safe)`` for every row instead of
    ``a·a·(col.distances − d_safe)``.)"""
    alpha, d_safe = 10.0, 0.02
    col = SelfCollisionModel.from_file(robot, COLLISION, pairs=2)
    barrier = SelfCollisionBarrier(robot, col, alpha=alpha, d_safe=d_safe)
    barrier.bind(np.zeros((2, robot.n)), np.zeros(2))
    kin = KinematicsState(robot)
    data = robot.model.createData()
    rng = np.random.default_rng(12)
    while True:  # a pose whose two closest pairs are well apart (the 1 nm tie rule plays no part)
        q = rng.uniform(-3.0, 3.0, robot.n)
        first, second = np.partition(_coal_distances(col, robot, data, q), 1)[:2]
        if second - first > 5e-3:
            break
    kin.update(q, np.zeros(robot.n))
    barrier.update(kin)
    expected = [-alpha * alpha * (first - d_safe), -alpha * alpha * (second - d_safe)]
    np.testing.assert_allclose(barrier.lower, expected, rtol=0.0, atol=1e-9)


def test_a_collision_barrier_built_directly_accepts_d_safe_0_and_filters_at_0_2(robot: RobotModel) -> None:
    """``d_safe = 0`` (the capsules may touch, as the config accepts) is a valid bound and a
    negative one is not; the gradient filter's gain defaults to the documented 0.2. (Mutants:
    ``d_safe`` read without ``allow_zero``; the ``filter_gain`` default 0.2 becomes 1.0.)"""
    col = SelfCollisionModel.from_file(robot, COLLISION)
    barrier = SelfCollisionBarrier(robot, col, alpha=10.0, d_safe=0.0)
    assert barrier.d_safe == 0.0
    assert barrier.filter_gain == 0.2
    with pytest.raises(ConfigError, match="self_collision.d_safe"):
        SelfCollisionBarrier(robot, col, alpha=10.0, d_safe=-0.01)


def test_bounds_within_the_sampling_margin_are_accepted(
    robot: RobotModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sampling underestimates the largest closest-capsule distance and manipulability (an
    optimiser took the tool's 4.9 % above the samples), so a bound 5 % above the sampled maximum
    may be met and is accepted; 15 % above is refused. (Mutants: ``SAMPLED_MAX_MARGIN * widest``
    becomes ``widest``, and ``SAMPLED_MAX_MARGIN * most`` becomes ``most``.) On the Gen3 the
    rows' own bound on ``d_safe`` (``MAX_D_SAFE``, 8 cm) is lower: lifted here, as for a model
    whose capsules are closer everywhere."""
    monkeypatch.setattr(constraints, "MAX_D_SAFE", math.inf)
    monkeypatch.setattr(constraints, "MAX_D_SAFE_BY_ROWS", {})
    col = SelfCollisionModel.from_file(robot, COLLISION)
    data = robot.model.createData()
    joint = int(robot.model.frames[robot.frame_id(TOOL)].parentJoint)
    samples = sample_configurations(robot)
    widest = max(float(_coal_distances(col, robot, data, q).min()) for q in samples)
    most = max(_manipulability(robot, data, joint, q) for q in samples)
    assert SelfCollisionBarrier(robot, col, alpha=10.0, d_safe=1.05 * widest).d_safe == 1.05 * widest
    assert SingularityBarrier(robot, TOOL, alpha=10.0, w_min=1.05 * most).w_min == 1.05 * most
    with pytest.raises(ConfigError, match=r"self_collision.d_safe: .*the barrier could never hold"):
        SelfCollisionBarrier(robot, col, alpha=10.0, d_safe=1.15 * widest)
    with pytest.raises(ConfigError, match=r"singularity.w_min: .*the barrier could never hold"):
        SingularityBarrier(robot, TOOL, alpha=10.0, w_min=1.15 * most)


def test_a_singularity_frame_moved_by_five_joints_is_refused_for_its_rank(robot: RobotModel) -> None:
    """A frame moved by fewer than 6 joints has a 6-row Jacobian of rank < 6, ``w = 0`` everywhere:
    refused for that reason, naming the frame and its joint count (the mutant refused it only
    later, as a ``w_min`` above every sampled manipulability). (Mutant: ``dofs < 6`` becomes
    ``dofs < 5``.)"""
    with pytest.raises(
        ConfigError, match=r"singularity.frame: 'spherical_wrist_1_link' is moved by 5 joint\(s\)"
    ):
        SingularityBarrier(robot, "spherical_wrist_1_link", alpha=10.0, w_min=0.01)


def test_a_linear_barrier_refuses_non_finite_or_misshapen_rows_and_is_hard_by_default(
    robot: RobotModel,
) -> None:
    """Extra fixed rows ``C·q̈ ≥ l`` go straight into the QP: a NaN bound or a non-finite ``C``
    is refused when built (``l = −inf``, a row left out, is accepted), and a ``C`` whose width is
    not the arm's joint count is refused when bound, not broadcast over the joints (a 1 × 1 ``C``
    would have bounded the sum of all seven accelerations). Without ``soft`` the rows are hard.
    (Mutants: the ``isnan(lower)`` check dropped; the ``isfinite(C)`` check dropped; the shape
    check in ``_bound`` dropped; the ``soft`` default becomes True.)"""
    row = np.eye(1, robot.n)
    with pytest.raises(ConfigError, match=r"extra: expected finite C \(m × n\) and l \(m,\)"):
        LinearBarrier("extra", row, np.array([math.nan]))
    for bad in (math.inf, math.nan):
        with pytest.raises(ConfigError, match=r"extra: expected finite C"):
            LinearBarrier("extra", np.where(row > 0.0, bad, 0.0), np.zeros(1))
    assert not LinearBarrier("extra", row, np.array([-math.inf])).soft
    narrow = LinearBarrier("narrow", np.ones((1, 1)), np.zeros(1))
    with pytest.raises(ConfigError, match=rf"narrow: C has shape \(1, 1\), expected \(1, {robot.n}\)"):
        narrow.bind(np.zeros((1, robot.n)), np.zeros(1))


def _assert_distances_match_the_segments(robot: RobotModel, capsules: dict, seed: int) -> None:
    """The model of ``capsules`` (one each on two non-adjacent links) gives, at five random poses,
    the distance of the segments minus the radii from Pinocchio's frame placements (m)."""
    col = SelfCollisionModel(robot, CollisionSpec.from_mapping({"capsules": capsules}))
    pair = frozenset(capsules)
    kin = KinematicsState(robot)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        q = rng.uniform(-3.0, 3.0, robot.n)
        kin.update(q, np.zeros(robot.n))
        col.update()
        expected = _capsule_distances(robot, capsules, {pair}, q)[pair]
        assert math.isclose(col.distance, expected, abs_tol=1e-9), (col.distance, expected)


def test_a_capsule_on_a_frame_offset_from_its_joint_sits_where_the_yaml_puts_it(robot: RobotModel) -> None:
    """Capsule coordinates are in the named link's frame: on ``end_effector_link`` (61.5 mm below
    joint 7, turned half about x) a capsule along x must be placed as joint placement · frame
    placement · capsule placement. The Gen3's shipped links all sit on their joint's frame, where
    the order does not show. Reference: segment distance minus radii from Pinocchio's frame
    placements. (Mutant: ``placement * frame.placement`` instead of ``frame.placement *
    placement``.)"""
    capsules = {
        "base_link": [{"from": [0.0, 0.0, 0.01], "to": [0.0, 0.0, 0.12], "radius": 0.05}],
        "end_effector_link": [{"from": [0.0, 0.0, 0.02], "to": [0.08, 0.0, 0.02], "radius": 0.03}],
    }
    _assert_distances_match_the_segments(robot, capsules, seed=21)


def test_the_witness_points_and_normal_are_the_closest_pairs_with_two_rows(robot: RobotModel) -> None:
    """With a row per pair (two here, the controllers' default) :attr:`witness` and :attr:`normal`
    are the closest pair's, as documented, not those of the last row filled (the second closest).
    Reference: coal on every pair through a geometry data of its own. (Mutant: ``if row == 0``
    before setting them becomes ``if True``.)"""
    col = SelfCollisionModel.from_file(robot, COLLISION, pairs=2)
    kin = KinematicsState(robot)
    data = robot.model.createData()
    for q, _, _, p1, p2 in itertools.islice(_clearly_closest(col, robot, data, seed=22), 3):
        kin.update(q, np.zeros(robot.n))
        col.update()
        np.testing.assert_allclose(col.witness[0], p1, rtol=0.0, atol=1e-12)
        np.testing.assert_allclose(col.witness[1], p2, rtol=0.0, atol=1e-12)
        np.testing.assert_allclose(col.normal, (p2 - p1) / np.linalg.norm(p2 - p1), rtol=0.0, atol=1e-9)


def test_a_capsule_of_zero_length_is_a_sphere(robot: RobotModel) -> None:
    """``from == to`` gives a sphere of the radius (a joint housing, say), not a capsule placed
    with a NaN rotation. Reference: point-to-segment distance minus radii from Pinocchio's frame
    placements. (Mutant: the zero-length branch ``length < 1e-12`` becomes ``length < 0``.)"""
    capsules = {
        "base_link": [{"from": [0.0, 0.0, 0.01], "to": [0.0, 0.0, 0.12], "radius": 0.05}],
        "spherical_wrist_2_link": [{"from": [0.0, -0.05, 0.0], "to": [0.0, -0.05, 0.0], "radius": 0.04}],
    }
    _assert_distances_match_the_segments(robot, capsules, seed=24)


def test_a_capsule_with_a_key_besides_from_to_radius_is_refused() -> None:
    """A capsule entry takes exactly ``from``, ``to`` and ``radius``: an extra key (here an
    ``offset`` the model has no use for) is refused, not silently dropped with the capsule placed
    without it. Sizes of exactly 10 m are still within the bound. (Mutants: the key check
    ``set(item) != {...}`` becomes ``not set(item) >= {...}``; the size check's ``>`` becomes
    ``>=``.)"""
    capsule = {"from": [0.0, 0.0, 0.0], "to": [0.0, 0.0, 0.1], "radius": 0.05}
    with pytest.raises(ConfigError, match=r"capsules\.base_link\[0\]: expected keys from, to, radius; got"):
        CollisionSpec.from_mapping({"capsules": {"base_link": [{**capsule, "offset": [0.0, 0.0, 0.2]}]}})
    widest = {"from": [-10.0, 0.0, 0.0], "to": [0.0, 0.0, 10.0], "radius": 10.0}
    assert CollisionSpec.from_mapping({"capsules": {"base_link": [widest]}}).capsules[0].radius == 10.0
