"""Watch a Gen3 in rviz: ``ros2 launch torque_ctrl_ros view_gen3.launch.py``.

Starts robot_state_publisher (``model_file``, turning ``/joint_states`` into TF) and rviz2
(config/gen3.rviz). ``sim_gen3.launch.py`` and ``hardware_gen3.launch.py`` include it with
``rviz:=true``, passing their ``model_file`` on; on its own it shows whichever Gen3 publishes
``/joint_states``.

Arguments:
    use_sim_time   true when the simulator is the clock (default false)
    model_file     the URDF to show, found as the controller finds its ``model_file``: as given
                   (absolute, or relative to the working directory), else in the package's share
                   directory (``urdf/gen3.urdf``; a bare name in its urdf/); default: the
                   package's urdf/gen3.urdf, as is ""
"""

from pathlib import Path

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from launch import LaunchContext, LaunchDescription
from torque_ctrl_ros.paths import find_model_file

PACKAGE = "torque_ctrl_ros"


def _sim_time() -> ParameterValue:
    return ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)


def _robot_state_publisher(context: LaunchContext) -> list[Node]:
    """robot_state_publisher on the ``model_file`` URDF."""
    # An including launch file sets model_file to "" when it was not given one.
    name = LaunchConfiguration("model_file").perform(context).strip()
    name = name or str(Path(get_package_share_directory(PACKAGE)) / "urdf" / "gen3.urdf")
    path = find_model_file(name, "view_gen3")
    if path.suffix.lower() != ".urdf":
        raise ValueError(
            f"view_gen3: model_file: {str(path)!r} is not a .urdf; robot_state_publisher reads only URDF "
            "(give a URDF of the same arm, or rviz:=false)"
        )
    return [
        Node(
            package="robot_state_publisher",
            executable="robot_state_publisher",
            output="screen",
            parameters=[
                {
                    "robot_description": ParameterValue(path.read_text(), value_type=str),
                    "use_sim_time": _sim_time(),
                }
            ],
        )
    ]


def generate_launch_description() -> LaunchDescription:
    share = Path(get_package_share_directory(PACKAGE))
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "use_sim_time",
                default_value="false",
                choices=["true", "false"],
                description="use the simulator's /clock",
            ),
            DeclareLaunchArgument(
                "model_file",
                default_value=str(share / "urdf" / "gen3.urdf"),
                description="the URDF robot_state_publisher shows",
            ),
            OpaqueFunction(function=_robot_state_publisher),
            Node(
                package="rviz2",
                executable="rviz2",
                output="screen",
                arguments=["-d", str(share / "config" / "gen3.rviz")],
                parameters=[{"use_sim_time": _sim_time()}],
            ),
        ]
    )
