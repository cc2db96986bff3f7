"""The launch files evaluated: which parameters and environment each node gets, per argument.

``launch`` and ``launch_ros`` are not installable from PyPI, so the launch files run here on a
stand-in of the few parts of their API they use (:func:`fake_launch`): each action keeps its
arguments, ``LaunchConfiguration`` reads the context, and :func:`evaluate` does what
``ros2 launch`` does with them in order: sets the declared defaults (a value already set, by the
command line or an including file, stands, as ``DeclareLaunchArgument.execute`` leaves it), runs
the ``OpaqueFunction``s, and includes the files whose condition holds, in the same context (an
include is not scoped: the included file sees the includer's arguments). What a node then reads
from its parameter layers follows rcl's order of sections (:meth:`Launched.parameters`), in which
a dictionary is not simply the next layer. ``test_launch_sim_gen3.py`` starts the real thing under
``colcon test``.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import types
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from torque_ctrl_ros.core.errors import ConfigError
from torque_ctrl_ros.nodes.params import file_parameters

ROOT = Path(__file__).resolve().parent.parent
#: How the launch files' overrides files are named (torque_ctrl_ros.nodes.params.temporary_overrides).
OVERRIDES_PREFIX = "torque_ctrl_ros_overrides_"
SHIPPED = ROOT / "config" / "gen3_controllers.yaml"
HARDWARE = ROOT / "config" / "gen3_hardware.yaml"


class Context:
    """``launch.LaunchContext``: the launch configurations (argument name → string)."""

    def __init__(self) -> None:
        self.launch_configurations: dict[str, str] = {}
        self.started: list[Node] = []  # the nodes started so far, in order (a stand-in's record)
        self.logged: list[str] = []  # what LogInfo actions returned by an OpaqueFunction said


class LaunchConfiguration:
    def __init__(self, name: str) -> None:
        self.name = name

    def perform(self, context: Context) -> str:
        return context.launch_configurations[self.name]


class Action:
    """Any action: keeps what it was made with."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs


class DeclareLaunchArgument(Action):
    pass


class OpaqueFunction(Action):
    pass


class IncludeLaunchDescription(Action):
    pass


class GroupAction(Action):
    pass


class IfCondition(Action):
    pass


class PythonLaunchDescriptionSource(Action):
    pass


class ParameterValue(Action):
    pass


class LogInfo(Action):
    pass


class Node(Action):
    """``launch_ros.actions.Node``; ``configurations``: the launch configurations of the scope it
    started in, where that scope ended before the launch did (a group's)."""

    configurations: dict[str, str] | None = None


class LaunchDescription:
    def __init__(self, entities: Sequence[Any]) -> None:
        self.entities = list(entities)


