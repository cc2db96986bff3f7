"""Bad start-up parameters: each one stops a node with one line naming it, never a traceback.

The nodes read their ROS parameters once and turn them into validated objects
(:mod:`torque_ctrl_ros.nodes.params`, then the robot model, the controller and the simulator's
plant). Here every parameter of ``config/gen3_controllers.yaml`` (the simulator's; the controller
node's with each controller selected in turn) is replaced, one at a time, by values of the kinds
rclpy can deliver (bool, int, float, str, lists of one of those): NaN, ±inf, 0, negative, huge,
tiny, the wrong type, lists of the wrong length or with bad entries, empty or unknown names.

Each case runs what a node does with its parameters before it talks to anyone (the steps of
``ControllerNode.__init__`` and ``SimNode.__init__``, without rclpy) and must end in one of:

* a :class:`~torque_ctrl_ros.core.errors.TorqueCtrlError` (what the nodes print as one line) whose
  message names the parameter (every part of its name below the controller's section, so
  ``qpid.tool.kp`` needs "tool" and "kp"), or names the partner of a documented conflict;
* a node that starts: every number of its configuration finite, one control step (or the plant's
  damping) finite, and the value not one that must be refused: NaN, ±inf, a negative number where
  only a sign-free one means anything, a list of the wrong length, a number where the parameter is
  a string or a bool, a string that is no number where it is a number.

Deterministic (the entries of a list that get a bad value come from a generator seeded with the
parameter's name); the offenders of each test are listed together in one failure.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import numpy as np
import pytest
from ros_helpers import CONFIG, shipped_parameters
from test_target_tracking import HOME_Q as HOME

from torque_ctrl_ros.core import JointState
from torque_ctrl_ros.core.controllers import CONTROLLERS, create_controller
from torque_ctrl_ros.core.errors import ConfigError, TorqueCtrlError
from torque_ctrl_ros.core.supervisor import Supervisor
from torque_ctrl_ros.nodes.controller_node import _command_joints, _load_robot
from torque_ctrl_ros.nodes.params import controller_node_config, sim_node_config
from torque_ctrl_ros.nodes.sim_node import SimNode, load_plant, step_count

#: Parameters whose entries may be negative: everything else is a gain, weight, damping, limit,
#: period or count. (The floor barrier's plane is below the base on a pedestal.)
SIGNED = {"achd_rnea.task_wrench", "achd_rnea.floor_height", "qpid.floor.height", "hqpid.floor.height"}
#: Parameters whose bad value the error may name through the other side of the conflict: the
#: simulator's ``safe_damping`` has one value per driven joint (``joints``).
PARTNERS = {"joints": ("safe_damping",)}
#: The robot descriptions the nodes load themselves: a file of the wrong kind is
#: :func:`test_a_model_file_of_the_wrong_kind_is_refused_naming_the_parameter`'s.
MODEL_FILES = {"model_file", "mjcf"}


class Case(NamedTuple):
    """A bad value for a parameter, and whether a node may start with it (judged by the reader
    of the accepted cases, e.g. 0 damping) or must refuse it."""

    value: Any
    must_refuse: bool


def _bad_values(key: str, value: Any) -> list[Case]:
    """The values tried for parameter ``key`` whose shipped value is ``value``."""
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    absurd = [math.nan, math.inf, -math.inf]
    if isinstance(value, bool):
        return [Case(v, True) for v in ("true", "", 1, 0, 1.0, [value])]
    if isinstance(value, int):
        return [
            *(Case(v, True) for v in (-1, -(2**63), value + 0.5, *absurd, "abc", True, False, [value])),
            *(Case(v, False) for v in (0, 2**31, 2**63 - 1, float(value), str(value))),
        ]
    if isinstance(value, float):
        cases = [
            *(Case(v, True) for v in (*absurd, "abc", "nan", True, False, [value])),
            *(Case(v, False) for v in (0.0, -0.0, 1e300, 5e-324, str(value), [value] * 7)),
        ]
        cases += [Case(v, key not in SIGNED) for v in (-1.0, -1e300, -abs(value) or -1e-3)]
        if value == int(value):
            cases.append(Case(int(value), False))
        return cases
    if isinstance(value, str):
        # A folder, a file of another kind, a description that is no URDF: for the paths.
        other = ("/", "<robot/>", "", " ", "nope", *(() if key in MODEL_FILES else (str(CONFIG),)))
        return [*(Case(v, True) for v in (1, 1.5, True, [value or "x"])), *(Case(v, False) for v in other)]
    assert isinstance(value, list), (key, value)
    if all(isinstance(v, str) for v in value):
        return [
            *(Case(v, True) for v in ([""], [1, 2], [True], 1.0, True, [*value, value[0]])),
            *(Case(v, False) for v in (["nope"], value[:1], [*value, "nope"])),
            *(Case(v, False) for v in (",".join(value), "nope")),
        ]
    n = len(value)
    floats = [float(v) for v in value]
    cases = [Case(v, True) for v in (floats[:1], [1.0] * (n - 1), [1.0] * (n + 1), "abc", True, [True] * n)]
    cases += [Case(v, False) for v in ([0.0] * n, [int(v) for v in floats], [str(v) for v in floats])]
    for bad in (*absurd, -1.0, 1e300, -1e300):
        entries = list(floats)
        entries[int(rng.integers(n))] = bad
        must = math.isinf(bad) or math.isnan(bad) or (bad < 0.0 and key not in SIGNED)
        cases.append(Case(entries, must))
    return cases


def _numbers(obj: Any, depth: int = 0) -> Iterator[float]:
    """Every number held by a configuration object (dataclasses, arrays, mappings, sequences)."""
    if isinstance(obj, bool | str | type(None)) or depth > 6:
        return
    if isinstance(obj, int | float | np.number):
        yield float(obj)
    elif isinstance(obj, np.ndarray):
        if obj.dtype.kind in "fiu":
            yield from obj.astype(np.float64).ravel().tolist()
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _numbers(v, depth + 1)
    elif isinstance(obj, list | tuple):
        for v in obj:
            yield from _numbers(v, depth + 1)
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            yield from _numbers(getattr(obj, f.name), depth + 1)


def _start_controller_node(params: dict[str, Any]) -> list[Any]:
    """What ``ControllerNode.__init__`` builds from ``params`` before it creates any topic, then
    a few states through the supervisor and one control step at home; the objects to check."""
    name = "controller_node"
    cfg = controller_node_config(params, name)
    robot = _load_robot(cfg, name)
    _command_joints(cfg, robot, name)
    controller = create_controller(cfg.controller, robot, cfg.controller_params)
    damping = cfg.fallback_damping_vector(robot.n, robot)
    supervisor = Supervisor(robot, cfg.watchdog, damping, steady_clock=time.monotonic)
    v = np.full(robot.n, 0.01)
    for k in range(3):
        supervisor.step(HOME, v, stamp=1.0 + 1e-3 * k, now=1.0 + 1e-3 * k)
    state = JointState(HOME.copy(), v)
    out = controller.compute(state, controller.hold_reference(state))
    # Every registered controller has a config; the base class Controller declares none.
    return [cfg, controller.config, damping, out.tau]  # type: ignore[attr-defined]


def _start_sim_node(params: dict[str, Any]) -> list[Any]:
    """What ``SimNode.__init__`` builds from ``params`` before it creates any topic."""
    name = "sim_node"
    cfg = sim_node_config(params, name)
    plant = load_plant(cfg, name)
    damping = cfg.damping_vector(plant.model_joint_names, plant.joint_names, plant)
    steps = step_count(cfg, plant.timestep, name)
    if cfg.record_file:
        node = SimpleNamespace(get_name=lambda: name)
        # A stand-in self, on purpose: just what _allocate_record reads.
        SimNode._allocate_record(SimpleNamespace(node=node, max_steps=steps, n=plant.n, plant=plant))  # type: ignore[arg-type]
    return [cfg, damping]


def _names(message: str, key: str) -> bool:
    """Whether ``message`` names parameter ``key`` (or, for a conflict, its partner): every part
    of its dotted name below a controller's section."""
    parts = key.split(".")
    if parts[0] in CONTROLLERS and len(parts) > 1:
        parts = parts[1:]
    if all(part in message for part in parts):
        return True
    return any(partner in message for partner in PARTNERS.get(key, ()))


