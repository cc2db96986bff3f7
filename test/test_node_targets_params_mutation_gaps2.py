"""Behaviours of ``nodes/targets.py`` (how target messages become references and how refusals are
told) and ``nodes/params.py`` (which parameter values reach the nodes) that a second, deeper mutation
review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ros_helpers import FakeTargetNode, Probe, probe, ros_domain  # noqa: F401 - pytest fixtures
from sensor_msgs.msg import JointState as JointStateMsg
from test_conversions_and_params import NODES
from test_target_guards import HOME_Q, TOOL, _joint_source, _pose, _stamped, _trajectory_msg

from torque_ctrl_ros.core import JointState, RobotModel
from torque_ctrl_ros.core.controllers import AchdRnea, create_controller
from torque_ctrl_ros.core.errors import ConfigError, TargetError
from torque_ctrl_ros.core.safety import JointNameMap
from torque_ctrl_ros.nodes import targets
from torque_ctrl_ros.nodes.params import (
    check_params_file,
    controller_node_config,
    file_parameter,
    sim_node_config,
)

#: The Gen3's joints in the model's order, and the shipped ``safe_damping`` for them
#: (``config/gen3_controllers.yaml``).
GEN3_JOINTS = [f"joint_{i}" for i in range(1, 8)]
SHIPPED_SAFE_DAMPING = [2.0, 2.0, 0.5, 1.0, 0.2, 0.2, 0.2]


# ------------------------------------------------------------------ targets.py
def test_refusals_differing_only_in_a_list_of_names_share_one_throttle(robot: RobotModel) -> None:
    """A joint target that lacks one joint and one that lacks two are one kind of refusal: the list
    of missing joints is a value, left out of :func:`~torque_ctrl_ros.nodes.targets.refusal_kind` as
    a whole, so a flood of such targets logs one line a period however the lists vary. (Mutant: the
    ``\\[[^\\]]*\\]`` alternative dropped from ``_VALUES``, leaving ``[…]`` and ``[…, …]`` apart.)"""
    node, source = _joint_source(robot)
    source.log.period = 3600.0  # both refusals come within one period
    for missing in (1, 2):
        names = GEN3_JOINTS[:-missing]
        node.callbacks["~/joint_target"](JointStateMsg(name=names, position=HOME_Q[: len(names)].tolist()))
    assert source.rejected == 2 and "lacks joint(s) ['joint_6', 'joint_7']" in source.last_error
    assert len(node.errors) == 1, node.errors


def test_a_long_frame_id_is_shown_cut_to_64_characters_in_its_refusal(robot: RobotModel) -> None:
    """A pose in another frame is refused naming the frame it came in, whole up to 64 characters and
    beyond that its first 64 and its length, so a sender's megabyte ``frame_id`` does not end up in
    the log. (Mutant: ``check_frame`` shows names up to 640 characters whole.)"""
    node = FakeTargetNode()
    source = targets.PoseTargetSource(node, AchdRnea(robot))  # type: ignore[arg-type]
    position = robot.frame_placement(HOME_Q, TOOL).translation
    node.callbacks["~/target_pose"](_pose(position, "f" * 64))
    assert source.last_error.endswith(f"got {'f' * 64!r}"), source.last_error
    node.callbacks["~/target_pose"](_pose(position, "g" * 65))
    assert source.last_error.endswith(f"got {'g' * 64!r}… (65 characters)"), source.last_error


# ------------------------------------------------------------------ params.py
def test_the_deepest_queues_accepted_are_taken() -> None:
    """``qos_depth`` and ``command_queue_depth`` are taken up to and including the largest queue the
    nodes accept, 100 000 messages, and refused one above it naming the parameter. (Mutant: ``_int``
    refuses ``value >= maximum``.)"""
    assert controller_node_config({"qos_depth": 100_000}).common.qos_depth == 100_000
    sim = sim_node_config({"qos_depth": 100_000, "command_queue_depth": 100_000})
    assert (sim.common.qos_depth, sim.command_queue_depth) == (100_000, 100_000)
    with pytest.raises(
        ConfigError, match=r"sim_node.command_queue_depth: expected an integer in \[1, 100000\]"
    ):
        sim_node_config({"command_queue_depth": 100_001})


def test_per_joint_safe_damping_follows_each_joint_through_any_reordering() -> None:
    """Per-joint ``safe_damping`` values belong to joints (given in the model's order), whatever
    order ``joints`` gives the plant: with the joints rotated by one (not a mere swap or reversal,
    which are their own inverse) each joint still gets its own value. (Mutant: ``damping_vector``
    indexes with the inverse permutation, ``joints.index(name) for name in driven``.)"""
    cfg = sim_node_config({"safe_damping": SHIPPED_SAFE_DAMPING})
    rotated = [*GEN3_JOINTS[1:], GEN3_JOINTS[0]]
    by_joint = dict(zip(GEN3_JOINTS, SHIPPED_SAFE_DAMPING, strict=True))
    assert cfg.damping_vector(GEN3_JOINTS, rotated).tolist() == [by_joint[name] for name in rotated]


def test_a_section_name_with_a_dot_for_an_underscore_reaches_no_node(tmp_path: Path) -> None:
    """A section is matched against the node names as written: ``controller.node:`` (a dot typed for
    the underscore) reaches no node, as rcl reads it, so the file is refused and the section gives
    no value. (Mutant: ``_section_pattern`` puts a token into the pattern without ``re.escape``,
    where the dot matches any character.)"""
    path = tmp_path / "params.yaml"
    path.write_text("controller.node:\n  ros__parameters:\n    controller: qpid\n")
    with pytest.raises(ConfigError, match=r"section 'controller\.node' names no node started here"):
        check_params_file(path, NODES)
    assert file_parameter([path], "/controller_node", "controller") is None


def test_a_trajectory_refusal_names_the_first_bad_point(robot: RobotModel) -> None:
    """A trajectory whose points 1 and 2 both have a wrong number of positions, or both lack the
    velocities the other points have, is refused naming point 1, the first a sender has to fix.
    (Mutants: ``_point_rows`` names the last such point, ``wrong[-1]``, or the last point without
    the field, ``flatnonzero(sizes == 0)[-1]``.)"""
    names_map = JointNameMap(robot.joint_names)
    zero = [0.0] * 7
    short = _trajectory_msg(
        GEN3_JOINTS, [(0.0, HOME_Q, None), (1.0, HOME_Q[:6], None), (2.0, HOME_Q[:6], None)]
    )
    with pytest.raises(TargetError, match=r"^trajectory point 1: 6 positions for 7 joints$"):
        targets.trajectory_points(robot, names_map, short)
    gaps = _trajectory_msg(
        GEN3_JOINTS, [(0.0, HOME_Q, zero), (1.0, HOME_Q, None), (2.0, HOME_Q, None), (3.0, HOME_Q, zero)]
    )
    with pytest.raises(TargetError, match=r"^trajectory point 1: no velocities while other points"):
        targets.trajectory_points(robot, names_map, gaps)


@pytest.mark.parametrize(
    ("node", "params", "refusal"),
    [
        ("controller_node", {"model_file": 3}, "controller_node.model_file: expected a string, got 3"),
        (
            "controller_node",
            {"robot_description": ["x"]},
            "controller_node.robot_description: expected a string",
        ),
        (
            "controller_node",
            {"serialized_io": "true"},
            "controller_node.serialized_io: expected true or false",
        ),
        (
            "controller_node",
            {"qos_depth": 5},
            "controller_node.qos_depth: expected an integer in [10, 100000], got 5",
        ),
        (
            "controller_node",
            {"diagnostics_period": 0.01},
            "controller_node.diagnostics_period: expected at least 0.05 s",
        ),
        (
            "controller_node",
            {"joints": ["joint_1", 2]},
            "controller_node.joints: expected a list of joint names",
        ),
        ("controller_node", {"joints": ["joint_1", "joint_1"]}, "controller_node.joints: duplicate names"),
        ("controller_node", {"controller": "pid"}, "controller_node.controller: expected one of"),
        (
            "controller_node",
            {"command_delay": -1.0},
            "controller_node.command_delay: expected a finite number > 0",
        ),
        (
            "controller_node",
            {"kp": 1.0},
            "controller_node: unknown parameter(s) ['kp']; valid are ['command_delay', ",
        ),
        (
            "controller_node",
            {"stats_file": "/"},
            "controller_node.stats_file: '/' is a folder, expected a file name",
        ),
        (
            "controller_node",
            {"model_file": "nope.urdf"},
            "controller_node.model_file: 'nope.urdf' does not exist",
        ),
        ("sim_node", {"keyframe": 1}, "sim_node.keyframe: expected a string, got 1"),
        (
            "sim_node",
            {"wait_for_controller": 1},
            "sim_node.wait_for_controller: expected true or false, got 1",
        ),
        ("sim_node", {"lockstep_timeout": 100.0}, "sim_node.lockstep_timeout: 100 s is more than the 60 s"),
        (
            "sim_node",
            {"safe_torque": "brake"},
            "sim_node.safe_torque: expected one of ['hold', 'damping', 'zero']",
        ),
        (
            "sim_node",
            {"record_file": "/no_such_folder/run.npz"},
            "sim_node.record_file: folder '/no_such_folder'",
        ),
        (
            "sim_node",
            {"command_queue_depth": 0},
            "sim_node.command_queue_depth: expected an integer in [1, 100000]",
        ),
        ("sim_node", {"mode": "fast"}, "sim_node.mode: expected one of ['realtime', 'lockstep']"),
        ("sim_node", {"use_sim_time": "true"}, "sim_node.use_sim_time: expected true or false, got 'true'"),
    ],
)
def test_each_refused_parameter_is_named_with_its_node(
    node: str, params: dict[str, Any], refusal: str
) -> None:
    """Every refusal of a bad node parameter begins with ``<node>.<parameter>:`` (or ``<node>:`` and
    the valid names for an unknown one) and says what was expected, so the line in the launch log
    leads to the line to fix. (Mutants: the ``_str``, ``_bool``, ``_int``, ``_period``, ``_names``
    or ``_output_file`` refusal, or the ``controller``, ``lockstep_timeout``, ``safe_torque`` or
    ``command_delay`` check, names the key without its node; ``_reject_unknown`` no longer lists
    the valid names.)"""
    read = controller_node_config if node == "controller_node" else sim_node_config
    with pytest.raises(ConfigError, match="^" + re.escape(refusal)):
        read(params)


def test_each_task_topic_feeds_its_own_task(robot: RobotModel) -> None:
    """With several frame tasks each ``~/<task>/target`` goes to its own task: a position target
    with the all-zero default orientation, sent to a position task's topic, is taken, though the
    orientation task created after it would refuse that orientation. (Mutant: the subscription's
    callback looks the task name up when called, ``lambda msg: self._on_pose(name, msg)``, so every
    topic feeds the last task.)"""
    params = {
        "tasks": ["tool", "wrist"],
        "tool": {"type": "position", "frame": TOOL, "kp": 100.0},
        "wrist": {"type": "orientation", "frame": TOOL, "kp": 100.0},
    }
    node = FakeTargetNode(strict=True)
    source = targets.TaskTargetSource(node, create_controller("qpid", robot, params))  # type: ignore[arg-type]
    position_only = _pose(robot.frame_placement(HOME_Q, TOOL).translation)
    position_only.pose.orientation.w = 0.0
    node.callbacks["~/tool/target"](position_only)
    assert (source.received, source.rejected) == (1, 0)
    assert node.infos[-1].startswith("tool target received: position"), node.infos


def test_a_missing_model_file_is_refused_saying_no_robot_description_stands_in() -> None:
    """A ``model_file`` that does not exist is refused naming it, the places tried, and that no
    ``robot_description`` stands in for it. (Mutant: ``_data_file`` leaves out its ``note``.)"""
    with pytest.raises(
        ConfigError,
        match=r"^controller_node\.model_file: 'nope\.urdf' does not exist .* and robot_description is empty$",
    ):
        controller_node_config({"model_file": "nope.urdf"})


def test_an_output_file_under_a_file_is_refused_at_start(tmp_path: Path) -> None:
    """A ``record_file`` whose folder is a file is refused when the parameters are read, like one in
    a folder that does not exist: found at exit, the whole run's record would be lost. (Mutant:
    ``_output_file`` asks only that the folder exists, ``folder.exists()``.)"""
    not_a_folder = tmp_path / "notes.txt"
    not_a_folder.write_text("")
    with pytest.raises(ConfigError, match=r"^sim_node\.record_file: folder '.*notes\.txt' does not exist$"):
        sim_node_config({"duration": 1.0, "record_file": str(not_a_folder / "run.npz")})


@pytest.mark.ros
def test_a_task_name_that_is_no_topic_name_is_refused_as_a_parameter(
    robot: RobotModel,
    probe: Probe,  # noqa: F811 - the fixture imported above
) -> None:
    """A QP task whose name cannot be a topic name (``~/<task>/target``) stops the node at start
    with a :class:`ConfigError` naming ``<controller>.tasks`` and the task, not rclpy's exception
    about a topic the user never wrote. (Mutant: ``TaskTargetSource`` catches ``ValueError``, which
    rclpy's ``InvalidTopicNameException`` is not.)"""
    params = {"tasks": ["bad name"], "bad name": {"type": "pose", "frame": TOOL, "kp": 100.0}}
    ctrl = create_controller("qpid", robot, params)
    with pytest.raises(ConfigError, match=r"^qpid\.tasks: task name 'bad name' is not a valid topic name"):
        targets.TaskTargetSource(probe.node, ctrl)


def test_a_pause_holds_a_joint_approach_where_it_stood(robot: RobotModel) -> None:
    """After a pause (no torque computed from ``since`` to ``until``: a fallback) the source's
    approach to a joint target takes up where it stood when the pause began, not where it would be
    by ``until``. (Mutant: ``TrackedSource.pause`` returns ``False`` without passing the pause on to
    its tracker.)"""
    node, source = _joint_source(robot)
    zero = np.zeros(robot.n)
    source.reference(JointState(HOME_Q, zero, 1.0))
    target = HOME_Q.copy()
    target[0] += 0.5
    node.callbacks["~/joint_target"](JointStateMsg(name=GEN3_JOINTS, position=target.tolist()))
    source.reference(JointState(HOME_Q, zero, 1.001))  # the target is taken at this state
    stood = source.reference(JointState(HOME_Q, zero, 1.1)).q.copy()
    assert HOME_Q[0] < stood[0] < target[0]  # under way
    assert source.pause(1.1, 11.1) is False  # no trajectory was waiting to start
    np.testing.assert_allclose(source.reference(JointState(HOME_Q, zero, 11.1)).q, stood, atol=1e-12)


def test_a_reset_after_a_clock_reset_drops_a_trajectory_stamped_for_later(robot: RobotModel) -> None:
    """A source reset after the clock went back (a simulator restart) passes that on to its
    tracker: a trajectory stamped for later belongs to the timeline the clock left and is refused,
    where a reset on the same clock would keep it. (Mutant: ``TrackedSource.reset`` passes
    ``clock_reset=False`` whatever it was given.)"""
    node, source = _joint_source(robot)
    node.now_ns = 100 * 10**9
    source.reference(JointState(HOME_Q, np.zeros(robot.n), 100.0))
    later = _stamped(_trajectory_msg(GEN3_JOINTS, [(2.0, HOME_Q, None)]), 101.5)
    node.callbacks["~/joint_trajectory"](later)
    source.reset(clock_reset=True)
    assert source.rejected == 1 and "dropped: the clock went back" in source.last_error
