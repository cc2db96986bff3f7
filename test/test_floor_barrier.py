"""The floor barrier (``floor``: the capsules kept above a horizontal plane) of the QP controllers.

- :class:`FloorModel` against an independent computation of each capsule's lowest point
  (forward kinematics of the YAML's segment ends, no coal): which capsules it keeps, the
  distances, ``∇d`` against central finite differences, and the drift against the second time
  derivative of the capsule's height along ``q(t) = q + t·q̇`` (``q̈ = 0``), exact.
- :class:`FloorBarrier`'s rows, its start-up refusals, and the config group.
- MuJoCo (``scene.xml`` has a floor at z = 0): the shipped qpid / hqpid driving the tool into
  the floor hold ``d_safe`` without contact or overspeed; without the barrier the arm hits the
  floor and runs past its speed limits.
"""

from __future__ import annotations

import collections
import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
import pytest
from conftest import URDF_PATH

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers import create_controller
from torque_ctrl_ros.core.controllers.qpid import QPID
from torque_ctrl_ros.core.errors import ConfigError, TargetError
from torque_ctrl_ros.core.qp.collision import FLOOR, CollisionSpec, FloorModel
from torque_ctrl_ros.core.qp.constraints import FloorBarrier
from torque_ctrl_ros.core.qp.tasks import KinematicsState
from torque_ctrl_ros.core.types import JointState

ROOT = Path(__file__).resolve().parent.parent
COLLISION = ROOT / "config" / "gen3_collision.yaml"
SCENE = ROOT / "mjcf" / "scene.xml"
HOME = np.array([0.0, 0.26179939, 3.14159265, -2.26892803, 0.0, 0.95993109, 1.57079633])
#: The tool pointing straight down (tool z along −z of the base).
DOWN = np.diag([1.0, -1.0, -1.0])


def _heights(robot: RobotModel, data: pin.Data, spec: CollisionSpec, q: np.ndarray) -> dict[int, float]:
    """Lowest point (m above z = 0) of every capsule of ``spec`` at ``q``, by capsule index."""
    pin.forwardKinematics(robot.model, data, robot.configuration(q))
    pin.updateFramePlacements(robot.model, data)
    out = {}
    for i, cap in enumerate(spec.capsules):
        placement = data.oMf[robot.frame_id(cap.link)]
        out[i] = min(float(placement.act(p)[2]) for p in (cap.start, cap.end)) - cap.radius
    return out


def test_the_model_keeps_the_capsules_that_move_up_and_down(robot: RobotModel) -> None:
    """The base's and the shoulder's capsules turn only about the vertical first axis: their
    heights never change (the base's reaches below z = 0 by construction), so they get no pair."""
    floor = FloorModel.from_file(robot, COLLISION)
    spec = CollisionSpec.from_file(COLLISION)
    assert floor.fixed_links == ["base_link", "shoulder_link"]
    assert [b for a, b in floor.pair_links] == [c.link for c in spec.capsules][2:]
    assert all(a == FLOOR for a, _ in floor.pair_links)
    data = robot.model.createData()
    rng = np.random.default_rng(7)
    seen = [_heights(robot, data, spec, rng.uniform(-3.0, 3.0, robot.n)) for _ in range(5)]
    assert all(h[0] == seen[0][0] < 0.0 and h[1] == pytest.approx(seen[0][1], abs=1e-12) for h in seen)
    assert len({round(h[7], 6) for h in seen}) == 5  # the bracelet's does change


def test_the_distances_gradients_and_drifts_match_an_independent_computation(robot: RobotModel) -> None:
    spec = CollisionSpec.from_file(COLLISION)
    floor = FloorModel(robot, spec, height=0.1, pairs=3)
    kin = KinematicsState(robot)
    data = robot.model.createData()
    moving = list(range(2, len(spec.capsules)))
    rng = np.random.default_rng(11)
    checked = 0
    while checked < 30:
        q = rng.uniform(-3.0, 3.0, robot.n)
        v = rng.normal(0.0, 1.0, robot.n)
        heights = _heights(robot, data, spec, q)
        order = sorted(moving, key=heights.__getitem__)
        if min(heights[b] - heights[a] for a, b in itertools.pairwise(order)) < 1e-4:
            continue  # two capsules tied: the rows could take either
        checked += 1
        kin.update(q, v)
        d = floor.update(kin.v, kin.JJd)
        assert d == floor.distance
        np.testing.assert_allclose(floor.distances, [heights[i] - 0.1 for i in order[:3]], rtol=0, atol=1e-9)
        assert floor.tracked_pairs == [(FLOOR, spec.capsules[i].link) for i in order[:3]]
        for row, i in enumerate(order[:3]):

            def height(x: np.ndarray, i: int = i) -> float:
                return _heights(robot, data, spec, x)[i]

            h = 1e-6
            grad = np.array([(height(q + h * e) - height(q - h * e)) / (2 * h) for e in np.eye(robot.n)])
            np.testing.assert_allclose(floor.gradients[row], grad, rtol=0.0, atol=1e-7)
            # d̈ at q̈ = 0 along q + t·q̇: the lowest end of the segment is a material point of the
            # link (fourth-order central differences); the witness on the capsule's surface
            # would be off by r·(|ω|² − ω_z²).
            t = 1e-3
            z = [height(q + k * t * v) for k in (-2, -1, 0, 1, 2)]
            drift = (-z[0] + 16.0 * z[1] - 30.0 * z[2] + 16.0 * z[3] - z[4]) / (12.0 * t * t)
            assert math.isclose(floor.drifts[row], drift, abs_tol=1e-6)


