"""The simulator node's model parameters (``mjcf``, ``joints``, ``keyframe``) at start-up: a
model, joint or keyframe the plant refuses stops the node with one line that starts with the
parameter, as every start-up error does (``load_plant``)."""

from __future__ import annotations

from typing import Any

import pytest
from ros_helpers import requires_rclpy

from torque_ctrl_ros.core.errors import ModelError
from torque_ctrl_ros.nodes.params import sim_node_config

pytestmark = [requires_rclpy]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"joints": ["joint_1", "joint_9"]},
            "sim_node.mjcf, joints: unknown joint name(s) ['joint_9'] in scene.xml; valid hinge/slide "
            "joints: ['joint_1', 'joint_2', 'joint_3', 'joint_4', 'joint_5', 'joint_6', 'joint_7']",
        ),
        (
            {"keyframe": "foo"},
            "sim_node.keyframe: unknown keyframe 'foo' in scene.xml; valid keyframes: ['home', 'retract']",
        ),
    ],
    ids=["joints", "keyframe"],
)
def test_a_model_parameter_the_plant_refuses_is_named_first(params: dict[str, Any], message: str) -> None:
    from torque_ctrl_ros.nodes.sim_node import load_plant

    with pytest.raises(ModelError) as refused:
        load_plant(sim_node_config(params, "sim_node"), "sim_node")
    assert str(refused.value) == message


@pytest.mark.parametrize("keyframe", ["home", "retract", ""])
def test_the_plant_starts_at_the_keyframe(keyframe: str) -> None:
    from torque_ctrl_ros.nodes.sim_node import load_plant

    plant = load_plant(sim_node_config({"keyframe": keyframe}, "sim_node"), "sim_node")
    expected = plant.model.key(keyframe).qpos if keyframe else plant.model.qpos0
    assert (plant.q == expected).all() and not plant.v.any()