def _fuzz(start: Callable[[dict[str, Any]], list[Any]], base: dict[str, Any], keys: list[str]) -> list[str]:
    """Each bad value of each of ``keys`` in ``base`` through ``start``: the offenders."""
    offenders: list[str] = []
    for key in keys:
        for case in _bad_values(key, base[key]):
            where = f"{key}={case.value!r}"
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # a numpy overflow on the way is no clear error
                try:
                    built = start(base | {key: case.value})
                except TorqueCtrlError as exc:
                    message = str(exc)
                    if not _names(message, key):
                        offenders.append(f"{where}: the error does not name it: {message}")
                    elif "\n" in message:
                        offenders.append(f"{where}: a message of several lines: {message!r}")
                    continue
                except Exception as exc:
                    offenders.append(f"{where}: {type(exc).__name__}: {exc}")
                    continue
            if case.must_refuse:
                offenders.append(f"{where}: accepted")
            elif not all(math.isfinite(x) for x in _numbers(built)):
                offenders.append(f"{where}: accepted with a number not finite")
    return offenders


def _controller_base(controller: str) -> dict[str, Any]:
    """The shipped controller-node parameters with ``controller`` selected; the optional ``kd`` of
    the PD controllers set to its default, critical damping at the shipped ``kp`` (2·√100)."""
    base = shipped_parameters("controller_node") | {"controller": controller}
    if controller in ("computed_torque", "achd_rnea"):
        base[f"{controller}.kd"] = 20.0
    return base


