"""Torque control of a real Kinova Gen3: ``ros2 launch torque_ctrl_ros hardware_gen3.launch.py``.

This starts only the controller node (the same one the simulation uses). It needs a driver,
started separately, that

* publishes ``/joint_states`` (``sensor_msgs/JointState``: position in rad with the bounded joints
  in their limits' range, i.e. within (-pi, pi], not Kinova's 0-360 degrees; velocity in rad/s;
  stamped with the time of measurement) at 1 kHz,
* applies ``/effort_controller/commands`` (``std_msgs/Float64MultiArray``, N*m, in the order of
  the ``joints`` parameter) as joint torques, and
* times the commands out: when none has come for a few periods, it leaves torque mode for the
  arm's own safe state. The controller node stops publishing when its
  watchdog stops (bad or missing states for longer than ``watchdog.fallback_duration``) and when
  it exits or is killed; a driver that kept applying the last torque would leave the arm under
  a command computed for a pose it has left.

No such driver ships with this package, and Kinova provides none: Kinova's ros2_kortex hardware
interface exports an effort interface but refuses to switch to it (it has no torque mode). On
the Gen3, torque control needs low-level servoing: 1 kHz cyclic UDP, every actuator switched to
torque mode, the measured position fed back in each command frame, and no gravity compensation by
the robot (the command is the full joint torque, which is what these controllers send). The
reported command-to-measurement delay is 3-5 ms. ros2_control's forward command controller for
effort reads this same message, but it has no command timeout (it applies the last command
until a new one comes): a hardware interface with a working torque mode needs one in front of
it. Until such a driver is running, this launch file starts a controller that waits.

The default model, ``urdf/gen3.urdf``, is the bare arm on an upright base: with a gripper or
another tool, gravity compensation is off by its weight (a 0.9 kg gripper: several N*m at
joint 2) until a description with the tool is given (``robot_description`` or ``model_file`` in
``params_file``), the tool fixed to ``bracelet_link`` by fixed joints only (a finger joint would be
an eighth joint the controller refuses to start with).

Arguments:
    controller   gravity_comp | computed_torque | ...: the controller on the arm, over every
                 parameter file's ``controller`` (default gravity_comp, the first controller to try
                 on an arm: the files' choice, the simulation's computed_torque in the shipped
                 one, is never taken here)
    params_file  controller_node parameters (default: config/gen3_controllers.yaml, the
                 simulation's)
    hardware_params_file
                 layered over ``params_file`` (its values win): what differs on the real arm
                 (default: config/gen3_hardware.yaml: ``command_delay`` 5 ms, against which the
                 closed-loop dampings and gains are checked at start, dampings that pass that
                 check, a 0.1 s fallback window, over-speed refused at 1.5 times a limit, states
                 stamped over 20 ms ahead refused); ``none``: ``params_file`` alone (``ros2
                 launch`` takes no empty value)
    extra_params_file
                 layered over ``hardware_params_file`` (its values win): only what differs from
                 both, e.g. one gain, keeping the hardware file's delay and dampings (default
                 none)
    model_file   the controller's model (``controller_node.model_file``, over ``robot_description``),
                 which rviz shows too; found as the node finds it: as given (absolute, or relative
                 to the working directory), else in the package's share directory. Default "":
                 the parameter files' model, which rviz then shows too (a ``robot_description``
                 there through a temporary URDF file)
    max_age      watchdog: joint states older than this (s) are refused (wall clock here);
                 default "": the ``watchdog.max_age`` of the parameter files stands
    rt_priority  SCHED_FIFO priority of the controller process (default 20; 0: normal
                 scheduling). Needs the privilege (e.g. ``@realtime - rtprio 98`` in
                 /etc/security/limits.conf); without it the node logs that it runs normally.
    controller_cpus
                 CPUs to pin the controller process to, e.g. 3 (default "": any CPU); on a
                 control PC, one kept free of other work (``isolcpus``).
    cpu_latency_us
                 CPU wake-up latency (µs) the controller process holds through
                 /dev/cpu_dma_latency while it runs (default "": no request; 0 keeps every CPU
                 polling instead of sleeping, the usual real-time setting, at the cost of their
                 idle power). Needs root; without it the node logs that nothing is held.
    rviz         true: robot_state_publisher (on the driver's /joint_states) and rviz2
                 (view_gen3.launch.py). Leave it false if the driver's own launch already runs
                 a robot_state_publisher, and start rviz2 alone.

The controller runs on the wall clock (``use_sim_time`` false), so the driver's stamps must be
in the same clock as this machine's.
"""

