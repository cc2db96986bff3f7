"""Simulated Kinova Gen3 under a torque controller: ``ros2 launch torque_ctrl_ros sim_gen3.launch.py``.

Arguments:
    controller   gravity_comp | computed_torque | ... (any controller the package registers):
                 overrides the parameter files' ``controller``; default "": theirs stands
                 (computed_torque in the shipped file)
    mode         realtime (wall-clock paced, 1 kHz) | lockstep (steps when the command answering
                 the state, stamped with it, arrives)
    rviz         true: robot_state_publisher and rviz2 (view_gen3.launch.py)
    model_file   the controller's model (``controller_node.model_file``, over ``robot_description``),
                 which rviz shows too; found as the node finds it: as given (absolute, or relative
                 to the working directory), else in the package's share directory. Default "":
                 the parameter files' model, which rviz then shows too (a ``robot_description``
                 there through a temporary URDF file)
    params_file  the parameter file of both nodes (default: config/gen3_controllers.yaml); a file
                 given here replaces the shipped one, so it must be whole
    extra_params_file
                 layered over ``params_file`` (its values win): only what differs, as ``make
                 sim PARAMS=`` takes it (default none)
    rt_priority  SCHED_FIFO priority of both node processes (default 0: normal scheduling; 20
                 is what the benchmark measures with). Needs the privilege; without it the
                 nodes log that they run normally.
    sim_cpus, controller_cpus
                 CPUs to pin each node process to, e.g. 0 and 1 (default "": any CPU). One CPU
                 each is what the benchmark measures with (see docs/performance.md).
    cpu_latency_us
                 CPU wake-up latency (µs) both node processes hold through /dev/cpu_dma_latency
                 while they run (default "": no request; 0, what the benchmark measures with,
                 keeps every CPU polling instead of sleeping). Needs root; without it the nodes
                 log that nothing is held.

Both nodes read ``params_file`` (sections ``sim_node`` and ``controller_node``), then
``extra_params_file``; ``mode``, and ``controller`` and ``model_file`` when given, override the
values in both (from a parameter file of their own, passed last: a dictionary of parameters would
lose to a file opening with ``/**:``). When the simulator exits (after ``sim_node.duration``
simulated seconds, or on an error) the launch ends, as it does when the controller exits with an
error. ``make sim`` runs the same two nodes from the same files without ``ros2 launch``. As it
does, the launch refuses, before starting anything: a parameter file that does not exist or has a
section that reaches neither node (a misspelt name would be ignored by rcl without a word), files
that give the two nodes different ``joints`` orders (commands carry no joint names: each torque
would land on another joint), and a ``model_file`` that does not exist.
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
from torque_ctrl_ros.joint_order import joint_order_error, model_mismatch
from torque_ctrl_ros.nodes import params
from torque_ctrl_ros.paths import find_model_file

PACKAGE = "torque_ctrl_ros"
#: The nodes of this launch (no namespace): parameter-file sections must reach one of them.
NODES = ("sim_node", "controller_node")
#: The launch configuration :func:`_check` sets to the model rviz shows.
RVIZ_MODEL = "rviz_model_file"

#: One BLAS thread per node process. numpy's OpenBLAS otherwise starts one thread per CPU, which
#: request_realtime/request_cpus (nodes/scheduling.py) would put under SCHED_FIFO on the node's
#: own CPUs; every timing the documentation gives runs with one (make, run_sim, the benchmark).
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def _files(context: LaunchContext) -> list[str]:
    """``params_file``, then ``extra_params_file`` if given."""
    files = [LaunchConfiguration("params_file").perform(context)]
    extra = params.optional_file(LaunchConfiguration("extra_params_file").perform(context))
    return [*files, extra] if extra else files


def _model_file(context: LaunchContext) -> str:
    return LaunchConfiguration("model_file").perform(context).strip()


def _check(context: LaunchContext) -> list[LogInfo]:
    """Refuse what would make the run wrong, before any process starts (rviz's included, whose
    failure would otherwise leave the nodes running without their launch): a parameter file that
    does not exist or has a section for no node started here (:func:`check_params_file`, as
    ``make sim``), a ``model_file`` that does not exist, two ``joints`` orders
    (:func:`~torque_ctrl_ros.joint_order.joint_order_error`), and files that keep an argument from
    overriding them (:func:`check_overrides`). A controller model whose gravity is not the
    simulated arm's is a warning (:func:`~torque_ctrl_ros.joint_order.model_mismatch`)."""
    files = _files(context)
    for path in files:
        if not Path(path).is_file():
            raise ValueError(f"sim_gen3: parameter file {path!r} does not exist")
        params.check_params_file(Path(path), NODES)
    model_file = _model_file(context)
    if model_file:
        find_model_file(model_file, "sim_gen3")
    mismatch = joint_order_error(files, model_file)
    if mismatch:
        raise ValueError(f"sim_gen3: {mismatch}")
    params.check_overrides(_overrides(context), [Path(f) for f in files])
    other_arm = model_mismatch(files, model_file)
    notes = [LogInfo(msg=f"sim_gen3: warning: {other_arm}")] if other_arm else []
    # What rviz shows (view_gen3's model_file): the argument, else the files' controller model.
    if LaunchConfiguration("rviz").perform(context) != "true":
        return notes
    context.launch_configurations[RVIZ_MODEL] = model_file or params.controller_model_file(
        [Path(f) for f in files]
    )
    return notes