@pytest.fixture
def fake_launch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """The modules the launch files import, as the stand-ins above; the share directory is the
    source tree; the temporary files they write (overrides, a description for rviz) in the test's
    folder, not left in the system's."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    names: dict[str, dict[str, Any]] = {
        "launch": {"LaunchContext": Context, "LaunchDescription": LaunchDescription},
        "launch.actions": {
            "DeclareLaunchArgument": DeclareLaunchArgument,
            "IncludeLaunchDescription": IncludeLaunchDescription,
            "GroupAction": GroupAction,
            "OpaqueFunction": OpaqueFunction,
            "LogInfo": LogInfo,
            "Shutdown": Action,
        },
        "launch.conditions": {"IfCondition": IfCondition},
        "launch.launch_description_sources": {"PythonLaunchDescriptionSource": PythonLaunchDescriptionSource},
        "launch.substitutions": {"LaunchConfiguration": LaunchConfiguration},
        "launch_ros": {},
        "launch_ros.actions": {"Node": Node},
        "launch_ros.parameter_descriptions": {"ParameterValue": ParameterValue},
        "ament_index_python": {},
        "ament_index_python.packages": {"get_package_share_directory": lambda package: str(ROOT)},
    }
    for name, attributes in names.items():
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        monkeypatch.setitem(sys.modules, name, module)
    yield


def load(path: Path) -> LaunchDescription:
    spec = importlib.util.spec_from_file_location(f"launch_file_{path.stem.replace('.', '_')}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description: LaunchDescription = module.generate_launch_description()
    return description


def _perform(value: Any, context: Context) -> Any:
    if isinstance(value, LaunchConfiguration):
        return value.perform(context)
    if isinstance(value, ParameterValue):
        return _perform(value.args[0], context)
    return value


def _run(description: LaunchDescription, context: Context) -> list[Node]:
    nodes: list[Node] = []
    for entity in description.entities:
        if isinstance(entity, DeclareLaunchArgument):
            name = entity.args[0]
            context.launch_configurations.setdefault(name, entity.kwargs["default_value"])
            choices = entity.kwargs.get("choices")
            assert choices is None or context.launch_configurations[name] in choices, name
        elif isinstance(entity, OpaqueFunction):
            returned = entity.kwargs["function"](context)
            context.logged += [action.kwargs["msg"] for action in returned if isinstance(action, LogInfo)]
            returned = [action for action in returned if not isinstance(action, LogInfo)]
            nodes += returned
            context.started += returned
        elif isinstance(entity, Node):
            nodes.append(entity)
            context.started.append(entity)
        elif isinstance(entity, GroupAction):
            condition = entity.kwargs.get("condition")
            if condition is None or _perform(condition.args[0], context) == "true":
                # Scoped (``scoped=True``): the configurations set inside do not outlive it.
                assert entity.kwargs.get("scoped", True)
                saved = dict(context.launch_configurations)
                inner = _run(LaunchDescription(entity.args[0]), context)
                for node in inner:  # their substitutions are performed in the group's scope
                    node.configurations = dict(context.launch_configurations)
                nodes += inner
                context.launch_configurations = saved
        elif isinstance(entity, IncludeLaunchDescription):
            condition = entity.kwargs.get("condition")
            if condition is None or _perform(condition.args[0], context) == "true":
                for name, value in entity.kwargs.get("launch_arguments", ()):
                    context.launch_configurations[name] = _perform(value, context)
                nodes += _run(load(Path(entity.args[0].args[0])), context)
    return nodes


@dataclass
class Launched:
    """A node as launched: its parameter layers (files, then dictionaries) and its environment."""

    layers: list[Any]
    env: dict[str, str]
    context: Context = field(repr=False)
    on_exit: Any = None  # the node's on_exit: actions, or a callable of (event, context)

    @property
    def files(self) -> list[str]:
        """The parameter files the node reads, but the launch file's overrides (:attr:`overrides`)."""
        return [
            str(layer)
            for layer in self.layers
            if not isinstance(layer, Mapping) and not Path(layer).name.startswith(OVERRIDES_PREFIX)
        ]

    @property
    def overrides(self) -> dict[str, Any]:
        """The launch file's overrides file, which must be the last layer, as YAML."""
        last = self.layers[-1]
        assert not isinstance(last, Mapping) and Path(last).name.startswith(OVERRIDES_PREFIX), self.layers
        document: dict[str, Any] = yaml.safe_load(Path(last).read_text())
        return document

    def parameters(self, node: str) -> dict[str, Any]:
        """What the node ``node`` (no namespace; "" for one whose name does not matter) reads, as rcl
        resolves it (:func:`~torque_ctrl_ros.nodes.params.file_parameters`, which
        ``test_param_files.py`` checks against rclpy). A dictionary of parameters is a ``/**``
        section, as launch_ros writes it for a node without a namespace."""
        with tempfile.TemporaryDirectory() as folder:
            paths = []
            for k, layer in enumerate(self.layers):
                if isinstance(layer, Mapping):
                    values = {name: _perform(v, self.context) for name, v in layer.items()}
                    layer = Path(folder) / f"layer{k}.yaml"
                    layer.write_text(yaml.safe_dump({"/**": {"ros__parameters": values}}))
                paths.append(Path(layer))
            return file_parameters(paths, "/" + (node or "any_node"))


def evaluate(launch_file: str, context: Context | None = None, /, **arguments: str) -> dict[str, Launched]:
    """The nodes ``ros2 launch torque_ctrl_ros <launch_file> name:=value ...`` starts, by name
    (executable where unnamed); ``context`` records them as they start (:attr:`Context.started`)."""
    description = load(ROOT / "launch" / launch_file)
    declared = {e.args[0] for e in description.entities if isinstance(e, DeclareLaunchArgument)}
    assert set(arguments) <= declared, f"{sorted(set(arguments) - declared)} not declared"
    context = Context() if context is None else context
    context.launch_configurations.update(arguments)
    out = {}
    for node in _run(description, context):
        scope = context
        if node.configurations is not None:
            scope = Context()
            scope.launch_configurations = node.configurations
        env = {k: str(_perform(v, scope)) for k, v in node.kwargs.get("additional_env", {}).items()}
        name = node.kwargs.get("name") or node.kwargs["executable"]
        out[name] = Launched(list(node.kwargs.get("parameters", [])), env, scope, node.kwargs.get("on_exit"))
    return out


