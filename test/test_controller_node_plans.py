"""The controller node plans a target once the command of the state it is due at is out, so the
plan (~0.3–0.6 ms) does not hold that command up; a failing plan drops the target, not the node."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from ros_helpers import (  # noqa: F401
    in_process_controllers,
    requires_rclpy,
    ros_domain,
    sim_clock,
)
from test_controller_node_backlog import DT, T0, Q, _state_msg

pytestmark = [pytest.mark.ros, requires_rclpy]


class Recorder:
    """Stands in for the command publisher: each command is an event."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def publish(self, msg: Any) -> None:
        self.events.append("command")


@pytest.fixture
def node(ros_domain: int) -> Iterator[Any]:  # noqa: F811
    with in_process_controllers(ros_domain) as make:
        yield make(use_sim_time=True, controller="computed_torque", serialized_io=False)


def test_a_joint_target_is_planned_after_the_command_of_its_state(node: Any) -> None:
    events: list[str] = []
    node.publisher = Recorder(events)
    planner = node.target.tracker.planner
    plan = planner.plan

    def recorded_plan(*args: Any) -> Any:
        events.append("plan")
        return plan(*args)

    planner.plan = recorded_plan
    at = sim_clock(node)
    node._on_state_message(_state_msg(at(T0)))
    node.target.tracker.submit_target(Q + 0.1)
    node._on_state_message(_state_msg(at(T0 + DT)))
    assert events == ["command", "command", "plan"]
    assert node.target.describe() == "joint_target"


def test_a_plan_that_raises_drops_the_target_and_the_node_goes_on(node: Any) -> None:
    events: list[str] = []
    node.publisher = Recorder(events)
    said: list[tuple[str, str]] = []
    node.log.error = lambda key, message, **_: said.append((key, message))

    def broken(*args: Any) -> Any:
        raise np.linalg.LinAlgError("SVD did not converge")

    node.target.tracker.planner.plan = broken
    at = sim_clock(node)
    node._on_state_message(_state_msg(at(T0)))
    node.target.tracker.submit_target(Q + 0.1)
    node._on_state_message(_state_msg(at(T0 + DT)))
    node._on_state_message(_state_msg(at(T0 + 2 * DT)))
    assert events == ["command"] * 3
    assert [key for key, _ in said] == ["target exception"] and "SVD did not converge" in said[0][1]
    assert node.target.describe() == "hold" and node.target.tracker.pending is None


def test_a_plan_is_timed_and_counts_toward_the_deadline(node: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan runs after the command, outside ``callback_time``, but it holds the thread: its
    time is kept (``plan`` in the summary, ``plan_*`` on /diagnostics) and a state whose handling
    with it outlasts the period counts as a deadline miss. The node's steady clock (the ``time`` of
    controller_node.py) stands still but for the plan, which takes 50 ms on it: every callback
    takes 0 s, so the one miss can only be the plan's."""
    import torque_ctrl_ros.nodes.controller_node as controller_module

    steady = [100.0]  # s
    read = lambda: steady[0]  # noqa: E731
    monkeypatch.setattr(controller_module, "time", SimpleNamespace(monotonic=read, perf_counter=read))
    node.publisher = Recorder([])
    planner = node.target.tracker.planner
    plan = planner.plan

    def fifty_ms_plan(*args: Any) -> Any:
        steady[0] += 0.05
        return plan(*args)

    planner.plan = fifty_ms_plan
    at = sim_clock(node)
    for k in range(3):
        node._on_state_message(_state_msg(at(T0 + k * DT)))
    assert node.counts.deadline_misses == 0
    node.target.tracker.submit_target(Q + 0.1)
    node._on_state_message(_state_msg(at(T0 + 3 * DT)))
    assert node.counts.deadline_misses == 1
    summary = node.summary()
    assert summary["plan"]["max_ms"] == pytest.approx(50.0) and summary["callback"]["max_ms"] == 0.0, summary