def _overrides(context: LaunchContext) -> dict[str, dict[str, object]]:
    """The arguments' values for both nodes, in a parameter file passed after the others: ``mode``;
    ``use_sim_time``, and ``controller`` and ``model_file`` where given. As a dictionary on the
    Node action they would go into the ``/**`` section, which loses to a file opening with
    ``/**:`` (torque_ctrl_ros.nodes.params.override_section)."""
    controller_overrides: dict[str, object] = {"use_sim_time": True}
    controller = LaunchConfiguration("controller").perform(context).strip()
    if controller:
        controller_overrides["controller"] = controller
    model_file = _model_file(context)
    if model_file:
        # The argument names the model the controller runs: a description in a file must not win.
        controller_overrides["model_file"] = model_file
        controller_overrides["robot_description"] = ""
    values = {
        "sim_node": {"mode": LaunchConfiguration("mode").perform(context)},
        "controller_node": controller_overrides,
    }
    return values


def _controller_failed(event: Any, context: LaunchContext) -> list[Shutdown] | None:
    """A controller that exits with an error (refused parameters, a crash) ends the launch: the
    simulator would otherwise hold the arm on its safe torque for ever (with ``duration`` 0)."""
    return [Shutdown(reason="controller_node failed")] if event.returncode != 0 else None


def _nodes(context: LaunchContext) -> list[Node]:
    """sim_node and controller_node on ``params_file``, then ``extra_params_file`` if given,
    overridden only by the arguments given a value (:func:`_overrides`)."""
    files = [
        *_files(context),
        str(params.temporary_overrides(_overrides(context), [Path(f) for f in _files(context)])),
    ]
    # Read by the node processes before rclpy starts (torque_ctrl_ros.nodes.scheduling).
    realtime = {
        "TORQUE_CTRL_RT_PRIORITY": LaunchConfiguration("rt_priority"),
        "TORQUE_CTRL_CPU_LATENCY_US": LaunchConfiguration("cpu_latency_us"),
    }
    return [
        Node(
            package=PACKAGE,
            executable="sim_node",
            name="sim_node",
            output="screen",
            additional_env={
                **ONE_BLAS_THREAD,
                **realtime,
                "TORQUE_CTRL_CPUS": LaunchConfiguration("sim_cpus"),
            },
            parameters=files,
            # The simulator's end (its duration, or a crash) ends the launch: a controller left
            # without states would go on braking and logging the silence as an error.
            on_exit=Shutdown(reason="sim_node exited"),
        ),
        Node(
            package=PACKAGE,
            executable="controller_node",
            name="controller_node",
            output="screen",
            additional_env={
                **ONE_BLAS_THREAD,
                **realtime,
                "TORQUE_CTRL_CPUS": LaunchConfiguration("controller_cpus"),
            },
            parameters=files,
            on_exit=_controller_failed,
        ),
    ]


def generate_launch_description() -> LaunchDescription:
    share = Path(get_package_share_directory(PACKAGE))
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "controller",
                default_value="",
                description='controller_node\'s controller; "": as in the parameter files',
            ),
            DeclareLaunchArgument(
                "mode",
                default_value="realtime",
                choices=["realtime", "lockstep"],
                description="simulation pacing",
            ),
            DeclareLaunchArgument(
                "rviz", default_value="false", choices=["true", "false"], description="start rviz2"
            ),
            DeclareLaunchArgument(
                "model_file",
                default_value="",
                description='controller_node\'s model, shown by rviz too; "": as in the parameter files',
            ),
            DeclareLaunchArgument(
                "params_file",
                default_value=str(share / "config" / "gen3_controllers.yaml"),
                description="parameters of sim_node and controller_node",
            ),
            DeclareLaunchArgument(
                "extra_params_file",
                default_value=params.NO_FILE,
                description="layered over params_file (its values win); none: no such file",
            ),
            DeclareLaunchArgument(
                "rt_priority", default_value="0", description="SCHED_FIFO priority, 0: normal scheduling"
            ),
            DeclareLaunchArgument("sim_cpus", default_value="", description='CPUs of sim_node, "": any'),
            DeclareLaunchArgument(
                "controller_cpus", default_value="", description='CPUs of controller_node, "": any'
            ),
            DeclareLaunchArgument(
                "cpu_latency_us",
                default_value="",
                description='CPU wake-up latency (µs) held while the nodes run, "": no request',
            ),
            # Checks first, then rviz, then the nodes: whatever fails, fails before a node starts.
            OpaqueFunction(function=_check),
            # Scoped: an include sets its arguments in the launch's configurations, and view_gen3's
            # model_file (the files' model, a temporary URDF) would become this file's model_file,
            # which the controller's overrides read after it.
            GroupAction(
                [
                    IncludeLaunchDescription(
                        PythonLaunchDescriptionSource(str(share / "launch" / "view_gen3.launch.py")),
                        launch_arguments={
                            "use_sim_time": "true",
                            "model_file": LaunchConfiguration(RVIZ_MODEL),
                        }.items(),
                    )
                ],
                scoped=True,
                condition=IfCondition(LaunchConfiguration("rviz")),
            ),
            OpaqueFunction(function=_nodes),
        ]
    )
