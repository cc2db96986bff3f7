"""Target guards, called directly (no DDS): duplicate joint names, unreachable pose targets, joint
targets with a velocity, and trajectories (size, and the motion between waypoints)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
import pytest
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import PoseStamped
from ros_helpers import FakeTargetNode, shipped_parameters
from sensor_msgs.msg import JointState as JointStateMsg
from test_target_tracking import _closed_loop_peak_speeds
from trajectory_msgs.msg import JointTrajectory as TrajectoryMsg
from trajectory_msgs.msg import JointTrajectoryPoint

from torque_ctrl_ros.core import JointState, RobotModel
from torque_ctrl_ros.core.controllers import AchdRnea, ComputedTorque, ComputedTorqueConfig, create_controller
from torque_ctrl_ros.core.errors import StateError, TargetError
from torque_ctrl_ros.core.reach import REACH_MARGIN, STRETCH_MARGIN, Reach
from torque_ctrl_ros.core.safety import JointNameMap
from torque_ctrl_ros.core.target_checks import base_frame, check_joint_limits
from torque_ctrl_ros.core.trajectory import JointTrajectory
from torque_ctrl_ros.nodes import targets
from torque_ctrl_ros.nodes.conversions import JointStateDecoder
from torque_ctrl_ros.nodes.params import controller_node_config

TOOL = "end_effector_link"


def _joint_source(robot: RobotModel) -> tuple[FakeTargetNode, Any]:
    node = FakeTargetNode()
    ctrl = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
    return node, targets.JointTargetSource(node, ctrl)  # type: ignore[arg-type]


def _qp_source(robot: RobotModel, name: str = "qpid") -> tuple[FakeTargetNode, Any]:
    params = shipped_parameters("controller_node") | {"controller": name}
    ctrl = create_controller(name, robot, controller_node_config(params).controller_params)
    node = FakeTargetNode()
    return node, targets.TaskTargetSource(node, ctrl)  # type: ignore[arg-type]


def _trajectory_msg(names: list[str], points: list[tuple[float, Any, Any]]) -> TrajectoryMsg:
    """``points``: (time_from_start s, positions, velocities or None)."""
    msg = TrajectoryMsg(joint_names=names)
    for t, q, v in points:
        s, ns = divmod(round(t * 1e9), 10**9)
        p = JointTrajectoryPoint(positions=[float(x) for x in q], time_from_start=Duration(sec=s, nanosec=ns))
        if v is not None:
            p.velocities = [float(x) for x in v]
        msg.points.append(p)
    return msg


def _pose(position: Any, frame: str = "base_link") -> PoseStamped:
    msg = PoseStamped()
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(x) for x in position)
    msg.pose.orientation.w = 1.0
    return msg


# ------------------------------------------------------------------ 1. duplicate joint names
def test_a_duplicated_joint_name_is_refused_and_extra_duplicates_are_not() -> None:
    m = JointNameMap(["a", "b", "c"])
    for _ in range(2):  # a refused name tuple is not cached: refused every time
        with pytest.raises(StateError, match=r"\['b'\] named more than once"):
            m.indices(["a", "b", "c", "b"])
    idx = m.indices(["x", "c", "x", "a", "b"])  # a joint we do not need may repeat
    np.testing.assert_array_equal(idx, [3, 4, 1])
    assert m.indices(("x", "c", "x", "a", "b")) is idx  # cached: no check on the hot path


def test_a_joint_state_naming_a_joint_twice_is_refused(robot: RobotModel) -> None:
    names = list(robot.joint_names)
    msg = JointStateMsg(
        name=[*names, "joint_3"], position=[0.1] * 7 + [math.nan], velocity=[0.0] * 7 + [math.nan]
    )
    with pytest.raises(StateError, match="joint_3"):
        JointStateDecoder(names).decode(msg)


def test_targets_naming_a_joint_twice_are_refused(robot: RobotModel) -> None:
    names = list(robot.joint_names)
    node, source = _joint_source(robot)
    node.callbacks["~/joint_target"](JointStateMsg(name=[*names, "joint_3"], position=[0.1] * 7 + [math.nan]))
    assert source.rejected == 1 and "joint_3" in source.last_error and "more than once" in source.last_error
    node.callbacks["~/joint_trajectory"](
        _trajectory_msg([*names, "joint_3"], [(1.0, [0.1] * 7 + [2.0], None)])
    )
    assert source.rejected == 2 and "joint_3" in source.last_error and source.received == 0
    assert source.last_error.startswith("trajectory joint_names: joint(s) ['joint_3'] named more than once")
    # A joint left out: the message names the message it is missing from (not the joint states).
    node.callbacks["~/joint_trajectory"](_trajectory_msg(names[:6], [(1.0, [0.1] * 6, None)]))
    assert source.rejected == 3 and source.last_error.startswith(
        "trajectory joint_names lacks joint(s) ['joint_7']"
    )
    node.callbacks["~/joint_target"](JointStateMsg(name=names[1:], position=[0.1] * 6))
    assert source.rejected == 4 and source.last_error.startswith("joint target lacks joint(s) ['joint_1']")
    node, qp = _qp_source(robot)
    node.callbacks["~/joint_target"](JointStateMsg(name=[*names, "joint_3"], position=[0.1] * 7 + [math.nan]))
    assert qp.rejected == 1 and "joint_3" in qp.last_error and qp.received == 0


# ------------------------------------------------------------------ 2. pose targets out of reach
def test_each_kind_of_refusal_is_logged_at_once_and_a_flood_of_one_kind_is_throttled(
    robot: RobotModel,
) -> None:
    """docs/interfaces.md: a refused target is logged with the reason. Under one throttle for every
    refusal, six bad targets 0.3 s apart logged three reasons; now each kind of refusal has its own,
    and only a flood of one kind (values varying) is held back, the next line saying how much."""
    names = list(robot.joint_names)
    home = [0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57]
    node, source = _joint_source(robot)
    source.log.period = 3600.0  # every refusal below comes within one period, however slow the machine
    bad = [
        JointStateMsg(name=[*names[:6], "joint_8"], position=home),
        JointStateMsg(name=names, position=home[:6]),
        JointStateMsg(name=names, position=[math.nan, *home[1:]]),
        JointStateMsg(name=names, position=[0.0, 5.0, *home[2:]]),
        JointStateMsg(name=names, position=home, velocity=[0.1] * 7),
        JointStateMsg(name=[*names, "joint_3"], position=[*home, 0.0]),
    ]
    for msg in bad:
        node.callbacks["~/joint_target"](msg)
    assert source.rejected == 6 and len(node.errors) == 6, node.errors
    assert len({targets.refusal_kind(line) for line in node.errors}) == 6
    for joint in (1, 3, 5, 1, 3):  # beyond the limits again, at joint_2, 4 or 6
        node.callbacks["~/joint_target"](
            JointStateMsg(name=names, position=[*home[:joint], 5.0, *home[joint + 1 :]])
        )
    assert source.rejected == 11 and len(node.errors) == 6
    source.log.flush()
    assert len(node.errors) == 7 and "limits at ['joint_4']" in node.errors[-1]
    assert node.errors[-1].endswith("(and 4 more since the last such message)"), node.errors[-1]


def test_reach_is_an_outer_bound_as_tight_as_the_stretched_arm(robot: RobotModel) -> None:
    """joint_2's origin turns on a circle about joint_1's axis (5.4 mm radius, 0.285 m above the
    base); the offsets after it (URDF, m) bound how far the tool can be from that circle."""
    reach = Reach.of(robot, TOOL)
    after_joint_2 = [0.210477, 0.210477, 0.208527, 0.10593, 0.10593, 0.0615]
    assert reach.radius == pytest.approx(sum(after_joint_2) + REACH_MARGIN, abs=1e-4)
    assert reach.circle_radius == pytest.approx(0.005375) and reach.joint == "joint_1"
    np.testing.assert_allclose(reach.center, [0.0, 0.0, 0.15643 + 0.12838], atol=1e-12)
    bound = reach.radius - REACH_MARGIN
    rng = np.random.default_rng(0)
    lo = np.where(np.isfinite(robot.position_lower), robot.position_lower, -np.pi)
    hi = np.where(np.isfinite(robot.position_upper), robot.position_upper, np.pi)
    for _ in range(2000):
        assert reach.distance(robot.frame_placement(rng.uniform(lo, hi), TOOL).translation) <= bound
    stretched = reach.distance(robot.frame_placement(np.zeros(robot.n), TOOL).translation)
    assert bound - 1e-3 < stretched <= bound  # straight up: the offsets nearly line up
    # Measured from the base origin the bound had been 1.198 m in every direction; sideways the
    # arm reaches 0.90 m (0.14 m short of (1.0, 0, 0), 0.28 m of (1.15, 0, 0)).
    for out in ([1.15, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -0.9]):
        with pytest.raises(TargetError, match="joint_1's rotation"):
            reach.check(np.array(out), "target")
    reach.check(
        robot.frame_placement(np.array([0.0, 1.5, 0.0, 0.0, 0.0, 0.0, 0.0]), TOOL).translation, "target"
    )
    base = Reach.of(robot, "base_link")  # a frame on the root body does not move
    assert base.radius == REACH_MARGIN and base.distance(np.zeros(3)) == 0.0

    # A prismatic first joint (RobotModel refuses such a model; Reach on its own too): its travel
    # is no offset, and the sum of the offsets had been taken for a bound the tool passed by 1 m.

    from torque_ctrl_ros.core.errors import ConfigError

    urdf = re.sub(
        r'<joint name="joint_1" type="continuous">',
        '<joint name="joint_1" type="prismatic">',
        (Path(__file__).parents[1] / "urdf" / "gen3.urdf").read_text(),
    )
    assert 'type="prismatic"' in urdf

    class Prismatic:
        model = pin.buildModelFromXML(urdf)

        def frame_id(self, name: str) -> int:
            return int(self.model.getFrameId(name))

    with pytest.raises(ConfigError, match="joint_1.*not one revolute DoF"):
        Reach.of(Prismatic(), TOOL)  # type: ignore[arg-type]


@pytest.mark.parametrize("x", [1000.0, 1e200, 1.3, 1.0])
@pytest.mark.filterwarnings("error::RuntimeWarning")  # 1e200 m is refused, not warned about
def test_achd_pose_targets_out_of_reach_are_refused(robot: RobotModel, x: float) -> None:
    node = FakeTargetNode()
    source = targets.PoseTargetSource(node, AchdRnea(robot))  # type: ignore[arg-type]
    node.callbacks["~/target_pose"](_pose((x, 0.0, 0.3)))
    assert source.rejected == 1 and source.received == 0
    assert re.search(
        r"target pose: position \(.*, 0, 0\.3\) m is .* m from the circle joint_1's rotation moves the "
        r"next joint on, farther than the rest of the chain reaches \(0\.913 m\)",
        source.last_error,
    ), source.last_error
    distance = Reach.of(robot, TOOL).distance(np.array([x, 0.0, 0.3]))
    assert f"is {distance:.4g} m" in source.last_error
    node.callbacks["~/target_pose"](_pose((0.5, 0.0, 0.3)))  # within reach
    assert source.received == 1 and source.rejected == 1


@pytest.mark.parametrize("floor_height", [0.0, 0.2, -0.2])
def test_achd_pose_targets_below_the_floors_plane_are_refused(robot: RobotModel, floor_height: float) -> None:
    """A reachable tool target 15 cm below ``achd_rnea.floor_height``: refused, naming the plane
    and the parameter; one 1 mm above it is taken. (Mutant: the achd_rnea intake without the
    plane's check: taken, the target drove the arm into the floor in MuJoCo.)"""
    from torque_ctrl_ros.core.controllers.cartesian import AchdRneaConfig

    node = FakeTargetNode()
    ctrl = AchdRnea(robot, AchdRneaConfig.create(robot.n, floor_height=floor_height))
    source = targets.PoseTargetSource(node, ctrl)  # type: ignore[arg-type]
    node.callbacks["~/target_pose"](_pose((0.55, 0.0, floor_height - 0.15)))
    assert source.rejected == 1 and source.received == 0
    assert f"below the floor's plane z = {floor_height:g} m (achd_rnea.floor_height)" in source.last_error
    node.callbacks["~/target_pose"](_pose((0.55, 0.0, floor_height + 0.001)))
    assert source.received == 1 and source.rejected == 1, source.last_error


@pytest.mark.parametrize("bad", [math.nan, math.inf, 10.5, True, "0.0", [0.0]])
def test_achd_floor_height_refuses_what_is_no_height(robot: RobotModel, bad: Any) -> None:
    from torque_ctrl_ros.core.controllers.cartesian import AchdRneaConfig
    from torque_ctrl_ros.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"achd_rnea\.floor_height: expected one finite height"):
        AchdRneaConfig.create(robot.n, floor_height=bad)


