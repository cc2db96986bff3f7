"""Behaviours of the controller node's target intake and state handling that a mutation review
found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch, in
``nodes/targets.py`` (which messages become a reference, and which are refused) and
``nodes/controller_node.py`` (what torque or safe command goes out for which state).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from rclpy.serialization import serialize_message
from ros_helpers import FakeTargetNode, requires_rclpy, ros_domain  # noqa: F401
from sensor_msgs.msg import JointState as JointStateMsg
from test_node_runtime_guards import (  # noqa: F401
    HOME,
    JOINTS,
    MAX_AGE_1S,
    _along_a_trajectory,
    _ErrorSpy,
    _node_on_sim_time,
    _now,
    _state_msg,
    nodes,
)
from test_target_guards import _joint_source, _trajectory_msg
from test_target_tracking import _at_rest

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers import ComputedTorque, ComputedTorqueConfig
from torque_ctrl_ros.nodes import targets


# ------------------------------------------------------------------ targets.py
def test_a_controller_without_a_target_source_holds_the_first_state_until_a_reset(robot: RobotModel) -> None:
    """A controller with no registered source holds ``hold_reference`` of the first state it sees,
    wherever the arm goes next, and takes the arm's pose again after a reset (a stop, a simulator
    restart). (Mutants: ``HoldSource.reference`` takes the reference of every state, so the hold
    follows the arm and nothing holds it; ``HoldSource.reset`` forgets nothing.)"""
    ctrl = ComputedTorque(robot, ComputedTorqueConfig.create(robot.n, 100.0))
    # FakeTargetNode stands in for the rclpy Node on purpose (just what a source uses of one).
    source = targets.create_target_source("unregistered", FakeTargetNode(strict=True), ctrl)  # type: ignore[arg-type]
    assert type(source) is targets.HoldSource
    moved = HOME + 0.1
    source.reference(_at_rest(HOME, 1.0))
    np.testing.assert_array_equal(source.reference(_at_rest(moved, 1.001)).q, HOME)
    source.reset()
    np.testing.assert_array_equal(source.reference(_at_rest(moved, 1.002)).q, moved)
    np.testing.assert_array_equal(source.reference(_at_rest(HOME, 1.003)).q, moved)


def test_a_joint_target_of_exactly_the_most_bytes_is_taken(robot: RobotModel) -> None:
    """A joint target whose bytes are exactly :data:`MAX_TARGET_BYTES` (a good message, padded)
    is read and taken: the bound is the largest size taken, not the first refused. (Mutant:
    ``_message`` refuses ``len(msg) >= most_bytes``.)"""
    node, source = _joint_source(robot)
    good = serialize_message(JointStateMsg(name=list(robot.joint_names), position=HOME.tolist()))
    node.callbacks["~/joint_target"](good + bytes(targets.MAX_TARGET_BYTES - len(good)))
    assert (source.received, source.rejected) == (1, 0), source.last_error


def test_a_trajectory_naming_the_most_joints_allowed_is_taken(robot: RobotModel) -> None:
    """A trajectory's bytes naming exactly :data:`MAX_TRAJECTORY_NAMES` joints (the arm's and
    others', e.g. a gripper's) are taken, as the most points allowed are. (Mutant: ``_on_trajectory``
    refuses ``sizes[0] >= MAX_TRAJECTORY_NAMES``.)"""
    names = list(robot.joint_names)
    names += [f"other_{k}" for k in range(targets.MAX_TRAJECTORY_NAMES - len(names))]
    q = [*HOME.tolist(), *[0.0] * (len(names) - robot.n)]
    msg = _trajectory_msg(names, [(1.0, q, [0.0] * len(names))])
    node, source = _joint_source(robot)
    node.callbacks["~/joint_trajectory"](serialize_message(msg))
    assert (source.received, source.rejected) == (1, 0), source.last_error


# ------------------------------------------------------------------ controller_node.py
@pytest.mark.ros
@requires_rclpy
def test_a_stop_while_only_holding_counts_no_target_drop(nodes: Any) -> None:  # noqa: F811
    """A computed-torque node holding (no target ever sent) stopped by a 1.3 s gap in the stamps
    and resuming: nothing was dropped, so ``target_drops`` stays 0 (it would tell an operator a
    motion had been cut short). (Mutant: ``_resume_target`` counts a drop whatever the target.)"""
    node, at = _node_on_sim_time(nodes, "computed_torque")
    for k in range(1, 11):
        at(k, HOME)
    at(1300, HOME)
    assert node.watchdog.state.value == "ok" and node.target.describe() == "hold"
    assert (node.counts.watchdog_stops, node.counts.target_drops) == (1, 0)


@pytest.mark.ros
@requires_rclpy
def test_joint_1_moved_while_silent_is_named(nodes: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The arm moved 0.3 rad on joint_1 (index 0) during 0.1 s of bad states along a trajectory:
    the trajectory is dropped and the warning names joint_1 and how far it moved, as for any
    other joint. (Mutant: ``_resume_target`` tests ``resume.joint > 0``, so a move of the first
    joint is reported as a plain drop without the joint or the distance.)"""
    node, at, q = _along_a_trajectory(nodes)
    for k in range(301, 401):
        at(k, np.full(7, np.nan))
    spy = _ErrorSpy(monkeypatch, "target")
    moved = q.copy()
    moved[0] += 0.3
    at(401, moved)
    assert node.target.describe() == "hold" and node.counts.target_drops == 1
    assert len(spy.calls) == 1 and "(joint_1)" in spy.calls[0], spy.calls
    assert spy.calls[0].endswith("target dropped, holding where it is")