@pytest.fixture
def qpid_file(tmp_path: Path) -> Path:
    path = tmp_path / "qpid.yaml"
    path.write_text("controller_node:\n  ros__parameters:\n    controller: qpid\n")
    return path


@pytest.mark.usefixtures("fake_launch")
def test_sim_runs_the_controller_the_files_name_unless_the_argument_is_given(qpid_file: Path) -> None:
    """As ``make sim PARAMS=`` does: an extra file naming a controller runs it; ``controller:=``
    wins over every file; without either, the shipped file's computed_torque."""
    shipped = evaluate("sim_gen3.launch.py")["controller_node"]
    assert shipped.files == [str(SHIPPED)]
    assert shipped.parameters("controller_node")["controller"] == "computed_torque"
    extra = evaluate("sim_gen3.launch.py", extra_params_file=str(qpid_file))["controller_node"]
    assert extra.files == [str(SHIPPED), str(qpid_file)]
    assert extra.parameters("controller_node")["controller"] == "qpid"
    given = evaluate("sim_gen3.launch.py", extra_params_file=str(qpid_file), controller="hqpid")
    assert given["controller_node"].parameters("controller_node")["controller"] == "hqpid"
    assert given["controller_node"].parameters("controller_node")["use_sim_time"] is True


def _opening_with_wildcard(tmp_path: Path, source: Path) -> Path:
    """``source`` (a whole parameter file) with a ``/**:`` section put first, a common ROS idiom."""
    path = tmp_path / f"wildcard_{source.name}"
    path.write_text("/**:\n  ros__parameters:\n    qos_depth: 10\n" + source.read_text())
    return path


@pytest.mark.usefixtures("fake_launch")
def test_the_arguments_win_over_a_params_file_opening_with_a_wildcard(tmp_path: Path) -> None:
    """As a dictionary on the Node action (launch_ros's ``/**`` section) ``controller:=`` and
    ``mode:=`` lost to the node's own section of such a file: the simulation ran computed_torque
    in realtime, the arm gravity_comp's replacement computed_torque. The overrides file wins."""
    params = _opening_with_wildcard(tmp_path, SHIPPED)
    sim = evaluate("sim_gen3.launch.py", params_file=str(params), controller="qpid", mode="lockstep")
    assert sim["controller_node"].files == [str(params)]
    assert sim["controller_node"].parameters("controller_node")["controller"] == "qpid"
    assert sim["sim_node"].parameters("sim_node")["mode"] == "lockstep"
    assert sim["sim_node"].overrides == sim["controller_node"].overrides
    assert sim["controller_node"].overrides["/**/controller_node"]["ros__parameters"] == {
        "use_sim_time": True,
        "controller": "qpid",
    }
    arm = evaluate("hardware_gen3.launch.py", params_file=str(params), max_age="0.03")["controller_node"]
    read = arm.parameters("controller_node")
    assert (read["controller"], read["watchdog.max_age"], read["use_sim_time"]) == (
        "gravity_comp",
        0.03,
        False,
    )


@pytest.mark.usefixtures("fake_launch")
def test_the_hardware_files_values_must_reach_the_controller(tmp_path: Path) -> None:
    """A ``params_file`` ending with a ``/**:`` section (``command_delay`` written once for both
    nodes): rcl applies it after the node's own section, where the hardware file's values went, so
    the controller on the arm got 1 ms and every delay check of its gains passed on 1 ms (a
    review). Refused, naming the value; the same value set in ``extra_params_file`` is taken."""
    params = tmp_path / "params.yaml"
    params.write_text(SHIPPED.read_text() + "/**:\n  ros__parameters:\n    command_delay: 0.001\n")
    with pytest.raises(
        ConfigError, match=r"gen3_hardware\.yaml: its values for /controller_node \['command_delay'\]"
    ):
        evaluate("hardware_gen3.launch.py", params_file=str(params))
    extra = tmp_path / "extra.yaml"
    extra.write_text("controller_node:\n  ros__parameters:\n    command_delay: 0.001\n")
    read = evaluate("hardware_gen3.launch.py", extra_params_file=str(extra))["controller_node"]
    assert read.parameters("controller_node")["command_delay"] == 0.001
    # The extra file's value loses to that wildcard too: refused, not exempt (a mutation review).
    extra.write_text("controller_node:\n  ros__parameters:\n    command_delay: 0.004\n")
    with pytest.raises(ConfigError, match=r"\['command_delay'\] \(or a later file's\) do not reach"):
        evaluate("hardware_gen3.launch.py", params_file=str(params), extra_params_file=str(extra))