def test_achd_pose_targets_near_full_stretch_are_refused(robot: RobotModel) -> None:
    """The reach bound is met only straight up (0.9028 m from the circle); sideways the tool
    stretches at 0.8975 m. From home in MuJoCo a target at the sideways stretch ran joint_5 at 3.7
    times its velocity limit, one 5 mm beyond it (within the bound) at 13.9 times: achd_rnea takes
    targets only up to STRETCH_MARGIN inside the bound. One just inside that runs within 0.6 of
    every limit; the QP controllers (singularity barrier) keep the whole reach."""
    from torque_ctrl_ros.sim.plant import MujocoPlant

    reach = Reach.of(robot, TOOL)
    limit = reach.radius - REACH_MARGIN - STRETCH_MARGIN
    sideways = robot.frame_placement(np.array([0.0, np.pi / 2, 0.0, 0.0, 0.0, 0.0, 0.0]), TOOL)
    upward = robot.frame_placement(np.zeros(robot.n), TOOL)
    assert reach.distance(sideways.translation) == pytest.approx(0.8975, abs=1e-4)
    assert reach.distance(upward.translation) == pytest.approx(0.9028, abs=1e-4)
    node = FakeTargetNode()
    source = targets.PoseTargetSource(node, AchdRnea(robot))  # type: ignore[arg-type]
    for pose in (sideways, upward):
        msg = _pose(pose.translation)
        node.callbacks["~/target_pose"](msg)
        assert source.received == 0 and "within 15 mm of full stretch" in source.last_error, source.last_error
    qp_node, qp = _qp_source(robot, "qpid")
    qp_node.callbacks["~/tool/target"](_pose(sideways.translation))
    assert qp.received == 1 and qp.rejected == 0
    # 0.03 mm past the limit: both distances to the same digits, so the message reads as a refusal.
    outward_unit = sideways.translation - reach.center
    outward_unit[2] = 0.0
    outward_unit /= np.linalg.norm(outward_unit)
    barely = sideways.translation - (reach.distance(sideways.translation) - (limit + 3e-5)) * outward_unit
    node.callbacks["~/target_pose"](_pose(barely))
    assert f"is {reach.distance(barely):.4f} m" in source.last_error, source.last_error
    assert f"more than {limit:.4f} m (by 0.03 mm)" in source.last_error, source.last_error
    assert "use qpid or hqpid" in source.last_error

    # Just inside the limit, sideways, the stretched pose's orientation: approached from home.
    outward = sideways.translation - reach.center
    outward[2] = 0.0
    target = sideways.translation - (reach.distance(sideways.translation) - (limit - 1e-3)) * (
        outward / np.linalg.norm(outward)
    )
    assert limit - 2e-3 < reach.distance(target) < limit
    plant = MujocoPlant(Path(__file__).resolve().parents[1] / "mjcf" / "scene.xml", robot.joint_names)
    plant.reset("home")
    ctrl = AchdRnea(robot)
    node = FakeTargetNode()
    source = targets.PoseTargetSource(node, ctrl)  # type: ignore[arg-type]
    msg = _pose(target)
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = (float(c) for c in pin.Quaternion(sideways.rotation).coeffs())
    node.callbacks["~/target_pose"](msg)
    source.reference(JointState(plant.q.copy(), plant.v.copy(), 0.0))
    assert source.received == 1 and source.tracker.active is not None
    duration = source.tracker.active.move.duration
    peak = _closed_loop_peak_speeds(plant, ctrl, source, round(1000 * duration) + 500)
    share = float((peak / robot.velocity_limit).max())
    print(f"\n[stretch] {reach.distance(target):.4f} m out, T {duration:.2f} s, peak {share:.3f} of a limit")
    assert np.all(peak <= 0.6 * robot.velocity_limit), (peak / robot.velocity_limit).round(3)
    assert np.linalg.norm(robot.frame_placement(plant.q, TOOL).translation - target) < 1e-3


@pytest.mark.parametrize("controller", ["qpid", "hqpid"])
def test_qp_frame_task_targets_out_of_reach_are_refused(robot: RobotModel, controller: str) -> None:
    node, source = _qp_source(robot, controller)
    assert source.kinds["tool"] == "pose"
    node.callbacks["~/tool/target"](_pose((1000.0, 0.0, 0.3)))
    assert source.rejected == 1 and "tool target: position (1000, 0, 0.3) m" in source.last_error
    node.callbacks["~/tool/target"](_pose((0.5, 0.0, 0.3)))
    assert source.received == 1 and source.rejected == 1


@pytest.mark.parametrize("controller", ["qpid", "hqpid"])
def test_qp_frame_task_targets_below_the_floor_are_refused(robot: RobotModel, controller: str) -> None:
    """The shipped floor barrier's plane is z = 0: a tool target 1 cm under it is refused, one on it
    taken (the barrier then holds the capsules 2 cm up)."""
    node, source = _qp_source(robot, controller)
    node.callbacks["~/tool/target"](_pose((0.5, 0.0, -0.01)))
    assert source.rejected == 1 and "below the floor barrier's plane z = 0 m" in source.last_error
    node.callbacks["~/tool/target"](_pose((0.5, 0.0, 0.0)))
    assert source.received == 1 and source.rejected == 1


# ------------------------------------------------------------------ pose targets: approached
@pytest.mark.parametrize("eps", [0.0, 1e-4, 0.001, 0.03])
def test_a_pose_target_across_a_singularity_is_refused_and_near_one_is_slow(
    robot: RobotModel, eps: float
) -> None:
    """From the stretched pose (joints 4 and 6 at ``eps``), 0.1 m sideways and 2 cm down keeping the
    orientation (0.1 m sideways alone is beyond full stretch: refused by the reach, see
    ``test_achd_pose_targets_near_full_stretch_are_refused``): stepped, or timed at the start alone
    where the singular direction is dropped (0.24 s), the arm reached 26 times a velocity limit;
    timed on the damped path 1e-4 rad from it (6.2 s, the damping hides a singular value that
    small), 4.4 times. Up to ~0.001 rad from it the move is mostly along the lost direction:
    refused, the active target kept. 0.03 rad off it, timed long (65 s; in MuJoCo the wrist still
    turns through joint_6 = 0 on the way, joints 5 and 7 at 2.8 and 3.0 times their limits: the
    README's warning to keep achd_rnea away from the stretched pose)."""
    params = controller_node_config(shipped_parameters("controller_node") | {"controller": "achd_rnea"})
    ctrl = create_controller("achd_rnea", robot, params.controller_params)
    node = FakeTargetNode()
    source = targets.PoseTargetSource(node, ctrl)  # type: ignore[arg-type]
    q = np.zeros(7)
    q[[3, 5]] = eps
    state = JointState(q, np.zeros(7), 1.0)
    held = source.reference(state)
    tool = robot.frame_placement(q, TOOL)
    msg = _pose(tool.translation + np.array([0.0, 0.1, -0.02]))
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = (float(c) for c in pin.Quaternion(tool.rotation).coeffs())
    node.callbacks["~/target_pose"](msg)
    reference = source.reference(state)
    if eps <= 0.001:
        assert source.rejected == 1 and "singular direction" in source.last_error, source.last_error
        assert reference is held and source.describe() == "hold"
    else:
        assert source.rejected == 0 and source.tracker.active is not None
        assert source.tracker.active.move.duration > 10.0
        assert len(node.warnings) == 1 and "target pose: taken, approached over" in node.warnings[0]


def test_a_pose_target_where_the_reference_stands_is_taken_with_the_arm_off_it(robot: RobotModel) -> None:
    """The move is timed from the reference, the path predicted from the arm: a target equal to the
    held reference, the arm 0.05 rad away from it, is no move and no singularity."""
    params = controller_node_config(shipped_parameters("controller_node") | {"controller": "achd_rnea"})
    ctrl = create_controller("achd_rnea", robot, params.controller_params)
    node = FakeTargetNode()
    source = targets.PoseTargetSource(node, ctrl)  # type: ignore[arg-type]
    q = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
    held = source.reference(JointState(q, np.zeros(7), 1.0))
    msg = _pose(held.position)
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = (float(c) for c in pin.Quaternion(held.rotation).coeffs())
    node.callbacks["~/target_pose"](msg)
    source.reference(JointState(q + 0.05, np.zeros(7), 1.001))
    assert source.rejected == 0 and source.describe() == "target_pose", source.last_error


def test_accelerations_without_velocities_are_refused(robot: RobotModel) -> None:
    """They had been dropped without a word: a cubic through the positions, its acceleration at a
    waypoint 0.5 rad/s² where 5 had been sent."""
    node, source = _joint_source(robot)
    msg = _trajectory_msg(list(robot.joint_names), [(1.0, [0.1] * 7, None), (2.0, [0.2] * 7, None)])
    for point, a in zip(msg.points, (5.0, -5.0), strict=True):
        point.accelerations = [a] * 7
    node.callbacks["~/joint_trajectory"](msg)
    assert source.rejected == 1 and "accelerations without velocities" in source.last_error


# ------------------------------------------------------------------ 3. joint targets with a velocity
def test_joint_targets_with_a_velocity_are_refused(robot: RobotModel) -> None:
    names = list(robot.joint_names)
    q = [0.0, 0.3, 0.0, 0.5, 0.0, 0.2, 0.0]
    node, source = _joint_source(robot)
    cb = node.callbacks["~/joint_target"]
    cb(JointStateMsg(name=names, position=q, velocity=[0.0, 0.2] + [0.0] * 5))
    assert source.rejected == 1 and source.received == 0
    assert "non-zero velocity at ['joint_2']" in source.last_error and "trajectory" in source.last_error
    cb(JointStateMsg(name=names, position=q, velocity=[0.0] * 7))  # zero: accepted
    cb(JointStateMsg(name=names, position=q))  # empty: accepted
    assert source.received == 2 and source.rejected == 1
    source.reference(JointState(np.zeros(7), np.zeros(7), 1.0))  # taken, approached from here
    ref = source.reference(JointState(np.zeros(7), np.zeros(7), 11.0))
    np.testing.assert_array_equal(ref.q, q)
    assert ref.v is None or not np.any(ref.v)
    node, qp = _qp_source(robot)
    node.callbacks["~/joint_target"](JointStateMsg(name=names, position=q, velocity=[0.1] * 7))
    assert qp.rejected == 1 and qp.received == 0 and "non-zero velocity" in qp.last_error


# ------------------------------------------------------------------ 4. trajectories
def test_a_trajectory_passing_a_position_limit_between_waypoints_is_refused(robot: RobotModel) -> None:
    names = list(robot.joint_names)
    j = names.index("joint_2")  # limits ±2.24 rad, 1.396 rad/s
    q = np.zeros(7)

    def at(x: float) -> np.ndarray:
        out = q.copy()
        out[j] = x
        return out

    def vel(x: float) -> np.ndarray:
        out = np.zeros(7)
        out[j] = x
        return out

    points = [(0.0, at(2.0), vel(0.0)), (1.0, at(2.2), vel(1.0)), (2.0, at(2.0), vel(0.0))]
    node, source = _joint_source(robot)
    node.callbacks["~/joint_trajectory"](_trajectory_msg(names, points))
    assert source.rejected == 1 and source.received == 0, source.last_error
    # The true excursion (dense samples): 2.3103 rad at 1.238 s.
    traj = JointTrajectory([p[0] for p in points], [p[1] for p in points], [p[2] for p in points])
    ts = np.linspace(0.0, 2.0, 200_001)
    peak = max((traj.sample(float(t))[0][j], t) for t in ts[100_000:130_000])
    match = re.search(
        r"takes joint_2 to ([\d.]+) rad at ([\d.]+) s .*position limit 2\.2400 rad", source.last_error
    )
    assert match, source.last_error
    assert float(match.group(1)) == pytest.approx(peak[0], abs=1e-4)
    assert float(match.group(2)) == pytest.approx(peak[1], abs=1e-3)


