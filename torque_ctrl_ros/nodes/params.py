"""ROS parameters → validated configuration objects (no rclpy needed here).

The nodes read every parameter they were given (``automatically_declare_parameters_from_overrides``)
into a flat ``{name: value}`` mapping and hand it to :func:`controller_node_config` or
:func:`sim_node_config`. Unknown names fail with a :class:`ConfigError` that lists the valid
ones, so a typo in ``config/gen3_controllers.yaml`` stops the node at start instead of being
ignored.

Controller gains live in a section named after the controller: ``computed_torque.kp`` is passed
to :func:`~torque_ctrl_ros.core.controllers.create_controller` as ``{"kp": ...}``. Sections of
the other registered controllers may stay in the file (one file configures every choice).
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.controllers import CONTROLLERS
from ..core.errors import ConfigError
from ..core.robot import CONTROL_PERIOD, RobotModel, check_command_delay
from ..core.safety import DEFAULT_DAMPING, WatchdogConfig
from ..core.validation import FloatArray, as_positive_float, as_seconds, as_vector, check_choice
from ..paths import data_path, find_data_file
from ..sim.commands import MODES

if TYPE_CHECKING:
    from ..sim.plant import MujocoPlant

#: Parameters every rclpy node may carry; never reported as unknown.
ROS_PARAMETERS = ("use_sim_time", "start_type_description_service")
EXECUTORS = ("events", "single_threaded")
RELIABILITIES = ("reliable", "best_effort")


def _reject_unknown(
    node: str, params: Mapping[str, Any], known: set[str], prefixes: tuple[str, ...] = ()
) -> None:
    unknown = sorted(
        k for k in params if k not in known and k not in ROS_PARAMETERS and not k.startswith(prefixes)
    )
    if unknown:
        raise ConfigError(f"{node}: unknown parameter(s) {unknown}; valid are {sorted(known)}")


def _str(node: str, params: Mapping[str, Any], key: str, default: str) -> str:
    value = params.get(key, default)
    if not isinstance(value, str):
        raise ConfigError(f"{node}.{key}: expected a string, got {value!r}")
    return value


def _names(node: str, params: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = params.get(key, [])
    if value is None or value == "" or (isinstance(value, (list, tuple)) and len(value) == 0):
        return ()
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{node}.{key}: expected a list of joint names, got {value!r}")
    if len(set(value)) != len(value):
        raise ConfigError(f"{node}.{key}: duplicate names in {list(value)}")
    return tuple(value)


def _data_file(node: str, key: str, name: str, folder: str, note: str = "") -> str:
    """The path of the file parameter ``key`` names (:func:`~torque_ctrl_ros.paths.find_data_file`:
    as given, else in the package's data), so that a relative name works from any working directory."""
    try:
        return str(find_data_file(name, folder))
    except FileNotFoundError as exc:
        raise ConfigError(f"{node}.{key}: {exc}{note}") from None


def _bool(node: str, params: Mapping[str, Any], key: str, default: bool) -> bool:
    value = params.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{node}.{key}: expected true or false, got {value!r}")
    return value


def _command_delay(node: str, params: Mapping[str, Any]) -> float:
    """``command_delay`` (s), one control period when not given
    (:func:`~torque_ctrl_ros.core.robot.check_command_delay`: both nodes read it alike)."""
    return check_command_delay(f"{node}.command_delay", params.get("command_delay", CONTROL_PERIOD))


def _int(
    node: str, params: Mapping[str, Any], key: str, default: int, minimum: int, maximum: int = 2**31 - 1
) -> int:
    value = params.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise ConfigError(f"{node}.{key}: expected an integer in [{minimum}, {maximum}], got {value!r}")
    return value


def _output_file(node: str, params: Mapping[str, Any], key: str) -> str:
    """A file written at exit ("" = none): checked now, since a bad path found at exit would
    lose the whole run's output."""
    value = _str(node, params, key, "")
    if value:
        if Path(value).is_dir():
            raise ConfigError(f"{node}.{key}: {value!r} is a folder, expected a file name")
        folder = Path(value).parent
        if not folder.is_dir():
            raise ConfigError(f"{node}.{key}: folder {str(folder)!r} does not exist")
        if not os.access(folder, os.W_OK):
            raise ConfigError(f"{node}.{key}: folder {str(folder)!r} is not writable")
    return value


def _plain(value: Any) -> Any:
    """Parameter arrays arrive as ``array.array`` or lists; controllers expect plain lists."""
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        return list(value)
    return value


@dataclass(frozen=True)
class CommonConfig:
    """Settings both nodes share.

    Attributes:
        qos_depth: history depth of the control topics (>= 10: shallower queues drop messages).
        reliability: ``reliable`` or ``best_effort`` for /joint_states and the commands.
        executor: ``events`` (rclpy's EventsExecutor, lowest latency) or ``single_threaded``.
        diagnostics_period: wall-clock period (s) of /diagnostics, ``>= 0.05``.
        stats_file: where to write a JSON summary at exit ("" = nowhere).
        serialized_io: exchange the per-step messages (states, commands, clock) as CDR bytes
            (:mod:`.wire`) instead of Python messages; the topics and types are the same. Falls
            back to messages when the codecs' self-check fails.
    """

    qos_depth: int = 10
    reliability: str = "reliable"
    executor: str = "events"
    diagnostics_period: float = 1.0
    stats_file: str = ""
    serialized_io: bool = True


_COMMON_KEYS = {"qos_depth", "reliability", "executor", "diagnostics_period", "stats_file", "serialized_io"}
#: Largest message queue accepted (qos_depth, command_queue_depth): far above any use, and well
#: inside what the middleware takes (larger values end in an overflow inside rclpy).
_MAX_QUEUE = 100_000
#: Longest timer period accepted (s): rclpy's timers overflow somewhere beyond 10⁹ s.
_MAX_PERIOD_S = 3600.0
#: Shortest /diagnostics period accepted (s): each message takes 0.3–1 ms of the node's only
#: thread, so 20 per second cost the control loop at most ~2 % (a period near 0 keeps a node busy).
_MIN_DIAGNOSTICS_PERIOD_S = 0.05
#: Shallowest control-topic queue accepted: shallower ones drop messages after a stall.
_MIN_QOS_DEPTH = 10
#: Longest simulation accepted (s, ~32 years): its step count must stay a finite number.
_MAX_DURATION_S = 1e9


def _period(node: str, params: Mapping[str, Any], key: str, default: float, minimum: float = 0.0) -> float:
    value = as_positive_float(f"{node}.{key}", params.get(key, default))
    if value > _MAX_PERIOD_S:
        raise ConfigError(f"{node}.{key}: expected at most {_MAX_PERIOD_S:g} s, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{node}.{key}: expected at least {minimum:g} s, got {value!r}")
    return value


def _duration(node: str, params: Mapping[str, Any]) -> float:
    value = as_positive_float(f"{node}.duration", params.get("duration", 0.0), allow_zero=True)
    if value > _MAX_DURATION_S:
        raise ConfigError(
            f"{node}.duration: expected at most {_MAX_DURATION_S:g} s (0: until stopped), got {value!r}"
        )
    return value


def _common(node: str, params: Mapping[str, Any]) -> CommonConfig:
    # rclpy only logs a wrongly typed one and runs on: use_sim_time 'true' leaves the node on the
    # wall clock, refusing every simulated state as stale.
    for key in ROS_PARAMETERS:
        _bool(node, params, key, True)
    return CommonConfig(
        qos_depth=_int(node, params, "qos_depth", 10, _MIN_QOS_DEPTH, _MAX_QUEUE),
        reliability=check_choice(f"{node}.reliability", params.get("reliability", "reliable"), RELIABILITIES),
        executor=check_choice(f"{node}.executor", params.get("executor", "events"), EXECUTORS),
        diagnostics_period=_period(node, params, "diagnostics_period", 1.0, _MIN_DIAGNOSTICS_PERIOD_S),
        stats_file=_output_file(node, params, "stats_file"),
        serialized_io=_bool(node, params, "serialized_io", True),
    )


@dataclass(frozen=True)
class ControllerNodeConfig:
    """Everything the controller node needs, validated.

    Attributes:
        controller: a key of :data:`~torque_ctrl_ros.core.controllers.CONTROLLERS`.
        controller_params: that controller's section (``<controller>.<key>`` without the prefix).
        joints: command order (empty: the model's joint order).
        robot_description: URDF document; wins over ``model_file`` when not empty.
        model_file: URDF or MJCF path used when ``robot_description`` is empty; the model must give
            every joint an effort limit (Pinocchio reads none from MJCF actuators).
        watchdog: staleness / fallback settings.
        fallback_damping: ``K_d`` (N·m·s/rad) of the safe command ``g(q̂) − K_d·q̂̇`` on the state
            predicted from the last good one (:class:`~torque_ctrl_ros.core.braking.SafeBrake`);
            scalar or per joint in the model's joint order.
        command_delay: s from a joint state to the first state showing the command that answers
            it (:meth:`~torque_ctrl_ros.core.robot.RobotModel.set_command_delay`): 1 ms for the
            simulator, 3–5 ms reported for the real Gen3; closed-loop dampings and PD gains are
            checked against it.
        predict_delay: compute on the state the command will act on, the measured one carried
            over the commands sent in the ``command_delay`` (:mod:`~torque_ctrl_ros.core.prediction`);
            nothing to carry at one period's delay (the simulator's).
        common: shared settings.
    """

    controller: str
    controller_params: dict[str, Any]
    joints: tuple[str, ...]
    robot_description: str
    model_file: str
    watchdog: WatchdogConfig
    fallback_damping: Any
    command_delay: float = CONTROL_PERIOD
    predict_delay: bool = True
    common: CommonConfig = field(default_factory=CommonConfig)

    def fallback_damping_vector(self, n: int, robot: RobotModel | None = None) -> FloatArray:
        """``fallback_damping`` (the safe brake's ``K_d``) as ``n`` values ``> 0``: at 0 a joint's
        safe command is gravity compensation alone, which does not brake it (as the QP controllers'
        ``fallback_damping``).

        With ``robot``, also refuses (:class:`ConfigError`) a damping that the safe command,
        applied once per :data:`~torque_ctrl_ros.core.robot.CONTROL_PERIOD`, would make unstable:
        largest eigenvalue of ``h·M⁻¹·K_d`` ``>= 1`` (:meth:`RobotModel.check_damping`). The bound
        is one period's whatever ``command_delay``: the safe brake damps its own prediction, which
        no late measurement feeds.
        """
        field = "controller_node.fallback_damping"
        kd = as_vector(field, self.fallback_damping, n, broadcast_scalar=True, strictly_positive=True)
        if robot is not None:
            robot.check_damping(field, kd, open_loop=True)
        return kd


#: The fields of :class:`~torque_ctrl_ros.core.safety.WatchdogConfig`, each a ``watchdog.<field>``
#: parameter; those not given keep that class's defaults.
WATCHDOG_FIELDS = tuple(f.name for f in dataclasses.fields(WatchdogConfig))

CONTROLLER_NODE_KEYS = {
    "controller",
    "joints",
    "robot_description",
    "model_file",
    *(f"watchdog.{name}" for name in WATCHDOG_FIELDS),
    "fallback_damping",
    "command_delay",
    "predict_delay",
} | _COMMON_KEYS


def _watchdog(node: str, params: Mapping[str, Any]) -> WatchdogConfig:
    """The ``watchdog.*`` parameters given, validated by :meth:`WatchdogConfig.create`; the
    others keep its defaults."""
    given = {name: params[f"watchdog.{name}"] for name in WATCHDOG_FIELDS if f"watchdog.{name}" in params}
    if "auto_recover" in given:  # create() takes any truth value: a string 'false' would be true
        given["auto_recover"] = _bool(node, params, "watchdog.auto_recover", True)
    return WatchdogConfig.create(**given)


def controller_node_config(params: Mapping[str, Any], node: str = "controller_node") -> ControllerNodeConfig:
    """Validate the controller node's parameters (flat names, dots for sections)."""
    controller = check_choice(
        f"{node}.controller", params.get("controller", "gravity_comp"), sorted(CONTROLLERS)
    )
    sections = tuple(f"{name}." for name in CONTROLLERS)
    _reject_unknown(node, params, CONTROLLER_NODE_KEYS, sections)
    prefix = f"{controller}."
    section = {k[len(prefix) :]: _plain(v) for k, v in params.items() if k.startswith(prefix)}
    model_file = _str(node, params, "model_file", "")
    description = _str(node, params, "robot_description", "")
    if not description and not model_file:
        model_file = str(data_path("urdf", "gen3.urdf"))
    if not description:
        model_file = _data_file(node, "model_file", model_file, "urdf", " and robot_description is empty")
    damping = _plain(params.get("fallback_damping", list(DEFAULT_DAMPING)))
    try:
        np.asarray(damping, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{node}.fallback_damping: expected a number or a list, got {damping!r}") from None
    return ControllerNodeConfig(
        controller=controller,
        controller_params=section,
        joints=_names(node, params, "joints"),
        robot_description=description,
        model_file=model_file,
        watchdog=_watchdog(node, params),
        fallback_damping=damping,
        command_delay=_command_delay(node, params),
        predict_delay=_bool(node, params, "predict_delay", True),
        common=_common(node, params),
    )


SAFE_TORQUES = ("hold", "damping", "zero")


@dataclass(frozen=True)
class SimNodeConfig:
    """Everything the simulation node needs, validated.

    Attributes:
        mjcf: MJCF scene path.
        keyframe: initial keyframe ("" = the model's default pose).
        mode: ``realtime`` (wall-clock paced, zero-order hold) or ``lockstep`` (waits for the answer).
        joints: joint order of /joint_states and of the commands (empty: the plant's order).
        command_timeout: realtime: simulated time (s, at most 1; paced by the wall clock, but not
            counting a stall of the simulator itself) a command drives the plant for, counted from
            the state it answers: every step starting within it, so up to this + one step, then
            the safe torque.
        lockstep_timeout: lockstep: time (s, at most 60) this node waits for the answer before the
            safe torque (time it spends stopped or descheduled does not count).
        wait_for_controller: hold the first state (republishing it) until a command answers it.
        safe_torque: applied when no valid command is at hand: ``hold`` (``g(q) − K_d·q̇``, the
            model's own gravity: the arm stays about where it was, as a braked arm does),
            ``damping`` (``−K_d·q̇``: the arm falls under gravity, slowed; with the controller
            killed mid-run, joint_2 drops 1.8 rad in 2 s) or ``zero``.
        safe_damping: ``K_d`` (N·m·s/rad) of the ``hold`` and ``damping`` safe torques; scalar or
            one per driven joint, in the model's order of them.
        duration: simulated seconds to run (0: until stopped).
        record_file: ``.npz`` with t, q, v, tau of every step, written at exit ("" = none). Kept
            in memory, allocated at start: needs ``duration > 0``, at most 1 GiB (1.7 h of the
            Gen3 at 1 kHz).
        command_queue_depth: history depth of the command subscription. Taking a command costs
            microseconds, so a deep queue is free and keeps every command through a stall of the
            simulator (after one it catches up with the wall clock and the answers arrive in a
            burst: with 10, 5 × 30 ms stalls lost 2–17 commands). The controller's state queue
            stays at ``qos_depth``: after a stall it should not work through stale states.
        command_delay: s from a state to the first state the command answering it drives: one
            step (the default) applies it over the step after the state; more holds it back in a
            :class:`~torque_ctrl_ros.sim.commands.DelayLine` (0.005: the real Gen3's delay).
        common: shared settings.
    """

    mjcf: str
    keyframe: str
    mode: str
    joints: tuple[str, ...]
    command_timeout: float
    lockstep_timeout: float
    wait_for_controller: bool
    safe_torque: str
    safe_damping: Any
    duration: float
    record_file: str
    command_queue_depth: int = 100
    command_delay: float = CONTROL_PERIOD
    common: CommonConfig = field(default_factory=CommonConfig)

    def damping_vector(
        self,
        model_joints: Sequence[str],
        joints: Sequence[str] | None = None,
        plant: MujocoPlant | None = None,
    ) -> FloatArray:
        """``safe_damping`` (values ``>= 0``; zeros for ``safe_torque: zero``) in ``joints`` order.

        A per-joint list gives one value per driven joint (``joints``, default all of
        ``model_joints``), in the model's order of those joints (joint_1..7 for the Gen3),
        whatever order ``joints`` gives the plant: the values belong to joints, not to positions.

        The damping torque ``−K_d·q̇`` is held for one simulator step ``h``, so a damping whose
        ``h·(M⁻¹)_dd·K_d`` reaches an eigenvalue of 1 rings, and grows with one period of delay
        (from 2 it spins the joints up even without): :class:`ConfigError`
        (:meth:`MujocoPlant.check_damping`, MuJoCo's mass matrix and timestep). ``plant``
        (driving ``joints``) is used for that check; without it the check loads :attr:`mjcf` once
        more (~20–30 ms for the Gen3 scene).
        """
        joints = list(model_joints) if joints is None else list(joints)
        driven = [name for name in model_joints if name in joints]
        field = "sim_node.safe_damping"
        if self.safe_torque == "zero":
            return np.zeros(len(joints))
        kd = as_vector(field, self.safe_damping, len(driven), broadcast_scalar=True, min_value=0.0)
        kd = kd[[driven.index(name) for name in joints]]
        if kd.any():
            from ..sim.plant import MujocoPlant  # MuJoCo only where a simulator runs

            if plant is None:
                plant = MujocoPlant(self.mjcf, joints)
            elif list(plant.joint_names) != joints:
                raise ConfigError(f"{field}: the plant drives {list(plant.joint_names)}, not {joints}")
            plant.check_damping(field, kd)
        return kd


SIM_NODE_KEYS = {
    "mjcf",
    "keyframe",
    "mode",
    "joints",
    "command_timeout",
    "lockstep_timeout",
    "wait_for_controller",
    "safe_torque",
    "safe_damping",
    "duration",
    "record_file",
    "command_queue_depth",
    "command_delay",
} | _COMMON_KEYS


def sim_node_config(params: Mapping[str, Any], node: str = "sim_node") -> SimNodeConfig:
    """Validate the simulation node's parameters."""
    _reject_unknown(node, params, SIM_NODE_KEYS)
    mjcf = _data_file(
        node, "mjcf", _str(node, params, "mjcf", "") or str(data_path("mjcf", "scene.xml")), "mjcf"
    )
    damping = _plain(params.get("safe_damping", list(DEFAULT_DAMPING)))
    return SimNodeConfig(
        mjcf=mjcf,
        keyframe=_str(node, params, "keyframe", "home"),
        mode=check_choice(f"{node}.mode", params.get("mode", "realtime"), MODES),
        joints=_names(node, params, "joints"),
        command_timeout=as_seconds(f"{node}.command_timeout", params.get("command_timeout", 0.05), 1.0),
        # Shorter than a step, the wait ends before any controller can answer: every step would
        # run on the safe torque.
        lockstep_timeout=as_seconds(
            f"{node}.lockstep_timeout", params.get("lockstep_timeout", 1.0), 60.0, at_least=CONTROL_PERIOD
        ),
        wait_for_controller=_bool(node, params, "wait_for_controller", True),
        safe_torque=check_choice(f"{node}.safe_torque", params.get("safe_torque", "hold"), SAFE_TORQUES),
        safe_damping=damping,
        duration=_duration(node, params),
        record_file=_output_file(node, params, "record_file"),
        command_queue_depth=_int(node, params, "command_queue_depth", 100, 1, _MAX_QUEUE),
        command_delay=_command_delay(node, params),
        common=_common(node, params),
    )


def _read_yaml(path: Path) -> Any:
    """The YAML document of the file ``path``.

    A key written twice in one mapping is refused: rcl merges the two (a node's section, a nested
    group like ``watchdog:``) where a YAML reader keeps the last, so the checks here would read
    other parameters than the nodes get (a second ``sim_node:`` hid the first's ``joints``).

    Raises:
        ConfigError: the file cannot be read, is no YAML, or writes a key twice in one mapping.
    """
    # Only the runner reads parameter files itself; the nodes get them from rcl.
    import yaml

    from ..yaml_keys import load_unique

    try:
        return load_unique(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"parameter file {path}: {exc}") from None
    except ValueError as exc:  # keys rcl would read otherwise than these checks (yaml_keys)
        raise ConfigError(f"parameter file {path}: {exc}") from None


def check_params_file(path: Path, nodes: Sequence[str], namespace: str = "") -> None:
    """Refuse a parameter file with a section that reaches none of ``nodes`` (started in
    ``namespace``, ``""`` for none).

    rclpy passes a node only the sections named after it (``controller_node:``, or with its
    namespace ``/arm/controller_node:``) or a wildcard (``/**:``); any other is ignored without
    a word. A misspelt section's values would never reach the node: under ``make sim`` it would
    run on the shipped file's values instead, with nothing said; on a file read alone, on its
    built-in defaults (``use_sim_time`` false, so every simulated state is refused as stale).

    Raises:
        ConfigError: unreadable YAML, not a mapping of sections, a section for another node
            or another namespace, or a wildcard inside a name (``sim_*``: rcl refuses the file).
    """
    sections = _read_yaml(path)
    if not isinstance(sections, dict):
        raise ConfigError(f"parameter file {path}: expected node sections (e.g. controller_node:)")
    prefix = "/" + namespace.strip("/") if namespace.strip("/") else ""
    full_names = [f"{prefix}/{node}" for node in nodes]
    # The sections as rcl names them: a namespace written as an enclosing key (/**: then
    # controler_node:) joins the name, which a check of the top-level keys alone let through.
    names = [name for name, _ in _sections(sections)]
    # And a top-level key holding no node's parameters at all (a value, ``ros__parameters`` with no
    # node before it, a misspelt ``ros_parameters``): rcl refuses those files when a node starts.
    names += [str(k) for k, body in sections.items() if not _sections({k: body})]
    for key in names:
        partial = [t for t in str(key).strip("/").split("/") if "*" in t and t not in ("*", "**")]
        if partial:
            raise ConfigError(
                f"parameter file {path}: section {key!r}: rcl takes '*' and '**' only as whole names "
                f"between slashes (such as '/**' or '/*/controller_node'), not in {partial[0]!r}, and "
                "refuses the whole file"
            )
        if any(_section_pattern(str(key)).fullmatch(full) for full in full_names):
            continue
        ns, _, name = str(key).strip("/").rpartition("/")
        if name in nodes or "*" in name:
            raise ConfigError(
                f"parameter file {path}: section {key!r} is for namespace {'/' + ns!r}, but the nodes "
                f"here run in {prefix or '/'!r}: rclpy would not pass it to them"
            )
        raise ConfigError(
            f"parameter file {path}: section {key!r} names no node started here; expected one of "
            f"{sorted(nodes)} (in namespace {prefix or '/'!r}) or a wildcard such as '/**'"
        )


def file_parameters(paths: Sequence[Path], node: str) -> dict[str, Any]:
    """The parameters (dotted names for nested ones, e.g. ``watchdog.max_age``) that the parameter
    files ``paths``, loaded in that order, give the node ``node`` (fully qualified, e.g.
    ``/controller_node``), resolved as rcl resolves them.

    rcl keeps one list of sections over all the files, each in the place its first appearance gave
    it; a later file's section of the same name (the same string: ``controller_node`` and
    ``/controller_node`` are two) replaces values inside that place. The sections that reach the
    node (:func:`_section_pattern`) then apply in that order, a later one's values winning. So a
    later file does not always win: after a first file ``/**: {a: 1}`` then ``controller_node:
    {a: 2}``, a second file's ``/**: {a: 3}`` still loses to the node's own section. (Checked
    against rclpy by ``test/test_param_files.py``.)

    Raises:
        ConfigError: a file that cannot be read as YAML.
    """
    return _resolve(_file_sections(paths), node)


def _file_sections(paths: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """rcl's list of sections over the files ``paths``: name → values, in order of first appearance."""
    sections: dict[str, dict[str, Any]] = {}
    for path in paths:
        for name, values in _sections(_read_yaml(path)):
            sections.setdefault(name, {}).update(values)
    return sections


def _resolve(sections: Mapping[str, Mapping[str, Any]], node: str) -> dict[str, Any]:
    """What the ``sections`` (:func:`_file_sections`) give the node ``node``, applied in order."""
    out: dict[str, Any] = {}
    for name, values in sections.items():
        if _section_pattern(name).fullmatch(node):
            out.update(values)
    return out


def file_parameter(paths: Sequence[Path], node: str, key: str) -> Any:
    """The value :func:`file_parameters` gives parameter ``key`` of ``node``, or ``None`` where no
    file sets it."""
    return file_parameters(paths, node).get(key)


#: What a launch argument naming an optional file takes for no file: ``ros2 launch`` refuses an
#: empty value (``hardware_params_file:=`` is a "malformed launch argument"; a review with the
#: upstream parser), so ``""`` works only from another launch file or a test.
NO_FILE = "none"


#: The shortest ``command_delay`` (s) the Gen3 shows: ~3 ms bypassing its base, ~5 ms through it
#: (config/gen3_hardware.yaml).
GEN3_SHORTEST_DELAY = 0.003


def short_delay_warning(paths: Sequence[Path]) -> str:
    """What the hardware launch says when the parameter files ``paths`` leave the controller's
    ``command_delay`` under :data:`GEN3_SHORTEST_DELAY` (without ``config/gen3_hardware.yaml``: the
    simulator's 1 ms), "" otherwise: its gains and dampings are then checked for a delay the arm
    does not have (a computed-torque kp of 3e4 passes at 1 ms and rings at 5; a review), and the
    watchdog runs on the simulator's settings, which the message lists."""
    given = file_parameters(paths, "/controller_node")
    value = given.get("command_delay", CONTROL_PERIOD)
    try:  # a string too: PyYAML reads 1e-3 (no dot) as one, rcl as the number
        delay = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        return ""  # refused by the node itself
    if not delay < GEN3_SHORTEST_DELAY:
        return ""
    defaults = WatchdogConfig()
    watchdog = ", ".join(
        f"{key} {given.get(f'watchdog.{key}', getattr(defaults, key))}"
        for key in ("max_future", "fallback_duration", "overspeed_factor")
    )
    return (
        f"controller_node's command_delay is {delay * 1e3:g} ms, where the Gen3 shows its commands 3-5 ms "
        f"late: its gains and dampings are checked for a delay the arm does not have (watchdog: "
        f"{watchdog}); without hardware_params_file the simulator's settings apply"
    )


def optional_file(value: str) -> str:
    """A launch argument naming an optional file: the file, or ``""`` for none (``value`` empty or
    :data:`NO_FILE`, in any case)."""
    value = value.strip()
    return "" if value.lower() == NO_FILE else value


def controller_model(paths: Sequence[Path], model_file: str = "") -> RobotModel:
    """The model the controller node loads under the parameter files ``paths``: its
    ``robot_description``, else its ``model_file``, else the package's urdf/gen3.urdf, as
    :func:`controller_node_config` resolves them; ``model_file`` given here replaces both, as the
    launch files' argument does.

    Raises:
        TorqueCtrlError: where the node would refuse the model (a file not found, not a model).
    """
    given = file_parameters(paths, "/controller_node")
    params = {key: given[key] for key in ("model_file", "robot_description") if given.get(key)}
    if model_file:
        params = {"model_file": model_file, "robot_description": ""}
    config = controller_node_config(params)
    if config.robot_description:
        return RobotModel.from_urdf_string(config.robot_description)
    return RobotModel.from_file(config.model_file)


def controller_model_file(paths: Sequence[Path]) -> str:
    """The file of the model the controller node loads under the parameter files ``paths``, for
    a viewer (robot_state_publisher reads a file): its ``robot_description`` written to a new
    temporary URDF (kept: the viewer reads it when it starts), else its ``model_file``, else ""
    (the package's urdf/gen3.urdf), as :func:`controller_node_config` resolves them."""
    params = file_parameters(paths, "/controller_node")
    description = params.get("robot_description")
    if isinstance(description, str) and description:
        import tempfile

        fd, name = tempfile.mkstemp(prefix="torque_ctrl_ros_description_", suffix=".urdf")
        with os.fdopen(fd, "w") as f:
            f.write(description)
        return name
    model_file = params.get("model_file")
    return model_file if isinstance(model_file, str) else ""


def _sections(document: Any, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
    """The sections of a parameter file's YAML ``document`` in order, as (name, flattened
    ``ros__parameters``); a namespace written as an enclosing key (``/**:`` then
    ``controller_node:``) joins the name as rcl joins it (``/**/controller_node``), also beside a
    ``ros__parameters`` of its own, each where the file writes it (rcl reads ``/**: {ros__parameters:
    …, controller_node: …}`` as ``/**`` then ``/**/controller_node``, and the other way round when
    the node's comes first: listed after it, the wildcard's values had lost to an override in a
    section of the node's name where rcl let them win)."""
    out: list[tuple[str, dict[str, Any]]] = []
    for key, body in document.items() if isinstance(document, dict) else ():
        if not isinstance(body, dict):
            continue
        name = f"{prefix}/{key}" if prefix else str(key)
        for child_key, child in body.items():
            if child_key == "ros__parameters":
                out.append((name, _flat(child)))
            else:
                out += _sections({child_key: child}, name)
    return out


def _flat(values: Any, prefix: str = "") -> dict[str, Any]:
    """Nested parameter mappings as dotted names (``{watchdog: {max_age: 1}}`` is ``watchdog.max_age``)."""
    out: dict[str, Any] = {}
    for key, value in values.items() if isinstance(values, dict) else ():
        name = f"{prefix}{key}"
        out |= _flat(value, name + ".") if isinstance(value, dict) else {name: value}
    return out


def override_section(node: str) -> str:
    """The section name :func:`write_overrides` gives ``node``'s values: ``/**/<node>``. It reaches
    ``/<node>`` (``**`` matches no token too) and is a name of its own in rcl's list of sections,
    which a parameter file hardly holds, so it comes after every section of the files loaded
    before it and its values win (:func:`file_parameters`). ``-p name:=value``, and a launch
    file's dictionary of parameters on a node without a namespace, go into the ``/**`` section
    instead, which a file opening with ``/**:`` places before the node's own section: there the
    file's value would win."""
    return f"/**/{node.strip('/')}"


def write_overrides(path: Path, values: Mapping[str, Mapping[str, Any]], after: Sequence[Path] = ()) -> Path:
    """Write ``values`` (node name → parameter name → value) to the parameter file ``path``, one
    :func:`override_section` per node, to be passed after the files ``after`` (``--params-file``,
    in that order); returns ``path``. Values: bool, int, float, str, or a list of one of them
    (numpy scalars become Python ones).

    Raises:
        ConfigError: a file of ``after`` holds the override section itself, with a section after
            it that sets one of the values for the node: rcl would give the node that file's
            value, not the override's (:func:`file_parameters`).
        TypeError: a value of another type.
    """
    return _write_overrides(Path(path), check_overrides(values, after))


def check_overrides(
    values: Mapping[str, Mapping[str, Any]], after: Sequence[Path] = ()
) -> dict[str, dict[str, Any]]:
    """The check of :func:`write_overrides`, before anything is written: ``values`` as they would be
    written (plain Python values), or the :class:`ConfigError` (and :class:`TypeError`) it raises."""
    plain = {node: {k: _yaml_value(v) for k, v in params.items()} for node, params in values.items()}
    sections = _file_sections(after)
    for node, params in plain.items():
        sections.setdefault(override_section(node), {}).update(params)
    for node, params in plain.items():
        got = _resolve(sections, "/" + node.strip("/"))
        lost = sorted(k for k, v in params.items() if not _same_value(got.get(k), v))
        if lost:
            raise ConfigError(
                f"parameter files {[str(f) for f in after]}: a section {override_section(node)!r} "
                f"followed by another that reaches {node} keeps {lost} from being overridden (rcl "
                f"applies the sections in the order they first appear): rename it {node!r}"
            )
    return plain


def check_layer_wins(
    files: Sequence[Path], layer: Path, node: str, after: Sequence[Path] = (), exempt: Collection[str] = ()
) -> None:
    """Refuse ``files`` (loaded in that order, ``layer`` among them, ``after`` those loaded after
    it) where a value ``layer`` gives ``node`` (e.g. ``/controller_node``) is not the value the
    node gets, nor the one ``after`` gives it where they set it, unless it is one of ``exempt``
    (set on purpose later, e.g. by a launch argument): rcl applies the sections in the order they
    first appear, so a file before ``layer`` ending with a ``/**:`` section beats ``layer``'s
    ``controller_node:``, and ``after``'s too (the hardware file's 5 ms ``command_delay`` read 1
    ms, with every delay check of the gains passed on 1 ms).

    Raises:
        ConfigError: naming the parameters that lost and the values the node gets.
    """
    wanted = _resolve(_file_sections([layer]), node)
    if after:
        wanted |= _resolve(_file_sections(after), node)
    got = _resolve(_file_sections(files), node)
    lost = {k: got.get(k) for k, v in wanted.items() if k not in exempt and not _same_value(got.get(k), v)}
    if lost:
        raise ConfigError(
            f"parameter file {layer}: its values for {node} {sorted(lost)} (or a later file's) do not "
            f"reach the node (it gets {lost}): another section reaching {node} comes later in rcl's "
            f"order, which is that of first appearance over the files (e.g. '/**:' written after "
            f"'{node.strip('/')}:' in a file before it): write those values in a section of the "
            f"node's own name, '{node.strip('/')}:'"
        )


def _write_overrides(path: Path, plain: Mapping[str, Mapping[str, Any]]) -> Path:
    """Write checked override values (:func:`check_overrides`) to ``path``; returns it."""
    import yaml  # as _read_yaml

    document = {override_section(node): {"ros__parameters": dict(params)} for node, params in plain.items()}
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def temporary_overrides(values: Mapping[str, Mapping[str, Any]], after: Sequence[Path]) -> Path:
    """:func:`write_overrides` into a new file in the temporary folder, for a launch file: the file
    stays (the node processes read it when they start; launch_ros leaves its own parameter files
    there too). Refused, nothing is written."""
    import tempfile

    plain = check_overrides(values, after)
    fd, name = tempfile.mkstemp(prefix="torque_ctrl_ros_overrides_", suffix=".yaml")
    os.close(fd)
    return _write_overrides(Path(name), plain)


def _same_value(a: Any, b: Any) -> bool:
    """``a == b``, NaN equal to NaN (a value like any other here: the node refuses it itself), in
    lists too."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def _yaml_value(value: Any) -> Any:
    """A parameter value as YAML writes it: numpy scalars and tuples as Python scalars and lists."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_yaml_value(v) for v in value]
    if isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"parameter value {value!r}: expected bool, int, float, str or a list of them")


def _section_pattern(key: str) -> re.Pattern[str]:
    """The fully qualified node names a parameter-file section reaches, as rcl matches them:
    ``*`` stands for one name token, ``**`` for any number of them (none too), and a key without
    a leading ``/`` is taken from the root (``controller_node`` is ``/controller_node``). A ``*``
    inside a token (``sim_*``), which rcl refuses, matches only itself."""
    parts = []
    for token in key.strip("/").split("/"):
        if token == "**":
            parts.append("(/[^/]+)*")
        elif token == "*":
            parts.append("/[^/]+")
        else:
            parts.append("/" + re.escape(token))
    return re.compile("".join(parts))
