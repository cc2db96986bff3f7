"""launch_testing test of ``launch/sim_gen3.launch.py`` (runs under ``colcon test``).

Needs ``launch_testing``, ``launch_ros`` and the package installed in an ament prefix (colcon
build): none of them is installable from PyPI, so in the project venv this test is skipped.
It starts the launch file (gravity compensation, realtime, no rviz) and checks that joint states,
commands and an OK watchdog appear on the topics, then that both nodes exit cleanly.
"""

from __future__ import annotations

import os
import time
import unittest
from typing import Any

import pytest

pytest.importorskip(
    "launch_testing",
    reason="launch_testing is not installed (ROS 2 apt/colcon only, not on PyPI); run under colcon test",
)
pytest.importorskip("launch_ros", reason="launch_ros is not installed (ROS 2 apt/colcon only, not on PyPI)")

import launch_testing
import launch_testing.actions
import launch_testing.asserts
from ament_index_python.packages import get_package_share_directory
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource

from launch import LaunchDescription
from torque_ctrl_ros.nodes.domain import DomainLease

# A domain of our own for the launched nodes (they inherit this environment) and the checks below.
_LEASE = DomainLease()  # held until the process exits
os.environ["ROS_DOMAIN_ID"] = str(_LEASE.domain)
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"


@pytest.mark.launch_test
def generate_test_description() -> tuple[LaunchDescription, dict[str, Any]]:
    launch_file = os.path.join(get_package_share_directory("torque_ctrl_ros"), "launch", "sim_gen3.launch.py")
    sim = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(launch_file),
        launch_arguments={"controller": "gravity_comp", "mode": "realtime", "rviz": "false"}.items(),
    )
    return LaunchDescription([sim, launch_testing.actions.ReadyToTest()]), {}


class TestSimGen3Runs(unittest.TestCase):
    """While the launch runs: states, commands and diagnostics flow."""

    def test_states_commands_and_diagnostics(self) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        context = Context()
        rclpy.init(context=context)
        node = Node("launch_test_probe", context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        counts = {"states": 0, "commands": 0}
        watchdog: list[str] = []

        def on_state(_: JointState) -> None:
            counts["states"] += 1

        def on_command(msg: Float64MultiArray) -> None:
            counts["commands"] += 1
            assert len(msg.data) == 7

        def on_diag(msg: DiagnosticArray) -> None:
            for st in msg.status:
                watchdog.extend(kv.value for kv in st.values if kv.key == "watchdog_state")

        node.create_subscription(JointState, "/joint_states", on_state, 100)
        node.create_subscription(Float64MultiArray, "/effort_controller/commands", on_command, 100)
        node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, 10)
        try:
            deadline = time.monotonic() + 30.0
            while time.monotonic() < deadline and not (
                counts["states"] > 500 and counts["commands"] > 500 and "ok" in watchdog
            ):
                executor.spin_once(timeout_sec=0.05)
        finally:
            executor.shutdown()
            node.destroy_node()
            rclpy.shutdown(context=context)
        self.assertGreater(counts["states"], 500)
        self.assertGreater(counts["commands"], 500)
        self.assertIn("ok", watchdog)


@launch_testing.post_shutdown_test()
class TestSimGen3Shutdown(unittest.TestCase):
    """After the launch is shut down (SIGINT): both nodes exited cleanly."""

    def test_exit_codes(self, proc_info: launch_testing.ProcInfoHandler) -> None:
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0, -2])