def test_a_trajectory_too_fast_between_waypoints_is_refused(robot: RobotModel) -> None:
    names = list(robot.joint_names)
    goal = np.zeros(7)
    goal[1] = 1.2  # 1.2 rad/s on average, 1.8 rad/s at mid-way (positions only): limit 1.396
    node, source = _joint_source(robot)
    node.callbacks["~/joint_trajectory"](
        _trajectory_msg(names, [(0.0, np.zeros(7), None), (1.0, goal, None)])
    )
    assert source.rejected == 1 and source.received == 0
    assert re.search(
        r"moves joint_2 at 1\.8000 rad/s at 0\.5000 s .*velocity limit 1\.3963", source.last_error
    )
    # Twice as long: 0.9 rad/s at most, accepted.
    node.callbacks["~/joint_trajectory"](
        _trajectory_msg(names, [(0.0, np.zeros(7), None), (2.0, goal, None)])
    )
    assert source.received == 1 and source.rejected == 1


def test_a_start_past_a_limit_does_not_stop_a_trajectory_leading_back(robot: RobotModel) -> None:
    names = list(robot.joint_names)
    node, source = _joint_source(robot)
    state = np.zeros(7)
    state[1] = 2.26  # 0.02 rad past joint_2's limit (within the watchdog's margin)
    goal = np.zeros(7)
    goal[1] = 2.0
    node.callbacks["~/joint_trajectory"](_trajectory_msg(names, [(2.0, goal, None)]))
    ref = source.reference(JointState(state, np.zeros(7), 10.0))
    assert source.rejected == 0 and source.describe() == "trajectory", source.last_error
    assert ref.q[1] == pytest.approx(2.26)
    # Only the first segment may be as far past the limit as the start: a later return there is
    # refused, at the point it reaches.
    back_out = JointTrajectory([1.0, 2.0], [[2.0], [2.26]], start=(np.array([2.26]), None))
    found = back_out.limit_violation([-2.24], [2.24], [1.396])
    assert found is not None and (found.quantity, found.time, found.value) == ("position", 2.0, 2.26)


def test_the_earliest_violation_is_reported() -> None:
    """Too fast at 0.5 s (1.8 rad/s against 1.396) and past 2.24 rad at 3 s: the velocity, first."""
    traj = JointTrajectory([0.0, 1.0, 3.0], [[0.0], [1.2], [2.3]], [[0.0], [0.0], [0.0]])
    found = traj.limit_violation([-2.24], [2.24], [1.396])
    assert found is not None and (found.quantity, found.time) == ("velocity", 0.5)
    assert found.value == pytest.approx(1.8)


def test_a_trajectory_with_too_many_points_is_refused(
    robot: RobotModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = list(robot.joint_names)
    m = targets.MAX_TRAJECTORY_POINTS + 1
    points = [(0.01 * (k + 1), np.zeros(7), None) for k in range(m)]
    node, source = _joint_source(robot)
    msg = _trajectory_msg(names, points)
    node.callbacks["~/joint_trajectory"](msg)
    assert source.rejected == 1 and f"{m} points" in source.last_error
    # As the subscription delivers it (bytes): refused by the count in its bytes, never converted
    # (rclpy's conversion alone took 61 ms for 10 000 points).
    from rclpy.serialization import serialize_message

    def no_conversion(*_args: Any) -> Any:
        raise AssertionError("converted")

    monkeypatch.setattr(targets, "deserialize_message", no_conversion)
    node.callbacks["~/joint_trajectory"](serialize_message(msg))
    assert source.rejected == 2 and f"{m} points" in source.last_error
    many_names = _trajectory_msg([*names, *(f"extra_{k}" for k in range(100))], [(1.0, np.zeros(107), None)])
    node.callbacks["~/joint_trajectory"](serialize_message(many_names))
    assert source.rejected == 3 and "107 joint names, more than the 64" in source.last_error
    monkeypatch.setattr(targets, "MAX_TRAJECTORY_BYTES", 1000)
    node.callbacks["~/joint_trajectory"](serialize_message(_trajectory_msg(names, points[:20])))
    assert source.rejected == 4 and "bytes, more than the 1000 allowed" in source.last_error
    monkeypatch.undo()
    within = _trajectory_msg(names, points[:-1])
    node.callbacks["~/joint_trajectory"](serialize_message(within))  # converted, then checked
    assert source.received == 1 and source.rejected == 4, source.last_error


def test_unreadable_trajectory_bytes_are_refused_not_raised(robot: RobotModel) -> None:
    """The subscription takes raw bytes, so nothing has checked they are a JointTrajectory: bytes
    rclpy cannot read are a refused target, not an exception out of the executor's spin (which
    would end the node and leave the arm without commands)."""
    node, source = _joint_source(robot)
    for junk in (b"\x00\x01\x00\x00" + b"\xff" * 8, b"", b"\x00\x00\x00\x00"):
        node.callbacks["~/joint_trajectory"](junk)
    assert source.rejected == 3 and source.received == 0
    assert source.last_error.startswith("trajectory: unreadable message (4 bytes)")


def test_target_bytes_are_refused_by_size_or_unreadable_before_any_conversion(
    robot: RobotModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every target subscription takes raw bytes: a message beyond MAX_TARGET_BYTES (a joint
    target naming a million joints held the control thread ~1 s before it could be refused) is
    refused by its size unconverted, bytes that are no message are refused, not raised, and good
    bytes work as the message does."""
    from rclpy.serialization import serialize_message

    names = list(robot.joint_names)
    huge = JointStateMsg(name=[*names, *(f"extra_{k}" for k in range(10_000))], position=[0.0] * 10_007)
    good = JointStateMsg(name=names, position=HOME_Q.tolist())
    node, source = _joint_source(robot)
    qp_node, qp_source = _qp_source(robot)
    pose_node = FakeTargetNode()
    pose_source = targets.PoseTargetSource(pose_node, AchdRnea(robot))  # type: ignore[arg-type]
    far_frame = _pose((0.5, 0.0, 0.3), frame="x" * 100_000)
    with monkeypatch.context() as patched:
        patched.setattr(targets, "deserialize_message", lambda *_: pytest.fail("converted"))
        node.callbacks["~/joint_target"](serialize_message(huge))
        qp_node.callbacks["~/joint_target"](serialize_message(huge))
        qp_node.callbacks["~/tool/target"](serialize_message(far_frame))
        pose_node.callbacks["~/target_pose"](serialize_message(far_frame))
    for src, refused in ((source, 1), (qp_source, 2), (pose_source, 1)):  # qp: the posture and the tool
        assert src.rejected == refused and "bytes, more than the 65536 allowed" in src.last_error
    node.callbacks["~/joint_target"](b"\x00\x01\x00\x00" + b"\xff" * 8)
    pose_node.callbacks["~/target_pose"](b"\x00\x01")
    assert "joint target: unreadable message (12 bytes)" in source.last_error
    assert "target pose: unreadable message (2 bytes)" in pose_source.last_error
    node.callbacks["~/joint_target"](serialize_message(good))
    pose_node.callbacks["~/target_pose"](serialize_message(_pose((0.5, 0.0, 0.3))))
    assert (source.received, source.rejected, pose_source.received, pose_source.rejected) == (1, 2, 1, 2)
    # Within the size, a long frame is quoted in short.
    pose_node.callbacks["~/target_pose"](_pose((0.5, 0.0, 0.3), frame="y" * 10_000))
    assert "(10000 characters)" in pose_source.last_error and len(pose_source.last_error) < 300


def test_the_most_points_allowed_are_taken(robot: RobotModel) -> None:
    """The most points allowed (2 000, 7 joints, with velocities) are checked and taken. What
    they cost on the control thread is a speed figure, not a test's: see MAX_TRAJECTORY_POINTS."""
    names = list(robot.joint_names)
    m = targets.MAX_TRAJECTORY_POINTS
    t = 0.05 * np.arange(m)
    phase = np.arange(7)
    q = 0.3 * (np.sin(t[:, None] + phase) - np.sin(phase))
    v = 0.3 * np.cos(t[:, None] + phase)
    v[-1] = 0.0  # at rest at the end
    msg = _trajectory_msg(names, [(t[k], q[k], v[k]) for k in range(m)])
    node, source = _joint_source(robot)
    node.callbacks["~/joint_trajectory"](msg)
    assert source.received == 1 and source.rejected == 0, source.last_error


# ------------------------------------------------------------------ trajectories stamped ahead
def _stamped(msg: TrajectoryMsg, stamp: float) -> TrajectoryMsg:
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(round(stamp * 1e9), 10**9)
    return msg


def test_a_trajectory_stamped_later_waits_while_the_active_one_runs_on(robot: RobotModel) -> None:
    """Switched at once, the reference had stood still at the start until the stamp (0.75 → 0
    rad/s), then set off again (a torque step each time)."""
    names = list(robot.joint_names)
    node, source = _joint_source(robot)
    node.now_ns = 100 * 10**9
    first, second = np.zeros(7), np.zeros(7)
    first[0], second[0] = 1.0, -0.5
    node.callbacks["~/joint_trajectory"](_stamped(_trajectory_msg(names, [(2.0, first, None)]), 100.0))
    state = JointState(np.zeros(7), np.zeros(7), 100.0)
    source.reference(state)
    node.callbacks["~/joint_trajectory"](_stamped(_trajectory_msg(names, [(2.0, second, None)]), 101.5))
    for t in (101.0, 101.499):  # still the first trajectory, at its speed
        ref = source.reference(JointState(np.zeros(7), np.zeros(7), t))
        expected = source.tracker.active.move.sample(t - 100.0)
        np.testing.assert_allclose(ref.q, expected[0])
        assert ref.v is not None and ref.v[0] > 0.3
    start = source.reference(JointState(np.zeros(7), np.zeros(7), 101.5))
    later = source.reference(JointState(np.zeros(7), np.zeros(7), 102.5))
    assert start.v is not None and start.v[0] > 0.3  # from the first one's state, moving
    assert later.q[0] < start.q[0]  # on its way to -0.5


def test_a_trajectory_stamped_on_another_clock_is_refused(robot: RobotModel) -> None:
    """Wall time (~1.8e9 s) sent to a node on sim time: it would have waited for ever."""
    names = list(robot.joint_names)
    node, source = _joint_source(robot)
    node.now_ns = 100 * 10**9
    goal = np.full(7, 0.1)
    node.callbacks["~/joint_trajectory"](_stamped(_trajectory_msg(names, [(2.0, goal, None)]), 1.8e9))
    assert source.rejected == 1 and source.received == 0
    assert "another clock" in source.last_error
    node.callbacks["~/joint_trajectory"](_stamped(_trajectory_msg(names, [(2.0, goal, None)]), 130.0))
    assert source.received == 1


def test_a_trajectory_is_checked_as_it_will_run_and_must_end_at_rest(robot: RobotModel) -> None:
    """Checked when it arrived, the first waypoint was taken as at rest, a motion that never runs
    (at activation the start is added and the waypoint gets an estimated velocity): joint_1
    through 1, 2, 3 rad at 1, 2, 10 s from rest had been refused at 1.41 rad/s, though the motion
    run peaks at 1.33. A velocity at the last point steps to 0 there (the reference stops): one
    arriving at joint_2's limit at 1 rad/s had carried the arm 0.036 rad past it; refused (not
    rounding, nor a final acceleration, which MoveIt's trajectories end with)."""
    names = list(robot.joint_names)
    node, source = _joint_source(robot)
    node.now_ns = 100 * 10**9
    points = [(t, np.eye(7)[0] * q, None) for t, q in ((1.0, 1.0), (2.0, 2.0), (10.0, 3.0))]
    node.callbacks["~/joint_trajectory"](_trajectory_msg(names, points))
    assert source.rejected == 0 and source.received == 1, source.last_error
    source.reference(JointState(np.zeros(7), np.zeros(7), 100.0))
    assert source.describe() == "trajectory" and source.rejected == 0, source.last_error
    speeds = [
        abs(source.reference(JointState(np.zeros(7), np.zeros(7), 100.0 + t)).v[0])
        for t in np.arange(0, 10, 0.01)
    ]
    assert max(speeds) <= robot.velocity_limit[0]

    upper = robot.position_upper[1]
    moving = [
        (2.0, np.eye(7)[1] * (upper - 0.3), np.eye(7)[1] * 0.3),
        (3.0, np.eye(7)[1] * upper, np.eye(7)[1]),
    ]
    node.callbacks["~/joint_trajectory"](_trajectory_msg(names, moving))
    assert source.rejected == 1 and "last point has velocities" in source.last_error
    # Rounding at the end, and a final acceleration (MoveIt's time parameterisation ends on the
    # final deceleration): accepted.
    ending = _trajectory_msg(
        names, [(1.0, np.eye(7)[0] * 0.2, np.zeros(7)), (2.0, np.eye(7)[0] * 0.3, np.full(7, 1e-12))]
    )
    for point, a in zip(ending.points, (0.0, -0.6), strict=True):
        point.accelerations = [a] * 7
    node.callbacks["~/joint_trajectory"](ending)
    assert source.rejected == 1 and source.received == 2, source.last_error


def test_a_negative_trajectory_stamp_is_refused(robot: RobotModel) -> None:
    """It had been taken as 0 (start at the next state) without a word."""
    names = list(robot.joint_names)
    node, source = _joint_source(robot)
    node.now_ns = 100 * 10**9
    msg = _trajectory_msg(names, [(1.0, np.full(7, 0.1), None)])
    msg.header.stamp.sec = -5
    node.callbacks["~/joint_trajectory"](msg)
    assert source.rejected == 1 and "negative" in source.last_error and source.received == 0


def test_a_first_point_at_time_zero_must_be_where_the_reference_is(robot: RobotModel) -> None:
    """Taken at once, a first point 3 rad away on joint_1 had made the reference jump there: the
    torques clipped joint by joint spun joints 3, 5 and 7, which had no error, to 13–16 times their
    velocity limits. Within the start tolerance (MoveIt's first point is the state it planned
    from), across ±π on a continuous joint too, it is taken as before."""
    names = list(robot.joint_names)
    node, source = _joint_source(robot)
    node.now_ns = 100 * 10**9
    start = np.zeros(7)
    start[0] = 3.14
    rest = JointState(start, np.zeros(7), 100.0)
    source.reference(rest)
    far = start.copy()
    far[0] = 0.14
    far_later = far.copy()
    far_later[1] = 0.2
    node.callbacks["~/joint_trajectory"](_trajectory_msg(names, [(0.0, far, None), (2.0, far_later, None)]))
    ref = source.reference(JointState(start, np.zeros(7), 100.001))
    assert source.rejected == 1 and "3.000 rad from the current reference and from the arm on joint_1" in (
        source.last_error
    )
    assert source.describe() == "hold" and ref.q[0] == 3.14

    near = start.copy()
    near[0] = 3.135 - 2 * np.pi  # 0.005 rad short of 3.14, written across ±π
    later = near.copy()
    later[1] = 0.2
    node.callbacks["~/joint_trajectory"](_trajectory_msg(names, [(0.0, near, None), (2.0, later, None)]))
    ref = source.reference(JointState(start, np.zeros(7), 100.002))
    assert source.rejected == 1, source.last_error
    assert source.describe() == "trajectory" and ref.q[0] == pytest.approx(near[0])

    # MoveIt's first point is the measured state: taken where the arm lags its reference (an
    # unmodelled load: 0.044 rad on joint_6 with 20 g more), not only near the reference.
    lagging = start.copy()
    lagging[5] -= 0.044
    node.callbacks["~/joint_trajectory"](_trajectory_msg(names, [(0.0, lagging, None), (2.0, later, None)]))
    ref = source.reference(JointState(lagging, np.zeros(7), 100.003))
    assert source.rejected == 1 and source.received == 3, source.last_error
    assert ref.q[5] == pytest.approx(lagging[5])


# ------------------------------------------------------------------ approaches from a moving reference
HOME_Q = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])