from pathlib import Path
from typing import Any

from ament_index_python.packages import get_package_share_directory
from launch.actions import (
    DeclareLaunchArgument,
    GroupAction,
    IncludeLaunchDescription,
    LogInfo,
    OpaqueFunction,
    Shutdown,
)
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchContext, LaunchDescription
from torque_ctrl_ros.nodes import params
from torque_ctrl_ros.paths import find_model_file

PACKAGE = "torque_ctrl_ros"
#: The launch configuration :func:`_check` sets to the model rviz shows.
RVIZ_MODEL = "rviz_model_file"

#: One BLAS thread per node process. numpy's OpenBLAS otherwise starts one thread per CPU, which
#: request_realtime/request_cpus (nodes/scheduling.py) would put under SCHED_FIFO on the node's
#: own CPUs; every timing the documentation gives runs with one (make, run_sim, the benchmark).
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def _model_file(context: LaunchContext) -> str:
    return LaunchConfiguration("model_file").perform(context).strip()


def _max_age(context: LaunchContext) -> float | None:
    """The ``max_age`` argument (s), ``None`` when not given."""
    max_age = LaunchConfiguration("max_age").perform(context).strip()
    if not max_age:
        return None
    try:
        return float(max_age)
    except ValueError:
        raise ValueError(f"hardware_gen3: max_age must be a number of seconds, got {max_age!r}") from None


def _files(context: LaunchContext) -> list[str]:
    """``params_file``, then ``hardware_params_file`` and ``extra_params_file`` where given."""
    files = [LaunchConfiguration("params_file").perform(context)]
    for argument in ("hardware_params_file", "extra_params_file"):
        path = params.optional_file(LaunchConfiguration(argument).perform(context))
        if path:
            files.append(path)
    return files


def _check(context: LaunchContext) -> list[LogInfo]:
    """Refuse bad arguments before any process starts (rviz's included, whose failure would
    otherwise leave the controller running without its launch): a parameter file that does not
    exist (launch_ros would only warn, and a misspelt ``hardware_params_file`` would put the
    controller on the arm without the real arm's delay and dampings) or has a section for no
    node of the package (:func:`check_params_file`), ``max_age`` not a number, a ``model_file``
    that does not exist, files that keep an argument from overriding them (:func:`check_overrides`)
    or ``hardware_params_file`` from reaching the controller (:func:`check_layer_wins`). Returns
    the warning of a ``command_delay`` under the Gen3's (:func:`short_delay_warning`: no hardware
    file), logged before the controller starts."""
    for path in _files(context):
        if not Path(path).is_file():
            raise ValueError(f"hardware_gen3: parameter file {path!r} does not exist")
        # The shipped params_file also holds the simulator's section.
        params.check_params_file(Path(path), ("sim_node", "controller_node"))
    _max_age(context)
    model_file = _model_file(context)
    if model_file:
        find_model_file(model_file, "hardware_gen3")
    files = [Path(f) for f in _files(context)]
    overrides = _overrides(context)
    params.check_overrides(overrides, files)
    # The hardware file's values must reach the controller (its 5 ms delay checks the gains).
    hardware = params.optional_file(LaunchConfiguration("hardware_params_file").perform(context))
    short = params.short_delay_warning(files)
    notes = [LogInfo(msg=f"hardware_gen3: warning: {short}")] if short else []
    if hardware:
        extra = params.optional_file(LaunchConfiguration("extra_params_file").perform(context))
        after = [Path(extra)] if extra else []
        exempt = overrides["controller_node"]  # set by the arguments on purpose
        params.check_layer_wins(files, Path(hardware), "/controller_node", after, exempt)
    # What rviz shows (view_gen3's model_file): the argument, else the files' controller model.
    if LaunchConfiguration("rviz").perform(context) != "true":
        return notes
    context.launch_configurations[RVIZ_MODEL] = model_file or params.controller_model_file(files)
    return notes


def _overrides(context: LaunchContext) -> dict[str, dict[str, object]]:
    """``controller``, ``use_sim_time`` false, and ``model_file`` and ``max_age`` where given, in a
    parameter file passed after the others. As a dictionary on the Node action they would go into
    the ``/**`` section, which loses to a file opening with ``/**:``
    (torque_ctrl_ros.nodes.params.override_section)."""
    controller = LaunchConfiguration("controller").perform(context).strip()
    overrides: dict[str, object] = {"use_sim_time": False, "controller": controller}
    model_file = _model_file(context)
    if model_file:
        # The argument names the model the controller runs: a description in a file must not win.
        overrides["model_file"] = model_file
        overrides["robot_description"] = ""
    max_age = _max_age(context)
    if max_age is not None:
        overrides["watchdog.max_age"] = max_age
    return {"controller_node": overrides}