def test_the_barrier_rows_and_diagnostics(robot: RobotModel) -> None:
    floor = FloorModel.from_file(robot, COLLISION, 0.0, 2)
    barrier = FloorBarrier(robot, floor, alpha=10.0, d_safe=0.02)
    C, lower = np.zeros((2, robot.n)), np.zeros(2)
    barrier.bind(C, lower)
    kin = KinematicsState(robot)
    rng = np.random.default_rng(5)
    q, v = rng.uniform(-2.0, 2.0, robot.n), rng.normal(0.0, 1.0, robot.n)
    kin.update(q, v)
    barrier.update(kin)
    np.testing.assert_array_equal(C, floor.gradients)
    expected = -floor.drifts - 20.0 * floor.gradients.dot(v) - 100.0 * (floor.distances - 0.02)
    np.testing.assert_allclose(lower, expected, rtol=1e-12, atol=1e-12)
    assert barrier.margin == floor.distances[0] - 0.02 == barrier.distance - 0.02


def test_the_model_and_barrier_refuse_what_cannot_work(robot: RobotModel) -> None:
    with pytest.raises(ConfigError, match=r"^floor.rows: expected an integer in \[1, 6\] .* got 7$"):
        FloorModel.from_file(robot, COLLISION, 0.0, 7)
    with pytest.raises(ConfigError, match=r"^floor.height: expected a finite height within ±10 m, got nan"):
        FloorModel.from_file(robot, COLLISION, math.nan, 1)
    only_fixed = CollisionSpec.from_mapping(
        {"capsules": {"base_link": {"from": [0, 0, 0], "to": [0, 0, 0.1], "radius": 0.05}}}
    )
    with pytest.raises(ConfigError, match=r"^floor: no capsule of the collision model moves up or down$"):
        FloorModel(robot, only_fixed)
    floor = FloorModel.from_file(robot, COLLISION, 0.0, 1)
    # The lowest moving capsule never rises much more than ~0.55 m above the base's plane.
    with pytest.raises(ConfigError, match=r"^floor.d_safe: 2.0 m is more than .* could never hold$"):
        FloorBarrier(robot, floor, alpha=10.0, d_safe=2.0)
    high = FloorModel.from_file(robot, COLLISION, 1.5, 1)  # a plane above everything
    with pytest.raises(ConfigError, match=r"^floor.d_safe: 0.0 m .* z = 1.5 m .* could never hold$"):
        FloorBarrier(robot, high, alpha=10.0, d_safe=0.0)
    with pytest.raises(ConfigError, match=r"^floor.alpha: expected at least 1 1/s"):
        FloorBarrier(robot, floor, alpha=0.5, d_safe=0.02)


def test_a_target_below_the_plane_is_refused(robot: RobotModel) -> None:
    """A frame target under the plane is refused naming the plane; on it or just above it (a frame
    beyond the capsules may get there) it is taken."""
    barrier = FloorBarrier(robot, FloorModel.from_file(robot, COLLISION, 0.1, 1), alpha=10.0, d_safe=0.02)
    with pytest.raises(
        TargetError,
        match=r"^tool target: position \(0.4, 0, 0.09\) m is below the floor barrier's plane z = 0.1 m "
        r"\(floor.height\), which the arm is kept above$",
    ):
        barrier.check_target(np.array([0.4, 0.0, 0.09]), "tool target")
    with pytest.raises(TargetError, match="below the floor barrier's plane"):
        barrier.check_target(np.array([0.4, 0.0, math.nan]), "tool target")
    for z in (0.1, 0.11, 0.5):
        barrier.check_target(np.array([0.4, 0.0, z]), "tool target")


