"""Whether the simulator applies the controller's torques on the joints they are meant for, and
to the arm the controller models.

A command (``std_msgs/Float64MultiArray``) carries no joint names: the controller node sends its
torques in its ``joints`` order and the simulator node applies them in its own. Both ``make sim``
(:mod:`torque_ctrl_ros.run_sim`) and ``launch/sim_gen3.launch.py`` refuse parameter files that
give the two nodes different orders (:func:`joint_order_error`), before anything starts, and warn
where the controller's model and the simulator's arm differ (:func:`model_mismatch`: a
``model_file`` given to the controller alone, say, with a gripper the simulated arm lacks). No ROS
here: the launch file imports this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .core.errors import TorqueCtrlError
from .nodes.params import (
    controller_model,
    controller_node_config,
    file_parameter,
    file_parameters,
    sim_node_config,
)


def _given(files: Sequence[Path | str], node: str, keys: Iterable[str]) -> dict[str, Any]:
    """The parameters ``keys`` that the files give the node ``node`` (e.g. ``/sim_node``)."""
    given = file_parameters([Path(f) for f in files], node)
    return {key: given[key] for key in keys if given.get(key) is not None}


def simulator_joints(files: Sequence[Path | str]) -> tuple[str, ...] | None:
    """The simulator's joint order under the parameter files ``files``: its ``joints``, else its
    plant's (every hinge and slide joint of its ``mjcf``, in the model's order). ``None`` where the
    node would refuse its parameters or model: it says why itself when it starts."""
    from .sim.plant import MujocoPlant  # MuJoCo only where an order is not given

    try:
        config = sim_node_config(_given(files, "/sim_node", ("joints", "mjcf")))
        return config.joints or MujocoPlant(config.mjcf).joint_names
    except TorqueCtrlError:
        return None


def controller_joints(files: Sequence[Path | str], model_file: str = "") -> tuple[str, ...] | None:
    """The controller's command order under the parameter files ``files``: its ``joints``, else its
    model's joint order (``robot_description``, else ``model_file``; ``model_file`` given here
    replaces both, as the launch file's argument does). ``None`` as in :func:`simulator_joints`."""
    try:
        config = controller_node_config(_given(files, "/controller_node", ("joints",)))
        return config.joints or controller_model([Path(f) for f in files], model_file).joint_names
    except TorqueCtrlError:
        return None


def joint_order_error(files: Sequence[Path | str], model_file: str = "") -> str:
    """Why the simulator would apply the controller's torques to other joints than meant under the
    parameter files ``files``, or ``""``.

    A command (``Float64MultiArray``) carries no joint names: the controller sends it in its
    ``joints`` order (:func:`controller_joints`) and the simulator applies it in its own
    (:func:`simulator_joints`). Two orders put each torque on another joint: the arm flails,
    and the controller's watchdog then blames the states' jumps. An order that cannot be worked
    out (a model or parameter the node will refuse) is not compared.
    """
    sim, ctrl = simulator_joints(files), controller_joints(files, model_file)
    if sim is None or ctrl is None or sim == ctrl:
        return ""
    paths = [Path(f) for f in files]

    def said(name: str, order: tuple[str, ...]) -> str:
        unset = file_parameter(paths, f"/{name}", "joints") is None
        return f"{name}.joints {list(order)}" + (" (unset: its model's order)" if unset else "")

    return (
        f"{said('sim_node', sim)} and {said('controller_node', ctrl)} differ (in "
        f"{' + '.join(map(str, files))}): the controller's commands carry no joint names and go out "
        "in controller_node.joints order, which the simulator applies in sim_node.joints order, so "
        "each torque would land on another joint; give both the same order"
    )


#: Largest difference (N·m) of the two models' gravity torques taken for the same arm: the shipped
#: URDF and MJCF agree to ~1e-14; a 0.1 kg payload at the tool moves joint_2's by ~0.5 N·m.
SAME_GRAVITY = 1e-6


def model_mismatch(files: Sequence[Path | str], model_file: str = "") -> str:
    """Where the controller's model and the simulator's arm differ under the parameter files
    ``files`` (``model_file`` as in :func:`controller_joints`), or ``""``: their gravity torques
    ``g(q)`` at the simulator model's keyframes (its start poses; one the plant refuses, past a
    joint range, left out), joint by joint by name, more
    than :data:`SAME_GRAVITY` apart, and the joint physics of the simulator's model that a
    rigid-body model has no term for (:meth:`~.sim.plant.MujocoPlant.passive_terms`: damping,
    friction, armature, springs, fluid). The controller then commands another arm's dynamics than
    the simulated one: the arm sags or drifts by what the two differ (a model error to test on
    purpose, or a description given to one node only). Not compared (``""``): a model or
    parameter a node will refuse, or joints the two do not share."""
    from .sim.plant import MujocoPlant

    paths = [Path(f) for f in files]
    try:
        sim_config = sim_node_config(_given(files, "/sim_node", ("joints", "mjcf")))
        plant = MujocoPlant(sim_config.mjcf, sim_config.joints or None)
        robot = controller_model(paths, model_file)
    except TorqueCtrlError:
        return ""
    if set(robot.joint_names) != set(plant.joint_names):
        return ""
    index = [plant.joint_names.index(name) for name in robot.joint_names]
    worst, where = 0.0, ""
    for keyframe in plant.keyframe_names or (None,):
        try:
            plant.reset(keyframe)
        except TorqueCtrlError:  # a keyframe past a joint range, which the run does not start at
            continue
        gap = np.abs(robot.gravity(plant.q[index]) - plant.gravity()[index])
        if float(gap.max()) > worst:
            j = int(gap.argmax())
            worst, where = float(gap.max()), f"{robot.joint_names[j]} at {keyframe or 'the zero pose'}"
    passive = plant.passive_terms()
    if worst <= SAME_GRAVITY and not passive:
        return ""
    controller = "its robot_description" if robot.source == "robot_description" else robot.source
    gaps = []
    if worst > SAME_GRAVITY:
        gaps.append(f"their gravity torques are up to {worst:.3g} N·m apart ({where})")
    if passive:
        gaps.append(f"the simulator's has {'; '.join(passive)}, which no rigid-body model has")
    return (
        f"the controller's model ({controller}) and the simulator's arm ({sim_config.mjcf}) differ: "
        f"{', and '.join(gaps)}, so the controller commands another arm's dynamics than the simulated "
        "one (give both the same arm, unless testing a model error)"
    )