def _controller_failed(event: Any, context: LaunchContext) -> list[Shutdown] | None:
    """A controller that exits with an error (refused parameters, a crash) ends the launch, rviz
    with it."""
    return [Shutdown(reason="controller_node failed")] if event.returncode != 0 else None


def _controller_node(context: LaunchContext) -> list[Node]:
    """controller_node on ``params_file``, then ``hardware_params_file`` and ``extra_params_file``
    if given, overridden by ``controller`` and the other arguments given a value (:func:`_overrides`)."""
    files = [
        *_files(context),
        str(params.temporary_overrides(_overrides(context), [Path(f) for f in _files(context)])),
    ]
    return [
        Node(
            package=PACKAGE,
            executable="controller_node",
            name="controller_node",
            output="screen",
            additional_env={
                **ONE_BLAS_THREAD,
                "TORQUE_CTRL_RT_PRIORITY": LaunchConfiguration("rt_priority"),
                "TORQUE_CTRL_CPUS": LaunchConfiguration("controller_cpus"),
                "TORQUE_CTRL_CPU_LATENCY_US": LaunchConfiguration("cpu_latency_us"),
            },
            parameters=files,
            on_exit=_controller_failed,
        )
    ]


def generate_launch_description() -> LaunchDescription:
    share = Path(get_package_share_directory(PACKAGE))
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "controller",
                default_value="gravity_comp",
                description="controller_node's controller, over the parameter files'",
            ),
            DeclareLaunchArgument(
                "params_file",
                default_value=str(share / "config" / "gen3_controllers.yaml"),
                description="controller_node parameters",
            ),
            DeclareLaunchArgument(
                "hardware_params_file",
                default_value=str(share / "config" / "gen3_hardware.yaml"),
                description="the real arm's differences, layered over params_file; none: no such file",
            ),
            DeclareLaunchArgument(
                "extra_params_file",
                default_value=params.NO_FILE,
                description="layered over hardware_params_file (its values win); none: no such file",
            ),
            DeclareLaunchArgument(
                "model_file",
                default_value="",
                description='controller_node\'s model, shown by rviz too; "": as in the parameter files',
            ),
            DeclareLaunchArgument(
                "max_age",
                default_value="",
                description='watchdog: oldest usable joint state (s); "": as in the parameter files',
            ),
            DeclareLaunchArgument(
                "rt_priority", default_value="20", description="SCHED_FIFO priority, 0: normal scheduling"
            ),
            DeclareLaunchArgument(
                "controller_cpus", default_value="", description='CPUs of controller_node, "": any'
            ),
            DeclareLaunchArgument(
                "cpu_latency_us",
                default_value="",
                description='CPU wake-up latency (µs) held while the node runs, "": no request',
            ),
            DeclareLaunchArgument(
                "rviz",
                default_value="false",
                choices=["true", "false"],
                description="start robot_state_publisher and rviz2",
            ),
            LogInfo(
                msg="hardware_gen3: starting controller_node only; a Gen3 torque-mode driver publishing "
                "/joint_states and consuming /effort_controller/commands must run separately "
                "(ros2_kortex has no torque mode)."
            ),
            # Checks first, then rviz, then the node: whatever fails, fails before the node starts.
            OpaqueFunction(function=_check),
            # Scoped: an include sets its arguments in the launch's configurations, and view_gen3's
            # model_file (the files' model, a temporary URDF) would become this file's model_file,
            # which the controller's overrides read after it.
            GroupAction(
                [
                    IncludeLaunchDescription(
                        PythonLaunchDescriptionSource(str(share / "launch" / "view_gen3.launch.py")),
                        # use_sim_time given: the include's own argument, which --show-args lists,
                        # would otherwise let use_sim_time:=true put rviz on a /clock nobody publishes.
                        launch_arguments={
                            "use_sim_time": "false",
                            "model_file": LaunchConfiguration(RVIZ_MODEL),
                        }.items(),
                    )
                ],
                scoped=True,
                condition=IfCondition(LaunchConfiguration("rviz")),
            ),
            OpaqueFunction(function=_controller_node),
        ]
    )