def _point(t: float, q: Any, v: Any) -> JointTrajectoryPoint:
    s, ns = divmod(round(t * 1e9), 10**9)
    return JointTrajectoryPoint(
        positions=[float(x) for x in q],
        velocities=[float(x) for x in v],
        time_from_start=Duration(sec=s, nanosec=ns),
    )


def _moving_joint_source(robot: RobotModel, joint: int, q: float, v: float) -> tuple[FakeTargetNode, Any]:
    """A computed-torque source whose trajectory (started at stamp 1.0 from HOME_Q) has ``joint``
    at ``q`` rad moving ``v`` rad/s at stamp 3.5, and stops 0.08 rad further on 0.3 s later."""
    node, source = _joint_source(robot)
    source.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    points = []
    for t, at, speed in ((2.0, q - 0.5 * v, v), (2.5, q, v), (2.8, q + math.copysign(0.08, v), 0.0)):
        position, velocity = HOME_Q.copy(), np.zeros(7)
        position[joint], velocity[joint] = at, speed
        points.append(_point(t, position, velocity))
    node.callbacks["~/joint_trajectory"](TrajectoryMsg(joint_names=list(robot.joint_names), points=points))
    source.reference(JointState(HOME_Q, np.zeros(7), 1.0))  # starts here
    ref = source.reference(JointState(HOME_Q, np.zeros(7), 3.5))
    assert source.rejected == 0, source.last_error
    assert ref.q[joint] == pytest.approx(q) and ref.v[joint] == pytest.approx(v)
    return node, source


