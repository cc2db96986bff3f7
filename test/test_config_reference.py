"""``config/gen3_controllers.yaml`` is the parameter reference: it names every node-level parameter
the nodes accept (set, or commented out where no value is valid as a default), so a parameter
added to a node without its line there fails here. The controllers' own sections are not checked
here."""

from __future__ import annotations

import re

import pytest
from ros_helpers import CONFIG, shipped_parameters


def _commented_out(node: str) -> set[str]:
    """Top-level keys of ``node``'s section written as ``# key: ...`` lines (an example value)."""
    text = CONFIG.read_text()
    start = text.index(f"\n{node}:")
    end = re.search(r"\n\S", text[start + 1 :])
    section = text[start : start + 1 + end.start()] if end else text[start:]
    return set(re.findall(r"^ {4}# ([a-z_]+): ", section, flags=re.MULTILINE))


@pytest.mark.parametrize("node", ["sim_node", "controller_node"])
def test_the_shipped_file_names_every_parameter_a_node_accepts(node: str) -> None:
    from torque_ctrl_ros.nodes.params import CONTROLLER_NODE_KEYS, ROS_PARAMETERS, SIM_NODE_KEYS

    accepted = SIM_NODE_KEYS if node == "sim_node" else CONTROLLER_NODE_KEYS
    named = set(shipped_parameters(node)) | _commented_out(node)
    missing = sorted(accepted - named - set(ROS_PARAMETERS))
    assert not missing, f"config/gen3_controllers.yaml: {node} does not name {missing}"


def test_the_commented_out_lines_are_found() -> None:
    """The simulator's ``joints`` has no valid default (an empty list is not a ROS parameter)."""
    assert "joints" in _commented_out("sim_node")
    assert "joints" not in shipped_parameters("sim_node")
