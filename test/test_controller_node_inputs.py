"""The controller node in this process, its callbacks called directly: what it does with inputs
that must not reach the arm (a non-finite safe torque, targets no joint can follow, a trajectory
stamped in the past). No DDS traffic is needed; the node is built on its own domain id."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from ros_helpers import in_process_controllers, node_now, requires_rclpy, ros_domain  # noqa: F401

from torque_ctrl_ros.core.types import JointState

pytestmark = [pytest.mark.ros, requires_rclpy]

JOINTS = [f"joint_{i}" for i in range(1, 8)]


@pytest.fixture
def controller_node(ros_domain: int) -> Iterator[Callable[..., Any]]:  # noqa: F811
    """``make(**params)``: a ControllerNode on the shipped YAML (wall clock), whose publisher
    only records the commands (``node.sent``, command order)."""
    with in_process_controllers(ros_domain) as make_node:

        def make(**params: Any) -> Any:
            node = make_node(**{"use_sim_time": False, **params})
            node.sent = []

            class Recorder:
                def publish(self, msg: Any) -> None:
                    node.sent.append(msg)

            node.publisher = Recorder()
            return node

        yield make


_now = node_now


def _state_msg(q: np.ndarray, stamp: float) -> Any:
    from sensor_msgs.msg import JointState as JointStateMsg

    msg = JointStateMsg(name=JOINTS, position=q.tolist(), velocity=[0.0] * 7)
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(round(stamp * 1e9), 10**9)
    return msg


def test_a_non_finite_safe_torque_is_never_published(controller_node: Callable[..., Any]) -> None:
    """A safe torque gone non-finite is withheld and counted, the next finite one published.
    ``watchdog.max_age`` is 1 s and the refused states are stamped 2 s back: at 20 ms the first
    state, handled late on a loaded host, would be refused too."""
    node = controller_node(controller="computed_torque", **{"watchdog.max_age": 1.0})
    original = node.supervisor.brake.torque

    def broken(now: float) -> np.ndarray:
        return np.full(7, np.nan)  # a prediction gone non-finite

    node.supervisor.brake.torque = broken
    node._on_state_message(_state_msg(np.zeros(7), _now(node)))
    assert len(node.sent) == 1  # the computed torque
    node._on_state_message(_state_msg(np.zeros(7), _now(node) - 2.0))  # stale: the safe torque
    assert node.watchdog.state.value == "fallback"
    assert len(node.sent) == 1 and node.counts.withheld_commands == 1 and node.counts.fallback_commands == 0
    node.supervisor.brake.torque = original
    node._on_state_message(_state_msg(np.zeros(7), _now(node) - 2.0))
    assert len(node.sent) == 2 and node.counts.fallback_commands == 1


def test_joint_targets_no_joint_can_follow_are_refused(controller_node: Callable[..., Any]) -> None:
    from sensor_msgs.msg import JointState as JointStateMsg

    node = controller_node(controller="computed_torque")
    target = node.target
    cases: tuple[tuple[list[float], list[float], str], ...] = (
        ([0.0] * 7, [1e4] + [0.0] * 6, "velocity above the joint velocity limits at \\['joint_1'\\]"),
        ([1e17] + [0.0] * 6, [], "outside the position limits at \\['joint_1'\\]"),  # continuous joint
    )
    for k, (q, v, match) in enumerate(cases, start=1):
        target._on_joint_target(JointStateMsg(name=JOINTS, position=q, velocity=v))
        assert target.rejected == k and target.received == 0
        assert re.search(match, target.last_error), target.last_error
    # At the position limit, at rest (a held target cannot move): accepted.
    target._on_joint_target(JointStateMsg(name=JOINTS, position=[1e5] + [0.0] * 6, velocity=[0.0] * 7))
    assert target.received == 1 and target.rejected == len(cases)


def test_a_trajectory_stamped_in_the_past_starts_from_the_current_reference(
    controller_node: Callable[..., Any],
) -> None:
    from builtin_interfaces.msg import Duration, Time
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    node = controller_node(controller="computed_torque")
    target = node.target
    q0 = np.zeros(7)
    t = 100.0

    def trajectory(stamp: float, points: list[tuple[float, float]]) -> Any:
        sec, nanosec = divmod(round(stamp * 1e9), 10**9)
        msg = JointTrajectory(joint_names=JOINTS)
        msg.header.stamp = Time(sec=sec, nanosec=nanosec)
        for at, q2 in points:
            s, ns = divmod(round(at * 1e9), 10**9)
            pos = [0.0, q2, 0.0, 0.0, 0.0, 0.0, 0.0]
            at_time = Duration(sec=s, nanosec=ns)
            msg.points.append(JointTrajectoryPoint(positions=pos, time_from_start=at_time))
        return msg

    # Ended 8 s before the state it arrives at: refused, the hold stands.
    target._on_trajectory(trajectory(t - 10.0, [(2.0, 1.0)]))
    ref = target.reference(JointState(q0, np.zeros(7), t))
    assert target.rejected == 1 and "ended 8.000 s before" in target.last_error, target.last_error
    np.testing.assert_array_equal(ref.q, q0)
    # Started 0.5 s before: the point due at 0.25 s is dropped, the rest keep their times and
    # are reached from the current reference (which a jump to mid-way would not be).
    target._on_trajectory(trajectory(t - 0.5, [(0.25, 0.1), (1.0, 0.4), (2.0, 0.8)]))
    ref = target.reference(JointState(q0, np.zeros(7), t))
    assert target.rejected == 1 and target.describe() == "trajectory"
    np.testing.assert_allclose(ref.q, q0, atol=1e-12)
    np.testing.assert_allclose(target.reference(JointState(q0, np.zeros(7), t + 0.5)).q[1], 0.4, atol=1e-12)
    np.testing.assert_allclose(target.reference(JointState(q0, np.zeros(7), t + 1.5)).q[1], 0.8, atol=1e-12)