@pytest.mark.ros
@requires_rclpy
def test_a_state_that_cannot_be_read_is_refused_with_its_reason(nodes: Any) -> None:  # noqa: F811
    """A state naming six of the arm's joints and an unknown one: the safe torque goes out and the
    watchdog's reason (/diagnostics, the log) says which joint is missing. (Mutant: ``_on_state``
    hands the decoder's error on as ``None``, so the refusal has no reason.)"""
    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    node._on_state_message(_state_msg(HOME, _now(node)))
    node._on_state_message(_state_msg(HOME, _now(node), [*JOINTS[:6], "other_7"]))
    assert node.counts.fallback_commands == 1
    assert "joint_7" in node.watchdog.last_message, node.watchdog.last_message


@pytest.mark.ros
@requires_rclpy
def test_states_of_another_device_are_warned_of_once(nodes: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """A gripper's driver on /joint_states at the arm's rate: its states are counted, and the
    warning that they are ignored is logged once, not for each (an unthrottled rclpy log call
    costs ~0.1 ms on the control thread). (Mutant: ``_ignore_foreign`` warns while
    ``foreign_states >= 1``.)"""
    spy = _ErrorSpy(monkeypatch, "ignoring joint states")
    node = nodes.make("controller", controller="gravity_comp", use_sim_time=False, **MAX_AGE_1S)
    for _ in range(3):
        node._on_state_message(_state_msg(np.zeros(1), _now(node), ["gripper_joint"]))
    assert node.counts.foreign_states == 3 and len(spy.calls) == 1, spy.calls


@pytest.mark.ros
@requires_rclpy
def test_a_target_plan_that_raises_is_timed_and_the_next_state_still_computed(nodes: Any) -> None:  # noqa: F811
    """The target's plan after a command raises (a bug, a library error): the node logs it, keeps
    the time it took in ``plan_time`` (its cost still counts against the state's period) and
    computes the next state's torque. (Mutant: ``_take_due_targets`` answers ``False`` after the
    exception, so a failing plan is neither timed nor counted as a miss.)"""
    node = nodes.make("controller", controller="computed_torque", use_sim_time=False, **MAX_AGE_1S)

    def failing_plan(_state: Any) -> bool:
        raise RuntimeError("plan failed")

    node.target.take_due = failing_plan
    node._on_state_message(_state_msg(HOME, _now(node)))
    node._on_state_message(_state_msg(HOME, _now(node)))
    assert node.plan_time.count == 2
    assert node.counts.commands_published == 2 and node.counts.fallback_commands == 0
