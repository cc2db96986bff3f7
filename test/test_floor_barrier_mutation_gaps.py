"""Behaviours of the floor barrier that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) of ``core/qp/collision.py``
(:class:`FloorModel`), ``core/qp/constraints.py`` (:class:`FloorBarrier`) or the QP controllers'
``floor`` group it was written to catch. Reference heights come from forward kinematics of the
YAML's segment ends (``test_floor_barrier._heights``), not from coal. Pure core: no ROS.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from test_floor_barrier import COLLISION, _heights, _qpid_params

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers.qpid import QPID
from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.core.qp.collision import FLOOR, CollisionSpec, FloorModel
from torque_ctrl_ros.core.qp.constraints import FloorBarrier
from torque_ctrl_ros.core.qp.tasks import KinematicsState


def _spread_out(robot: RobotModel, spec: CollisionSpec, seed: int) -> tuple[np.ndarray, dict[int, float]]:
    """A random configuration whose moving capsules (all but the first two) are all at least 1 mm
    apart in height, the lowest below joint 2's sphere (0.24 m, whose height no joint changes), and
    their lowest points' heights by capsule index."""
    data = robot.model.createData()
    rng = np.random.default_rng(seed)
    while True:
        q = rng.uniform(-2.5, 2.5, robot.n)
        heights = _heights(robot, data, spec, q)
        moving = sorted(heights[i] for i in range(2, len(spec.capsules)))
        if moving[0] < 0.2 and min(b - a for a, b in itertools.pairwise(moving)) > 1e-3:
            return q, heights


def test_the_floor_model_reports_the_lowest_capsules_witness_normal_and_drift(robot: RobotModel) -> None:
    """After :meth:`FloorModel.update` the closest pair's scalars describe the lowest capsule: the
    normal is ``+z`` (up, away from the plane), the witness pair is (the point on the plane, the
    capsule's lowest point straight above it, ``distance`` higher), and ``closest_pair`` /
    ``drift`` are row 0's. (Mutants: ``self.normal = (0, 0, −1)`` and the witness pair swapped,
    ``(p2, getNearestPoint1())``, in ``FloorModel._pair_terms``.)"""
    spec = CollisionSpec.from_file(COLLISION)
    floor = FloorModel(robot, spec, height=0.1, pairs=2)
    kin = KinematicsState(robot)
    q, heights = _spread_out(robot, spec, 3)
    kin.update(q, np.random.default_rng(4).normal(0.0, 1.0, robot.n))
    floor.update(kin.v, kin.JJd)
    lowest = min(range(2, len(spec.capsules)), key=heights.__getitem__)
    assert floor.closest_pair == floor.tracked_pairs[0] == (FLOOR, spec.capsules[lowest].link)
    assert floor.distance == pytest.approx(heights[lowest] - 0.1, abs=1e-9)
    assert floor.drift == floor.drifts[0] and floor.drifts[1] != 0.0
    np.testing.assert_array_equal(floor.normal, [0.0, 0.0, 1.0])
    on_plane, on_capsule = floor.witness
    assert on_plane[2] == pytest.approx(0.1, abs=1e-12)
    assert on_capsule[2] == pytest.approx(heights[lowest], abs=1e-9)
    np.testing.assert_allclose(on_plane[:2], on_capsule[:2], rtol=0.0, atol=1e-12)


def test_every_moving_capsule_may_have_a_row(robot: RobotModel) -> None:
    """``floor.rows`` up to the number of moving capsules (6 on the Gen3) is accepted, and then
    every moving capsule has a row, lowest first, each at its own height. (Mutant: the upper
    bound ``pairs <= len(moving)`` made ``pairs < len(moving)`` in ``FloorModel.__init__``.)"""
    spec = CollisionSpec.from_file(COLLISION)
    floor = FloorModel(robot, spec, height=0.0, pairs=6)
    assert floor.pairs == floor.num_pairs == 6
    kin = KinematicsState(robot)
    q, heights = _spread_out(robot, spec, 8)
    kin.update(q, np.zeros(robot.n))
    floor.update(kin.v, kin.JJd)
    order = sorted(range(2, len(spec.capsules)), key=heights.__getitem__)
    assert floor.tracked_pairs == [(FLOOR, spec.capsules[i].link) for i in order]
    np.testing.assert_allclose(floor.distances, [heights[i] for i in order], rtol=0.0, atol=1e-9)
    assert np.all(np.linalg.norm(floor.gradients, axis=1) > 1e-3)


def test_the_floor_barriers_gradient_is_its_first_row(robot: RobotModel) -> None:
    """:attr:`FloorBarrier.gradient` is the lowest capsule's row, the first row of ``C``, after
    each update (as the self-collision barrier's). (Mutant: ``self.gradient = np.zeros(n)``
    instead of the view ``self.gradients[0]`` in ``FloorBarrier.__init__``.)"""
    floor = FloorModel.from_file(robot, COLLISION, 0.0, 2)
    barrier = FloorBarrier(robot, floor, alpha=10.0, d_safe=0.02)
    C, lower = np.zeros((2, robot.n)), np.zeros(2)
    barrier.bind(C, lower)
    kin = KinematicsState(robot)
    q, _ = _spread_out(robot, CollisionSpec.from_file(COLLISION), 5)
    kin.update(q, np.zeros(robot.n))
    barrier.update(kin)
    assert np.linalg.norm(C[0]) > 1e-3
    np.testing.assert_array_equal(barrier.gradient, C[0])


