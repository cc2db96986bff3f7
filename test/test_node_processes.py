"""The node processes' shared pieces (:mod:`torque_ctrl_ros.node_processes`), without starting any."""

from __future__ import annotations

from ros_helpers import requires_rclpy

from torque_ctrl_ros.node_processes import (
    CONTROLLER_NODE,
    SIM_NODE,
    TRAJECTORY_TOPIC,
    NodePair,
    param_literal,
)


@requires_rclpy
def test_the_runner_names_the_nodes_as_they_name_themselves() -> None:
    """Its logs, parameter checks and the monitor's trajectory topic go by these names."""
    from torque_ctrl_ros.nodes import controller_node, sim_node

    assert (SIM_NODE, CONTROLLER_NODE) == (sim_node.NODE_NAME, controller_node.NODE_NAME) == NodePair.NAMES
    assert TRAJECTORY_TOPIC == "/controller_node/joint_trajectory"


def test_overrides_are_written_as_yaml_literals() -> None:
    assert param_literal(True) == "true" and param_literal(False) == "false"
    assert param_literal(0.1) == "0.1" and param_literal(3) == "3"
    assert param_literal([1.5, True, "a"]) == "[1.5,true,a]"
