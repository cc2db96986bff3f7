"""Behaviours of ``nodes/targets.py`` (which topics a controller listens to, how refusals are logged)
and ``nodes/params.py`` (which parameters are refused) that a mutation review found unpinned.

Each test names the behaviour it pins and the source change (mutant) it was written to catch.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ros_helpers import FakeTargetNode
from test_target_guards import HOME_Q, TOOL, _joint_source, _pose

from torque_ctrl_ros.core import RobotModel
from torque_ctrl_ros.core.controllers import AchdRnea, GravityCompensation, create_controller
from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.nodes import targets
from torque_ctrl_ros.nodes.params import controller_node_config, file_parameter, sim_node_config
from torque_ctrl_ros.sim.plant import MujocoPlant


# ------------------------------------------------------------------ targets.py
def test_gravity_compensation_takes_no_target_and_says_so(robot: RobotModel) -> None:
    """``gravity_comp`` has a source that listens to no topic and reports its target as ``none`` in
    /diagnostics (not ``hold``: it tracks nothing). (Mutant: ``NoTargetSource.describe`` returns
    ``hold``.)"""
    node = FakeTargetNode(strict=True)
    source = targets.create_target_source("gravity_comp", node, GravityCompensation(robot))  # type: ignore[arg-type]
    assert type(source) is targets.NoTargetSource and not node.callbacks
    assert source.diagnostics()["target"] == "none"


def test_a_qp_controller_without_a_posture_task_does_not_listen_to_joint_targets(robot: RobotModel) -> None:
    """A QP controller whose tasks are all frame tasks subscribes to ``~/<task>/target`` only: a
    ``~/joint_target`` would be counted as received and logged as taken while no task uses it.
    (Mutant: ``TaskTargetSource`` subscribes to ``~/joint_target`` whether or not a posture task
    exists.)"""
    params = {"tasks": ["tool"], "tool": {"type": "pose", "frame": TOOL, "kp": 100.0}}
    node = FakeTargetNode()
    targets.TaskTargetSource(node, create_controller("qpid", robot, params))  # type: ignore[arg-type]
    assert sorted(node.callbacks) == ["~/tool/target"]


def test_refusals_beyond_the_most_kinds_share_one_throttle(robot: RobotModel) -> None:
    """The first :data:`MAX_REFUSAL_KINDS` kinds of refusal each keep a throttle of their own, also
    once the cap is reached; every kind after them shares one (``other``), so a sender whose
    refusals vary without end logs one line a period for all of them. (Mutants: the cap is reached
    only above the most kinds, ``len(kinds) > MAX_REFUSAL_KINDS``, giving one kind more its own
    throttle; a kind already seen goes to ``other`` once the cap is reached.)"""
    node, source = _joint_source(robot)
    source.log.period = 3600.0  # every refusal below comes within one period
    letters = "abcdefghijklmnopqrstuvwxyz"
    # Kinds differ in words, not values (refusal_kind leaves digits out): two letters each.
    kinds = [f"refusal {a}{b}" for a in letters for b in letters][: targets.MAX_REFUSAL_KINDS + 2]
    for message in kinds[: targets.MAX_REFUSAL_KINDS]:
        source._refuse(message)
    assert len(node.errors) == targets.MAX_REFUSAL_KINDS
    source._refuse(kinds[0])  # its own throttle still: held back
    assert len(node.errors) == targets.MAX_REFUSAL_KINDS, node.errors[-1]
    for message in kinds[targets.MAX_REFUSAL_KINDS :]:
        source._refuse(message)
    # The first kind beyond the cap opens ``other``; the next one shares it and is held back.
    assert source.rejected == targets.MAX_REFUSAL_KINDS + 3
    assert len(node.errors) == targets.MAX_REFUSAL_KINDS + 1, node.errors[-3:]


def test_a_pose_target_is_taken_only_in_the_base_frame_spelt_exactly(robot: RobotModel) -> None:
    """``header.frame_id`` must be the base frame's name exactly, as TF compares frame names: a
    leading slash, other capitals or a trailing space name another frame, and without a TF lookup
    here such a pose is refused. (Mutants: ``check_frame`` compares the names without case, or
    after stripping a leading ``/``.)"""
    node = FakeTargetNode()
    source = targets.PoseTargetSource(node, AchdRnea(robot))  # type: ignore[arg-type]
    position = robot.frame_placement(HOME_Q, TOOL).translation
    for frame in ("/base_link", "BASE_LINK", "base_link "):
        node.callbacks["~/target_pose"](_pose(position, frame))
        assert "header.frame_id must be 'base_link'" in source.last_error, frame
    node.callbacks["~/target_pose"](_pose(position, "base_link"))
    assert (source.received, source.rejected) == (1, 3), source.last_error


# ------------------------------------------------------------------ params.py
def test_a_fallback_damping_that_is_no_number_is_refused_when_the_parameters_are_read() -> None:
    """A ``fallback_damping`` that cannot be read as numbers is refused with the parameters, naming
    it, not left for the node to stumble on once the model is loaded. (Mutant: the
    ``np.asarray(damping, dtype=np.float64)`` check in ``controller_node_config`` removed.)"""
    for bad in ("stiff", [1.0, "x", 2.0]):
        with pytest.raises(
            ConfigError, match=r"controller_node.fallback_damping: expected a number or a list"
        ):
            controller_node_config({"fallback_damping": bad})


def test_the_longest_duration_is_accepted() -> None:
    """``duration`` is accepted up to and including its bound, 1e9 s. (Mutant: ``_duration`` refuses
    ``value >= _MAX_DURATION_S``.)"""
    assert sim_node_config({"duration": 1.0e9}).duration == 1.0e9


def test_an_empty_string_for_joints_means_the_models_order() -> None:
    """``joints: ""`` (how a launch argument left empty arrives) is no joint list: the node keeps
    the model's joint order, as with ``[]``. (Mutant: ``_names`` takes only ``None`` and an empty
    list as none, refusing ``""``.)"""
    assert controller_node_config({"joints": ""}).joints == ()
    assert sim_node_config({"joints": ""}).joints == ()


def test_the_safe_damping_is_checked_on_a_plant_driving_the_joints_it_is_for() -> None:
    """``damping_vector`` refuses a plant that drives other joints (or another order) than the
    ``joints`` the damping is for: its stability check would weigh each value against another
    joint's inertia. (Mutant: the ``plant.joint_names != joints`` check removed.)"""
    cfg = sim_node_config({})
    plant = MujocoPlant(cfg.mjcf)
    model_joints = list(plant.joint_names)
    with pytest.raises(ConfigError, match=r"sim_node.safe_damping: the plant drives"):
        cfg.damping_vector(model_joints, model_joints[::-1], plant)


