"""The simulator's /diagnostics warning when more than one node publishes commands: the words the
controller node uses too (nodes/common.py), with what the arm gets in each mode, and the problems
since the last report said after it."""

# ruff: noqa: F811 (the `nodes` fixture, imported from test_node_runtime_guards, is every test's argument)
from __future__ import annotations

from types import SimpleNamespace

import pytest
from ros_helpers import requires_rclpy, ros_domain  # noqa: F401
from test_node_runtime_guards import Nodes, Recorder, nodes  # noqa: F401

pytestmark = [pytest.mark.ros, requires_rclpy]


@pytest.mark.parametrize(
    ("mode", "applied"),
    [("realtime", "whichever command came last"), ("lockstep", "each state's first answer")],
)
def test_two_command_publishers_are_warned_of_with_what_the_arm_gets(
    nodes: Nodes, mode: str, applied: str
) -> None:
    from diagnostic_msgs.msg import DiagnosticStatus

    sim = nodes.make("sim", mode=mode, wait_for_controller=False)
    sim.diag_pub = Recorder()
    said: list[tuple[str, str]] = []
    sim.log.warning = lambda key, message, force=False: said.append((key, message))
    endpoints = [
        SimpleNamespace(node_namespace="/", node_name=name, endpoint_gid=bytes(16))
        for name in ("first", "second")
    ]
    sim.node.get_publishers_info_by_topic = lambda topic: endpoints
    sim._diag_next = 0.0
    sim._maybe_diagnostics()
    status = sim.diag_pub.sent[-1].status[0]
    assert status.level == DiagnosticStatus.WARN
    assert status.message == (
        "2 nodes publish on /effort_controller/commands: more than one node commands this arm, and the "
        f"arm gets {applied}"
    )
    assert said == [("commanders", status.message)]  # the log says it too


def test_commands_refused_are_said_next_to_a_second_publishers_warning(nodes: Nodes) -> None:
    """A node sending bad commands is always a second publisher: the commands refused since the
    last report are said after that warning, not dropped (they were counted from the report on,
    so a message that left them out never said them; a review)."""
    from diagnostic_msgs.msg import DiagnosticStatus

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False)
    sim.diag_pub = Recorder()
    endpoints = [
        SimpleNamespace(node_namespace="/", node_name=name, endpoint_gid=bytes(16))
        for name in ("first", "second")
    ]
    sim.node.get_publishers_info_by_topic = lambda topic: endpoints
    sim.counts.rejected_commands += 2
    sim._diag_next = 0.0
    sim._maybe_diagnostics()
    status = sim.diag_pub.sent[-1].status[0]
    assert status.level == DiagnosticStatus.WARN
    assert status.message.startswith("2 nodes publish on /effort_controller/commands: ")
    assert status.message.endswith("; since the last report: 2 command(s) rejected"), status.message


def test_under_the_safe_torques_error_the_other_problems_are_said(nodes: Nodes) -> None:
    """The ERROR says the safe torque, so its steps are not repeated; the commands rejected since
    the last report are (left out with the steps, they were never said; a review)."""
    from diagnostic_msgs.msg import DiagnosticStatus

    sim = nodes.make("sim", mode="realtime", wait_for_controller=False, safe_torque="hold")
    sim.diag_pub = Recorder()
    sim._step(False)  # no valid command: the safe torque
    sim.counts.rejected_commands += 2
    sim._diag_next = 0.0
    sim._maybe_diagnostics()
    status = sim.diag_pub.sent[-1].status[0]
    assert status.level == DiagnosticStatus.ERROR
    assert (
        status.message == "safe torque (hold): no valid command; since the last report: 2 command(s) rejected"
    )