def test_controller_node_parameters() -> None:
    base = _controller_base("computed_torque")
    keys = [k for k in base if k.split(".")[0] not in CONTROLLERS]
    offenders = _fuzz(_start_controller_node, base, keys)
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("controller", sorted(CONTROLLERS))
def test_controller_section_parameters(controller: str) -> None:
    base = _controller_base(controller)
    keys = [k for k in base if k.startswith(f"{controller}.")]
    assert keys
    offenders = _fuzz(_start_controller_node, base, keys)
    assert not offenders, "\n".join(offenders)


def test_sim_node_parameters() -> None:
    base = shipped_parameters("sim_node") | {"joints": [f"joint_{i}" for i in range(1, 8)]}
    offenders = _fuzz(_start_sim_node, base, sorted(base))
    assert not offenders, "\n".join(offenders)


def test_values_valid_alone_that_conflict_are_refused_naming_one(tmp_path: Path) -> None:
    """The documented cross-checks: each value of a pair starts the node, the two together stop it
    with an error that names one of them."""
    ctrl, sim = _controller_base, shipped_parameters("sim_node")
    late = {"command_delay": 0.005}  # config/gen3_hardware.yaml: the command four periods late
    no_collision = {"hqpid.self_collision.enabled": False}
    pairs: list[
        tuple[Callable[[dict[str, Any]], list[Any]], dict[str, Any], dict[str, Any], dict[str, Any], str]
    ] = [
        # (start, base, one value, the other, what the error names)
        (
            _start_controller_node,
            ctrl("computed_torque"),
            {"computed_torque.kp": 4e4, "computed_torque.kd": 400.0},
            late,
            "computed_torque.kp/kd: kp",
        ),
        (
            _start_controller_node,
            ctrl("gravity_comp"),
            {"gravity_comp.damping": [2.0, 2.0, 0.5, 1.0, 0.2, 0.2, 0.2]},
            late,
            "gravity_comp.damping",
        ),
        (
            _start_controller_node,
            ctrl("qpid"),
            {"qpid.self_collision.alpha": 200.0},
            late,
            "qpid.self_collision.alpha",
        ),
        (
            _start_controller_node,
            ctrl("achd_rnea"),
            {"achd_rnea.pose_error": "se3"},
            {"achd_rnea.constrained_axes": ["x", "rx"]},
            "achd_rnea.pose_error",
        ),
        (
            _start_controller_node,
            ctrl("hqpid") | no_collision,
            {"hqpid.joint_velocity_limit.enabled": False},
            {"hqpid.self_collision.enabled": True},
            "hqpid.self_collision",
        ),
        (
            _start_controller_node,
            ctrl("hqpid"),
            {"hqpid.slack_weight": 1e4},
            {"hqpid.tool.weight": 10.0},
            "slack_weight",
        ),
        (
            _start_sim_node,
            sim | {"mode": "lockstep"},
            {"command_timeout": 0.001},
            {"mode": "realtime"},
            "command_timeout",
        ),
        (
            _start_sim_node,
            sim | {"duration": 0.01},
            {"record_file": str(tmp_path / "r.npz")},
            {"duration": 0.0},
            "record_file",
        ),
        (
            _start_sim_node,
            sim | {"safe_damping": 0.2},
            {"joints": ["joint_7"]},
            {"safe_damping": [0.2] * 7},
            "safe_damping",
        ),
    ]
    for start, base, one, other, named in pairs:
        start(base | one)
        start(base | other)
        with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
            start(base | one | other)


# ----------------------------------------------------------------- what the fuzz found


def test_barrier_numbers_given_as_strings_are_read_as_numbers() -> None:
    """A quoted number (``alpha: "10.0"``) is a number wherever else a parameter takes one; the
    barriers passed the string on, and the stability check's arithmetic ended in a TypeError."""
    for key in (
        "qpid.joint_position_limit.alpha",
        "qpid.joint_velocity_limit.alpha",
        "qpid.self_collision.d_safe",
        "qpid.singularity.w_min",
    ):
        value = _controller_base("qpid")[key]
        cfg = _start_controller_node(_controller_base("qpid") | {key: str(value)})[1]
        group, field = key.split(".")[1:]
        assert getattr(getattr(cfg, group), field) == value, key