def _qpid_params(**extra: Any) -> dict[str, Any]:
    return {"tasks": ["tool"], "tool.type": "position", "tool.frame": "end_effector_link", **extra}


def test_the_config_group(robot: RobotModel) -> None:
    """On by default (the plane z = 0, 2 cm, three rows); its keys reach the barrier; bad values
    are refused with the parameter's name."""
    qpid = QPID.from_params(robot, _qpid_params())
    assert qpid.floor_barrier is not None and qpid.floor_barrier in qpid.barriers
    assert (qpid.floor_barrier.d_safe, qpid.floor_barrier.rows, qpid.floor_barrier.floor.height) == (
        0.02,
        3,
        0.0,
    )
    custom = QPID.from_params(
        robot,
        _qpid_params(**{"floor.height": -0.1, "floor.d_safe": 0.05, "floor.rows": 3, "floor.alpha": 20}),
    )
    fb = custom.floor_barrier
    assert fb is not None and (fb.d_safe, fb.rows, fb.floor.height, fb.alpha) == (0.05, 3, -0.1, 20.0)
    off = QPID.from_params(robot, _qpid_params(**{"floor.enabled": False}))
    assert off.floor_barrier is None and "floor" not in [b.name for b in off.barriers]
    state = JointState(HOME, np.zeros(7))
    off.compute(state, off.hold_reference(state))
    assert "floor_clearance" not in off.diagnostics()
    for key, value, message in [
        ("floor.rows", 0, r"^qpid.floor.rows: expected an integer in \[1, 6\]"),
        ("floor.height", "up", r"^qpid.floor.height: "),
        ("floor.d_safe", -0.01, r"^qpid.floor.d_safe: expected a finite number >= 0"),
        ("floor.model", "no_such_file.yaml", r"^qpid.floor.model: .*no_such_file.yaml"),
        ("floor.d_safe", 1.0, r"^qpid.floor.d_safe: 1.0 m is more than"),
        ("floor.wall", 1.0, r"^qpid.floor: unknown key\(s\) \['wall'\]"),
    ]:
        with pytest.raises(ConfigError, match=message):
            QPID.from_params(robot, _qpid_params(**{key: value}))
    qpid.compute(state, qpid.hold_reference(state))
    info = qpid.diagnostics()
    assert info["floor_clearance"] == pytest.approx(0.2398, abs=1e-4)  # joint 2's sphere at home
    assert info["margin.floor"] == pytest.approx(info["floor_clearance"] - 0.02, abs=1e-12)


def test_a_start_below_d_safe_is_named(robot: RobotModel) -> None:
    """At home the lowest moving capsule point is joint 2's sphere, 0.2398 m up (where it stays
    whatever the pose: the barrier accepts a plane up to ~0.22 m with d_safe 2 cm)."""
    qpid = QPID.from_params(robot, _qpid_params(**{"floor.height": 0.2}))
    assert qpid.bounds_past(JointState(HOME, np.zeros(7))) == []
    low = QPID.from_params(robot, _qpid_params(**{"floor.height": 0.2, "floor.d_safe": 0.042}))
    (note,) = low.bounds_past(JointState(HOME, np.zeros(7)))
    assert note.startswith(
        "floor: the lowest capsule is 39.8 mm above the plane z = 0.2 m, less than d_safe 42 mm"
    )


def _into_the_floor(
    name: str,
    enabled: bool,
    late: int,
    target: tuple[float, float, float],
    rotation: np.ndarray = DOWN,
    **params: Any,
) -> dict[str, float]:
    """The shipped ``name`` (floor barrier ``enabled`` or not, ``params`` on top) 4 s toward the
    tool at ``target`` (m; pointing down unless ``rotation``), the torque applied ``late`` control
    steps after its state: the lowest moving capsule's height (m), the largest |q̇|/limit, the
    steps with a MuJoCo contact."""
    from ros_helpers import shipped_parameters

    from torque_ctrl_ros.sim.plant import MujocoPlant

    robot = RobotModel.from_urdf_file(URDF_PATH)
    monitor = FloorModel.from_file(RobotModel.from_urdf_file(URDF_PATH), COLLISION)
    prefix = name + "."
    section = {
        k[len(prefix) :]: v for k, v in shipped_parameters("controller_node").items() if k.startswith(prefix)
    }
    controller = create_controller(name, robot, {**section, "floor.enabled": enabled, **params})
    home = JointState(HOME, np.zeros(7))
    reference = controller.hold_reference(home)
    reference["tool"] = pin.SE3(rotation, np.array(target))
    plant = MujocoPlant(SCENE, robot.joint_names)
    plant.set_state(HOME, np.zeros(7))
    queue = collections.deque([controller.compute(home, reference).tau] * late)
    lowest, speed, contacts = math.inf, 0.0, 0
    for _ in range(round(4.0 / plant.timestep)):
        out = controller.compute(JointState(plant.q, plant.v), reference)
        assert out.info["fallback"] == 0.0
        queue.append(out.tau)
        plant.set_torque(queue.popleft())
        plant.step()
        lowest = min(lowest, monitor.closest_distance(plant.q))
        speed = max(speed, float(np.max(np.abs(plant.v) / robot.velocity_limit)))
        contacts += int(plant.data.ncon > 0)
    return {"lowest": lowest, "speed": speed, "contacts": contacts}