@pytest.mark.usefixtures("fake_launch")
def test_the_simulation_refuses_two_joint_orders(tmp_path: Path) -> None:
    """As ``make sim`` does (joint_order.joint_order_error): commands carry no joint names, so a
    simulator whose ``joints`` order is not the controller's would put each torque on another
    joint. One order given to both launches."""
    names = [f"joint_{k}" for k in range(1, 8)]
    reordered = tmp_path / "reorder.yaml"
    reordered.write_text(yaml.safe_dump({"sim_node": {"ros__parameters": {"joints": names[::-1]}}}))
    expected = (
        r"sim_gen3: sim_node\.joints \['joint_7', .* and controller_node\.joints \['joint_1', .* differ"
    )
    with pytest.raises(ValueError, match=expected):
        evaluate("sim_gen3.launch.py", extra_params_file=str(reordered))
    both = {node: {"ros__parameters": {"joints": names[::-1]}} for node in ("sim_node", "controller_node")}
    reordered.write_text(yaml.safe_dump(both))
    launched = evaluate("sim_gen3.launch.py", extra_params_file=str(reordered))
    for node in ("sim_node", "controller_node"):
        assert launched[node].parameters(node)["joints"] == names[::-1], node


@pytest.mark.usefixtures("fake_launch")
def test_the_simulation_warns_of_a_controller_model_of_another_arm(tmp_path: Path) -> None:
    """``model_file:=`` changes the controller's model, not the simulated arm: a bracelet 0.3 kg
    heavier is another arm's gravity (1.25 N·m on joint_2 at home), said in the launch's log
    before the nodes start, as ``make sim`` says it; the shipped files say nothing."""
    context = Context()
    evaluate("sim_gen3.launch.py", context)
    assert context.logged == []
    urdf = (ROOT / "urdf" / "gen3.urdf").read_text()
    head, tail = urdf.split('<link name="bracelet_link">')
    heavy = tmp_path / "heavy.urdf"
    heavy.write_text(
        head + '<link name="bracelet_link">' + tail.replace('<mass value="0.5"/>', '<mass value="0.8"/>', 1)
    )
    context = Context()
    launched = evaluate("sim_gen3.launch.py", context, model_file=str(heavy))
    assert sorted(launched) == ["controller_node", "sim_node"]
    assert len(context.logged) == 1, context.logged
    assert context.logged[0].startswith(
        f"sim_gen3: warning: the controller's model ({heavy}) and the simulator's arm"
    )


@pytest.mark.usefixtures("fake_launch")
@pytest.mark.parametrize(
    ("launch_file", "nodes", "arguments"),
    [
        ("sim_gen3.launch.py", ("sim_node", "controller_node"), {"sim_cpus": "0", "controller_cpus": "1"}),
        ("hardware_gen3.launch.py", ("controller_node",), {"controller_cpus": "1"}),
    ],
)
def test_the_nodes_run_on_one_blas_thread_beside_their_scheduling(
    launch_file: str, nodes: tuple[str, ...], arguments: dict[str, str]
) -> None:
    """As make, run_sim and the benchmark run them: numpy's OpenBLAS would otherwise start a
    thread per CPU, which the node then holds under SCHED_FIFO on its own CPUs."""
    launched = evaluate(launch_file, rt_priority="20", cpu_latency_us="0", **arguments)
    assert sorted(launched) == sorted(nodes)
    for name in nodes:
        env = launched[name].env
        assert env["OPENBLAS_NUM_THREADS"] == "1" and env["OMP_NUM_THREADS"] == "1", name
        assert env["TORQUE_CTRL_RT_PRIORITY"] == "20" and env["TORQUE_CTRL_CPU_LATENCY_US"] == "0", name
        assert env["TORQUE_CTRL_CPUS"] == arguments[name.replace("_node", "_cpus")], name


