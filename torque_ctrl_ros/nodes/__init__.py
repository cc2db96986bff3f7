"""Thin rclpy wrappers around :mod:`torque_ctrl_ros.core` and :mod:`torque_ctrl_ros.sim`."""