def test_an_update_without_velocities_leaves_no_drift_behind(robot: RobotModel) -> None:
    """``FloorModel.update(None)`` (heights and gradients only, as a monitor calls it) sets every
    row's drift to 0, not the drift of the last update that had velocities; distances and
    gradients are those of the configuration. (Mutant: ``self.drifts[row] = 0.0`` dropped from
    the ``v is None`` branch of ``FloorModel._pair_terms``.)"""
    floor = FloorModel.from_file(robot, COLLISION, 0.0, 2)
    kin = KinematicsState(robot)
    q, _ = _spread_out(robot, CollisionSpec.from_file(COLLISION), 6)
    kin.update(q, np.random.default_rng(2).normal(0.0, 1.0, robot.n))
    floor.update(kin.v, kin.JJd)
    moving = floor.distances.copy(), floor.gradients.copy()
    assert np.all(floor.drifts != 0.0)
    floor.update(None, kin.JJd)
    assert floor.drift == 0.0
    np.testing.assert_array_equal(floor.drifts, [0.0, 0.0])
    np.testing.assert_array_equal(floor.distances, moving[0])
    np.testing.assert_array_equal(floor.gradients, moving[1])


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("floor.d_safe", -0.01, r"^qpid\.floor\.d_safe: expected a finite number >= 0, got -0\.01"),
        ("floor.model", "", r"^qpid\.floor\.model: expected a file name, got ''"),
        ("floor.height", [0.1], r"^qpid\.floor\.height: expected one number \(m\), got \[0\.1\]"),
    ],
)
def test_a_floor_group_that_is_off_still_refuses_bad_values(
    robot: RobotModel, key: str, value: Any, message: str
) -> None:
    """The ``floor`` group's own values are checked with the config, whether or not it is on (as
    the other groups'): a bad ``d_safe``, an empty ``model`` or a list for ``height`` in a group
    switched off is refused by name rather than kept until someone turns it on; a ``d_safe`` given
    as text becomes a number in the config. (Mutant: the ``floor.d_safe`` check and conversion
    dropped from ``_check_barrier``'s ``FloorConfig`` branch: with the group on, ``FloorBarrier``
    refuses a bad value itself, so only a group that is off, or the config, shows it. Dropping
    the ``model`` or the ``height`` list check is caught by test_param_fuzz too.)"""
    with pytest.raises(ConfigError, match=message):
        QPID.from_params(robot, _qpid_params(**{"floor.enabled": False, key: value}))
    config = QPID.from_params(robot, _qpid_params(**{"floor.d_safe": "0.05"})).config
    assert config.floor.d_safe == 0.05 and isinstance(config.floor.d_safe, float)


def test_the_barrier_bound_takes_the_capsules_true_acceleration_at_zero_torque_change(
    robot: RobotModel,
) -> None:
    """The floor row's bound is ``−d̈₀ − 2α·ḋ − α²·(d − d_safe)`` with ``ḋ`` and ``d̈₀`` (at ``q̈ = 0``)
    of the lowest capsule's height along ``q + t·q̇``, from finite differences of forward
    kinematics: the barrier passes the joint velocities to the model, so the drift is in the
    bound. (Mutant: ``floor.update(None, kin.JJd)`` in ``FloorBarrier.update``, drift 0; the
    existing row test compares against the model's own drifts, which that mutant zeroes alike,
    and only a self-collision MuJoCo run's margin caught it.)"""
    spec = CollisionSpec.from_file(COLLISION)
    barrier = FloorBarrier(robot, FloorModel(robot, spec, 0.0, 1), alpha=10.0, d_safe=0.02)
    C, lower = np.zeros((1, robot.n)), np.zeros(1)
    barrier.bind(C, lower)
    q, heights = _spread_out(robot, spec, 9)
    v = np.random.default_rng(10).normal(0.0, 1.0, robot.n)
    kin = KinematicsState(robot)
    kin.update(q, v)
    barrier.update(kin)
    lowest = min(range(2, len(spec.capsules)), key=heights.__getitem__)
    data = robot.model.createData()
    t = 1e-3
    z = [_heights(robot, data, spec, q + k * t * v)[lowest] for k in (-2, -1, 0, 1, 2)]
    rate = (z[0] - 8.0 * z[1] + 8.0 * z[3] - z[4]) / (12.0 * t)
    accel = (-z[0] + 16.0 * z[1] - 30.0 * z[2] + 16.0 * z[3] - z[4]) / (12.0 * t * t)
    assert abs(accel) > 0.05  # a drift worth pinning
    expected = -accel - 20.0 * rate - 100.0 * (z[2] - 0.02)
    assert lower[0] == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(
    ("group", "attribute"), [("floor", "floor_barrier"), ("self_collision", "collision_barrier")]
)
def test_a_distance_barrier_configured_hard_gets_no_slack(
    robot: RobotModel, group: str, attribute: str
) -> None:
    """``<group>.soft: false`` makes the floor's (and the self-collision's, both built on
    ``_DistanceBarrier``) rows hard: the barrier is not soft and the QP carries that many fewer
    slack columns. (Mutants: ``soft=True`` passed to ``FloorBarrier`` in ``_build_barriers``, and
    ``super().__init__(model.pairs, soft=True)`` in ``_DistanceBarrier.__init__``: the setting
    ignored, the rows silently soft.)"""
    soft = QPID.from_params(robot, _qpid_params())
    hard = QPID.from_params(robot, _qpid_params(**{f"{group}.soft": False}))
    assert getattr(soft, attribute).soft is True
    barrier = getattr(hard, attribute)
    assert barrier.soft is False and barrier.rows >= 1
    assert hard.n_s == soft.n_s - barrier.rows