@pytest.mark.usefixtures("fake_launch")
def test_the_hardware_launch_warns_when_no_file_gives_the_arms_delay(tmp_path: Path) -> None:
    """``hardware_params_file:=none`` leaves the controller on the simulator's 1 ms
    ``command_delay`` and watchdog: said in the launch's log before it starts, with the values (a
    review: it started without a word, and gains that ring at 5 ms passed the 1 ms checks). With
    the hardware file, or a file of one's own giving 3 ms or more, nothing is said."""
    context = Context()
    evaluate("hardware_gen3.launch.py", context)
    assert context.logged == []
    context = Context()
    evaluate("hardware_gen3.launch.py", context, hardware_params_file="none")
    assert context.logged == [
        "hardware_gen3: warning: controller_node's command_delay is 1 ms, where the Gen3 shows its "
        "commands 3-5 ms late: its gains and dampings are checked for a delay the arm does not have "
        "(watchdog: max_future 1.0, fallback_duration 0.5, overspeed_factor 0.0); without "
        "hardware_params_file the simulator's settings apply"
    ]
    own = tmp_path / "arm.yaml"
    own.write_text(yaml.safe_dump({"controller_node": {"ros__parameters": {"command_delay": 0.003}}}))
    context = Context()
    evaluate("hardware_gen3.launch.py", context, hardware_params_file="none", extra_params_file=str(own))
    assert context.logged == []
    # 1e-3 written without a dot: a string to PyYAML, 1 ms to rcl and the node (a review)
    own.write_text("controller_node:\n  ros__parameters:\n    command_delay: 1e-3\n")
    context = Context()
    evaluate("hardware_gen3.launch.py", context, extra_params_file=str(own))
    assert len(context.logged) == 1 and "command_delay is 1 ms" in context.logged[0], context.logged


@pytest.mark.usefixtures("fake_launch")
@pytest.mark.parametrize("section", ["controller_node", "/controller_node", "/**"])
def test_the_hardware_extra_file_changes_one_value_keeping_the_hardware_files(
    tmp_path: Path, section: str
) -> None:
    """``extra_params_file`` goes over ``hardware_params_file`` (its 5 ms delay and dampings
    stay), whichever way the file names the node. The controller on the arm is the argument's,
    gravity_comp by default, whatever the files say (the shipped one says computed_torque), also
    without the hardware file."""
    default = evaluate("hardware_gen3.launch.py")["controller_node"]
    assert default.files == [str(SHIPPED), str(HARDWARE)]
    assert default.parameters("controller_node")["controller"] == "gravity_comp"
    extra = tmp_path / "arm.yaml"
    arm = {"controller": "qpid", "qpid": {"tool": {"kp": 50.0}}}
    extra.write_text(yaml.safe_dump({section: {"ros__parameters": arm}}))
    layered = evaluate("hardware_gen3.launch.py", extra_params_file=str(extra))["controller_node"]
    assert layered.files == [str(SHIPPED), str(HARDWARE), str(extra)]
    read = layered.parameters("controller_node")
    assert read["controller"] == "gravity_comp" and read["qpid.tool.kp"] == 50.0
    assert read["command_delay"] == 0.005 and read["watchdog.fallback_duration"] == 0.1
    assert read["watchdog.overspeed_factor"] == 1.5  # over-speed on the arm (docs/hardware.md)
    assert read["watchdog.max_future"] == 0.02  # a driver's clock ahead (docs/hardware.md, "Clock")
    assert read["qpid.fallback_damping"] == [0.4, 1.5, 0.1, 0.8, 0.1, 0.1, 0.08]
    assert read["use_sim_time"] is False
    given = evaluate(
        "hardware_gen3.launch.py", extra_params_file=str(extra), controller="qpid", max_age="0.02"
    )["controller_node"]
    assert given.files == [str(SHIPPED), str(HARDWARE), str(extra)]
    read = given.parameters("controller_node")
    assert read["controller"] == "qpid" and read["qpid.tool.kp"] == 50.0 and read["watchdog.max_age"] == 0.02
    # `ros2 launch` refuses `name:=` with no value (a review with the upstream parser): "none" says
    # no file, in any case; "" still does for an including launch file.
    for no_file in ("none", "None", ""):
        for extra_file in (no_file, str(extra)):
            alone = evaluate(
                "hardware_gen3.launch.py", hardware_params_file=no_file, extra_params_file=extra_file
            )
            assert alone["controller_node"].files == [
                str(SHIPPED),
                *([extra_file] if extra_file != no_file else []),
            ]
            assert alone["controller_node"].parameters("controller_node")["controller"] == "gravity_comp"
    for no_file in ("none", "NONE", ""):
        assert evaluate("sim_gen3.launch.py", extra_params_file=no_file)["sim_node"].files == [str(SHIPPED)]