def test_a_huge_barrier_alpha_is_refused_not_an_overflow() -> None:
    """``alpha²`` overflows a Python float from ~1e154 (an OverflowError, not a ConfigError)."""
    for group in ("joint_position_limit", "self_collision", "singularity"):
        key = f"qpid.{group}.alpha"
        with pytest.raises(ConfigError, match=rf"{key}: alpha 1e\+300 1/s is unstable .* grows; alpha must"):
            _start_controller_node(_controller_base("qpid") | {key: 1e300})


def test_a_task_wrench_beyond_any_actuator_is_refused() -> None:
    """With every axis constrained the wrench changes only ``λ``, yet its rounding reaches the
    command: at 1e100 N every joint of the Gen3 was driven to its limit, from ~1e200 every step
    failed; the bound (1e6) keeps that below 1e-6 N·m."""
    base = _controller_base("achd_rnea")
    reference = _start_controller_node(base)[-1]
    tau = _start_controller_node(base | {"achd_rnea.task_wrench": [0.0, 0.0, -1e6, 0.0, 1e6, 0.0]})[-1]
    assert np.abs(tau - reference).max() < 1e-5
    for wrench in ([0.0, 0.0, -1.1e6, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1e100, 0.0, 0.0]):
        with pytest.raises(ConfigError, match=r"achd_rnea\.task_wrench: expected entries within ±1e\+06"):
            _start_controller_node(base | {"achd_rnea.task_wrench": wrench})


def test_collision_model_errors_name_the_self_collision_parameters() -> None:
    base = _controller_base("hqpid")
    with pytest.raises(ConfigError, match=r"^hqpid\.self_collision: collision model: pairs: expected"):
        _start_controller_node(base | {"hqpid.self_collision.pairs": 0})
    with pytest.raises(
        ConfigError, match=r"^hqpid\.self_collision\.model: 'nope\.yaml' does not exist \(tried "
    ):
        _start_controller_node(base | {"hqpid.self_collision.model": "nope.yaml"})


def test_constrained_axes_errors_name_the_parameter() -> None:
    base = _controller_base("achd_rnea")
    for axes, reason in (
        (["x", "w"], r"unknown name\(s\) \['w'\]"),
        (["x", "x"], "duplicate names"),
        ([""], r"unknown name\(s\) \[''\]"),
    ):
        with pytest.raises(ConfigError, match=rf"^achd_rnea\.constrained_axes: {reason}"):
            _start_controller_node(base | {"achd_rnea.constrained_axes": axes})


def test_a_task_without_a_section_and_levels_that_skip_name_the_tasks() -> None:
    base = _controller_base("hqpid")
    with pytest.raises(ConfigError, match=r"hqpid\.nope\.type: required for task 'nope' of hqpid\.tasks"):
        _start_controller_node(base | {"hqpid.tasks": ["tool", "posture", "nope"]})
    with pytest.raises(
        ConfigError, match=r"consecutive from 0, got \[0, 2\] \(tool\.level 0, posture\.level 2\)"
    ):
        _start_controller_node(base | {"hqpid.posture.level": 2})


def test_a_model_file_of_the_wrong_kind_is_refused_naming_the_parameter(tmp_path: Path) -> None:
    files = {"bad.urdf": "<robot/>", "empty.xml": "<mujoco/>", "bad.xml": "<mujoco><worldbody></mujoco>"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    offenders = []
    for start, base, key, path in (
        (_start_controller_node, _controller_base("gravity_comp"), "model_file", CONFIG),
        (_start_controller_node, _controller_base("gravity_comp"), "model_file", tmp_path / "bad.urdf"),
        (_start_controller_node, _controller_base("gravity_comp"), "model_file", tmp_path / "empty.xml"),
        (_start_sim_node, shipped_parameters("sim_node"), "mjcf", tmp_path / "bad.xml"),
    ):
        with pytest.raises(TorqueCtrlError) as refused:
            start(base | {key: str(path)})
        message = str(refused.value)
        if key not in message or "\n" in message:
            offenders.append(f"{key}={str(path)!r}: {message!r}")
    assert not offenders, "\n".join(offenders)


def test_the_harness_starts_the_shipped_configuration() -> None:
    """Every controller and the simulator start from the shipped file, so that a refusal above is
    the bad value's."""
    for controller in sorted(CONTROLLERS):
        tau = _start_controller_node(_controller_base(controller))[-1]
        assert np.isfinite(tau).all() and tau.any(), controller
    _start_sim_node(shipped_parameters("sim_node"))
