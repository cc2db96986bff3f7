"""torque_ctrl_ros: real-time torque control of a 7-DoF Kinova Gen3 arm on ROS 2.

Sub-packages:

- :mod:`torque_ctrl_ros.core`: pure math (robot model, controllers, safety); no ROS.
- :mod:`torque_ctrl_ros.sim`: the MuJoCo plant and the rules for which commands drive it; no ROS.
- :mod:`torque_ctrl_ros.nodes`: thin rclpy nodes around the two above.
- :mod:`torque_ctrl_ros.bench`: the benchmarks (``make bench``).
"""

__version__ = "0.1.0"