@pytest.mark.parametrize(("name", "late"), [("qpid", 1), ("hqpid", 1), ("qpid", 5), ("hqpid", 5)])
def test_the_shipped_qp_controllers_keep_the_arm_off_the_floor(name: str, late: int) -> None:
    """A tool target 5 cm below the floor of ``scene.xml``, the torque 1 or 5 ms late: the barrier
    holds the lowest capsule at ``d_safe`` (2 cm; measured 19.9–20.0 mm) without contact. 5 ms
    late the speeds overshoot by 3.1 %, as toward a target 10 cm up without the floor barrier
    (3.4 %): the velocity barrier's own lateness (docs/controllers.md)."""
    seen = _into_the_floor(name, True, late, (0.4, 0.0, -0.05))
    print(f"\n[floor] {name} {late} ms late: {seen}")
    assert seen["contacts"] == 0
    assert 0.019 < seen["lowest"] < 0.021
    assert seen["speed"] < (1.01 if late == 1 else 1.04)


def test_without_the_floor_barrier_the_arm_hits_the_floor() -> None:
    """The same run with ``floor.enabled: false``: the capsules go below the plane, MuJoCo's floor
    stops the arm, and the joints run past their speed limits in the contact (3.56 times measured)."""
    seen = _into_the_floor("qpid", False, 1, (0.4, 0.0, -0.05))
    print(f"\n[floor] qpid without the barrier: {seen}")
    assert seen["contacts"] > 1000
    assert seen["lowest"] < -0.02
    assert seen["speed"] > 1.5


@pytest.mark.parametrize("rows", [2, 3])
def test_three_rows_hold_where_a_third_capsule_falls_unchecked_beside_two(rows: int) -> None:
    """The tool horizontal at (0.5, 0, 0) m, turned 270° about its axis (MuJoCo, 1 ms late): with two
    rows (the default until 2026-12-08) half_arm_2 and the forearm held them while the bracelet's
    capsule fell unchecked, and took a row too late: 17.4 mm, 2.6 mm inside d_safe (a review); with
    three (the default) it stays at 20.0 mm."""
    rotation = pin.rpy.rpyToMatrix(np.pi / 2, 0.0, 0.0) @ pin.rpy.rpyToMatrix(0.0, 0.0, np.radians(270.0))
    seen = _into_the_floor("qpid", True, 1, (0.5, 0.0, 0.0), rotation, **{"floor.rows": rows})
    print(f"\n[floor] {rows} row(s), tool horizontal: {seen}")
    if rows == 3:
        assert seen["lowest"] > 0.0199 and seen["contacts"] == 0
    else:
        assert seen["lowest"] < 0.019


@pytest.mark.parametrize("rows", [1, 2])
def test_two_rows_hold_where_two_capsules_near_the_floor_take_turns_in_one(rows: int) -> None:
    """One of 16 random tool poses near the floor (MuJoCo, 1 ms late): with one row, two capsules
    near the plane took turns in it and sank onto the floor (−0.2 mm, MuJoCo contacts); with two
    (the default) the lowest stayed at 19.8 mm. Another pose of the sweep sank to 10.5 mm with one."""
    rotation = pin.rpy.rpyToMatrix(-0.2395, -2.1283, 0.0066)
    seen = _into_the_floor("qpid", True, 1, (-0.2206, -0.1401, 0.0728), rotation, **{"floor.rows": rows})
    print(f"\n[floor] {rows} row(s): {seen}")
    if rows == 2:
        assert seen["lowest"] > 0.019 and seen["contacts"] == 0
    else:
        assert seen["lowest"] < 0.005