@pytest.mark.usefixtures("fake_launch")
def test_rviz_shows_the_model_the_controller_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``model_file:=`` goes to the controller (over a ``robot_description`` in a file) and to
    robot_state_publisher, found from the same working directory; without it, urdf/gen3.urdf."""
    package_urdf = (ROOT / "urdf" / "gen3.urdf").read_text()
    for launch_file in ("sim_gen3.launch.py", "hardware_gen3.launch.py"):
        plain = evaluate(launch_file, rviz="true")
        assert plain["robot_state_publisher"].parameters("")["robot_description"] == package_urdf
        assert (
            plain["controller_node"].parameters("controller_node")["model_file"] == ""
        )  # the shipped file's
    gripper = tmp_path / "gen3_gripper.urdf"
    gripper.write_text(package_urdf.replace('<robot name="gen3">', '<robot name="gen3_gripper">'))
    monkeypatch.chdir(tmp_path)
    for launch_file in ("sim_gen3.launch.py", "hardware_gen3.launch.py"):
        launched = evaluate(launch_file, rviz="true", model_file=gripper.name)
        shown = launched["robot_state_publisher"].parameters("")["robot_description"]
        assert '<robot name="gen3_gripper">' in shown, launch_file
        read = launched["controller_node"].parameters("controller_node")
        assert read["model_file"] == gripper.name and read["robot_description"] == "", launch_file
        sim_time = launched["rviz2"].parameters("")["use_sim_time"]
        assert sim_time == ("true" if launch_file == "sim_gen3.launch.py" else "false"), launch_file
    view = evaluate("view_gen3.launch.py", model_file="urdf/gen3.urdf")  # the package's, from elsewhere
    assert view["robot_state_publisher"].parameters("")["robot_description"] == package_urdf


@pytest.mark.usefixtures("fake_launch")
@pytest.mark.parametrize("launch_file", ["sim_gen3.launch.py", "hardware_gen3.launch.py"])
def test_rviz_shows_the_model_the_parameter_files_give_the_controller(
    tmp_path: Path, launch_file: str
) -> None:
    """A gripper's description in the parameter files (``model_file`` or ``robot_description``, as
    docs/hardware.md advises) runs the controller on it: rviz showed the bare arm's urdf/gen3.urdf
    all the same. Now the files' model, a ``robot_description`` through a temporary URDF."""
    urdf = (
        (ROOT / "urdf" / "gen3.urdf")
        .read_text()
        .replace('<robot name="gen3">', '<robot name="gen3_gripper">')
    )
    gripper = tmp_path / "gen3_gripper.urdf"
    gripper.write_text(urdf)
    as_file, as_string = tmp_path / "as_file.yaml", tmp_path / "as_string.yaml"
    as_file.write_text(yaml.safe_dump({"controller_node": {"ros__parameters": {"model_file": str(gripper)}}}))
    as_string.write_text(
        yaml.safe_dump({"controller_node": {"ros__parameters": {"robot_description": urdf}}})
    )
    for extra in (as_file, as_string):
        launched = evaluate(launch_file, rviz="true", extra_params_file=str(extra))
        shown = launched["robot_state_publisher"].parameters("")["robot_description"]
        assert '<robot name="gen3_gripper">' in shown, (launch_file, extra.name)
        read = launched["controller_node"].parameters("controller_node")
        # The files' own model still (the include's model_file did not leak into the launch's).
        assert read.get("robot_description") == (urdf if extra is as_string else "")
        assert read["model_file"] == (str(gripper) if extra is as_file else "")


@pytest.mark.usefixtures("fake_launch")
def test_the_view_refuses_a_model_it_cannot_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    expected = rf"view_gen3: model_file: 'nope\.urdf' does not exist \(tried {tmp_path}/nope\.urdf, "
    with pytest.raises(FileNotFoundError, match=expected):
        evaluate("view_gen3.launch.py", model_file="nope.urdf")
    with pytest.raises(
        ValueError, match=r"gen3\.xml' is not a \.urdf; robot_state_publisher reads only URDF"
    ):
        evaluate("hardware_gen3.launch.py", rviz="true", model_file="mjcf/gen3.xml")