def test_a_joint_target_behind_a_moving_reference_stops_it_first(robot: RobotModel) -> None:
    """joint_1 at 0.7 rad/s (half its limit), a target 3 rad behind: one quintic timed by the
    distance had carried the reference on 0.75 rad the wrong way at 0.74 of the limit. It stops
    first (0.084 rad on), then goes, never faster than it was or than half the limit."""
    node, source = _moving_joint_source(robot, 0, 1.0, 0.7)
    goal = HOME_Q.copy()
    goal[0] = -2.0
    _send_joint_target(node, robot, goal)
    source.reference(JointState(HOME_Q, np.zeros(7), 3.5))
    assert source.rejected == 0 and source.describe() == "joint_target"
    samples = np.array([source.tracker.active.move.sample(t)[:2] for t in np.linspace(0.0, 20.0, 20001)])
    q1, v1 = samples[:, 0, 0], samples[:, 1, 0]
    assert q1.max() - 1.0 < 0.1  # on the wrong way, only while stopping
    assert (
        np.abs(v1).max() <= 0.7 + 1e-9
        and np.abs(v1[samples.shape[0] // 40 :]).max() <= 0.5 * robot.velocity_limit[0] + 1e-9
    )
    assert q1[-1] == pytest.approx(-2.0)


def test_a_joint_target_behind_a_reference_moving_to_a_limit_stops_it_where_it_would_stop(
    robot: RobotModel,
) -> None:
    """joint_2 at 2.15 rad moving at 1.2 rad/s toward its 2.24 limit, its trajectory stopping at
    2.23: stopping at half its speed times the stop time took it to 2.29 and the target was
    refused. The stop now ends no farther than the trajectory goes (not past it, nor a limit): its
    last cubic runs past 2.23 on to 2.2364 (``2.15 + 0.36·s − 0.48·s² + 0.2·s³`` at ``s`` = 0.6)
    and comes back to it 0.3 s on, and the stop ends at 2.2364."""
    node, source = _moving_joint_source(robot, 1, 2.15, 1.2)
    _send_joint_target(node, robot, HOME_Q)
    source.reference(JointState(HOME_Q, np.zeros(7), 3.5))
    assert source.rejected == 0 and source.describe() == "joint_target", source.last_error
    approach = source.tracker.active.move
    assert approach.positions[1][1] == pytest.approx(2.2364)  # the stop: as far as the trajectory goes
    q2 = [approach.sample(t)[0][1] for t in np.linspace(0.0, approach.duration, 2001)]
    assert max(q2) <= robot.position_upper[1] and q2[-1] == pytest.approx(HOME_Q[1])


def test_a_small_joint_target_takes_the_shortest_approach(robot: RobotModel) -> None:
    """0.01 rad: the approach lasts √(5.77/kp) = 0.24 s and asks at most kp·|Δq| = 1 rad/s²."""
    node, source = _joint_source(robot)
    source.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    goal = HOME_Q.copy()
    goal[3] += 0.01
    _send_joint_target(node, robot, goal)
    source.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    assert source.tracker.active.move.times[-1] == pytest.approx(0.2403, abs=1e-4)
    acceleration = np.array(
        [source.tracker.active.move.sample(t)[2][3] for t in np.linspace(0.0, 0.3, 30001)]
    )
    assert np.abs(acceleration).max() <= 100.0 * 0.01 * (1 + 1e-6)


def _send_joint_target(node: FakeTargetNode, robot: RobotModel, q: np.ndarray) -> None:
    """``q`` (rad, model order) to the source's ``~/joint_target``, as a JointState by name."""
    node.callbacks["~/joint_target"](JointStateMsg(name=list(robot.joint_names), position=q.tolist()))


def _pose_source(robot: RobotModel) -> tuple[FakeTargetNode, Any, Any]:
    node = FakeTargetNode(strict=True)
    ctrl = AchdRnea(robot)
    return node, ctrl, targets.PoseTargetSource(node, ctrl)  # type: ignore[arg-type]


def test_a_pose_target_behind_a_moving_reference_stops_it_first(robot: RobotModel) -> None:
    """Half way to a pose 0.3 m along y (0.14 m/s), a target 0.3 m the other way: one approach
    from the moving start had carried the reference 0.11 m on the wrong way (a joint at 0.80 of its
    limit on the plant). It stops first: half its speed over the stop time, ~1.7 cm."""
    node, ctrl, source = _pose_source(robot)
    start = ctrl.hold_reference(JointState(HOME_Q, np.zeros(7), 1.0))
    node.callbacks["~/target_pose"](_pose(start.position + np.array([0.0, 0.3, 0.0])))
    source.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    half = 1.0 + source.tracker.active.move.duration / 2
    moving = source.reference(JointState(HOME_Q, np.zeros(7), half))
    node.callbacks["~/target_pose"](_pose(start.position + np.array([0.0, -0.3, 0.0])))
    source.reference(JointState(HOME_Q, np.zeros(7), half))
    approach = source.tracker.active.move
    y = np.array([approach.sample(t).position[1] for t in np.linspace(0.0, approach.duration, 2001)])
    stop = source.tracker.planner.stop_time
    assert y.max() - moving.position[1] == pytest.approx(0.5 * stop * moving.twist[1], rel=1e-6)
    assert y[-1] == pytest.approx(start.position[1] - 0.3)


# ------------------------------------------------------------------ QP task targets: approached
@pytest.mark.parametrize("controller", ["qpid", "hqpid"])
@pytest.mark.parametrize("move", [[0.0, 0.3, 0.0], [-0.2, 0.2, 0.1]])
def test_a_qp_tool_target_is_approached_within_the_velocity_limits(
    robot: RobotModel, controller: str, move: list[float]
) -> None:
    """The shipped qpid / hqpid on the MuJoCo plant, from home to a tool pose 0.3 m away: stepped
    into the QP, the target had run joints 1 and 5 (1, 2, 3 and 5 for the mixed move) at exactly
    their velocity limits, held there by the barriers. Approached, no joint passes 0.7 of its limit
    and the tool ends on the target (hqpid: exactly; qpid: within its weighted posture's pull)."""
    from torque_ctrl_ros.sim.plant import MujocoPlant

    plant = MujocoPlant(Path(__file__).resolve().parents[1] / "mjcf" / "scene.xml", robot.joint_names)
    plant.reset("home")
    node, source = _qp_source(robot, controller)
    tool = robot.frame_placement(plant.q, TOOL)
    msg = _pose(tool.translation + np.array(move))
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = (float(c) for c in pin.Quaternion(tool.rotation).coeffs())
    node.callbacks["~/tool/target"](msg)
    peak = _closed_loop_peak_speeds(plant, source.controller, source, 6000)
    assert np.all(peak <= 0.7 * robot.velocity_limit), (peak / robot.velocity_limit).round(3)
    end = robot.frame_placement(plant.q, TOOL)
    tolerance = 1e-5 if controller == "hqpid" else 2e-3
    assert np.linalg.norm(end.translation - (tool.translation + move)) < tolerance
    assert source.describe() == "tool" and source.rejected == 0 and not source.tracker.pose_moves  # arrived


@pytest.mark.parametrize("kind", ["position", "orientation"])
def test_a_position_or_orientation_task_moves_only_what_it_tracks(robot: RobotModel, kind: str) -> None:
    """A position task's approach keeps the frame's rotation, an orientation task's its position."""
    params = {
        "tasks": ["tool", "posture"],
        "tool": {"type": kind, "frame": TOOL, "kp": 100.0},
        "posture": {"type": "posture", "kp": 10.0, "weight": 1e-3},
    }
    node = FakeTargetNode()
    source = targets.TaskTargetSource(node, create_controller("qpid", robot, params))  # type: ignore[arg-type]
    state = JointState(HOME_Q, np.zeros(7), 0.0)
    source.reference(state)
    tool = robot.frame_placement(HOME_Q, TOOL)
    turned = pin.rpy.rpyToMatrix(0.0, 0.0, 0.4) @ tool.rotation
    msg = _pose(tool.translation + np.array([0.1, 0.0, 0.0]))
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = (float(c) for c in pin.Quaternion(turned).coeffs())
    node.callbacks["~/tool/target"](msg)
    source.reference(state)
    move = source.tracker.pose_moves["tool"].move
    for t in np.linspace(0.0, move.duration, 7):
        pose = source.reference(JointState(HOME_Q, np.zeros(7), t))["tool"].pose
        if kind == "position":
            assert np.allclose(pose.rotation, tool.rotation, atol=1e-12)
        else:
            assert np.allclose(pose.translation, tool.translation, atol=1e-12)
    end = source.reference(JointState(HOME_Q, np.zeros(7), move.duration + 1.0))["tool"].pose
    if kind == "position":
        assert np.allclose(end.translation, tool.translation + np.array([0.1, 0.0, 0.0]), atol=1e-12)
    else:
        assert np.allclose(end.rotation, turned, atol=1e-12)


# ------------------------------------------------------------------ streams of targets
def _follow_stream(
    plant: Any, ctrl: Any, source: Any, send: Any, span: tuple[float, float], rate: float
) -> None:
    """Run ``ctrl`` on the plant over ``span`` (s, state stamps), calling ``send(t)`` (a new target
    at time ``t``) ``rate`` times a second."""
    period = round(1000 / rate)
    for k in range(round(span[0] * 1000), round(span[1] * 1000)):
        if k % period == 0:
            send(k * 1e-3)
        state = JointState(plant.q.copy(), plant.v.copy(), k * 1e-3)
        plant.set_torque(ctrl.compute(state, source.reference(state)).tau)
        plant.step()


@pytest.mark.parametrize("controller", ["achd_rnea", "qpid"])
def test_a_stream_of_pose_targets_is_followed(robot: RobotModel, controller: str) -> None:
    """A tool target moving 0.1 m/s along y, sent 30 times a second (an interactive marker, a
    teleoperation device): each new target had started with a stop of the moving reference, so
    the tool never set off (0.0 mm after 3 s). Now one quintic from the moving reference takes
    each target that lies ahead: the tool follows ~15 mm behind and ends on the last one."""
    arm = _ToolTargets(robot, controller)
    last = [0.0]

    def send(t: float) -> None:
        if t <= 2.0:
            arm.send(np.array([0.0, 0.1 * t, 0.0]))
            last[0] = 0.1 * t

    _follow_stream(arm.plant, arm.ctrl, arm.source, send, (0.0, 2.0), 30.0)
    behind = last[0] - arm.moved()[1]
    assert 0.0 < behind < 0.03, behind
    _follow_stream(arm.plant, arm.ctrl, arm.source, send, (2.0, 3.0), 30.0)
    assert abs(arm.moved()[1] - last[0]) < 2e-3 and arm.source.rejected == 0


class _ToolTargets:
    """A controller of the shipped configuration taking tool targets (achd_rnea's ``target_pose``
    or a QP's ``tool`` task) on the MuJoCo plant at home."""

    def __init__(self, robot: RobotModel, controller: str) -> None:
        from torque_ctrl_ros.sim.plant import MujocoPlant

        self.robot = robot
        self.plant = MujocoPlant(
            Path(__file__).resolve().parents[1] / "mjcf" / "scene.xml", robot.joint_names
        )
        self.plant.reset("home")
        params = controller_node_config(shipped_parameters("controller_node") | {"controller": controller})
        self.ctrl = create_controller(controller, robot, params.controller_params)
        self.node = FakeTargetNode()
        kind = targets.PoseTargetSource if controller == "achd_rnea" else targets.TaskTargetSource
        self.source: Any = kind(self.node, self.ctrl)  # type: ignore[arg-type]
        self.topic = "~/target_pose" if controller == "achd_rnea" else "~/tool/target"
        self.tool = robot.frame_placement(self.plant.q, TOOL)

    def send(self, offset: np.ndarray) -> None:
        """A target ``offset`` (m, base axes) from the tool's start, in its start orientation."""
        msg = _pose(self.tool.translation + offset)
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = (float(c) for c in pin.Quaternion(self.tool.rotation).coeffs())
        self.node.callbacks[self.topic](msg)

    def moved(self) -> np.ndarray:
        """How far the tool is from its start (m, base axes)."""
        return self.robot.frame_placement(self.plant.q, TOOL).translation - self.tool.translation


def test_a_stream_of_joint_targets_is_followed(robot: RobotModel) -> None:
    """Computed torque, joint_1's target moving 0.3 rad/s, sent 30 times a second: followed a few
    hundredths of a rad behind (each target had stopped the moving reference first: it stood
    still), ending on the last one."""
    from torque_ctrl_ros.sim.plant import MujocoPlant

    plant = MujocoPlant(Path(__file__).resolve().parents[1] / "mjcf" / "scene.xml", robot.joint_names)
    plant.reset("home")
    ctrl = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
    node = FakeTargetNode()
    source = targets.JointTargetSource(node, ctrl)  # type: ignore[arg-type]
    home = plant.q.copy()
    last = [0.0]

    def send(t: float) -> None:
        if t <= 2.0:
            goal = home + np.array([0.3 * t, 0, 0, 0, 0, 0, 0])
            node.callbacks["~/joint_target"](
                JointStateMsg(name=list(robot.joint_names), position=goal.tolist())
            )
            last[0] = 0.3 * t

    _follow_stream(plant, ctrl, source, send, (0.0, 2.0), 30.0)
    behind = last[0] - (plant.q[0] - home[0])
    assert 0.0 < behind < 0.08, behind
    _follow_stream(plant, ctrl, source, send, (2.0, 3.0), 30.0)
    assert abs(plant.q[0] - home[0] - last[0]) < 1e-3 and source.rejected == 0


@pytest.mark.parametrize("controller", ["computed_torque", "qpid"])
def test_a_joint_stream_that_turns_back_is_followed_back(robot: RobotModel, controller: str) -> None:
    """joint_1's target streamed at 30 Hz up 0.3 rad/s for 1 s, back down for 1 s, then held at
    home (re-sent): each message had restarted the reference's stop, the reference crept on the
    wrong way and the arm stood at +0.35 rad until ~8 s (computed torque). Now the stop under way
    is kept and the arm is back home within 2 s of the stream's end."""
    from torque_ctrl_ros.sim.plant import MujocoPlant

    plant = MujocoPlant(Path(__file__).resolve().parents[1] / "mjcf" / "scene.xml", robot.joint_names)
    plant.reset("home")
    node = FakeTargetNode()
    if controller == "computed_torque":
        ctrl: Any = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
        source: Any = targets.JointTargetSource(node, ctrl)  # type: ignore[arg-type]
    else:
        # The posture task alone, stiff enough to follow: the shipped tool task would hold the arm.
        params = {"tasks": ["posture"], "posture": {"type": "posture", "kp": 100.0}}
        ctrl = create_controller("qpid", robot, params)
        source = targets.TaskTargetSource(node, ctrl)  # type: ignore[arg-type]
    home = plant.q.copy()

    def send(t: float) -> None:
        goal = home.copy()
        goal[0] += 0.3 * (t if t < 1.0 else max(2.0 - t, 0.0))
        _send_joint_target(node, robot, goal)

    _follow_stream(plant, ctrl, source, send, (0.0, 1.5), 30.0)
    assert plant.q[0] - home[0] < 0.26  # on its way back (0.15 sent; restarting stops: ~0.32)
    _follow_stream(plant, ctrl, source, send, (1.5, 4.0), 30.0)
    assert abs(plant.q[0] - home[0]) < 2e-3, plant.q[0] - home[0]
    assert source.rejected == 0


def test_a_target_sent_again_is_not_planned_again(robot: RobotModel) -> None:
    """A device that keeps publishing its last pose: the target under way, sent again mid-approach,
    leaves the approach as it is (replanned from the moving reference, it had overshot the target
    by 38 mrad and rung for seconds)."""
    node, source = _joint_source(robot)
    source.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    goal = HOME_Q + np.array([0.6, 0, 0, 0, 0, 0, 0])
    message = JointStateMsg(name=list(robot.joint_names), position=goal.tolist())
    assert _planned_once(node, source, "~/joint_target", message)
    qp_node, qp_source = _qp_source(robot)
    qp_source.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    tool = _pose(robot.frame_placement(HOME_Q, TOOL).translation + np.array([0.0, 0.1, 0.0]))
    for t in (1.0, 1.2):
        qp_node.callbacks["~/tool/target"](tool)
        qp_node.callbacks["~/joint_target"](message)
        qp_source.reference(JointState(HOME_Q, np.zeros(7), t))
        moves = (qp_source.tracker.pose_moves["tool"].move, qp_source.tracker.joint_moves["posture"].move)
        if t == 1.0:
            first = moves
    assert moves[0] is first[0] and moves[1] is first[1]


def test_a_small_pose_move_into_a_singularity_is_timed_on_its_path(robot: RobotModel) -> None:
    """The elbow 0.18 rad from straight, a 7 cm move turning the joints by at most 0.099 rad to
    first order at the start: timed on that alone (0.30 s), achd_rnea drove joint_4 at 3.6 times
    its limit; at the end of that first-order motion the move needs 0.6 rad, so its path is
    predicted (5.2 s)."""
    from torque_ctrl_ros.core.approach import LINEAR_MOVE, START_RCOND, PoseApproachPlanner
    from torque_ctrl_ros.core.controllers import PoseReference

    q = np.array([0.9585, 0.8066, 2.5878, 0.1776, -2.0578, -1.6908, 0.3848])
    move = np.array([0.055, -0.026, -0.0402, 0.0029, 0.0316, -0.0113])
    first_order = np.linalg.pinv(robot.frame_jacobian(q, TOOL), rcond=START_RCOND) @ move
    assert np.abs(first_order).max() <= LINEAR_MOVE
    planner = PoseApproachPlanner(robot, TOOL, np.arange(6), np.full(6, 100.0), np.full(6, 20.0))
    start = PoseReference.from_se3(robot.frame_placement(q, TOOL))
    goal = PoseReference(start.position + move[:3], pin.exp3(move[3:]) @ start.rotation)
    assert planner.plan(q, start, goal).duration > 5.0


def test_an_axis_a_qp_task_leaves_free_gets_no_feed_forward(robot: RobotModel) -> None:
    """A pose task with kp 0 on its rotation axes: the approach's angular velocity and acceleration
    are not fed to them (fed, up to 121 rad/s², they had turned the tool 2.2 rad toward the default
    orientation of the message, which the configuration leaves free)."""
    params = {
        "tasks": ["tool", "posture"],
        "tool": {"type": "pose", "frame": TOOL, "kp": [100.0, 100.0, 100.0, 0.0, 0.0, 0.0]},
        "posture": {"type": "posture", "kp": 10.0, "weight": 1e-3},
    }
    node = FakeTargetNode()
    source = targets.TaskTargetSource(node, create_controller("qpid", robot, params))  # type: ignore[arg-type]
    source.reference(JointState(HOME_Q, np.zeros(7), 0.0))
    node.callbacks["~/tool/target"](
        _pose(robot.frame_placement(HOME_Q, TOOL).translation + np.array([0.1, 0.0, 0.0]))
    )
    source.reference(JointState(HOME_Q, np.zeros(7), 0.0))
    move = source.tracker.pose_moves["tool"].move
    for t in np.linspace(0.01, move.duration - 0.01, 9):
        target = source.reference(JointState(HOME_Q, np.zeros(7), t))["tool"]
        assert not target.velocity[3:].any() and not target.acceleration[3:].any()
        assert np.abs(target.velocity[:3]).max() > 0.0


def test_a_pose_target_just_behind_a_moving_reference_is_timed_from_its_stop(robot: RobotModel) -> None:
    """Half way through a 0.3 m move (0.14 m/s), a target 3 cm behind the reference: it stops
    first, running on 17 mm, and the move back is timed from where it stopped (timed on the 3 cm
    from where it stood, the 4.7 cm back had taken joint_5 to 0.85 of its limit)."""
    arm = _ToolTargets(robot, "achd_rnea")
    plant, ctrl, source = arm.plant, arm.ctrl, arm.source
    arm.send(np.array([0.0, 0.3, 0.0]))
    _follow_stream(plant, ctrl, source, lambda t: None, (0.0, 0.001), 1000.0)
    half = round(source.tracker.active.move.duration / 2, 3)
    _follow_stream(plant, ctrl, source, lambda t: None, (0.001, half), 1000.0)
    reference = source.tracker.active.move.sample(half - source.tracker.active.t0)
    back = reference.position - arm.tool.translation - np.array([0.0, 0.03, 0.0])
    arm.send(back)
    peak = _closed_loop_peak_speeds(plant, ctrl, source, 2000, start=half)
    assert np.all(peak <= 0.6 * robot.velocity_limit), (peak / robot.velocity_limit).round(3)
    assert abs(arm.moved()[1] - back[1]) < 1e-3 and source.rejected == 0


def test_a_joint_target_further_ahead_of_a_reference_speeding_up_is_taken_without_a_stop(
    robot: RobotModel,
) -> None:
    """1 rad on joint_1, then at 1 s (0.61 rad/s, still speeding up) a target at 1.5 rad: no
    quintic from there stays within half the limit (0.714 rad/s at best against 0.698), and
    stopping for that had brought the reference to rest and set it off again. One quintic takes
    it, within 0.625 of the limit."""
    node, source = _joint_source(robot)
    source.reference(JointState(HOME_Q, np.zeros(7), 0.0))
    goal = HOME_Q.copy()
    goal[0] += 1.0
    _send_joint_target(node, robot, goal)
    source.reference(JointState(HOME_Q, np.zeros(7), 0.0))
    moving = source.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    assert moving.v[0] == pytest.approx(0.61, abs=0.01) and moving.a[0] > 0.0
    goal[0] += 0.5
    _send_joint_target(node, robot, goal)
    source.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    approach = source.tracker.active.move
    assert len(approach.times) == 2  # one quintic, no stop
    speeds = [approach.sample(t)[1][0] for t in np.linspace(0.0, approach.duration, 2001)]
    assert min(speeds) > -1e-9 and max(speeds) <= 0.625 * robot.velocity_limit[0]


def test_a_joint_target_interrupting_a_trajectory_that_ends_decelerating_stops_at_its_end(
    robot: RobotModel,
) -> None:
    """A trajectory ending at joint_2's limit at rest with its final deceleration given (as
    MoveIt sends), interrupted 0.1 s before its end by a target behind: its last point is where
    it rests (the stop had gone on from the reference's speed and the target had been refused:
    2.2411 rad, past the limit)."""
    node, source = _joint_source(robot)
    source.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    limit = robot.position_upper[1]
    points = []
    for t, q2, v2, a2 in ((2.5, limit - 0.2, 0.8, 0.0), (2.9, limit, 0.0, -4.0)):
        point = _point(t, np.r_[HOME_Q[:1], q2, HOME_Q[2:]], np.r_[0.0, v2, np.zeros(5)])
        point.accelerations = [0.0, a2, 0.0, 0.0, 0.0, 0.0, 0.0]
        points.append(point)
    node.callbacks["~/joint_trajectory"](TrajectoryMsg(joint_names=list(robot.joint_names), points=points))
    source.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    assert source.rejected == 0, source.last_error
    moving = source.reference(JointState(HOME_Q, np.zeros(7), 3.8))
    assert moving.v[1] > 0.1
    _send_joint_target(node, robot, HOME_Q)
    source.reference(JointState(HOME_Q, np.zeros(7), 3.8))
    assert source.rejected == 0 and source.describe() == "joint_target", source.last_error
    approach = source.tracker.active.move
    assert approach.positions[1][1] == pytest.approx(limit, abs=1e-12)
    q2 = [approach.sample(t)[0][1] for t in np.linspace(0.0, approach.duration, 4001)]
    assert max(q2) <= limit + 1e-9


@pytest.mark.parametrize("controller", ["achd_rnea", "qpid"])
def test_a_pose_stream_that_turns_back_is_followed_back(robot: RobotModel, controller: str) -> None:
    """A tool target streamed at 30 Hz up 0.1 m/s along y for 1 s, then back: each message behind
    the moving reference had restarted its stop, which carried it on the wrong way (the reference
    88 mm out at 2 s and back only at ~3 s; the tool 14 mm out at 2.5 s). The stop under way is
    kept: back on the start by 2.5 s."""
    arm = _ToolTargets(robot, controller)

    def send(t: float) -> None:
        arm.send(np.array([0.0, 0.1 * (t if t < 1.0 else max(2.0 - t, 0.0)), 0.0]))

    _follow_stream(arm.plant, arm.ctrl, arm.source, send, (0.0, 2.5), 30.0)
    y = arm.moved()[1]
    assert abs(y) < 2e-3 and arm.source.rejected == 0, y


def test_a_slow_stop_of_a_spinning_tool_does_not_turn_it_back(robot: RobotModel) -> None:
    """The tool spinning at 0.6 rad/s about its axis and a stop of 12.5 s (kd 0.15): it runs on
    3.75 rad, more than π; given as a rotation the stop had folded to −2.53 rad and the spin turned
    back to −0.67 rad/s before stopping."""
    from torque_ctrl_ros.core.approach import PoseApproachPlanner
    from torque_ctrl_ros.core.controllers import PoseReference

    planner = PoseApproachPlanner(robot, TOOL, np.arange(6), np.full(6, 100.0), np.full(6, 0.15))
    tool = robot.frame_placement(HOME_Q, TOOL)
    spin = tool.rotation @ np.array([0.0, 0.0, 0.6])
    start = PoseReference(tool.translation.copy(), tool.rotation, np.r_[0.0, 0.0, 0.0, spin], np.zeros(6))
    goal = PoseReference(tool.translation.copy(), tool.rotation @ pin.exp3(np.array([0.0, 0.0, -0.3])))
    approach = planner.plan(HOME_Q, start, goal)
    assert approach.stop is not None and approach.stop[0] == pytest.approx(12.5)
    assert approach.path.positions[1][5] == pytest.approx(0.5 * 12.5 * 0.6)

    def spin_speed(t: float) -> float:
        twist = approach.sample(t).twist
        assert twist is not None
        return (tool.rotation.T @ twist[3:])[2]

    speeds = [spin_speed(t) for t in np.linspace(0.0, 12.5, 501)]
    assert min(speeds) >= -1e-9


def test_qp_and_pose_targets_after_arrival_and_turned_only(robot: RobotModel) -> None:
    """A second QP tool target after the first has arrived starts where the first ended (from the
    first's start, the reference had jumped 0.1 m in a tick); a target at the same position but
    turned is a new target, not the same one sent again."""
    node, source = _qp_source(robot)
    source.reference(JointState(HOME_Q, np.zeros(7), 0.0))
    tool = robot.frame_placement(HOME_Q, TOOL)
    node.callbacks["~/tool/target"](_pose(tool.translation + np.array([0.0, 0.1, 0.0])))
    source.reference(JointState(HOME_Q, np.zeros(7), 0.0))
    arrived = source.reference(JointState(HOME_Q, np.zeros(7), 30.0))["tool"].pose
    node.callbacks["~/tool/target"](_pose(tool.translation + np.array([0.0, 0.1, 0.1])))
    first = source.reference(JointState(HOME_Q, np.zeros(7), 30.001))["tool"].pose
    assert np.linalg.norm(first.translation - arrived.translation) < 1e-6
    for make in (lambda: _qp_source(robot), lambda: _pose_source(robot)[::2]):
        node, source = make()
        topic = "~/tool/target" if isinstance(source, targets.TaskTargetSource) else "~/target_pose"
        source.reference(JointState(HOME_Q, np.zeros(7), 0.0))
        for t, rotation in ((0.0, tool.rotation), (30.0, pin.rpy.rpyToMatrix(0.0, 0.0, 0.5) @ tool.rotation)):
            msg = _pose(tool.translation + np.array([0.0, 0.05, 0.0]))
            o = msg.pose.orientation
            o.x, o.y, o.z, o.w = (float(c) for c in pin.Quaternion(rotation).coeffs())
            node.callbacks[topic](msg)
            source.reference(JointState(HOME_Q, np.zeros(7), t))
        end = source.reference(JointState(HOME_Q, np.zeros(7), 60.0))
        assert np.allclose(
            end["tool"].pose.rotation if isinstance(end, dict) else end.rotation, rotation, atol=1e-9
        )


def test_a_stop_runs_on_half_the_speed_times_the_stop_time_when_the_motion_rests_later(
    robot: RobotModel,
) -> None:
    """A target behind a reference moving 0.7 rad/s whose own rest is 3 s away: the stop runs on
    0.5·T_s·v (0.084 rad), not to that far rest point (4.3 rad on the wrong way)."""
    from torque_ctrl_ros.core.approach import JointApproachPlanner

    planner = JointApproachPlanner(robot, np.full(7, 100.0), np.full(7, 20.0))
    v = np.zeros(7)
    v[0] = 0.7
    under_way = JointTrajectory(
        [3.0], np.array([HOME_Q + np.r_[2.1, np.zeros(6)]]), np.zeros((1, 7)), None, start=(HOME_Q, v, None)
    )
    start = under_way.sample(1.0)
    approach = planner.plan(start, HOME_Q - np.r_[1.0, np.zeros(6)], (under_way, 1.0))
    q1 = [approach.sample(t)[0][0] for t in np.linspace(0.0, approach.duration, 4001)]
    assert max(q1) - start[0][0] == pytest.approx(0.5 * planner.stop_time * start[1][0], rel=1e-6)


def test_a_pose_approach_reaches_a_given_stop_exactly(robot: RobotModel) -> None:
    """A stop given as a pose turned from the start (a stop kept from an earlier approach) is
    reached exactly, at rest, at the stop time."""
    from torque_ctrl_ros.core.approach import PoseApproach
    from torque_ctrl_ros.core.controllers.cartesian import PoseReference

    rotation = robot.frame_placement(HOME_Q, TOOL).rotation
    start = PoseReference(
        np.array([0.4, 0.0, 0.4]), rotation, np.r_[0.1, 0.0, 0.0, 0.0, 0.0, 0.3], np.zeros(6)
    )
    stop = PoseReference(np.array([0.41, 0.0, 0.4]), rotation @ pin.exp3(np.array([0.0, 0.2, 0.1])))
    goal = PoseReference(np.array([0.3, 0.1, 0.4]), rotation)
    approach = PoseApproach(start, goal, 1.0, 0.4, stop)
    at = approach.sample(0.4)
    assert np.allclose(at.position, stop.position, atol=1e-12) and np.allclose(
        at.rotation, stop.rotation, atol=1e-12
    )
    assert at.twist is not None and np.allclose(at.twist, 0.0, atol=1e-12)


def test_qp_feed_forward_goes_only_to_the_tracked_axes_and_joints(robot: RobotModel) -> None:
    """A pose task weighted 0 on its rotation axes and a posture task with kp 0 on joint_7: a tool
    target that also turns 1 rad is timed on the translation alone, and neither the turn nor
    joint_7's motion is fed forward (fed, joint_7 had got 0.61 rad/s of reference)."""
    params = {
        "tasks": ["tool", "posture"],
        "tool": {"type": "pose", "frame": TOOL, "kp": 100.0, "weight": [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]},
        "posture": {"type": "posture", "kp": [10.0] * 6 + [0.0], "weight": 1e-3},
    }
    node = FakeTargetNode()
    source = targets.TaskTargetSource(node, create_controller("qpid", robot, params))  # type: ignore[arg-type]
    source.reference(JointState(HOME_Q, np.zeros(7), 0.0))
    tool = robot.frame_placement(HOME_Q, TOOL)
    msg = _pose(tool.translation + np.array([0.1, 0.0, 0.0]))
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = (
        float(c) for c in pin.Quaternion(pin.rpy.rpyToMatrix(1.0, 0.0, 0.0) @ tool.rotation).coeffs()
    )
    node.callbacks["~/tool/target"](msg)
    node.callbacks["~/joint_target"](
        JointStateMsg(name=list(robot.joint_names), position=(HOME_Q + 0.3).tolist())
    )
    source.reference(JointState(HOME_Q, np.zeros(7), 0.0))
    tool_move, posture_move = (
        source.tracker.pose_moves["tool"].move,
        source.tracker.joint_moves["posture"].move,
    )
    assert tool_move.duration < 1.0  # the translation's time, not the turn's
    for t in np.linspace(0.01, min(tool_move.duration, posture_move.duration) - 0.01, 7):
        reference = source.reference(JointState(HOME_Q, np.zeros(7), t))
        assert not reference["tool"].velocity[3:].any() and reference["posture"].v[6] == 0.0
        assert np.abs(reference["posture"].v[:6]).max() > 0.0


def test_a_pose_target_sent_again_is_not_planned_again(robot: RobotModel) -> None:
    """achd_rnea's target under way, sent again mid-approach, leaves the approach as it is."""
    node, ctrl, source = _pose_source(robot)
    start = ctrl.hold_reference(JointState(HOME_Q, np.zeros(7), 1.0))
    message = _pose(start.position + np.array([0.0, 0.1, 0.0]))
    o = message.pose.orientation
    o.x, o.y, o.z, o.w = (float(c) for c in pin.Quaternion(start.rotation).coeffs())
    assert _planned_once(node, source, "~/target_pose", message)


def _planned_once(node: FakeTargetNode, source: Any, topic: str, message: Any) -> bool:
    """Whether ``message`` sent on ``topic`` again mid-approach leaves the approach (the move of
    the source's tracker) as it was, both messages received."""
    node.callbacks[topic](message)
    source.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    first = source.tracker.active.move
    node.callbacks[topic](message)
    source.reference(JointState(HOME_Q, np.zeros(7), 1.3))
    return source.tracker.active.move is first and source.received == 2


def test_a_joint_target_at_a_limit_ahead_of_a_reference_moving_to_it_is_taken(robot: RobotModel) -> None:
    """joint_2 at 2.10 rad moving 1 rad/s toward its 2.24 limit, a target exactly at the limit:
    one quintic there may pass it by its course tolerance, so it stops first instead (within the
    limit), rather than being refused (2.2401 rad)."""
    from torque_ctrl_ros.core.approach import JointApproachPlanner

    planner = JointApproachPlanner(robot, np.full(7, 100.0), np.full(7, 20.0))
    limit = robot.position_upper[1]
    q0, v0 = HOME_Q.copy(), np.zeros(7)
    q0[1], v0[1] = 2.10, 1.0
    goal = q0.copy()
    goal[1] = limit
    approach = planner.plan((q0, v0, None), goal)
    q2 = [approach.sample(t)[0][1] for t in np.linspace(0.0, approach.duration, 4001)]
    assert max(q2) <= limit + 1e-9 and q2[-1] == pytest.approx(limit)


def test_a_stop_toward_a_limit_ends_on_it_not_past_it(robot: RobotModel) -> None:
    """joint_2 at 2.09 rad, 1.3 rad/s and slowing at 8 rad/s² toward its 2.24 limit, a target
    behind: half its speed times the stop time on would be 2.25, past the limit, and the target was
    refused; the stop is held to the limit and the target taken."""
    from torque_ctrl_ros.core.approach import JointApproachPlanner

    planner = JointApproachPlanner(robot, np.full(7, 100.0), np.full(7, 20.0))
    q0, v0, a0 = HOME_Q.copy(), np.zeros(7), np.zeros(7)
    q0[1], v0[1], a0[1] = 2.09, 1.3, -8.0
    approach = planner.plan((q0, v0, a0), HOME_Q)
    q2 = [approach.sample(t)[0][1] for t in np.linspace(0.0, approach.duration, 4001)]
    assert max(q2) <= robot.position_upper[1] + 1e-9 and q2[-1] == pytest.approx(HOME_Q[1])


@pytest.mark.parametrize("gap", [0.05, 0.02])
def test_a_stop_held_short_by_a_limit_does_not_overshoot_it(robot: RobotModel, gap: float) -> None:
    """joint_2 at 0.8 rad/s, ``gap`` rad from its 2.24 limit: the stop held to the limit over the
    stop time (0.24 s) would run to 2.2452 (0.05 away) before coming back, refused, and the
    tracker would hold at once, the step the stop exists to avoid. Shortened to ``2.5·d/v`` (0.156
    s, 0.0625 s), the quintic reaches the limit without passing it and the stop is taken; so is a
    joint target behind the reference, which begins with it. Nearer the limit (0.01 rad), no stop
    within joint_2's acceleration bound stays inside: refused, the tracker holds at once."""
    from torque_ctrl_ros.core.approach import JointApproachPlanner

    planner = JointApproachPlanner(robot, np.full(7, 100.0), np.full(7, 20.0))
    q0, v0 = np.zeros(7), np.zeros(7)
    q0[1], v0[1] = robot.position_upper[1] - gap, 0.8
    stop = planner.stop((q0, v0, None))
    q2 = [stop.sample(t)[0][1] for t in np.linspace(0.0, stop.duration, 4001)]
    assert max(q2) <= robot.position_upper[1] + 1e-9 and q2[-1] == pytest.approx(robot.position_upper[1])
    assert stop.duration == pytest.approx(min(planner.stop_time, 2.5 * gap / 0.8))
    approach = planner.plan((q0, v0, None), np.zeros(7))
    assert (
        max(approach.sample(t)[0][1] for t in np.linspace(0.0, 1.0, 4001)) <= robot.position_upper[1] + 1e-9
    )
    q0[1] = robot.position_upper[1] - 0.01
    with pytest.raises(TargetError, match="joint_2"):
        planner.stop((q0, v0, None))


@pytest.mark.parametrize("d", [1e-3, 1e-5, 1e-6, 1e-7])
def test_a_stop_held_short_by_a_rest_point_a_hair_ahead_stays_within_the_acceleration_bound(
    robot: RobotModel, d: float
) -> None:
    """joint_1 and joint_3 at 1 rad/s, the motion under way at rest ``d`` rad on joint_1 a second
    later: shortened to ``2.5·d/v`` alone, the stop would ask 5 (1e-6) to 52 (1e-7) times joint_1's
    bound. It is never shorter than a stop from that speed within the bound takes (``1.5·|v|/a``),
    then lengthened to the bound; it passes the rest point, which is no limit."""
    from torque_ctrl_ros.core.approach import JointApproachPlanner
    from torque_ctrl_ros.core.trajectory import JointTrajectory

    planner = JointApproachPlanner(robot, np.full(7, 100.0), np.full(7, 20.0))
    q0, v0, q1 = np.zeros(7), np.zeros(7), np.zeros(7)
    v0[0] = v0[2] = 1.0
    q1[0], q1[2] = d, 2.0
    zeros = np.zeros(7)
    under_way = JointTrajectory([0.0, 1.0], [q0, q1], velocities=[v0, zeros], accelerations=[zeros, zeros])
    stop = planner.stop((q0, v0, None), (under_way, 0.0))
    peak = max(
        float(np.max(np.abs(stop.sample(t)[2]) / planner.acceleration_limit))
        for t in np.linspace(0.0, stop.duration, 2001)
    )
    assert peak <= 1.0 + 1e-6
    assert stop.duration >= 1.5 * 1.0 / planner.acceleration_limit[0]


def test_a_joint_target_or_stop_refused_near_a_limit_says_what_moved_and_what_to_do(
    robot: RobotModel,
) -> None:
    """The reference 0.01 rad from joint_2's limit at 0.8 rad/s: no stop within its acceleration
    bound stays inside. The joint target is refused as an approach from the current motion (send
    it again once the arm has slowed), the stop held at once with a warning naming the stop: not
    as a trajectory with waypoints to add and a time_from_start the user never gave."""
    from torque_ctrl_ros.core.target_tracking import JointMode, JointTargetTracker, TimedMove

    errors: list[str] = []
    warnings: list[str] = []
    ctrl = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
    tracker = JointTargetTracker(ctrl, refuse=errors.append, warn=warnings.append)
    q0, v0 = np.zeros(7), np.zeros(7)
    q0[1], v0[1] = robot.position_upper[1] - 0.01, 0.8
    moving = JointTrajectory([1.0], [q0], start=(q0, v0, None))  # sampled at its start only
    tracker.active, tracker.mode = TimedMove(moving, 5.0), JointMode.TRAJECTORY
    tracker.submit_target(np.zeros(7))
    tracker.reference(JointState(q0, v0, 5.0))
    assert len(errors) == 1 and re.fullmatch(
        r"joint target: the approach from the current motion takes joint_2 to [0-9.]+ rad at [0-9.]+ s "
        r"into it, past its position limit 2\.2400 rad; send the target again once the arm has slowed",
        errors[0],
    ), errors
    tracker.submit_stop()
    tracker.reference(JointState(q0, v0, 5.0))
    assert (
        tracker.mode is JointMode.HOLD
        and len(warnings) == 1
        and re.fullmatch(
            r"stop: held at once, its smooth stop refused \(the stop from the current motion takes joint_2 "
            r"to [0-9.]+ rad at [0-9.]+ s into it, past its position limit 2\.2400 rad\)",
            warnings[0],
        )
    ), warnings


@pytest.mark.parametrize(
    ("source", "controller"),
    [
        ("JointTargetSource", "achd_rnea"),
        ("PoseTargetSource", "computed_torque"),
        ("TaskTargetSource", "gravity_comp"),
    ],
)
def test_a_target_source_refuses_a_controller_it_is_not_written_for(
    robot: RobotModel, source: str, controller: str
) -> None:
    """Each source reads its controller's own fields (gains, frame, tasks): given another kind it
    says which it expects instead of failing on a missing attribute."""
    ctrl = create_controller(controller, robot, {})
    with pytest.raises(TypeError, match=f"was given a {type(ctrl).__name__}"):
        getattr(targets, source)(FakeTargetNode(), ctrl)


def test_approach_times_follow_the_weakest_axis() -> None:
    """The shortest approach asks at most what the softest axis's ``kp`` would at once, a stop
    decelerates at most as the least ``kd`` does: per-axis gains take the smallest."""
    from torque_ctrl_ros.core.approach import QUINTIC_PEAK_ACCELERATION, QUINTIC_PEAK_SPEED, approach_times

    shortest, stop = approach_times(np.array([100.0, 400.0]), np.array([2.0, 40.0]))
    assert shortest == pytest.approx(math.sqrt(QUINTIC_PEAK_ACCELERATION / 100.0))  # 0.240 s
    assert stop == pytest.approx(QUINTIC_PEAK_SPEED / 2.0)  # 0.9375 s


# ------------------------------------------------------------------ no torque step from a new target
def _moving_trajectory(robot: RobotModel) -> tuple[FakeTargetNode, Any, Any]:
    """A computed-torque source (kp 100, kd 20) whose trajectory runs joint_1 from HOME_Q to 1.5 rad
    over 2 s (started at stamp 1.0), and its reference at stamp 2.0, mid-way: 1.125 rad/s."""
    node, source = _joint_source(robot)
    source.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    goal = HOME_Q.copy()
    goal[0] = 1.5
    node.callbacks["~/joint_trajectory"](_trajectory_msg(list(robot.joint_names), [(2.0, goal, None)]))
    source.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    ref = source.reference(JointState(HOME_Q, np.zeros(7), 2.0))
    assert source.describe() == "trajectory" and ref.v[0] == pytest.approx(1.125)
    return node, source, ref


def _torque_step(source: Any, before: Any, after: Any) -> np.ndarray:
    """The change of the computed torque (N·m) from ``before`` to ``after``, the arm on ``before``."""
    q, v = before.q, np.zeros(7) if before.v is None else before.v
    return source.controller.torque(q, v, after)[0] - source.controller.torque(q, v, before)[0]


def test_a_first_point_at_time_zero_starts_from_the_reference_velocity(robot: RobotModel) -> None:
    """A replan of a trajectory running 1.125 rad/s on joint_1, its first point at time 0 where the
    reference is (positions only, as a planner replanning from the state sends): the point's
    velocity had been taken as 0 and the reference stepped to rest, −5.75 N·m on joint_1 at once
    (and 0 without the point, or stamped 0.5 ms earlier). It starts from the reference's velocity
    and acceleration now, as from a first point later than 0."""
    node, source, before = _moving_trajectory(robot)
    goal = before.q.copy()
    goal[0] += 0.5
    node.callbacks["~/joint_trajectory"](
        _trajectory_msg(list(robot.joint_names), [(0.0, before.q, None), (1.0, goal, None)])
    )
    after = source.reference(JointState(before.q, before.v, 2.0))
    assert source.rejected == 0 and source.received == 2, source.last_error
    np.testing.assert_allclose(after.q, before.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(after.v, before.v, rtol=0, atol=1e-12)
    # What is left is the cubic's own acceleration from that velocity (-1.5 rad/s²): 0.4 N·m.
    assert np.abs(_torque_step(source, before, after)).max() < 0.5


def test_a_first_point_at_time_zero_must_move_as_the_reference_does(robot: RobotModel) -> None:
    """At rest, a first point at time 0 with 1 rad/s on joint_1 had been taken: the reference
    stepped to 1 rad/s, +5.1 N·m at once. Refused beyond the start tolerance (0.05 rad/s with kp
    100, kd 20); within it the reference's own velocity is kept. A given acceleration is not
    compared: the reference's is kept and the first segment blends into the next point's. A lone
    point at time 0 is a stop at once: refused while the reference moves."""
    names = list(robot.joint_names)
    goal = HOME_Q.copy()
    goal[0] += 0.5
    node, source = _joint_source(robot)
    rest = source.reference(JointState(HOME_Q, np.zeros(7), 1.0))

    def send(v0: float, a0: float) -> Any:
        first = _point(0.0, HOME_Q, np.eye(7)[0] * v0)
        first.accelerations = list(np.eye(7)[0] * a0)
        last = _point(1.0, goal, np.zeros(7))
        last.accelerations = [0.0] * 7
        node.callbacks["~/joint_trajectory"](TrajectoryMsg(joint_names=names, points=[first, last]))
        return source.reference(JointState(HOME_Q, np.zeros(7), 1.001))

    send(1.0, 0.0)
    assert source.rejected == 1 and source.describe() == "hold"
    assert re.search(
        r"time_from_start 0, has velocity 1\.000 rad/s on joint_1 where the current reference has "
        r"0\.000 rad/s \(at most 0\.05 rad/s apart",
        source.last_error,
    ), source.last_error
    # MoveIt's time-optimal parameterisation starts from rest at its acceleration (10 rad/s² on
    # the wrist at full scaling; 5 here on joint_1): taken, the first segment blending from the
    # reference's 0 into the next point, no torque step.
    ref = send(0.0, 5.0)
    assert source.rejected == 1 and source.describe() == "trajectory", source.last_error
    np.testing.assert_allclose(source.tracker.active.move.sample(0.0)[2], 0.0, atol=1e-12)
    assert np.abs(_torque_step(source, rest, ref)).max() < 0.1
    ref = send(0.03, 0.5)
    assert source.rejected == 1 and source.describe() == "trajectory", source.last_error
    start = source.tracker.active.move.sample(0.0)
    np.testing.assert_allclose(start[1], 0.0, atol=1e-12)
    np.testing.assert_allclose(start[2], 0.0, atol=1e-12)
    assert np.abs(_torque_step(source, rest, ref)).max() < 0.1  # 1 ms into the move from rest
    assert source.tracker.velocity_step_tolerance == pytest.approx(np.full(7, 0.05))
    assert source.tracker.acceleration_step_tolerance == pytest.approx(np.full(7, 1.0))

    node, source, before = _moving_trajectory(robot)
    node.callbacks["~/joint_trajectory"](_trajectory_msg(names, [(0.0, before.q, None)]))
    source.reference(JointState(before.q, before.v, 2.0))
    assert source.rejected == 1 and "its only point, at time_from_start 0, is at rest" in source.last_error
    assert source.describe() == "trajectory"


def test_an_empty_trajectory_stops_a_moving_reference_without_a_torque_step(robot: RobotModel) -> None:
    """Stopped at once, a reference at 1.125 rad/s on joint_1 had stepped to rest: −5.75 N·m on
    joint_1 and −4.45 on joint_3 on the next torque, the arm 0.041 rad past the held point. The
    stop decelerates it along the approach planner's stop (0.24 s, 0.135 rad on), and the
    reference is held there."""
    node, source, before = _moving_trajectory(robot)
    node.callbacks["~/joint_trajectory"](_trajectory_msg(list(robot.joint_names), []))
    after = source.reference(JointState(before.q, before.v, 2.0))
    assert source.rejected == 0 and source.describe() == "hold", source.last_error
    np.testing.assert_allclose(after.v, before.v, rtol=0, atol=1e-12)
    assert np.abs(_torque_step(source, before, after)).max() < 1e-9
    stop_time = source.tracker.planner.stop_time
    assert stop_time == pytest.approx(0.24, abs=1e-3)
    samples = [
        source.reference(JointState(before.q, before.v, 2.0 + t)) for t in np.linspace(0, stop_time, 241)
    ]
    decel = min(r.a[0] for r in samples)
    assert decel == pytest.approx(-1.5 * 1.125 / stop_time, rel=1e-3)  # quintic to q + v·T/2: 1.5·v/T
    held = source.reference(JointState(before.q, before.v, 3.0))
    assert held.q[0] == pytest.approx(before.q[0] + 0.5 * stop_time * 1.125, abs=1e-12)
    assert not np.any(held.v) and not np.any(held.a)
    # A reference within the start tolerances of rest is held at once.
    node.callbacks["~/joint_trajectory"](_trajectory_msg(list(robot.joint_names), []))
    again = source.reference(JointState(before.q, before.v, 3.0))
    assert source.tracker.active is None and np.array_equal(again.q, held.q)


def test_trajectory_accelerations_beyond_the_effort_bound_are_refused(robot: RobotModel) -> None:
    """A final acceleration of 300 rad/s² on joint_1 20 ms after the point before (its speed peaks
    at 0.41 rad/s, within the limit) had been taken: −73 N·m at once on joint_1 against its 39.
    Accelerations are bounded where the inertia alone would need a joint's whole effort limit
    (:func:`acceleration_limits`: 25.9 rad/s² on joint_1), at the points and along the segments;
    MoveIt's small final deceleration stays accepted."""
    names = list(robot.joint_names)
    node, source = _joint_source(robot)
    source.reference(JointState(HOME_Q, np.zeros(7), 1.0))
    q1 = HOME_Q.copy()
    q1[0] += 0.01
    points = [_point(1.0, q1, np.zeros(7)), _point(1.02, q1, np.zeros(7))]
    points[0].accelerations = [0.0] * 7
    points[1].accelerations = list(np.eye(7)[0] * 300.0)
    node.callbacks["~/joint_trajectory"](TrajectoryMsg(joint_names=names, points=points))
    assert source.rejected == 1 and source.received == 0
    assert re.search(
        r"accelerates joint_1 at -?\d+\.\d\d rad/s² at 1\.0\d+ s \(time_from_start\), "
        r"above its bound 25\.\d\d rad/s²",
        source.last_error,
    ), source.last_error
    # The same end at 20 rad/s², and a positions-only cubic asking 0.3 rad in 0.1 s (180 rad/s²).
    points[1].accelerations = list(np.eye(7)[0] * -20.0)
    points[0].time_from_start = Duration(sec=1)
    points[1].time_from_start = Duration(sec=2)
    node.callbacks["~/joint_trajectory"](TrajectoryMsg(joint_names=names, points=points))
    assert source.rejected == 1 and source.received == 1, source.last_error
    q2 = HOME_Q.copy()
    q2[1] += 0.3
    node.callbacks["~/joint_trajectory"](_trajectory_msg(names, [(1.0, HOME_Q, None), (1.1, q2, None)]))
    source.reference(JointState(HOME_Q, np.zeros(7), 1.0))  # its first segments are checked here
    assert source.rejected == 2 and "accelerates joint_2 at 180.00 rad/s² at 1.0000 s" in source.last_error

    from torque_ctrl_ros.core.trajectory import acceleration_limits

    bound = acceleration_limits(robot)
    np.testing.assert_allclose(bound[:4], [25.9, 25.7, 91.6, 69.7], rtol=1e-2)
    assert (bound[4:] > 400.0).all()


def test_a_target_taken_is_logged_once_a_second_per_topic_and_a_refused_one_is_not(robot: RobotModel) -> None:
    """The node says what it received (at info), so a user who published a target sees it arrive;
    a stream of them logs one line a second, and a refusal only its error."""
    names = list(robot.joint_names)
    node, source = _joint_source(robot)
    home = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
    for k in range(50):  # a 1 kHz stream
        source._on_joint_target(JointStateMsg(name=names, position=(home + 1e-4 * k).tolist()))
    assert source.received == 50
    assert node.infos == ["joint target received: [0.000, 0.260, 3.140, -2.270, 0.000, 0.960, 1.570] rad"]
    source._on_trajectory(_trajectory_msg(names, [(1.0, home, None)]))  # another topic: its own line
    assert node.infos[1:] == ["trajectory received: 1 point"]
    source._on_joint_target(JointStateMsg(name=names[:6], position=home[:6].tolist()))
    assert source.rejected == 1 and len(node.infos) == 2 and node.errors

    node, source = _qp_source(robot)
    pose = PoseStamped()
    pose.header.frame_id = base_frame(robot)
    pose.pose.position.x, pose.pose.position.z = 0.45, 0.4
    pose.pose.orientation.w = 1.0
    task = next(iter(source.tracker.frame_tasks))
    source._on_pose(task, pose)
    assert node.infos == [f"{task} target received: position (0.450, 0.000, 0.400) m"], node.infos


def test_a_trajectory_in_another_joint_order_is_read_by_name(robot: RobotModel) -> None:
    """Positions, velocities and accelerations all follow ``joint_names``: reversed, with a joint
    the model does not have in between (a gripper's, ignored), each joint keeps its own values."""
    n = robot.n
    home = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
    model = list(robot.joint_names)
    order = list(range(n))[::-1]
    names = [model[i] for i in order]
    names.insert(3, "gripper_finger_joint")

    def row(values: np.ndarray, other: float) -> list[float]:
        out = [float(values[i]) for i in order]
        out.insert(3, other)
        return out

    q = [home + 0.01 * np.arange(1, n + 1), home + 0.02 * np.arange(1, n + 1)]
    v = [0.05 * np.arange(1, n + 1), np.zeros(n)]
    a = [0.3 * np.arange(1, n + 1), -0.1 * np.arange(1, n + 1)]
    msg = TrajectoryMsg(joint_names=names)
    for k, t in enumerate((1.0, 2.0)):
        msg.points.append(
            JointTrajectoryPoint(
                positions=row(q[k], 9.9),
                velocities=row(v[k], -7.0),
                accelerations=row(a[k], 5.0),
                time_from_start=Duration(sec=int(t)),
            )
        )
    points = targets.trajectory_points(robot, JointNameMap(model), msg)
    np.testing.assert_array_equal(points.times, [1.0, 2.0])
    np.testing.assert_array_equal(points.positions, np.array(q))
    assert points.velocities is not None and points.accelerations is not None
    np.testing.assert_array_equal(points.velocities, np.array(v))
    np.testing.assert_array_equal(points.accelerations, np.array(a))


def test_waypoint_positions_beyond_either_limit_are_refused_by_name(robot: RobotModel) -> None:
    q = np.array([0.0, 0.26, 3.14, -2.27, 0.0, 0.96, 1.57])
    check_joint_limits(robot, q, "target")
    for k, bound in ((1, robot.position_upper[1] + 0.01), (3, robot.position_lower[3] - 0.01)):
        bad = q.copy()
        bad[k] = bound
        with pytest.raises(
            TargetError, match=re.escape(f"target: outside the position limits at ['{robot.joint_names[k]}']")
        ):
            check_joint_limits(robot, bad, "target")


def test_the_largest_trajectory_the_name_and_point_limits_allow_is_within_the_byte_limit() -> None:
    """MAX_TRAJECTORY_NAMES joints and MAX_TRAJECTORY_POINTS points, each with positions,
    velocities, accelerations and efforts, serialize to ~4.2 MB (targets.py's figure), within
    MAX_TRAJECTORY_BYTES: a trajectory the count limits take is never refused for its size. A byte
    limit lowered to 800 000 had passed every test."""
    from rclpy.serialization import serialize_message

    n = targets.MAX_TRAJECTORY_NAMES
    values = [0.1] * n
    point = JointTrajectoryPoint(positions=values, velocities=values, accelerations=values, effort=values)
    msg = TrajectoryMsg(joint_names=[f"joint_{k}" for k in range(1, n + 1)])
    msg.points = [point] * targets.MAX_TRAJECTORY_POINTS
    size = len(serialize_message(msg))
    assert 4.1e6 < size < 4.3e6
    assert size <= targets.MAX_TRAJECTORY_BYTES


def test_a_trajectory_message_naming_more_joints_than_allowed_is_refused(robot: RobotModel) -> None:
    """The name cap holds for a trajectory taken as a message too (big-endian bytes, whose sizes
    are not read before rclpy converts them): 65 names are refused before they are looked up, 64
    are read. A review had 100 names accepted that way while the same content little-endian was
    refused."""
    names_map = JointNameMap(robot.joint_names)
    for extra, refused in (
        (targets.MAX_TRAJECTORY_NAMES - 7 + 1, True),
        (targets.MAX_TRAJECTORY_NAMES - 7, False),
    ):
        names = [*robot.joint_names, *(f"other_{k}" for k in range(extra))]
        msg = TrajectoryMsg(joint_names=names)
        msg.points = [JointTrajectoryPoint(positions=[0.0] * len(names), time_from_start=Duration(sec=2))]
        if refused:
            with pytest.raises(
                TargetError, match=rf"^trajectory: {len(names)} joint names, more than the 64"
            ):
                targets.trajectory_points(robot, names_map, msg)
        else:
            assert targets.trajectory_points(robot, names_map, msg).positions.shape == (1, 7)
