"""Watch a Gen3 in rviz: ``ros2 launch torque_ctrl_ros view_gen3.launch.py``.

Starts robot_state_publisher (urdf/gen3.urdf, turning ``/joint_states`` into TF) and rviz2
(config/gen3.rviz). ``sim_gen3.launch.py`` and ``hardware_gen3.launch.py`` include it with
``rviz:=true``; on its own it shows whichever Gen3 publishes ``/joint_states``.

Arguments:
    use_sim_time   true when the simulator is the clock (default false)
"""

from pathlib import Path

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from launch import LaunchDescription

PACKAGE = "torque_ctrl_ros"


def generate_launch_description() -> LaunchDescription:
    share = Path(get_package_share_directory(PACKAGE))
    urdf = (share / "urdf" / "gen3.urdf").read_text()
    sim_time = ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "use_sim_time",
                default_value="false",
                choices=["true", "false"],
                description="use the simulator's /clock",
            ),
            Node(
                package="robot_state_publisher",
                executable="robot_state_publisher",
                output="screen",
                parameters=[
                    {"robot_description": ParameterValue(urdf, value_type=str), "use_sim_time": sim_time}
                ],
            ),
            Node(
                package="rviz2",
                executable="rviz2",
                output="screen",
                arguments=["-d", str(share / "config" / "gen3.rviz")],
                parameters=[{"use_sim_time": sim_time}],
            ),
        ]
    )