@pytest.mark.usefixtures("fake_launch")
@pytest.mark.parametrize(
    ("launch_file", "failure"),
    [
        *(
            (f, failure)
            for f in ("sim_gen3.launch.py", "hardware_gen3.launch.py")
            for failure in ("missing-model", "not-a-urdf")
        ),
        ("sim_gen3.launch.py", "reordered-joints"),  # the hardware file starts one node: no second order
        ("sim_gen3.launch.py", "reordered-joints-behind-a-wildcard"),
        *(
            (f, failure)
            for f in ("sim_gen3.launch.py", "hardware_gen3.launch.py")
            for failure in ("no-file", "misspelt")
        ),
    ],
)
def test_a_refused_launch_starts_nothing(tmp_path: Path, launch_file: str, failure: str) -> None:
    """Every check runs before any process starts: upstream launch, ending on an exception, left
    the node processes already starting running (the simulator for ever, with duration 0), and
    rviz's when a node's check failed after its include. rviz is asked for in every case."""
    arguments = {"rviz": "true"}
    if failure == "missing-model":
        arguments["model_file"] = str(tmp_path / "no_such.urdf")
        expected: type[Exception] = FileNotFoundError
        match = rf"{launch_file.split('.')[0]}: model_file: .*no_such\.urdf' does not exist"
    elif failure == "not-a-urdf":  # rviz's robot_state_publisher reads only URDF: view_gen3 refuses it
        arguments["model_file"] = str(ROOT / "mjcf" / "gen3.xml")
        expected, match = ValueError, r"view_gen3: model_file: .* is not a \.urdf"
    elif failure == "no-file":  # launch_ros only warns, and starts the node without the file
        arguments["extra_params_file"] = str(tmp_path / "gen3_hardwre.yaml")
        expected, match = (
            ValueError,
            rf"{launch_file.split('.')[0]}: parameter file .*gen3_hardwre\.yaml' does not exist",
        )
    elif failure == "misspelt":  # rcl ignores a section that reaches no node, without a word
        misspelt = tmp_path / "misspelt.yaml"
        misspelt.write_text(yaml.safe_dump({"controler_node": {"ros__parameters": {"controller": "qpid"}}}))
        arguments["extra_params_file"] = str(misspelt)
        expected, match = ConfigError, r"section 'controler_node' names no node started here"
    else:
        names = [f"joint_{k}" for k in range(1, 8)]
        reordered = tmp_path / "reorder.yaml"
        if failure == "reordered-joints":
            reordered.write_text(yaml.safe_dump({"sim_node": {"ros__parameters": {"joints": names[::-1]}}}))
        else:
            # A later file's /** joins the params file's first section, so it reaches the simulator
            # (which sets no joints) but not the controller, whose own section sets them after it.
            arguments["params_file"] = str(_opening_with_wildcard(tmp_path, SHIPPED))
            reordered.write_text(yaml.safe_dump({"/**": {"ros__parameters": {"joints": names[::-1]}}}))
        arguments["extra_params_file"] = str(reordered)
        expected, match = ValueError, r"sim_gen3: sim_node\.joints"
    context = Context()
    with pytest.raises(expected, match=match):
        evaluate(launch_file, context, **arguments)
    assert context.started == [], [node.kwargs.get("executable") for node in context.started]


class _Exited:
    """``launch.events.process.ProcessExited``: what an ``on_exit`` callable reads of it."""

    def __init__(self, returncode: int) -> None:
        self.returncode = returncode


@pytest.mark.usefixtures("fake_launch")
@pytest.mark.parametrize("launch_file", ["sim_gen3.launch.py", "hardware_gen3.launch.py"])
def test_a_controller_that_fails_ends_the_launch(launch_file: str) -> None:
    """A controller exiting with an error (e.g. parameters it refuses) ends the launch: the
    simulator had waited for a controller for ever, the launch exiting 0. A clean exit does not."""
    on_exit = evaluate(launch_file)["controller_node"].on_exit
    assert callable(on_exit)
    assert on_exit(_Exited(0), Context()) is None
    (shutdown,) = on_exit(_Exited(2), Context())
    assert shutdown.kwargs["reason"] == "controller_node failed"