def test_a_negative_fallback_damping_is_refused_without_a_model_to_check_it_on() -> None:
    """``fallback_damping_vector`` gives ``n`` values ``> 0`` with or without the model: a negative
    one (a safe brake that pushes the arm along) is refused, naming the parameter, also where no
    stability check runs. (Mutant: ``fallback_damping_vector`` reads the values without
    ``strictly_positive=True``, leaving negatives to the model's check only.)"""
    cfg = controller_node_config({"fallback_damping": [1.0, 1.0, 1.0, -0.5, 1.0, 1.0, 1.0]})
    with pytest.raises(ConfigError, match=r"controller_node.fallback_damping: expected every entry > 0"):
        cfg.fallback_damping_vector(7)


def test_a_parameter_file_section_with_nothing_under_it_is_passed_over(tmp_path: Path) -> None:
    """A section that reaches the node but holds no mapping (``controller_node:`` with nothing under
    it yet) gives no value, and the next section that sets the parameter still does. (Mutant:
    ``file_parameter`` reads every matching section's body as a mapping, raising AttributeError on
    ``None``.)"""
    path = tmp_path / "params.yaml"
    path.write_text("controller_node:\n/**:\n  ros__parameters:\n    controller: qpid\n")
    assert file_parameter([path], "/controller_node", "controller") == "qpid"
