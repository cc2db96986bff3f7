"""The README's ``ros2 topic pub`` examples are targets the controllers take.

Each example's YAML is turned into its message the way ``ros2 topic pub`` does (field by field,
nested messages and sequences of messages included), serialized, and given to the target source
of the controller it is written for, which must take it and plan its approach from home.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from rclpy.serialization import serialize_message
from ros_helpers import FakeTargetNode, shipped_parameters

from torque_ctrl_ros.core import JointState, RobotModel
from torque_ctrl_ros.core.controllers import create_controller
from torque_ctrl_ros.nodes import targets
from torque_ctrl_ros.nodes.params import controller_node_config

README = Path(__file__).resolve().parents[1] / "README.md"
HOME = np.array([0.0, 0.26179939, 3.14159265, -2.26892803, 0.0, 0.95993109, 1.57079633])
EXAMPLE = re.compile(r"ros2 topic pub --once -w 1 (\S+) (\S+) \\\n\s*\"(\{.*?\})\"", re.S)


def _message_class(type_name: str) -> Any:
    """``pkg/msg/Name`` (or ``pkg/Name``) → the rclpy message class."""
    parts = type_name.split("/")
    return getattr(importlib.import_module(f"{parts[0]}.msg"), parts[-1])


def _fill(msg: Any, values: dict[str, Any]) -> Any:
    """Set ``msg``'s fields from ``values`` as ``ros2 topic pub`` does; an unknown field fails."""
    types = msg.get_fields_and_field_types()
    for name, value in values.items():
        assert name in types, f"{type(msg).__name__} has no field {name!r}"
        if isinstance(value, dict):
            _fill(getattr(msg, name), value)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            element = _message_class(types[name].removeprefix("sequence<").rstrip(">"))
            setattr(msg, name, [_fill(element(), item) for item in value])
        else:
            setattr(msg, name, value)
    return msg


def _examples() -> list[tuple[str, Any]]:
    found = [
        (topic, _fill(_message_class(type_name)(), yaml.safe_load(text)))
        for topic, type_name, text in EXAMPLE.findall(README.read_text())
    ]
    assert len(found) == 3, "the README's three ros2 topic pub examples"
    return found


def _source(robot: RobotModel, controller: str) -> tuple[FakeTargetNode, Any]:
    params = shipped_parameters("controller_node") | {"controller": controller}
    ctrl = create_controller(controller, robot, controller_node_config(params).controller_params)
    node = FakeTargetNode(strict=True)  # a refusal fails the test with its reason
    return node, targets.create_target_source(controller, node, ctrl)  # type: ignore[arg-type]


@pytest.mark.parametrize("controller", ["computed_torque", "achd_rnea", "qpid", "hqpid"])
def test_the_readme_targets_are_taken_and_approached_from_home(robot: RobotModel, controller: str) -> None:
    node, source = _source(robot, controller)
    home = JointState(HOME, np.zeros(robot.n), 0.0)
    source.reference(home)
    taken = 0
    for topic, msg in _examples():
        # The README names the QP controllers' task topic in a comment: the pose goes there.
        local = "~/" + topic.removeprefix("/controller_node/")
        if controller in ("qpid", "hqpid") and local == "~/target_pose":
            local = "~/tool/target"
        if local not in node.callbacks:
            continue
        node.callbacks[local](serialize_message(msg))
        taken += 1
        source.reference(home)  # plans the approach (a refusal there raises through the node)
    # computed_torque: the joint target and the trajectory; the QP controllers: the pose and the
    # joint target for their posture task; achd_rnea: the pose.
    assert taken == (1 if controller == "achd_rnea" else 2)
    assert source.received == taken and source.rejected == 0
